"""No effect before its tool call is durable: after a crash, a call the store never held is asked of the
model again, and the effect runs again under a new call id, which no idempotency key can catch.

Judged at the moment the effect starts: the tracer reads a copy of the store at
the effect ledger's write (``chaos.process.commits``)."""

from __future__ import annotations

from chaos.check.base import NotJudged, Problem, against_clean, effect_key
from chaos.cycle.evidence import Evidence


def _problems(evidence: Evidence, clean: Evidence) -> list[Problem]:
    problems: list[Problem] = []
    seen = False
    for phase in evidence.phases:
        if phase.calls_at_ledger is None:
            continue
        lines = evidence.ledger[phase.ledger_before : phase.ledger_before + len(phase.calls_at_ledger)]
        for entry, durable in zip(lines, phase.calls_at_ledger, strict=False):
            if entry["phase"] != "start" or "callId" not in entry:
                continue
            seen = True
            if entry["callId"] not in durable:
                held = ", ".join(durable) or "no call"
                problems.append(
                    Problem(
                        f"effect {entry['effect']} ran before its tool call was durable in the store",
                        f"{effect_key(entry)} (call {entry['callId']}) started in {phase.name} while the store "
                        f"held {held}",
                    )
                )
    if not seen and evidence.effects():
        raise NotJudged(_unjudged(evidence))
    return problems


def _unjudged(evidence: Evidence) -> str:
    """Why no effect could be judged, by its real cause."""
    if all(phase.calls_at_ledger is None for phase in evidence.phases):
        return (
            "the tracer did not run (exact kills unavailable here), so no store was read as an effect began"
        )
    served = sorted({str(e["effect"]) for e in evidence.ledger if str(e["effect"]).startswith("mcp:")})
    if served:
        return (
            f"its effects ({', '.join(served)}) were made at the world's MCP server, whose writes the tracer "
            "does not see, and carry no call id"
        )
    names = ", ".join(sorted({str(e["effect"]) for e in evidence.effects()}))
    return (
        f"no effect carried its call id ({names}): a tool passes it as $CHAOS_EFFECT NAME --call-id ID, "
        "CHAOS_CALL_ID in its environment, or chaos.ledger.effect(name, call_id=...)"
    )


NEEDS = "view"  # what the store's adapter reads (``chaos.store.View``)
CATALOG = {
    "effect-after-durable-call": "every effect of a framework agent starts after its tool call is durable in the store"
}


judge = against_clean(
    "effect-after-durable-call", "every effect starts after its tool call is durable", _problems
)
