"""``torn``: let the agent's next write to the log through half-way, then SIGKILL: a real torn tail the
agent wrote itself, which a resume must truncate before appending (section 2)."""

from __future__ import annotations

from chaos.fault.base import Fault, Stop


class Torn(Fault):
    name = "torn"
    summary = "the next write to the log goes through half-way, then SIGKILL (a torn tail)"
    traced = True
    enables = ("final-reduces",)

    def stop(self, stop: Stop) -> None:
        stop.tear()
