"""``kill``: SIGKILL the agent's whole process tree at the boundary. A crash: every byte the agent wrote
stays (the page cache survives a process), and a resume must recover from the log as it is."""

from __future__ import annotations

from chaos.fault.base import Fault, Stop


class Kill(Fault):
    name = "kill"
    summary = "SIGKILL the whole process tree at the boundary (every byte written stays)"
    places = "anywhere"
    on_stores = True
    matrix = "every"
    enables = ("plan-followed", "final-reduces", "idle-terminal", "never-once", "intent-before-effect")

    def stop(self, stop: Stop) -> None:
        stop.kill()
