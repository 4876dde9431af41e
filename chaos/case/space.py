"""The case space: which cases a sweep, an exploration or the pytest plugin draws, in one value.

Faults (``chaos.fault``; each applicable one at every boundary is its own case), how deep (a second
crash during each recovery), for how long, judged by which other oracles, and what a power cut keeps
of a new file's directory entry. The command line, the API and the plugin build one of these; nothing
threads its own flags through the engine.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from chaos.fault import FAULTS
from chaos.scenario.model import PERSISTENCE, Boundary, Crash, Scenario


@dataclass(frozen=True)
class CaseSpace:
    faults: tuple[str, ...] = ("kill",)
    depth: int = 1  # 2: also crash each case's recovery, at each boundary it passed
    budget: float | None = None  # seconds: no new case starts after it
    oracles: tuple[str, ...] = ()  # other reducers' commands (``--oracle``)
    persistence: str | None = None  # posix or ext4-ordered for every case; None: each scenario's own

    def __post_init__(self) -> None:
        object.__setattr__(self, "faults", tuple(dict.fromkeys(self.faults)))
        unknown = [f for f in self.faults if f not in FAULTS]
        if unknown or not self.faults:
            raise ValueError(
                f"faults: {unknown[0] if unknown else 'none'!r}; use some of: {', '.join(FAULTS)}"
            )
        if self.depth not in (1, 2):
            raise ValueError(f"depth {self.depth}: use 1 or 2")
        if self.persistence is not None and self.persistence not in PERSISTENCE:
            raise ValueError(f"persistence {self.persistence!r}: use one of {', '.join(PERSISTENCE)}")

    def scenario(self, scenario: Scenario) -> Scenario:
        """``scenario`` on the space's machine (its persistence model, where the space names one)."""
        return scenario if self.persistence is None else replace(scenario, persistence=self.persistence)

    def crashes_at(self, boundary: Boundary) -> list[Crash]:
        """One crash per fault of the space that can land at ``boundary``."""
        return [
            Crash(boundary, name) for name in self.faults if FAULTS[name].applies_to(boundary.what) is None
        ]
