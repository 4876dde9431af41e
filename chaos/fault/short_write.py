"""``short-write``: the next write to the log after the boundary writes half its bytes and returns that
count. The process goes on: it must finish the line, or stop and leave a torn tail for its resume."""

from __future__ import annotations

from chaos.fault.base import Failing, FailingCalls, Fault, Injection, Stop


class ShortWrite(Fault):
    name = "short-write"
    summary = "the next write to the store returns a short count; the agent must finish it or stop"
    matrix = "each-write"
    in_recovery = "first-write"
    traced = True
    on_stores = True  # a database, its WAL or journal, as a session log
    on_server_stores = False
    crashes = False
    enables = ("final-reduces",)

    def stop(self, stop: Stop) -> Injection:
        return Failing(
            FailingCalls(frozenset({"write"}), None, once=True)
        )  # the process goes on, its calls failing from here
