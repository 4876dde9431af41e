"""``pause``: Jepsen's pause nemesis. The writer is frozen (SIGSTOP) at its boundary, a second process
resumes the session, then the first goes on. The contract allows one writer: the second must refuse the
session or wait for its lock (chaos then lets the first go on), and the first must not write once the
second has.

On a framework's store on a database server it is two executors on one store: a process that looks dead
(a lease expired, a machine paused, an old replica still draining in a rolling restart) while another
recovers its run, and then wakes. The framework's own promises are judged across both: the effects as the
target declares them, the run ended once both stop. A store in files here cannot be watched while its
writer is frozen (its commits are the tracer's, and a traced tree cannot stay stopped for another's turn);
a server store's are the relay's."""

from __future__ import annotations

from chaos.fault.base import Fault, Stop
from chaos.fault.postgres import server_store_kinds


class PausedWriter(Fault):
    name = "paused-writer"
    summary = "freeze the writer at its boundary while a second process resumes the session (two writers)"
    crashes = False
    hands_on = True
    enables = ("one-writer",)
    on_stores = True

    def unavailable_on_store(self, commit: str = "sqlite", server: str | None = None) -> str | None:
        if commit == "wire":
            return None
        return (
            "the paused-writer fault freezes the writer untraced, and a store in files here commits where "
            f"only the tracer sees it (on a database server the relay sees every commit: [store] kind = "
            f"{server_store_kinds()})"
        )

    def stop(self, stop: Stop) -> None:
        stop.freeze()
