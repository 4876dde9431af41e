"""``abort-then-kill``: the abort signal at the boundary, then SIGKILL at the next fact the agent commits
(its ``abortRequested``, say). A durable abort that no process finished reaches a resume: the resume-side
abort rows of the decision tree (close the attempt, interrupted and aborted results, finish aborted)."""

from __future__ import annotations

from chaos.fault.base import Fault, Stop


class AbortThenKill(Fault):
    name = "abort-then-kill"
    summary = "the abort signal, then SIGKILL at the next fact committed: an abort the resume must finish"
    needs = ("abort",)
    lands_after = 1  # its abortRequested, then the kill
    enables = ("plan-followed", "idle-terminal")

    def stop(self, stop: Stop) -> None:
        stop.abort_then_kill()
