"""Stopping a framework agent exactly at a commit of its store, and seeing what was durable at each effect.

The tracer needs no change: the traps that judge a session log's writes see a
SQLite commit too (a store on a database server commits on the wire: the
world's relay sees it, ``over_wire``, with the agent waiting for the answer).
For a ``sqlite`` store in WAL mode a commit is the write of a WAL frame whose
header carries the database size (``chaos.store.sqlite``): the 24-byte header,
then its page; the commit is made when that page's write returns, and the agent
is stopped right there. In a rollback journal mode it is made when the journal
stops being hot: its ``unlink`` (DELETE), its ``ftruncate`` to nothing
(TRUNCATE) or the write that zeroes its header (PERSIST) returns. For a
``line`` store a commit is a write ending in a newline; for a ``rename`` store (files
written whole, each a temporary file renamed over its name) the rename, when it
returns 0. Where the boundary is
judged on what the store holds ("the commit that makes a deploy call durable"),
the policy reads a copy of the store at every commit. A power cut's model keeps
each file's bytes at its syncs, and a file removed stays removed only once its
directory was synced after (SQLite's own ``synchronous=EXTRA`` exists for that:
in DELETE mode a power cut right after a commit may bring the journal back, and
the commit is rolled back); a file renamed over a name holds, after a cut, what
the renamed file held at its last sync (nothing, never synced), and only once
the directory was synced after the rename: until then the name keeps what it
held before. Only a phase a power cut ends needs it. At every
write to the effect ledger it records which tool calls the store held durable
then: an effect that starts before its call is durable is seen at the moment it
starts, not guessed afterwards.

Exactness is measured, not assumed: ``late`` counts commits any thread of the
agent began after the kill was decided (0: an exact kill).
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from chaos.process import ptrace
from chaos.process.phase import Kept
from chaos.scenario.model import Boundary
from chaos.store import Store, View
from chaos.store.sqlite import FRAME_HEADER, JOURNAL_HEADER, commits_frame


@dataclass
class Commits:
    """Follows one phase's commits of the store at ``workspace/path`` (traps from every thread)."""

    store: Store
    workspace: Path
    path: str
    ledger: str
    delay: float = 0.0  # seconds each commit takes (a slow disk): its writer is held before the commit
    power_cut: bool = False  # keep each store file's bytes at its syncs (only a power cut needs them)
    state: str | None = None  # the target's ``[store] state``: a saved run state read with the store
    found: dict[str, bytes] = field(default_factory=dict)  # the store's files when the phase began
    made: list[float] = field(default_factory=list)  # when each commit of the phase completed (epoch s)
    begun: int = 0  # commits begun (a commit frame's header written, a journal's end asked for)
    writes: int = 0  # a server store's statements that wrote, answered inside a transaction still open
    at_ledger: list[list[str]] = field(default_factory=list)  # durable call ids at each ledger write
    # pid -> the commit its trapped call completes when it returns: "header" (a WAL commit frame's header
    # written: its page comes next), "page" | "line" (made when the write returns bytes), "ended" (the
    # journal removed or cut: made when the call returns 0)
    _pending: dict[int, str] = field(default_factory=dict)
    _committing: set[int] = field(default_factory=set)  # threads stopped at their commit's call
    # A power cut's model, per file: each store file's bytes at the return of its last sync in the phase
    synced: dict[str, bytes] = field(default_factory=dict)
    _syncing: dict[int, str] = field(default_factory=dict)  # pid -> the file its fsync/fdatasync names
    _removing: dict[int, str] = field(default_factory=dict)  # pid -> the store file its unlink names
    unlinked: set[str] = field(default_factory=set)  # store files removed since their directory's last sync
    gone: set[str] = field(default_factory=set)  # store files removed, and their directory synced after
    # A rename store's power cut model: the bytes each file beside the store held at its last sync (by
    # path), each pid's rename in flight (its two paths), and each name renamed over since its
    # directory's last sync, with what the cut would leave there once that directory is synced
    loose: dict[str, bytes] = field(default_factory=dict)
    _renaming: dict[int, tuple[str, str]] = field(default_factory=dict)
    renamed: dict[str, bytes] = field(default_factory=dict)
    renamed_last: str | None = None  # the store's file a rename made last in the phase: its newest
    dropped: bool = False  # a sync failed (fsync-error): the kernel may have dropped the dirty pages

    def _role(self, path: str) -> tuple[str, str] | None:
        """Which of the store's files ``path`` is ("main", "wal", "journal", or "line" for a line store),
        with its name relative to the workspace; None for any other file."""
        if self.store.commit == "wire" or not path.startswith(str(self.workspace) + os.sep):
            return None  # (a server store's commits are the relay's to see)
        relative = os.path.relpath(path, self.workspace)
        if self.store.commit == "rename":  # a file beside the store's is one being written to become one
            if fnmatch.fnmatch(relative, self.path):
                return "file", relative
            return ("beside", relative) if os.path.dirname(relative) == os.path.dirname(self.path) else None
        if self.store.commit != "sqlite":
            return ("line", relative) if fnmatch.fnmatch(relative, self.path) else None
        for side, role in (("-wal", "wal"), ("-journal", "journal")):
            if relative.endswith(side) and fnmatch.fnmatch(relative[: -len(side)], self.path):
                return role, relative
        return ("main", relative) if fnmatch.fnmatch(relative, self.path) else None

    def holds(self, path: str) -> bool:
        """``path`` is one of the store's files on this machine (a disk fault fails the calls on them)."""
        return self._role(path) is not None

    def drop_unsynced(self) -> None:
        """A sync of the store failed: what was not synced before it never will be (fsync-error)."""
        self.dropped = True

    def _begins(self, pid: int, state: str) -> bool:
        """``pid``'s trapped call completes a commit when it returns: stop it then (and hold it there on a
        slow disk)."""
        self._pending[pid] = state
        self.begun += 1
        self._committing.add(pid)
        return True

    def committing(self, pid: int) -> bool:
        """``pid`` is stopped at its commit frame's write (asked once: a slow disk holds it there)."""
        if pid in self._committing:
            self._committing.discard(pid)
            return True
        return False

    def view(self) -> View:
        return self.store.view(self.workspace, self.path, self.state)

    @property
    def count(self) -> int:
        """Commits completed in the phase."""
        return len(self.made)

    def _made(self) -> None:
        self.made.append(time.time())

    def made_by(self, moment: float) -> int:
        """Commits completed by ``moment`` (epoch seconds)."""
        return sum(1 for t in self.made if t <= moment)

    def write_over_wire(self) -> None:
        """A statement of a server store wrote, its answer held at the relay, its transaction still open."""
        self.writes += 1

    def over_wire(self) -> None:
        """A commit of a server store, its answer held at the relay (``chaos.world.pgwire``): made then."""
        self.begun += 1
        self._made()

    def _synced(self, path: str | None) -> None:
        """A sync returned 0: the named store file (every one, for ``sync``/``syncfs``) is durable as it is;
        a synced directory makes the removals in it durable."""
        if not self.power_cut or self.dropped:
            return
        for name in [n for n in self.unlinked if path in (None, os.path.dirname(self.workspace / n))]:
            self.unlinked.discard(name)
            self.gone.add(name)
            self.synced.pop(name, None)
        for name in [n for n in self.renamed if path in (None, os.path.dirname(self.workspace / n))]:
            self.synced[name] = self.renamed.pop(name)
            self.gone.discard(name)
        role = None if path is None else self._role(path)
        if path is not None and role is not None and role[0] == "beside":  # to be renamed into the store
            with contextlib.suppress(OSError):
                self.loose[path] = Path(path).read_bytes()
        for file in self.store.files(self.workspace, self.path, self.state):
            if path is None or str(file) == path:
                try:
                    name = str(file.relative_to(self.workspace))
                    self.synced[name] = file.read_bytes()
                    self.gone.discard(name)
                except FileNotFoundError:
                    continue

    def keep(self, kept: Kept, cut: bool) -> None:
        """The store's files the moment the process is gone, and what its adapter reads of them; a power
        cut first leaves each file as of its last sync (and no SQLite shared-memory index: it lived in
        memory)."""
        if cut:
            written, durable = self._snapshot(), self.durable_files()
            kept.calls_cut = self.store.read(written).call_ids - self.store.read(durable).call_ids
            for name in set(written) | set(durable):
                path = self.workspace / name
                if name in durable:
                    path.write_bytes(durable[name])
                else:
                    path.unlink(missing_ok=True)
                Path(f"{path}-shm").unlink(missing_ok=True)
        kept.store_files = self._snapshot()
        kept.renamed_last = self.renamed_last if self.renamed_last in kept.store_files else None
        kept.view_after = self.store.read(kept.store_files)

    def record(self, kept: Kept, traced: bool) -> None:
        if traced:
            kept.calls_at_ledger, kept.commits, kept.writes = self.at_ledger, self.count, self.writes

    def _snapshot(self) -> dict[str, bytes]:
        return self.store.snapshot(self.workspace, self.path, self.state)

    def durable_files(self) -> dict[str, bytes]:
        """What a power cut now would leave of the store: each file as of its last sync in the phase, else
        as the phase found it (``found``); a file the phase created and never synced is gone, and so is
        one it removed and then synced its directory; one removed without that comes back. Each file is
        judged on its own syncs: a WAL checkpoint overwrites database pages in place, so a byte prefix of
        one log (a session log's model) does not describe a database."""
        return {name: data for name, data in {**self.found, **self.synced}.items() if name not in self.gone}

    def observe(self, pid: int, tag: int) -> tuple[bool, bool]:
        """At a trap, with the process stopped: (ask for a stop when the call returns, a commit was just
        completed)."""
        if tag == ptrace.SYNC_ENTRY:
            self._syncing[pid] = ptrace.call_file(pid)[1]
            return False, False
        if tag in (ptrace.SYNC, ptrace.ALL):
            path = self._syncing.pop(pid, None)
            if ptrace.call_result(pid) == 0:
                self._synced(None if tag == ptrace.ALL else path)
            return False, False
        if tag == ptrace.AFTER:
            return False, self._returned(pid, ptrace.call_result(pid))
        if tag == ptrace.UNLINK:
            return self._unlinking(pid, ptrace.unlinked_path(pid)), False
        if tag == ptrace.RENAME:
            old, new = ptrace.renamed_paths(pid)
            role = self._role(new)
            if role is None or role[0] != "file":
                return False, False
            self._renaming[pid] = (old, role[1])
            return self._begins(pid, "ended"), False
        if tag == ptrace.TRUNCATE:
            path, length = ptrace.truncated_file(pid)
            role = self._role(path)
            return bool(role and role[0] == "journal" and length == 0 and self._begins(pid, "ended")), False
        if tag not in (ptrace.WRITE, ptrace.WRITEV):
            return False, False
        _, path, count = ptrace.call_file(pid)
        if path == self.ledger:
            self.at_ledger.append(sorted(self.view().call_ids))
            return False, False
        role = self._role(path)
        if role is None:
            return False, False
        if role[0] == "line":
            if ptrace.written_bytes(pid, count)[-1:] == b"\n":
                self._pending[pid] = "line"
                return True, False
            return False, False
        if role[0] == "journal":  # PERSIST mode commits by zeroing the journal's header
            zeroed = count == JOURNAL_HEADER and not any(ptrace.written_bytes(pid, count))
            return zeroed and self._begins(pid, "page"), False
        if role[0] != "wal":
            return False, False
        if count == FRAME_HEADER and commits_frame(ptrace.written_bytes(pid, FRAME_HEADER)):
            self._pending[pid] = "header"
            self.begun += 1
        elif self._pending.get(pid) == "header":
            self._pending[pid] = "page"  # the commit frame's page: the commit is made when it returns
            self._committing.add(pid)
            return True, False
        return False, False

    def _unlinking(self, pid: int, path: str) -> bool:
        """An ``unlink`` of one of the store's files: a removal to follow, and a journal's the commit."""
        role = self._role(path)
        if role is None:
            return False
        self._removing[pid] = role[1]
        return self._begins(pid, "ended") if role[0] == "journal" else True

    def _returned(self, pid: int, result: int) -> bool:
        """The trapped call returned ``result``: whether it made a commit."""
        removed = self._removing.pop(pid, None)
        if removed is not None and result == 0:
            self.unlinked.add(removed)
        renaming = self._renaming.pop(pid, None)
        if renaming is not None and result == 0:  # durable once its directory is synced: as last synced
            self.renamed[renaming[1]] = self.loose.pop(renaming[0], b"")
            self.renamed_last = renaming[1]
        state = self._pending.pop(pid, None)
        made = result == 0 if state == "ended" else state in ("page", "line") and result > 0
        if made:
            self._made()
        return made


def newly_durable(boundary: Boundary, view: View, base: View) -> int:
    """How many of the boundary's calls (or outputs) ``view`` holds that ``base`` did not."""
    tool = boundary.where.get("tool")
    if boundary.what == "call-durable":
        return sum(1 for c in view.calls if c not in base.calls and tool in (None, c.name))
    names = {c.id: c.name for c in view.calls}
    return sum(1 for o in view.outputs if o not in base.outputs and tool in (None, names.get(o.call_id)))


def reached(boundary: Boundary, count: int, views: list[View], base: View) -> bool:
    """Whether the commit just completed (the ``count``-th of the phase) is ``boundary``; ``views`` is
    the store after each commit, read only for a boundary judged on what the store holds."""
    if boundary.what == "commit":
        return count == boundary.nth
    before = views[-2] if len(views) > 1 else base
    return newly_durable(boundary, views[-1], base) >= boundary.nth > newly_durable(boundary, before, base)
