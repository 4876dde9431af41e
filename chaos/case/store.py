"""One case of a framework agent, recorded: the crash prefix saved the moment the agent is gone, every
store check judged against the uninterrupted run, and the files a person reads to act on it.

The case's folder holds ``scenario.toml`` (the scenario as used: ``chaos run``
on it reproduces the case), ``prefix/`` (the store's files as the crash left
them, exactly what the resume found), each phase's output, and ``case.json``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chaos.case.record import dump, reproduce_command
from chaos.check.store import STORE_CHECKS, Judged, Problem, judge
from chaos.cycle.store import StoreEvidence, StorePhase, drive_store_cycle
from chaos.process.phase import PhaseKind
from chaos.scenario.files import scenario_toml
from chaos.scenario.model import Scenario
from chaos.scenario.target import Target


@dataclass
class StoreCase:
    scenario: Scenario
    target: Target
    evidence: StoreEvidence
    judged: list[Judged]
    folder: Path
    extra_env: dict[str, str] = field(default_factory=dict)

    @property
    def boundary(self) -> str:
        return str(self.scenario.crash.boundary) if self.scenario.crash else "none"

    @property
    def crashed(self) -> StorePhase | None:
        return self.evidence.crashed

    @property
    def reached(self) -> bool:
        crashed = self.crashed
        return crashed is not None and bool(crashed.reached)

    @property
    def exact(self) -> bool | None:
        crashed = self.crashed
        return None if crashed is None or not crashed.reached else bool(crashed.exact)

    @property
    def ok(self) -> bool:
        return all(j.ok for j in self.judged)

    def failures(self) -> list[tuple[str, Problem]]:
        return [(j.id, p) for j in self.judged for p in j.problems]

    def reproduce(self) -> str:
        return reproduce_command(self.folder, self.target, self.extra_env)

    def to_json(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario.name,
            "target": self.target.name,
            "store": self.evidence.spec.kind,
            "semantics": self.evidence.spec.semantics,
            "boundary": self.boundary,
            "reached": self.reached,
            "exact": self.exact,
            "ok": self.ok,
            "checks": [j.to_json() for j in self.judged],
            "phases": [p.to_json() for p in self.evidence.phases],
            "effects": self.evidence.ledger,
            "reproduce": self.reproduce(),
        }


def keep_prefix(folder: Path) -> Any:
    """Save the crashed phase's store files the moment its process is gone (before any resume runs)."""

    def keep(phase: StorePhase) -> None:
        if phase.kind is PhaseKind.START or phase.killed:
            where = folder / ("prefix" if phase.kind is PhaseKind.START else f"{phase.name}-prefix")
            for name, data in phase.files.items():
                (where / name).parent.mkdir(parents=True, exist_ok=True)
                (where / name).write_bytes(data)

    return keep


def run_store_case(
    scenario: Scenario,
    target: Target,
    clean: StoreEvidence | None,
    folder: Path,
    extra_env: dict[str, str] | None = None,
) -> StoreCase:
    """Run and judge one crash cycle; ``clean`` is the uninterrupted run (run here when None)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "scenario.toml").write_text(scenario_toml(scenario), encoding="utf-8")
    env = dict(extra_env or {})
    evidence = drive_store_cycle(scenario, target, env, folder, keep_prefix(folder))
    if clean is None:
        clean = evidence if scenario.crash is None else clean_run(scenario, target, folder / "clean", env)
    case = StoreCase(scenario, target, evidence, judge(STORE_CHECKS, evidence, clean), folder, env)
    dump(folder / "case.json", case.to_json())
    return case


def clean_run(scenario: Scenario, target: Target, folder: Path, extra_env: dict[str, str]) -> StoreEvidence:
    """The scenario run without a crash: what a resumed run must end like."""
    folder.mkdir(parents=True, exist_ok=True)
    return drive_store_cycle(scenario.with_crash(None), target, extra_env, folder)
