"""The session file: the only place the reference agent touches its log.

Opening takes an exclusive lock (a second writer is refused), refuses symlinks
(``O_NOFOLLOW``), reduces the bytes with the chaos oracle and truncates a torn
tail to ``repairedLength``. Every commit is reduced as a candidate first (a
rejected one changes neither disk nor memory), then written with a single
``write`` of one LF-terminated line and flushed to disk. SIGINT is blocked
during a commit so an abort can never split memory from disk.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import signal
import time
from pathlib import Path

from chaos.contract import Reducer, SessionState
from chaos.contract import facts as F


class SessionUnusable(Exception):
    """The log is corrupt or cannot be opened (exit 1)."""


class SessionBusy(SessionUnusable):
    """Another writer holds the session (exit 1, or 75 with the refusal-exit variant)."""


SESSIONS = Path(".tiny-agent") / "sessions"


def _make_directories(directory: Path, sync: bool) -> None:
    """``mkdir -p``, each new directory made durable (``sync``): under POSIX a new entry survives a power cut
    only once its parent is synced, so a log in directories that were just made needs each of them."""
    missing = []
    here = directory
    while not here.exists():
        missing.append(here)
        here = here.parent
    for made in reversed(missing):
        made.mkdir(exist_ok=True)
        if sync:
            _sync_directory(made.parent)


def _sync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class SessionFile:
    def __init__(self, path: Path, fd: int, reducer: Reducer, sync: bool = True, split: bool = False) -> None:
        self.path, self.fd, self.sync = path, fd, sync  # sync False: the no-fsync bug switch
        self.split = split  # the one-fact-per-transaction variant
        self.full_disk_in_memory = False  # the full-disk-in-memory bug switch
        self.careless = False  # the ignore-log-errors bug switch: a failed write or sync goes unnoticed
        self.writer = F.Writer(reducer)
        self.torn_at: int | None = None  # the repair-on-write variant: the torn tail still to truncate

    @property
    def state(self) -> SessionState:
        return self.writer.state

    @classmethod
    def create(
        cls,
        workspace: Path,
        provider: str,
        model: str,
        environment_identity: str,
        sync: bool = True,
        lock: bool = True,
        split: bool = False,
        sync_directory: bool = True,
        sync_parents: bool = True,
    ) -> SessionFile:
        reducer = Reducer()
        session_id = F.system_ids()()
        directory = workspace / SESSIONS
        _make_directories(directory, sync and sync_directory and sync_parents)
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
        path = directory / f"{stamp}_{session_id}.jsonl"
        fd = os.open(
            path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600
        )
        if lock:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        if (
            sync and sync_directory
        ):  # a new file survives a power cut only once its directory is synced (POSIX)
            _sync_directory(directory)
        session = cls(path, fd, reducer, sync, split)
        session._write(
            session.writer.header(str(workspace), provider, model, environment_identity, session_id)
        )
        return session

    @classmethod
    def open(
        cls,
        workspace: Path,
        session_id: str,
        repair_torn_tail: bool = True,
        repair_on_write: bool = False,
        sync: bool = True,
        lock: bool = True,
        wait: bool = False,
        split: bool = False,
        corrupt_as_torn: bool = False,
    ) -> SessionFile:
        matches = sorted((workspace / SESSIONS).glob(f"*_{session_id}.jsonl"))
        if not matches:
            raise SessionUnusable(f"no session {session_id} under {SESSIONS}")
        path = matches[-1]
        try:
            fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError as err:
            raise SessionUnusable(f"cannot open {path.name}: {err.strerror}") from None
        try:
            if lock:
                fcntl.flock(
                    fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB)
                )  # wait: the blocking-lock variant
        except BlockingIOError:
            os.close(fd)
            raise SessionBusy(f"session {session_id} is open in another writer") from None
        data = Path(path).read_bytes()
        reducer = Reducer.of(data)
        result = reducer.result()
        if not result["ok"] and corrupt_as_torn and data.endswith(b"\n"):
            last = data.rfind(b"\n", 0, len(data) - 1) + 1  # the bug: a corrupt last line taken as torn
            if result["error"]["line"] == data.count(b"\n"):
                os.ftruncate(fd, last)
                reducer = Reducer.of(data[:last])
                result = reducer.result()
        if not result["ok"]:
            error = result["error"]
            os.close(fd)
            raise SessionUnusable(f"session log is corrupt: {error['code']} at line {error['line']}")
        session = cls(path, fd, reducer, sync, split)
        if repair_torn_tail and reducer.tail:
            if repair_on_write:  # legal: the contract truncates when the session is written, not read
                session.torn_at = reducer.repaired_length
            else:
                os.ftruncate(fd, reducer.repaired_length)
        return session

    def commit(self, *facts: F.Fact) -> None:
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            for transaction in [[fact] for fact in facts] if self.split else [list(facts)]:
                self._write(self.writer.commit(*transaction))
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)

    def write_unchecked(self, *facts: F.Fact) -> None:
        """Append without reducing the candidate first: what a port without the check does."""
        line = self.writer.encode(list(facts))
        self._write(line)

    def _write(self, line: bytes) -> None:
        """One line, then fdatasync; a write or sync that fails ends the session here (after a failed
        sync the kernel may have dropped the bytes: nothing may be built on them)."""
        try:
            if self.torn_at is not None:
                os.ftruncate(self.fd, self.torn_at)
                self.torn_at = None
            if os.write(self.fd, line) != len(line) and not self.careless:
                raise SessionUnusable("short write to the session log")
            if self.sync:
                os.fdatasync(self.fd)
        except OSError as err:
            if err.errno == errno.ENOSPC and self.full_disk_in_memory:
                self._write_again(line)
                return
            if not self.careless:
                raise SessionUnusable(f"cannot write the session log: {err.strerror}") from None

    def _write_again(self, line: bytes) -> None:
        """The full-disk-in-memory bug: one more try, then the fact lives in memory only."""
        with contextlib.suppress(OSError):
            os.write(self.fd, line)

    def close(self) -> None:
        os.close(self.fd)
