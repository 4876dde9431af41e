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

Modelled: the log file's data, and every directory entry on the way to it.
Under the strict POSIX persistence model (the default), each entry the phase
created (the log, and each directory a ``mkdir -p`` made for it) survives a
power cut only once its parent directory was synced while it was there (an
``fsync`` of the directory; ALICE's and LazyFS's treatment of a new entry), and
the log survives only if every entry on its path did; under ``ext4-ordered``, a
sync of the log makes its path durable too (what ext4's ordered journal does in
practice). After a sync that failed (``fsync-error``), the kernel may have
dropped the dirty pages: nothing written since the last good sync counts,
whatever later syncs return. Not modelled: the agent's other files and
reordering between files; docs/crash-model.md compares this with ALICE, CrashMonkey and
LazyFS, whose models cover those.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from chaos.process import ptrace
from chaos.process.phase import Kept

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
    """Follows one phase's syncs; ``durable`` is the log's durable length (0 while an entry on its path
    the phase created, under ``root``, the workspace, is not durable), ``at_ledger`` the durable length at
    each write to the effect ledger (each effect's start and end, in order). ``pattern`` is the log's
    glob: the directories on its way that exist when the phase begins are durable already."""

    def __init__(
        self,
        log: Callable[[], str | None],
        ledger: str,
        start: int,
        persistence: str = "posix",
        root: str | None = None,
        pattern: str = "",
    ) -> None:
        self.log, self.ledger, self.persistence = log, ledger, persistence
        self.synced = start  # the log's bytes made durable by its syncs (whether its entries are or not)
        self.root = os.path.realpath(root) if root else None
        self._path: str | None = None  # the log's real path, once it exists
        # The entries on the log's path known durable: what existed when the phase began (the log, if it
        # had committed bytes, and the directories on the way to it), then each entry a sync of its
        # directory, or of everything, made durable while it was there.
        self._entries: set[str] = set()
        if start > 0:
            self._entries.add(self._real_log() or "")
        if self.root:
            self._entries |= _directories_of(self.root, os.path.dirname(pattern))
        self.dropped = False  # a sync failed: nothing more becomes durable
        self.at_ledger: list[int] = []
        self._syncing: dict[int, str] = {}  # pid -> the file its fsync/fdatasync names
        self._sync_writes: set[int] = set()  # pids writing the log through an O_SYNC/O_DSYNC descriptor

    @property
    def durable(self) -> int:
        return self.synced if self.lost_entry() is None else 0

    def _real_log(self) -> str | None:
        """The log's real path, found once: it is read at every ledger write and model request."""
        if self._path is None:
            found = self.log()
            self._path = os.path.realpath(found) if found else None
        return self._path

    def _on_path(self, log: str) -> list[str]:
        """The entries from the workspace down to the log: each directory (the outermost first), then the
        log itself."""
        out, here = [log], os.path.dirname(log)
        while self.root and here.startswith(self.root + os.sep):
            out.append(here)
            here = os.path.dirname(here)
        return out[::-1]

    def lost_entry(self) -> str | None:
        """The entry on the log's path (relative to the workspace) a power cut would lose now, taking the
        whole log with it (a directory the phase created, the outermost first, or the log's own); None
        when every one is durable."""
        log = self._real_log()
        lost = next((e for e in self._on_path(log) if e not in self._entries), None) if log else None
        return os.path.relpath(lost, self.root) if lost and self.root else lost

    def _directory_synced(self, directory: str) -> None:
        """``directory`` synced: the entries in it now are durable (a new log's among them)."""
        try:
            self._entries |= {os.path.join(directory, name) for name in os.listdir(directory)}
        except OSError:
            return

    def _path_durable(self) -> None:
        """Every entry on the log's path made durable at once (``sync``/``syncfs``, or ext4's journal)."""
        log = self._real_log()
        if log:
            self._entries |= set(self._on_path(log))

    def drop_unsynced(self) -> None:
        """A sync of the log failed: what was not synced before it never will be (fsync-error)."""
        self.dropped = True

    def _synced(self) -> None:
        if self.dropped:
            return
        self.synced = self._log_size()
        if self.persistence == "ext4-ordered":
            self._path_durable()

    def _log_size(self) -> int:
        path = self.log()
        try:
            return os.stat(path).st_size if path else self.synced
        except FileNotFoundError:
            return self.synced

    def observe(self, pid: int, tag: int) -> bool:
        """Called at each trap with the process stopped; True asks for a stop when the call returns."""
        if tag == ptrace.SYNC_ENTRY:
            self._syncing[pid] = ptrace.call_file(pid)[1]
        elif tag in (ptrace.SYNC, ptrace.ALL):
            path = self._syncing.pop(pid, None)
            log = self.log()
            if ptrace.call_result(pid) != 0:
                return False
            if tag == ptrace.ALL or path == log:
                self._synced()
            if tag == ptrace.ALL:
                self._path_durable()
            elif path and os.path.isdir(path):
                self._directory_synced(os.path.realpath(path))
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
                self._synced()
        return False


