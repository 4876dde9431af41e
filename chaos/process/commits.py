"""Stopping a framework agent exactly at a commit of its store, and seeing what was durable at each effect.

The tracer needs no change: the traps that judge a session log's writes see a
SQLite commit too (a store on a database server commits on the wire: the
world's relay sees it, ``over_wire``, with the agent waiting for the answer).
For a ``sqlite-wal`` store a commit is the write of a WAL
frame whose header carries the database size (``chaos.store.sqlite``): the
24-byte header, then its page; the commit is made when that page's write
returns, and the agent is stopped right there. For a ``line`` store a commit is
a write ending in a newline. Where the boundary is judged on what the store
holds ("the commit that makes a deploy call durable"), the policy reads a copy
of the store at every commit; a power cut's model keeps each file's bytes at
its syncs, and only in a phase a power cut ends. At every write to the effect
ledger it records which tool
calls the store held durable then: an effect that starts before its call is
durable is seen at the moment it starts, not guessed afterwards.

Exactness is measured, not assumed: ``late`` counts commit frames any thread of
the agent began after the kill was decided (0: an exact kill).
"""

from __future__ import annotations

import fnmatch
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from chaos.process import ptrace
from chaos.scenario.model import Boundary
from chaos.store import Store, View
from chaos.store.sqlite import FRAME_HEADER, commits_frame


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
    made: list[float] = field(default_factory=list)  # when each commit of the phase completed (epoch s)
    begun: int = 0  # commit frames begun (their header written)
    at_ledger: list[list[str]] = field(default_factory=list)  # durable call ids at each ledger write
    _pending: dict[int, str] = field(default_factory=dict)  # pid -> "header" | "page" | "line"
    _committing: set[int] = field(default_factory=set)  # threads stopped at their commit frame's write
    # A power cut's model, per file: each store file's bytes at the return of its last sync in the phase
    synced: dict[str, bytes] = field(default_factory=dict)
    _syncing: dict[int, str] = field(default_factory=dict)  # pid -> the file its fsync/fdatasync names

    def _mine(self, path: str) -> bool:
        """A write to the store: its WAL (sqlite-wal) or its file (line)."""
        if self.store.commit == "wire" or not path.startswith(str(self.workspace) + os.sep):
            return False  # (a server store's commits are the relay's to see)
        relative = os.path.relpath(path, self.workspace)
        if self.store.commit == "sqlite-wal":
            if not relative.endswith("-wal"):
                return False
            relative = relative[: -len("-wal")]
        return fnmatch.fnmatch(relative, self.path)

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

    def over_wire(self) -> None:
        """A commit of a server store, its answer held at the relay (``chaos.world.pgwire``): made then."""
        self.begun += 1
        self._made()

    def _synced(self, path: str | None) -> None:
        """A sync returned 0: the named store file (every one, for ``sync``/``syncfs``) is durable as it is."""
        if not self.power_cut:
            return
        for file in self.store.files(self.workspace, self.path, self.state):
            if path is None or str(file) == path:
                try:
                    self.synced[str(file.relative_to(self.workspace))] = file.read_bytes()
                except FileNotFoundError:
                    continue

    def durable_files(self, before: dict[str, bytes]) -> dict[str, bytes]:
        """What a power cut now would leave of the store: each file as of its last sync in the phase, else
        as the phase found it (``before``); a file the phase created and never synced is gone. Each file
        is judged on its own syncs: a WAL checkpoint overwrites database pages in place, so a byte prefix
        of one log (a session log's model) does not describe a database."""
        return {**before, **self.synced}

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
            state = self._pending.pop(pid, None)
            if state in ("page", "line") and ptrace.call_result(pid) > 0:
                self._made()
                return False, True
            return False, False
        if tag not in (ptrace.WRITE, ptrace.WRITEV):
            return False, False
        _, path, count = ptrace.call_file(pid)
        if path == self.ledger:
            self.at_ledger.append(sorted(self.view().call_ids))
            return False, False
        if not self._mine(path):
            return False, False
        if self.store.commit == "line":
            if ptrace.written_bytes(pid, count)[-1:] == b"\n":
                self._pending[pid] = "line"
                return True, False
            return False, False
        if count == FRAME_HEADER and commits_frame(ptrace.written_bytes(pid, FRAME_HEADER)):
            self._pending[pid] = "header"
            self.begun += 1
        elif self._pending.get(pid) == "header":
            self._pending[pid] = "page"  # the commit frame's page: the commit is made when it returns
            self._committing.add(pid)
            return True, False
        return False, False


def _count(boundary: Boundary, view: View, base: View) -> int:
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
    return _count(boundary, views[-1], base) >= boundary.nth > _count(boundary, before, base)
