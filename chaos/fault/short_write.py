"""``short-write``: the next write to the log after the boundary writes half its bytes and returns that
count. The process goes on: it must finish the line, or stop and leave a torn tail for its resume."""

from __future__ import annotations

from chaos.fault.base import Arming, FailingCalls, Fault, Stop


class ShortWrite(Fault):
    name = "short-write"
    summary = "the next write to the log returns a short count; the agent must finish it or stop"
    matrix = "each-write"
    in_recovery = "first-write"
    traced = True
    crashes = False
    enables = ("final-reduces",)

    def arm(self, arming: Arming) -> None:
        arming.fail_syscalls(FailingCalls(frozenset({"write"}), None, once=True))

    def stop(self, stop: Stop) -> None:
        stop.go_on()