class Model(Protocol):
    """How one phase's store becomes durable, as the tracer sees it, and what a power cut keeps of it.
    Each store has one, chosen once per phase: a session log's (``LogModel``: its synced length and the
    directory entries on its path) or a framework store's (``chaos.process.commits.Commits``: its commits,
    by WAL frame, rollback journal or line, and each file as of its last sync)."""

    def observe(self, pid: int, tag: int) -> tuple[bool, bool]:
        """At a trap, with the process stopped: (stop the call again when it returns, a commit of the
        store was just completed)."""

    def holds(self, path: str) -> bool:
        """``path`` is one of the store's files (a disk fault fails the calls on them)."""

    def drop_unsynced(self) -> None:
        """A sync of the store failed: what was not synced before it never will be (fsync-error)."""

    def keep(self, kept: Kept, cut: bool) -> None:
        """What the phase left durable, read the moment its process is gone; a power cut (``cut``)
        first leaves only what was synced."""

    def record(self, kept: Kept, traced: bool) -> None:
        """What the model saw during the phase, once it is over (``traced``: every trap was seen)."""


class LogModel:
    """A session log's model: its durable length (``Durability``, where the tracer sees its syncs) and the
    log's bytes, read through ``log`` (the bytes now), cut by ``truncate`` (to a length)."""

    def __init__(
        self,
        path: Callable[[], str],
        log: Callable[[], bytes],
        truncate: Callable[[int], None],
        durability: Durability | None,
    ) -> None:
        self.path, self.log, self.truncate, self.durability = path, log, truncate, durability

    def observe(self, pid: int, tag: int) -> tuple[bool, bool]:
        return (self.durability.observe(pid, tag) if self.durability is not None else False), False

    def holds(self, path: str) -> bool:
        return bool(path) and path == self.path()

    def drop_unsynced(self) -> None:
        if self.durability is not None:
            self.durability.drop_unsynced()

    def keep(self, kept: Kept, cut: bool) -> None:
        durability = self.durability
        if durability is not None and cut:
            lost, written = durability.lost_entry(), self.log()
            if durability.durable < len(written):
                self.truncate(durability.durable)  # only synced bytes stay
            kept.log_written = written
            if lost and durability.synced:  # it synced its bytes: the entry took them
                kept.lost_entry = lost
        kept.log_after = self.log()

    def record(self, kept: Kept, traced: bool) -> None:
        if self.durability is not None:
            kept.durable, kept.synced_at_ledger = self.durability.durable, self.durability.at_ledger


def _directories_of(root: str, pattern: str) -> set[str]:
    """The directories between ``root`` and the log's directory ``pattern`` (a glob) that exist now, each
    by its real path: what a phase starts with, so only the entries it creates are judged."""
    found, prefixes = set(), [root]
    for part in os.path.relpath(pattern, root).split(os.sep) if pattern.startswith(root + os.sep) else []:
        prefixes = [p for base in prefixes for p in glob.glob(os.path.join(glob.escape(base), part))]
        prefixes = [os.path.realpath(p) for p in prefixes if os.path.isdir(p)]
        found |= set(prefixes)
    return found
