"""``fsync-error``: the next ``fsync``/``fdatasync`` of the log after the boundary fails with EIO, and, as
the kernel may (the lesson PostgreSQL learned in 2018), the dirty pages are dropped: once the process is
gone the log keeps only what was synced before the error. After a failed sync an agent must not trust
the unsynced bytes: no effect, no request built on them."""

from __future__ import annotations

from chaos.fault.base import EIO, Failing, FailingCalls, Fault, Injection, Stop


class FsyncError(Fault):
    name = "fsync-error"
    summary = "the next sync of the store fails with EIO and its unsynced bytes are dropped"
    matrix = "each-write"
    in_recovery = "first-write"
    traced = True
    on_stores = True  # a database, its WAL or journal, as a session log
    on_server_stores = False
    crashes = False
    cuts_to_synced = True
    enables = ("intent-synced", "requests-attempted")

    def stop(self, stop: Stop) -> Injection:
        return Failing(
            FailingCalls(frozenset({"sync"}), EIO, once=True, drops_unsynced=True)
        )  # the process goes on, its calls failing from here
