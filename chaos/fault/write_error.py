"""``write-error``: the next write to the store after the boundary fails with EIO, once: a transient I/O
error (a flaky disk or network volume, a write a storage layer refused and later accepts). The process
goes on and its later writes succeed. An agent, or the framework under it, that retries must retry the
write too: a step whose effect ran and whose record failed once must not be left half-recorded, nor taken
as recorded."""

from __future__ import annotations

from chaos.fault.base import EIO, Failing, FailingCalls, Fault, Injection, Stop


class WriteError(Fault):
    name = "write-error"
    summary = "the next write to the store fails with EIO, once; its later writes succeed"
    places = "anywhere"  # after a durable fact or commit, or once an effect the world holds is done
    traced = True
    on_stores = True  # a database, its WAL or journal, as a session log
    on_server_stores = False
    crashes = False
    enables = ("intent-before-effect", "store-consistent")

    def stop(self, stop: Stop) -> Injection:
        stop.let_go()  # an effect or a request the world holds goes on: the fault is the disk's
        return Failing(FailingCalls(frozenset({"write", "writev"}), EIO, once=True))
