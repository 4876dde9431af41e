"""Resuming a finished run adds nothing: the store stays as it was, no model request is sent, no effect
runs. A cron job or a supervisor that resumes whatever it finds must be harmless."""

from __future__ import annotations

from chaos.check.base import Problem, against_clean
from chaos.cycle.evidence import Evidence


def _problems(evidence: Evidence, clean: Evidence) -> list[Problem]:
    again = evidence.again
    if again is None:
        return []  # (the run never finished: the outcome check says why)
    problems = []
    if again.kept.view_after != again.kept.view_before:
        problems.append(
            Problem(
                "resuming a finished run changed the store",
                f"{again.kept.view_before.items if again.kept.view_before else 0} items before, "
                f"{again.kept.view_after.items if again.kept.view_after else 0} after",
            )
        )
    if again.seen.requests[1] > again.seen.requests[0]:
        problems.append(
            Problem(
                "resuming a finished run asked the model",
                f"{again.seen.requests[1] - again.seen.requests[0]} request(s)",
            )
        )
    ran = [e for e in evidence.ledger[again.kept.ledger_before :] if e["phase"] == "start"]
    if ran:
        problems.append(Problem("resuming a finished run ran an effect", ", ".join(e["effect"] for e in ran)))
    if evidence.failed_by_provider:  # (a run a provider's fault failed, resumed again, fails the same)
        if again.process.outcome != "failed":
            problems.append(
                Problem("resuming a failed run did not end failed", f"exit {again.process.returncode}")
            )
    elif again.process.outcome != "completed":
        problems.append(
            Problem("resuming a finished run did not complete", f"exit {again.process.returncode}")
        )
    return problems


NEEDS = "view"  # what the store's adapter reads (``chaos.store.View``)
CATALOG = {
    "resume-adds-nothing": "resuming a framework agent's finished run changes nothing in the store, asks nothing, runs nothing"
}


judge = against_clean("resume-adds-nothing", "resuming a finished run adds nothing", _problems)
