"""The promise durable execution makes: a step whose output was durable is not run again.

Under ``at-least-once`` (``effects-as-declared``) an effect may run again with its call id, and an
idempotency key can make the runs one; that is what a crash *before* the output was durable costs. Once
the store holds the call's output (LangGraph's pending writes, DBOS's recorded step, Temporal's completed
activity), a recovery resumes from it: running the effect again is a framework that did not read what it
made durable. Judged across phases: an effect that starts in a phase while the store the phase began from
(the crash prefix, as a power cut left it) held its call's output. A target whose framework documents a
weaker promise declares it (``[store] rerun_after_output = true``); under ``at-most-once`` every rerun is
``effects-as-declared``'s."""

from __future__ import annotations

from chaos.check.base import NotJudged, Problem, against_clean, effect_key, phase_of, without_call_ids
from chaos.cycle.evidence import Evidence


def _problems(evidence: Evidence, clean: Evidence) -> list[Problem]:
    spec = evidence.target.store_spec
    if spec.semantics != "at-least-once":
        raise NotJudged("at most once declared: every run again is effects-as-declared's")
    if spec.rerun_after_output:
        raise NotJudged("the target declares its framework may run a step again after its output was durable")
    problems, seen = [], False
    for line, entry in enumerate(evidence.ledger):
        if entry["phase"] != "start" or "callId" not in entry:
            continue
        seen = True
        phase = phase_of(evidence, line)
        began = phase.kept.view_before.outputs if phase.kept.view_before is not None else ()
        if entry["callId"] in {o.call_id for o in began}:
            problems.append(
                Problem(
                    f"effect {entry['effect']} ran again after its output was durable in the store",
                    f"{effect_key(entry)} (call {entry['callId']}) started in {phase.name}, which began from a "
                    "store holding that call's output",
                )
            )
    if not seen and evidence.effects():
        raise NotJudged(without_call_ids(evidence))
    return problems


NEEDS = "view"  # what the store's adapter reads (``chaos.store.View``)
CATALOG = {
    "output-once": "under at least once, no effect runs again once its tool call's output is durable in the store"
}


judge = against_clean("output-once", "no effect runs again once its call's output is durable", _problems)
