"""The run's code replays deterministically: a framework that recovers by running the workflow's code
again over its history (Temporal) must take the same steps it recorded. A workflow that reads the world,
the clock or a process's own state in its code, not in an activity, takes another path when a new worker
replays it after a crash; Temporal then fails the replay (``TMPRL1100``) and the run stops going on, the
worker retrying a task that cannot succeed. Judged on what the store recorded of its replays (each
non-deterministic one, with Temporal's words); not judged on a store that records no replay."""

from __future__ import annotations

from chaos.check.base import NotJudged, Problem, against_clean
from chaos.cycle.evidence import Evidence


def _problems(evidence: Evidence, clean: Evidence) -> list[Problem]:
    replays = evidence.view.replays
    if replays is None:
        raise NotJudged("the store records no replay of the run's code (a workflow engine's history does)")
    return [
        Problem("a replay of the workflow after a restart was not deterministic", said) for said in replays
    ]


NEEDS = "view"  # what the store's adapter reads (``chaos.store.View``)
CATALOG = {"replay-deterministic": "the workflow's code replays as it ran: the same steps after a restart"}


judge = against_clean(
    "replay-deterministic", "the workflow's code replays as it ran after a restart", _problems
)
