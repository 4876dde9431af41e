"""The shape of a store check, and judging a case with all of them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from chaos.cycle.store import StoreEvidence, StorePhase
from chaos.process.phase import PhaseKind


@dataclass(frozen=True)
class Problem:
    key: str  # the cause, the same words wherever it happens: what failures are grouped by
    text: str  # this case's particulars


class NotJudged(Exception):
    """A check that cannot judge this case (it says why): shown as not judged, never as passed."""


Judge = Callable[[StoreEvidence, StoreEvidence], list[Problem]]


@dataclass(frozen=True)
class StoreCheck:
    id: str
    title: str
    judge: Judge


@dataclass(frozen=True)
class Judged:
    id: str
    title: str
    problems: tuple[Problem, ...] = ()
    not_judged: str | None = None

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "ok": self.ok,
            "notJudged": self.not_judged,
            "problems": [{"key": p.key, "text": p.text} for p in self.problems],
        }


def judge(checks: Sequence[StoreCheck], evidence: StoreEvidence, clean: StoreEvidence) -> list[Judged]:
    """Every check on one case; ``clean`` is the uninterrupted run of the same scenario."""
    out = []
    for check in checks:
        try:
            out.append(Judged(check.id, check.title, tuple(check.judge(evidence, clean))))
        except NotJudged as why:
            out.append(Judged(check.id, check.title, not_judged=str(why)))
    return out


def effect_key(entry: dict[str, Any]) -> str:
    """An effect as a person names it: its name and what it acted on (``deploy web``)."""
    return " ".join([str(entry["effect"]), *map(str, entry.get("detail", []))])


def resumes(evidence: StoreEvidence) -> list[StorePhase]:
    return [p for p in evidence.phases if p.kind is PhaseKind.RESUME]


def phase_of(evidence: StoreEvidence, line: int) -> StorePhase:
    """The phase that wrote ledger line ``line`` (0-based)."""
    owner = evidence.phases[0]
    for phase in evidence.phases:
        if phase.ledger_before <= line:
            owner = phase
    return owner
