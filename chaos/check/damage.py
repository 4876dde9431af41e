"""A store damaged at rest between the crash and the resume (``bit-flip``): the resume refuses it or
recovers it, never goes on silently from an older state.

What the crash left durable is known: the crash prefix was saved before the disk changed it. A resume
that refuses (it ends blocked or failed, or exits with a status of its own, having run no effect) is
right: it said so. A resume that goes on is right only if what it recovered keeps every output, tool
call and user input that was durable and runs no effect again whose output was durable. Going on from
the older state (a corrupt last line dropped as if torn, a WAL read only up to the frame before the
broken one, an unreadable checkpoint skipped) runs those effects again, or loses those outputs, calls
and inputs, without a word. While the store is damaged, this check judges the
recovery; the checks that hold a recovery to the crash prefix do not (``chaos.check.check_all``)."""

from __future__ import annotations

from dataclasses import dataclass

from chaos.check.base import Check, phase_of
from chaos.contract.reading import facts
from chaos.cycle.evidence import Evidence
from chaos.process.phase import Phase
from chaos.store import View

NEEDS = "world"  # a session log's facts or a store's view, whichever the target keeps
CATALOG = {
    "damage-not-silent": "a store damaged at rest is refused, or recovered without running an effect "
    "again or losing an output, a call or an input that was durable; never resumed silently from an older state"
}
NAME = "a damaged store is refused or recovered, not resumed silently from an older state"
EXPECTED = "refused, or recovered with every durable output, call and input, and no effect run again"


def damaged(ev: Evidence) -> Phase | None:
    """The crashed phase whose store a fault damaged at rest, if one did."""
    return next((p for p in ev.phases if p.landing.damaged), None)


@dataclass(frozen=True)
class Held:
    """What a store held durable that a recovery must keep: each tool call's output (call id -> its
    content), the tool calls, and the user's inputs."""

    outputs: dict[str, str]
    calls: frozenset[str]
    inputs: tuple[str, ...]


def _log_held(log: bytes) -> Held:
    outputs: dict[str, str] = {}
    calls: set[str] = set()
    inputs: list[str] = []
    for fact in facts(log):
        entry = fact.get("entry")
        message = entry.get("message") if isinstance(entry, dict) else None
        if not isinstance(message, dict):
            continue
        if message.get("role") == "tool":
            outputs[str(message.get("tool_call_id"))] = str(message.get("content"))
        elif message.get("role") == "user":
            inputs.append(str(message.get("content")))
        elif message.get("role") == "assistant" and isinstance(message.get("tool_calls"), list):
            calls.update(str(c.get("id")) for c in message["tool_calls"] if isinstance(c, dict))
    return Held(outputs, frozenset(calls), tuple(inputs))


def _view_held(view: View | None) -> Held:
    if view is None:
        return Held({}, frozenset(), ())
    return Held({o.call_id: o.text for o in view.outputs}, view.call_ids, view.inputs)


def _held(ev: Evidence, phase: Phase | None) -> Held:
    """What ``phase`` left durable (None: the store as the run ended)."""
    if ev.facts:
        return _log_held(ev.final if phase is None else phase.kept.log_after)
    return _view_held(ev.view if phase is None else phase.kept.view_after)


def judge(ev: Evidence) -> list[Check]:
    crashed = damaged(ev)
    if crashed is None:
        fault = ev.scenario.crash.fault if ev.scenario.crash is not None else None
        if fault is not None and "damage-not-silent" in fault.enables and ev.start.landing.reached:
            why = f"{fault.name} found nothing of the store to damage (no complete line, page or frame)"
            return [Check.skip("damage-not-silent", NAME, why)]
        return []
    after = ev.phases[ev.phases.index(crashed) + 1 :]
    if not after:
        return [Check.skip("damage-not-silent", NAME, "nothing resumed the damaged store")]
    first = after[0]
    said = f"the disk changed the store at rest ({crashed.landing.damaged})"
    ran = [(phase_of(ev, n), e) for n, e in enumerate(ev.ledger) if e["phase"] == "start"]
    ran = [(p, e) for p, e in ran if p in after]
    ended, process = first.process.outcome, first.process
    refused = ended in ("blocked", "failed") or (
        ended is None and not (process.killed or process.timed_out) and process.returncode not in (0, None)
    )
    if refused and not any(p is first for p, _ in ran):
        how = ended or f"exit {process.returncode}"
        return [Check("damage-not-silent", NAME, True, EXPECTED, f"{said}; {first.name} refused it ({how})")]
    durable, final = _held(ev, crashed), _held(ev, None)
    again = sorted({str(e["callId"]) for _, e in ran if e.get("callId") in durable.outputs})
    problems = [f"ran again the effect of call {c}, whose output was durable" for c in again]
    problems += [
        f"lost the output of call {c}, which was durable"
        + (f" (it now reads {final.outputs[c][:80]!r})" if c in final.outputs else "")
        for c in sorted(durable.outputs)
        if final.outputs.get(c) != durable.outputs[c]
    ]
    problems += [f"lost tool call {c}, which was durable" for c in sorted(durable.calls - final.calls)]
    if len(final.inputs) < len(durable.inputs):
        problems.append(
            f"lost {len(durable.inputs) - len(final.inputs)} of the user's inputs, which were durable"
        )
    if problems:
        got = f"{said}, and the resume went on from an older state without a word: " + "; ".join(problems)
        return [Check("damage-not-silent", NAME, False, EXPECTED, got, cause="went on from an older state")]
    return [Check("damage-not-silent", NAME, True, EXPECTED, f"{said}; the resume recovered it")]
