"""What a power cut would keep: the bytes of the log the agent made durable by its own sync calls.

SIGKILL leaves the page cache intact, so every byte an agent wrote survives
it; a power cut keeps only what reached the disk. The tracer stops the agent
at the return of every sync call, so chaos knows how much of the log was
durable at each moment:

- ``fsync``/``fdatasync`` of the log, and ``sync``/``syncfs``, returning 0: all
  of the log written so far;
- a write through a descriptor opened ``O_SYNC`` or ``O_DSYNC``, returning: all
  of it too;
- ``sync_file_range``: nothing. It flushes no metadata, so for a log that grows
  by appending, the new length (and so the new bytes) is not durable
  (``sync_file_range(2)``).

Modelled: the log file's data. Not modelled: directory entries (a new log
whose directory was never synced survives here), the other files the agent
writes, and reordering between files; the README compares this with ALICE and
CrashMonkey, whose models cover those.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from chaos.process import ptrace

O_DSYNC = 0o10000  # also set within O_SYNC


def _flags(pid: int, fd: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/fdinfo/{fd}").read_text().splitlines():
            if line.startswith("flags:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return 0


class Durability:
    """Follows one phase's syncs; ``durable`` is the log's durable length, ``at_ledger`` the durable
    length at each write to the effect ledger (each effect's start and end, in order)."""

    def __init__(self, log: Callable[[], str | None], ledger: str, start: int) -> None:
        self.log, self.ledger = log, ledger
        self.durable = start
        self.at_ledger: list[int] = []
        self._syncing: dict[int, str] = {}  # pid -> the file its fsync/fdatasync names
        self._sync_writes: set[int] = set()  # pids writing the log through an O_SYNC/O_DSYNC descriptor

    def _log_size(self) -> int:
        path = self.log()
        try:
            return os.stat(path).st_size if path else self.durable
        except FileNotFoundError:
            return self.durable

    def observe(self, pid: int, tag: int) -> bool:
        """Called at each trap with the process stopped; True asks for a stop when the call returns."""
        if tag == ptrace.SYNC_ENTRY:
            self._syncing[pid] = ptrace.call_file(pid)[1]
        elif tag in (ptrace.SYNC, ptrace.ALL):
            path = self._syncing.pop(pid, None)
            if ptrace.call_result(pid) == 0 and (tag == ptrace.ALL or path == self.log()):
                self.durable = self._log_size()
        elif tag == ptrace.RANGE:
            self._syncing.pop(pid, None)  # flushes no metadata: an appended log gains nothing
        elif tag in (ptrace.WRITE, ptrace.WRITEV):
            fd, path, _ = ptrace.call_file(pid)
            if path == self.ledger:
                self.at_ledger.append(self.durable)
            elif path and path == self.log() and _flags(pid, fd) & O_DSYNC:
                self._sync_writes.add(pid)
                return True
        elif tag == ptrace.AFTER and pid in self._sync_writes:
            self._sync_writes.discard(pid)
            if ptrace.call_result(pid) > 0:
                self.durable = self._log_size()
        return False
