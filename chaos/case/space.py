"""The case space: which cases a sweep, an exploration or the pytest plugin draws, in one value.

Faults (``chaos.fault``; each applicable one at every boundary is its own case, or the fault matrix:
``chaos.case.matrix``, each fault where its kind of trouble happens), how deep (a second
crash during each recovery), for how long, judged by which other oracles, and what a power cut keeps
of a new file's directory entry. The command line, the API and the plugin build one of these; nothing
threads its own flags through the engine.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from chaos.case.matrix import deepens, matrix_crashes
from chaos.fault import FAULTS, Fault
from chaos.scenario.model import PERSISTENCE, Boundary, Scenario, Strike
from chaos.scenario.target import Target, fault_unavailable


@dataclass(frozen=True)
class CaseSpace:
    faults: tuple[str, ...] = ("kill",)
    depth: int = 1  # 2: also crash each case's recovery, at each boundary it passed
    budget: float | None = None  # seconds: no new case starts after it
    oracles: tuple[str, ...] = ()  # other reducers' commands (``--oracle``)
    persistence: str | None = None  # posix or ext4-ordered for every case; None: each scenario's own
    matrix: bool = False  # the fault matrix (every fault where it applies) instead of ``faults`` everywhere

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

    @property
    def spelled(self) -> str:
        """The faults as a sweep's settings name them."""
        return "matrix" if self.matrix else ",".join(self.faults)

    def crashes(
        self, target: Target, boundaries: list[Boundary], kinds: list[str], recovery: bool
    ) -> list[Strike]:
        """The crash cases of one phase that passed ``boundaries`` (``kinds``: each one's kind of moment,
        ``chaos.case.matrix.moment``): the matrix's, or one per fault of the space at each boundary."""
        if self.matrix:
            return matrix_crashes(matrix_faults(target), boundaries, kinds, recovery)
        return [crash for boundary in boundaries for crash in self.crashes_at(boundary)]

    def deepens(self, crash: Strike, target: Target | None = None) -> bool:
        """A case of ``target`` crashed at ``crash`` has its recovery crashed again (depth 2, or the
        matrix's cells)."""
        store = target is not None and not target.facts
        return self.depth >= 2 or (self.matrix and deepens(crash, store))

    def crashes_at(self, boundary: Boundary) -> list[Strike]:
        """One crash per fault of the space that can land at ``boundary``."""
        return [
            Strike(boundary, name) for name in self.faults if FAULTS[name].applies_to(boundary.what) is None
        ]


def matrix_faults(target: Target) -> list[Fault]:
    """The faults of the matrix ``target`` can take: each with a placement, its needs declared, and able
    to land on the target's kind of store."""
    return [
        fault
        for fault in FAULTS.values()
        if fault.matrix is not None
        and fault_unavailable(target, fault) is None
        and not any(target.capabilities.lacks(need, []) for need in fault.needs)
    ]
