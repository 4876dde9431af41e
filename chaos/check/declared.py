"""Effects as the target declared them (``[store] semantics``), counted by the effect ledger.

``at-most-once``: each effect (a name and what it acted on) starts once at most,
whatever crashed; a repeat under a new call id (the store lost the call, and the
model asked anew) is another cause than the same call run again. ``at-least-once``: it may run again, but every run carries one
tool call id (an idempotency key can make the runs one), and an effect the
uninterrupted run completed is completed here too."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from chaos.check.base import Problem, against_clean, effect_key, phase_of
from chaos.cycle.evidence import Evidence


def _runs(evidence: Evidence) -> dict[str, list[tuple[int, dict[str, Any]]]]:
    runs: dict[str, list[tuple[int, dict[str, Any]]]] = defaultdict(list)
    for line, entry in enumerate(evidence.ledger):
        if entry["phase"] == "start":
            runs[effect_key(entry)].append((line, entry))
    return runs


def _problems(evidence: Evidence, clean: Evidence) -> list[Problem]:
    problems = []
    declared = evidence.target.store_spec.semantics
    for key, runs in _runs(evidence).items():
        where = ", ".join(
            f"{phase_of(evidence, line).name} (call {e.get('callId', '?')})" for line, e in runs
        )
        name = runs[0][1]["effect"]
        ids = {e.get("callId") for _, e in runs}
        if declared == "at-most-once" and len(runs) > 1:
            anew = (
                ", again under a new call id (the call was lost, the model asked anew)"
                if len(ids) > 1
                else ""
            )
            problems.append(
                Problem(
                    f"effect {name} ran more than once (at most once declared){anew}", f"{key} ran in {where}"
                )
            )
        if declared == "at-least-once" and len(ids) > 1:
            problems.append(
                Problem(
                    f"effect {name} repeated under a new call id (at least once with a stable id declared)",
                    f"{key} ran in {where}",
                )
            )
    # a run that never ended, or that a provider's fault failed, owes nothing more (same-outcome's to say)
    finished = not evidence.ended.process.timed_out and not evidence.failed_by_provider
    if declared == "at-least-once" and evidence.began and finished:
        done = {effect_key(e) for e in evidence.effects("done")}
        for entry in clean.effects("done"):
            if effect_key(entry) not in done:
                problems.append(
                    Problem(
                        f"effect {entry['effect']} never completed (at least once declared)",
                        f"the uninterrupted run completed {effect_key(entry)}; after the crash it never did",
                    )
                )
    return problems


NEEDS = "view"  # what the store's adapter reads (``chaos.store.View``)
CATALOG = {
    "effects-as-declared": "effects run as the target declares in [store] semantics (at most once, or at least once with one call id)"
}


judge = against_clean(
    "effects-as-declared", "effects run as the target declares (at most / at least once)", _problems
)
