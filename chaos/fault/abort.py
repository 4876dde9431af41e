"""``abort``: deliver the target's abort signal at the boundary (SIGINT, by the target's ``[capabilities]``).
A session-log agent makes ``abortRequested`` durable and finishes the abort, itself or through its resume;
the contract says nothing of signals, so only a target that declares an abort gets it. A framework agent
runs its own code on it (Python's ``KeyboardInterrupt`` through the framework's handlers) and stops; its
resume recovers what the store holds. A boundary the world holds (an effect at its gate, a request) is let
go after a moment, as the real tool or provider would go on meanwhile: a process that waits for its
threads' work before it exits is not stuck on chaos's hold."""

from __future__ import annotations

from chaos.fault.base import After, Fault, Injection, Stop

GRACE = 2.0  # seconds the world keeps holding its boundary after the signal


class Abort(Fault):
    name = "abort"
    summary = "the target's abort signal at the boundary: the agent aborts the operation itself"
    places = "anywhere"
    needs = ("abort",)
    on_stores = True
    matrix = "between-calls"
    in_recovery = "retry-request"  # a step's retry: the recovery retries the attempt a crash left unknown
    crashes = False
    enables = ("outcome", "prefix-reduces", "plan-followed")

    def stop(self, stop: Stop) -> Injection:
        stop.abort()
        return After(GRACE, lambda stop: stop.let_go())
