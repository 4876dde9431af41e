"""Failures of framework cases, grouped by cause: one group per check and cause words (``Problem.key``),
whatever boundary, call id or phase it happened at. A sweep that meets one bug at ten commits reports
one failure, with the ten cases as its evidence."""

from __future__ import annotations

from dataclasses import dataclass, field

from chaos.case.store import StoreCase
from chaos.check.store import Problem


@dataclass
class StoreGroup:
    check: str
    cause: str
    cases: list[StoreCase] = field(default_factory=list)
    examples: list[Problem] = field(default_factory=list)  # the first case's problems of this cause

    @property
    def first(self) -> StoreCase:
        return self.cases[0]


def group(cases: list[StoreCase]) -> list[StoreGroup]:
    groups: dict[tuple[str, str], StoreGroup] = {}
    for case in cases:
        for check, problem in case.failures():
            found = groups.setdefault((check, problem.key), StoreGroup(check, problem.key))
            if not found.cases or found.cases[-1] is not case:
                found.cases.append(case)
            if found.first is case:
                found.examples.append(problem)
    return sorted(groups.values(), key=lambda g: (-len(g.cases), g.check, g.cause))
