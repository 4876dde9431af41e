"""Is a process tree waiting on something outside itself (a lock another process holds)?

A second writer resumed while the first is paused may refuse the session, or
may wait for its lock: both are legal. One that waits would wait forever for a
writer chaos froze, so chaos must see the wait and let the first writer go on.
A tree is waiting when every one of its threads sleeps and either one of them
sleeps in the kernel's file-lock wait (``flock``, ``fcntl`` locks), or nothing
moved for ``QUIET`` seconds: no byte of the log, no model request in flight
(an agent polling a lock file of its own sleeps in ``nanosleep``, not in a
lock).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable

QUIET = 0.5  # seconds of stillness that count as waiting
LOCK_WAITS = ("lock_inode_wait", "flock", "fcntl_setlk", "locks_")


def _threads(pid: int) -> list[str]:
    try:
        return os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []


def _read(path: str) -> str:
    try:
        with open(path) as handle:
            return handle.read()
    except OSError:
        return ""


def asleep(pids: Iterable[int]) -> tuple[bool, bool]:
    """(every thread of ``pids`` sleeps, one of them sleeps in a file-lock wait)."""
    sleeping, locked, any_thread = True, False, False
    for pid in pids:
        for tid in _threads(pid):
            stat = _read(f"/proc/{pid}/task/{tid}/stat")
            state = stat[stat.rfind(")") + 2 : stat.rfind(")") + 3] if stat else ""
            if state in ("", "Z", "X"):
                continue
            any_thread = True
            if state not in ("S", "D"):
                sleeping = False
            wchan = _read(f"/proc/{pid}/task/{tid}/wchan")
            locked = locked or any(word in wchan for word in LOCK_WAITS)
    return sleeping and any_thread, locked


class Waiting:
    """Tells, tick by tick, whether a tree is waiting on something outside itself."""

    def __init__(
        self, pids: Callable[[], Iterable[int]], moved: Callable[[], object], busy: Callable[[], bool]
    ) -> None:
        # ``moved``: a token that changes when the world moved; ``busy``: the tree waits on the world
        # itself (a model request in flight), which is no wait on another writer
        self.pids, self.moved, self.busy = pids, moved, busy
        self._token: object = None
        self._still_since = time.monotonic()

    def __call__(self) -> bool:
        token = self.moved()
        now = time.monotonic()
        if token != self._token:
            self._token, self._still_since = token, now
        sleeping, locked = asleep(self.pids())
        if not sleeping or self.busy():
            self._still_since = now
            return False
        return locked or now - self._still_since >= QUIET
