"""Effects in the world, as the ledger saw them: intent before effect, never twice, as often as meant.

Every effect a scenario's tools make goes through the ledger (``$CHAOS_EFFECT``),
which records, at the moment the effect starts, the ``toolStarted`` intents the
log held durable (pending or already resolved) and whether the log was
rejected then. An effect that started after the log was rejected is not
judged: nothing after a rejected line is durable to the contract.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from chaos.check.base import Check
from chaos.contract.reading import facts, reduced
from chaos.cycle.evidence import Evidence
from chaos.ledger import STARTS
from chaos.process.phase import Phase, PhaseKind

NEEDS = "facts"  # the session contract's facts in its store (``chaos.check.check_all``)
CATALOG = {
    "intent-before-effect": "no effect ran before its toolStarted was durable",
    "intent-synced": "no effect ran before its toolStarted was synced to disk (where the tracer saw the syncs)",
    "never-once": "a never-replay effect ran at most once per tool call",
    "effect-count": "each effect ran as often as the scenario says",
}


def _phase_of(ev: Evidence, index: int) -> Phase | None:
    """The phase during which the ``index``-th ledger line was written."""
    owner = None
    for phase in ev.phases:
        if phase.kept.ledger_before <= index:
            owner = phase
    return owner


def _pending_at_pause(ev: Evidence) -> set[str]:
    """The intents a paused writer had made durable and left pending when it was frozen."""
    state = reduced(ev.prefix).state
    op = state.operation if state is not None else None
    return {c.tool_started_id for c in op.tool_calls.values() if c.status == "pending"} if op else set()


def without_intent(ev: Evidence) -> tuple[list[tuple[dict[str, Any], Phase | None]], list[str]]:
    """The effects that started with no durable intent (each ledger line with the phase it ran in), and
    those not judged because they started after the log was rejected."""
    blind: list[tuple[dict[str, Any], Phase | None]] = []
    after_rejection: list[str] = []
    paused = _pending_at_pause(ev) if ev.continued is not None else set()
    # an effect made inside a call at the world's MCP server is judged at the call's arrival: the agent
    # sent the call, and may close it (a synthetic result) before the server's script gets to its effect
    arrived = {f"{e.get('pid')}:{e.get('call')}" for e in ev.ledger if e["phase"] == "call"}
    for index, entry in enumerate(ev.ledger):
        if entry["phase"] not in STARTS or entry.get("pending"):
            continue
        if entry.get("mcpCall") in arrived:
            continue  # judged by its call's line: the intents durable when the call arrived

        if entry.get("rejected") is not None:
            after_rejection.append(f"{entry['effect']} (the log was rejected at line {entry['rejected']})")
            continue
        phase = _phase_of(ev, index)
        if (
            phase is not None
            and phase.kind is PhaseKind.CONTINUED
            and paused & set(entry.get("resolved", []))
        ):
            continue  # its intent was durable; the other writer resolved it meanwhile (one-writer's to say)
        blind.append((entry, phase))
    return blind, after_rejection


def intent_before_effect(ev: Evidence) -> list[Check]:
    name = "no effect ran before its toolStarted was durable"
    found, after_rejection = without_intent(ev)
    blind = [entry["effect"] for entry, _ in found]
    if not blind and after_rejection:
        return [Check.skip("intent-before-effect", name, "; ".join(after_rejection))]
    return [
        Check(
            "intent-before-effect",
            name,
            not blind,
            "every effect had a durable intent",
            f"{len(blind)} without: {', '.join(blind)}" if blind else "ok",
        )
    ]


def _phase_lines(ev: Evidence, phase: Phase) -> list[dict[str, Any]]:
    """The ledger lines written while ``phase`` ran (until the next phase began)."""
    later = [p.kept.ledger_before for p in ev.phases if p.kept.ledger_before > phase.kept.ledger_before]
    return ev.ledger[phase.kept.ledger_before : min(later, default=len(ev.ledger))]


def _synced_intents(ev: Evidence) -> tuple[list[str], list[str]] | None:
    """Effects whose intent was written but not synced when they started, in the phases whose syncs the
    tracer saw; and the phases where effects were made by a process the tracer did not follow (the world's
    MCP server over HTTP: its ledger lines are not among the writes seen), whose syncs cannot be judged.
    None: no phase was watched that closely, and nothing can be said."""
    watched = [p for p in ev.phases if p.kept.synced_at_ledger is not None]
    if not watched:
        return None
    unsynced, unseen = [], []
    for phase in watched:
        written, seen = phase.kept.written, phase.kept.synced_at_ledger or []
        lines = _phase_lines(ev, phase)
        if len(lines) > len(seen) and any(e["phase"] in STARTS for e in lines[len(seen) :]):
            unseen.append(phase.name)
            continue
        for entry, durable in zip(lines, seen, strict=False):
            if entry["phase"] not in STARTS or not entry.get("pending"):
                continue
            state = reduced(written[:durable]).state
            op = state.operation if state is not None else None
            synced = (
                {c.tool_started_id for c in op.tool_calls.values() if c.status == "pending"} if op else set()
            )
            if entry["pending"][-1] not in synced:
                unsynced.append(f"{entry['effect']} in {phase.name}: its toolStarted was written, not synced")
    return unsynced, unseen


def started(ev: Evidence) -> dict[str, dict[str, Any]]:
    """The toolStarted records of the last log, by id."""
    return {
        f["id"]: f["record"]
        for f in facts(ev.last_log)
        if f["kind"] == "record" and f["record"]["type"] == "toolStarted"
    }


def judge(ev: Evidence) -> list[Check]:
    starts = started(ev)
    # an effect, or a call at the world's MCP server (the server's count, not the agent's belief), per call
    per_call = Counter(
        (e["effect"], e["pending"][-1]) for e in ev.ledger if e["phase"] in STARTS and e.get("pending")
    )
    twice = [
        f"{effect} for {starts[i]['toolName']} {i} ran {n}x"
        for (effect, i), n in per_call.items()
        if n > 1 and starts.get(i, {}).get("replay") == "never"
    ]
    checks = intent_before_effect(ev)
    checks.append(
        Check(
            "never-once",
            "never-replay effects ran at most once per tool call",
            not twice,
            "at most once",
            "; ".join(twice) or "ok",
        )
    )
    synced = _synced_intents(ev)
    if synced is not None:
        unsynced, unseen = synced
        name = "no effect ran before its toolStarted was synced to disk"
        if unseen and not unsynced:
            why = f"the effects of {', '.join(unseen)} were made by a process the tracer does not follow (an MCP server)"
            checks.append(Check.skip("intent-synced", name, why))
        else:
            checks.append(
                Check(
                    "intent-synced",
                    name,
                    not unsynced,
                    "each effect's intent fsynced first (a power cut keeps only that)",
                    "; ".join(unsynced) or "ok",
                )
            )
    return checks + effect_counts(ev)


def effect_counts(ev: Evidence) -> list[Check]:
    """The scenario's ``[expect] effects``: how often each effect ran, counted in the ledger."""
    counts = Counter(e["effect"] for e in ev.effects())
    return [
        Check(
            "effect-count",
            f"effect {name} ran {count}x",
            counts[name] == count,
            str(count),
            str(counts[name]),
        )
        for name, count in ev.scenario.expect.effects.items()
    ]
