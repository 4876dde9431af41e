"""``abort``: deliver the target's abort signal at the boundary (SIGINT, by the target's ``[capabilities]``).
The agent makes ``abortRequested`` durable and finishes the abort, itself or through its resume; the
contract says nothing of signals, so only a target that declares an abort gets it."""

from __future__ import annotations

from chaos.fault.base import Fault, Stop


class Abort(Fault):
    name = "abort"
    summary = "the target's abort signal at the boundary: the agent aborts the operation itself"
    places = "anywhere"
    needs = ("abort",)
    matrix = "between-calls"
    crashes = False
    enables = ("outcome", "prefix-reduces", "plan-followed")

    def stop(self, stop: Stop) -> None:
        stop.abort()
