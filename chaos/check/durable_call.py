"""No effect before its tool call is durable: after a crash, a call the store never held is asked of the
model again, and the effect runs again under a new call id, which no idempotency key can catch.

Judged at the moment the effect starts: the tracer reads a copy of the store at
the effect ledger's write (``chaos.process.commits``); and, where a power cut ended
the phase, on what the cut kept: a call written but never synced was not durable."""

from __future__ import annotations

from chaos.check.base import NotJudged, Problem, against_clean, effect_key, without_call_ids
from chaos.cycle.evidence import Evidence


def _problems(evidence: Evidence, clean: Evidence) -> list[Problem]:
    problems: list[Problem] = []
    seen = False
    for phase in evidence.phases:
        if phase.kept.calls_at_ledger is None:
            continue
        lines = evidence.ledger[
            phase.kept.ledger_before : phase.kept.ledger_before + len(phase.kept.calls_at_ledger)
        ]
        for entry, durable in zip(lines, phase.kept.calls_at_ledger, strict=False):
            if entry["phase"] != "start" or "callId" not in entry:
                continue
            seen = True
            if entry["callId"] not in durable:
                held = ", ".join(durable) or "no call"
                said = f"while the store held {held}"
            elif entry["callId"] in phase.kept.calls_cut:  # written, never synced: the cut took it
                said = "with its call written but never synced: the power cut took it"
            else:
                continue
            problems.append(
                Problem(
                    f"effect {entry['effect']} ran before its tool call was durable in the store",
                    f"{effect_key(entry)} (call {entry['callId']}) started in {phase.name} {said}",
                )
            )
    if not seen and evidence.effects():
        if all(phase.kept.calls_at_ledger is None for phase in evidence.phases):
            raise NotJudged(
                "the tracer did not run (exact kills unavailable here), so no store was read as an effect began"
            )
        raise NotJudged(without_call_ids(evidence))
    return problems


NEEDS = "view"  # what the store's adapter reads (``chaos.store.View``)
CATALOG = {
    "effect-after-durable-call": "every effect of a framework agent starts after its tool call is durable in the store"
}


judge = against_clean(
    "effect-after-durable-call", "every effect starts after its tool call is durable", _problems
)
