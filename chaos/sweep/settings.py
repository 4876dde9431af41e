"""How a sweep runs: one value, from the command line, the API or a CI recipe."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from chaos.case.space import CaseSpace


@dataclass(frozen=True)
class Settings:
    """How a sweep runs: one value, from the command line, the API or a CI recipe."""

    results: Path = Path("results/sweep")
    target_env: dict[str, str] = field(default_factory=dict)
    space: CaseSpace = field(default_factory=CaseSpace)  # faults, depth, budget, oracles
    jobs: int = 1
    shard: tuple[int, int] = (1, 1)
    keep_all: bool = False
    resume: bool = False
    timeout: float | None = None
    # each crash state's recovery run once and taken by the cases that leave that state after its first
    # ("shared"), every case's own ("every"), or both, compared case by case ("verify"): chaos.cycle.share
    crash_states: str = "shared"
