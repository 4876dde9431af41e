"""``pause``: Jepsen's pause nemesis. The writer is frozen (SIGSTOP) at its boundary, a second process
resumes the session, then the first goes on. The contract allows one writer: the second must refuse the
session or wait for its lock (chaos then lets the first go on), and the first must not write once the
second has."""

from __future__ import annotations

from chaos.fault.base import Fault, Stop


class PausedWriter(Fault):
    name = "paused-writer"
    summary = "freeze the writer at its boundary while a second process resumes the session (two writers)"
    crashes = False
    hands_on = True
    enables = ("one-writer",)

    def stop(self, stop: Stop) -> None:
        stop.freeze()
