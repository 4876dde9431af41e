"""``disk-full``: from the boundary on, every write to the session log fails with ENOSPC (the call is not
made; the agent sees the error). The process is not killed: it must stop by itself without acting on a
fact that did not become durable (no effect, no request, no later fact built on it). The disk has room
again for the resume."""

from __future__ import annotations

from chaos.fault.base import ENOSPC, Failing, FailingCalls, Fault, Injection, Stop


class DiskFull(Fault):
    name = "disk-full"
    summary = "from the boundary on, the store's writes fail with ENOSPC; the agent must stop by itself"
    matrix = "each-write"
    in_recovery = "first-write"
    traced = True
    on_stores = True  # a database, its WAL or journal, as a session log
    on_server_stores = False
    crashes = False
    enables = ("intent-before-effect", "requests-attempted", "final-reduces")

    def stop(self, stop: Stop) -> Injection:
        return Failing(
            FailingCalls(frozenset({"write", "writev"}), ENOSPC)
        )  # the process goes on, its calls failing from here
