"""Resuming a finished run adds nothing: the store stays as it was, no model request is sent, no effect
runs. A cron job or a supervisor that resumes whatever it finds must be harmless."""

from __future__ import annotations

from chaos.check.store.base import Problem, StoreCheck
from chaos.cycle.store import StoreEvidence
from chaos.process.phase import PhaseKind


def judge(evidence: StoreEvidence, clean: StoreEvidence) -> list[Problem]:
    again = next((p for p in evidence.phases if p.kind is PhaseKind.AGAIN), None)
    if again is None:
        return []  # (the run never finished: the outcome check says why)
    problems = []
    if again.after != again.before:
        problems.append(
            Problem(
                "resuming a finished run changed the store",
                f"{again.before.items} items before, {again.after.items} after",
            )
        )
    if again.requests[1] > again.requests[0]:
        problems.append(
            Problem(
                "resuming a finished run asked the model",
                f"{again.requests[1] - again.requests[0]} request(s)",
            )
        )
    ran = [e for e in evidence.ledger[again.ledger_before :] if e["phase"] == "start"]
    if ran:
        problems.append(Problem("resuming a finished run ran an effect", ", ".join(e["effect"] for e in ran)))
    if again.outcome != "completed":
        problems.append(Problem("resuming a finished run did not complete", f"exit {again.returncode}"))
    return problems


CHECK = StoreCheck("resume-adds-nothing", "resuming a finished run adds nothing", judge)
