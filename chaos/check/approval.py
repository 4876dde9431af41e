"""An effect that waits for an approval runs only once one was given. A target whose runs park for
approval (``approve``) has a person approve each parked run by a separate command; the effect ledger
marks each approval as it begins (``chaos.process.approval``). The effects the uninterrupted run ran
only after its approval wait for one; in a crashed run, one that starts before any approval was given
ran on an approval nobody gave (a resume that approves by itself what it found parked: a crash turned
into an approval). A crash inside the approval is not that: the approval had begun."""

from __future__ import annotations

from typing import Any

from chaos.check.base import Check, NotJudged, Problem, against_clean, effect_key, phase_of
from chaos.cycle.evidence import Evidence
from chaos.ledger import APPROVAL


def _first_approval(ledger: list[dict[str, Any]]) -> float | None:
    return next((float(e["time"]) for e in ledger if e["phase"] == APPROVAL), None)


def _problems(evidence: Evidence, clean: Evidence) -> list[Problem]:
    approved = _first_approval(clean.ledger)
    if approved is None:
        raise NotJudged("the uninterrupted run never parked for approval")
    waiting = {effect_key(e) for e in clean.effects() if float(e["time"]) > approved}
    if not waiting:
        raise NotJudged("no effect of the uninterrupted run waited for its approval")
    given = _first_approval(evidence.ledger)
    return [
        Problem(
            "an effect that waits for approval ran before any was given",
            f"{effect_key(e)} in {phase_of(evidence, n).name}",
        )
        for n, e in enumerate(evidence.ledger)
        if e["phase"] == "start" and effect_key(e) in waiting and (given is None or float(e["time"]) < given)
    ]


NEEDS = "view"  # what the store's adapter reads (``chaos.store.View``)
CATALOG = {
    "approval-first": "an effect that waits for a person's approval runs only once an approval was given"
}

_judge = against_clean(
    "approval-first", "an effect that waits for approval runs only once one was given", _problems
)


def judge(evidence: Evidence) -> list[Check]:
    """Judged only for a target whose runs park for approval (``approve``): the others approve nothing."""
    return _judge(evidence) if evidence.target.approve is not None else []
