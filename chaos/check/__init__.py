"""The checks of one crash cycle, one module per concern, each pure over the cycle's ``Evidence``
(a session log's, or a framework store's: each concern says which it reads).

Each concern module declares its checks (``CATALOG``: id -> what it
guarantees) next to the code that judges them (``judge``). ``CONCERNS`` is
the order checks are reported in, causes before symptoms: the crash, a
framework's replay of it, then the processes (a hang explains much), the writers, the log's structure, what
recovery did, effects, requests and bills, what each request said, other oracles. The first failing
check names a failure (``chaos.triage``). A cause that failed makes certain
later checks its symptoms (``SYMPTOMS``): they are reported as not judged,
naming the cause, so one cause is one failure (etcd's ``validate/`` does the
same). Every check has a test that makes it fail (``tests/test_fail_table.py``)
and legal variants of the agents that pass it (``tests/test_legal_variants.py``).
"""

from __future__ import annotations

from dataclasses import replace

from chaos.check import (
    approval,
    crash,
    damage,
    declared,
    durable_call,
    effects,
    expected,
    finished,
    inputs,
    log,
    mcp,
    oracles,
    order,
    output_once,
    paired,
    processes,
    recovery,
    replay,
    request_context,
    requests,
    same_outcome,
    writers,
)
from chaos.check.base import Check
from chaos.cycle.evidence import Evidence

# Each concern says what it reads (``NEEDS``): the session contract's facts ("facts"), what a store's adapter
# reads of it ("view", with the uninterrupted run of the same scenario), or what the world saw of any agent
# ("world": its requests, effects, processes and files).
CONCERNS = (
    crash,
    replay,
    processes,
    damage,
    writers,
    log,
    recovery,
    effects,
    mcp,
    durable_call,
    declared,
    output_once,
    order,
    paired,
    requests,
    same_outcome,
    inputs,
    approval,
    expected,
    finished,
    request_context,
    oracles,
)
CATALOG = {check_id: line for concern in CONCERNS for check_id, line in concern.CATALOG.items()}
ORDER = {check_id: n for n, check_id in enumerate(CATALOG)}

# cause -> the checks whose failure it explains (they read a run the cause cut short or muddled)
SYMPTOMS = {
    "timeout": {
        "plan-followed",
        "blocked-stops",
        "blocked-appends-nothing",
        "outcome",
        "idle-terminal",
        "effect-count",
        "again-appends-nothing",
    },
    "requests-valid": {"outcome", "blocked-reason", "effect-count"},  # a refused request fails the step
    # an answer never delivered whole, taken as one: the run ends on it (completed where failed was due,
    # the effects it would have led to never run)
    "answer-delivered": {"outcome", "effect-count"},
    # an effect that ran before its intent was durable leaves a prefix without that intent: a scenario's
    # hand-written plan for the crash during the effect cannot match it (one bug, one failure)
    "intent-before-effect": {"prefix-plan"},
    # a resume that started the run over: the call it dropped (and the request the provider refused for
    # it), the finished run it changed again, are that
    "inputs-once": {
        "effects-as-declared",
        "store-consistent",
        "requests-valid",
        "same-outcome",
        "resume-adds-nothing",
    },
    # a replay that failed stops the run: a resume that never ends (or fails the workflow, where the app
    # says so), the outcome, the store, the effects a finished run would have
    "replay-deterministic": {
        "timeout",
        "same-outcome",
        "resume-adds-nothing",
        "store-consistent",
        "effects-as-declared",
        "output-once",
    },
    "one-writer": {
        "append-only",
        "final-reduces",
        "plan-followed",
        "outcome",
        "idle-terminal",
        "again-appends-nothing",
    },
}


# What is judged of a case whose store a fault damaged at rest: the crash, the processes, and what the
# resume made of the damage; every other check holds a recovery to the crash prefix the damage changed.
AT_REST = (crash, processes, damage)


def check_all(ev: Evidence) -> list[Check]:
    """Every check of the cycle, in catalog order, symptoms of a failed cause not judged."""
    reads = ("facts", "world") if ev.facts else ("view", "world")
    hit = damage.damaged(ev)
    checks = sorted(
        (
            check
            if hit is None or concern in AT_REST
            else replace(
                check,
                ok=True,
                unjudged="the store was damaged at rest (damage-not-silent judges its recovery)",
            )
            for concern in CONCERNS
            if concern is not oracles and concern.NEEDS in reads
            for check in concern.judge(ev)
        ),
        key=lambda c: ORDER[c.id],
    )
    return symptoms_of_causes(checks)


def symptoms_of_causes(checks: list[Check]) -> list[Check]:
    failed = [c for c in checks if not c.ok and c.id in SYMPTOMS]
    out = []
    for check in checks:
        cause = next((c for c in failed if check.id in SYMPTOMS[c.id] and not check.ok), None)
        out.append(
            replace(check, ok=True, unjudged=f"a symptom of {cause.id} ({cause.name}), which failed")
            if cause is not None
            else check
        )
    return out


__all__ = ["CATALOG", "CONCERNS", "Check", "check_all"]
