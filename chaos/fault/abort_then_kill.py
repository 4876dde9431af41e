"""``abort-then-kill``: the abort signal at the boundary, then SIGKILL at the next fact the agent commits
(its ``abortRequested``, say). A durable abort that no process finished reaches a resume: the resume-side
abort rows of the decision tree (close the attempt, interrupted and aborted results, finish aborted). On a
framework's store, SIGKILL at its next commit: whatever its handlers made durable on the signal, and no
more."""

from __future__ import annotations

from chaos.fault.base import FactWatch, Fault, Injection, Stop, Trap


class KillAtNextFact(Injection):
    """The abort was delivered: SIGKILL at the next fact the agent commits (seen at a trap, or at a tick
    where the target is polled), or at a store's next commit (``watch`` None: told by ``committed``)."""

    def __init__(self, watch: FactWatch | None) -> None:
        self.watch = watch

    def _kill(self, stop: Stop) -> None:
        if not stop.killed:
            stop.land()  # the fault lands at its kill
            stop.kill()

    def _look(self, stop: Stop) -> None:
        if self.watch is not None and self.watch.poll():
            self._kill(stop)

    def committed(self, stop: Stop) -> None:
        if self.watch is None:
            self._kill(stop)

    def at_trap(self, stop: Stop, trap: Trap) -> bool:
        if trap.kind != "sync-entry":  # (a sync is judged when it returns)
            self._look(stop)
        return False

    def tick(self, stop: Stop) -> None:
        if not stop.exact:
            self._look(stop)


class AbortThenKill(Fault):
    name = "abort-then-kill"
    summary = "the abort signal, then SIGKILL at the next fact committed: an abort the resume must finish"
    needs = ("abort",)
    on_stores = True
    lands_after = 1  # its abortRequested, then the kill
    enables = ("plan-followed", "idle-terminal")

    def stop(self, stop: Stop) -> Injection:
        watch = stop.watch_facts()
        stop.abort()
        return KillAtNextFact(watch)
