"""``power-loss``: the machine stops. After the SIGKILL the log keeps only what the agent's own syncs made
durable (``chaos.process.durability``), and, under the strict POSIX persistence model, a log created
since the last sync of its directory is lost whole. Effects are judged against the synced log."""

from __future__ import annotations

from chaos.fault.base import Fault, Stop


class PowerLoss(Fault):
    name = "power-loss"
    summary = "a power cut: SIGKILL, then only the log's synced bytes (and synced directory entry) stay"
    places = "anywhere"
    on_stores = True
    traced = True
    cuts_to_synced = True
    matrix = "durable"
    in_recovery = "each-write"
    enables = ("intent-synced", "prefix-reduces")

    def stop(self, stop: Stop) -> None:
        stop.kill()

    def unavailable_on_store(self, commit: str = "sqlite", server: str | None = None) -> str | None:
        if commit == "wire":
            return (
                "a power cut of the agent's machine leaves a store on a database server as the server "
                "committed it, the same as the kill fault there (the server's own crash is postgres-crash)"
            )
        return super().unavailable_on_store(commit, server)
