"""How a sweep runs: one value, from the command line, the API or a CI recipe."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Settings:
    """How a sweep runs: one value, from the command line, the API or a CI recipe."""

    results: Path = Path("results/sweep")
    target_env: dict[str, str] = field(default_factory=dict)
    jobs: int = 1
    depth: int = 1
    budget: float | None = None
    shard: tuple[int, int] = (1, 1)
    keep_all: bool = False
    resume: bool = False
    timeout: float | None = None
    power_loss: bool = False  # every crash case is a power loss, not only a process death
    two_writers: bool = False  # every durable crash case pauses the writer while a second one resumes
