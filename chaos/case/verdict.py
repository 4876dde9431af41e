"""A case's verdict: its evidence, its checks, and the command that reruns exactly this case."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from chaos.case.record import env_names, reproduce_command
from chaos.case.result import CaseResult
from chaos.check.base import Check
from chaos.cycle.evidence import Evidence
from chaos.process.phase import Phase
from chaos.scenario.model import Scenario
from chaos.scenario.target import Target
from chaos.version import __version__


def landing(phase: Phase) -> str:
    """Where the kill landed, in words."""
    if phase.crash is None:
        return "no crash requested"
    if not phase.landing.reached:
        return "never reached"
    if phase.landing.exact and phase.landing.overtaken is not None:
        order = (
            "overtaken: killed as a save it must precede began"
            if phase.landing.out_of_order
            else "overtaken: killed at the next commit, the held call begun first in recovery"
            if phase.landing.overtaken and phase.crash.boundary.what == "save"
            else "overtaken: killed at the next commit"
            if phase.landing.overtaken
            else "not overtaken: nothing else committed"
        )
        return f"exactly at the boundary, {order}"
    if phase.landing.exact:
        return "exactly at the boundary"
    if phase.landing.mechanism == "world":
        return "after the world let the boundary go (not exact)"
    late = "commit(s) begun" if phase.kept.view_after is not None else "committed fact(s)"
    return f"{phase.landing.late_facts} {late} after the boundary"


@dataclass
class Verdict:
    scenario: Scenario  # as used: the file ``scenario.toml`` in the folder holds exactly this
    evidence: Evidence
    checks: list[Check]
    folder: Path
    seconds: float = 0.0

    @property
    def target(self) -> Target:
        return self.evidence.target

    @property
    def extra_env(self) -> dict[str, str]:
        return self.evidence.extra_env

    @property
    def phases(self) -> list[Phase]:
        return self.evidence.phases

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    @property
    def failed(self) -> list[Check]:
        return [c for c in self.checks if not c.ok]

    @property
    def case(self) -> str:
        """Scenario x boundary: the name of this case in a sweep or a JUnit report."""
        crash = self.scenario.crash
        then = f" then {self.scenario.then_crash}" if self.scenario.then_crash else ""
        return f"{self.scenario.name} @ {crash or 'no crash'}{then}"

    def reproduce(self) -> str:
        """Reruns exactly this case: the scenario as used (crash, signal, torn tail, timeout), its target
        and environment."""
        return reproduce_command(self.folder, self.target, self.extra_env)

    def result(self) -> CaseResult:
        """What is kept of this verdict: its checks, phases, where the kill landed, how to reproduce it."""
        start = self.evidence.start
        crash = self.scenario.crash
        return CaseResult(
            case=self.case,
            scenario=self.scenario.name,
            target=self.target.name,
            ok=self.ok,
            checks=list(self.checks),
            phases=[p.result() for p in self.phases],
            scenario_file=str(self.scenario.path) if self.scenario.path else None,
            crash=str(crash) if crash else None,
            then_crash=str(self.scenario.then_crash) if self.scenario.then_crash else None,
            fault=crash.fault_name if crash else None,
            paused=crash is not None and crash.fault.hands_on,
            persistence=self.scenario.persistence,
            target_env=env_names(self.extra_env),
            landed=landing(start),
            exact=start.landing.exact,
            seconds=round(self.seconds, 3),
            timings={part: round(s, 4) for part, s in self.evidence.timings.items()},
            shared_with=self.evidence.shared_from or "",
            reproduce=self.reproduce(),
            folder=str(self.folder),
            chaos_version=__version__,
        )
