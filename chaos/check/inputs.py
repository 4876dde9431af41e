"""The resumed run holds each input once: the store, once everything ran (a resume of the finished run
too), holds each input as often as the uninterrupted run's store held it when that run ended. A resume
that starts the run over (it sends the prompt again, as a retry does) duplicates the user's input, and
the model answers a conversation nobody had; the run still completes. What that restart does next (a
call it drops, a finished run it changes) is its symptom (``chaos.check.SYMPTOMS``)."""

from __future__ import annotations

from collections import Counter

from chaos.check.base import NotJudged, Problem, against_clean
from chaos.cycle.evidence import Evidence
from chaos.store.base import View


def _problems(evidence: Evidence, clean: Evidence) -> list[Problem]:
    owed = Counter(
        (clean.ended.kept.view_after or View()).inputs
    )  # (as the run ended, before it was resumed again)
    if not owed:
        raise NotJudged("the store's adapter reads no input from the uninterrupted run's store")
    held = Counter(evidence.view.inputs)
    return [
        Problem(
            "the resumed run holds an input more often than the uninterrupted run",
            f"{text[:80]!r} {n} times, not {owed[text]}",
        )
        for text, n in held.items()
        if n > owed[text]
    ]


NEEDS = "view"  # what the store's adapter reads (``chaos.store.View``)
CATALOG = {
    "inputs-once": "a framework agent's resumed run holds each user input as often as the uninterrupted run does"
}


judge = against_clean("inputs-once", "the resumed run holds each input once", _problems)
