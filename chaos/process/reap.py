"""Killing a target's whole tree, and proof that none of it survived.

A SIGKILL to the process group reaches what stayed in the group; the traced
(or psutil-found) descendants that moved to their own group are killed too
and reported as having escaped it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

import psutil


@dataclass
class KillReport:
    signalled: list[int] = field(default_factory=list)  # processes chaos sent SIGKILL to
    escaped_group: list[int] = field(default_factory=list)  # descendants outside the target's group
    survivors: list[int] = field(default_factory=list)  # still alive after the wait: a finding
    outlived: list[int] = field(default_factory=list)  # alive after the target exited by itself: a finding

    def add(self, other: KillReport) -> None:
        self.signalled += other.signalled
        self.escaped_group += other.escaped_group


def alive(pid: int) -> bool:
    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return False


def signal_tree(root: int, known: Iterable[int]) -> KillReport:
    """SIGKILL the group of ``root``, ``known`` processes and every live descendant found."""
    report = KillReport()
    pids = set(known)
    with contextlib.suppress(psutil.NoSuchProcess):
        pids |= {p.pid for p in psutil.Process(root).children(recursive=True)}
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(root, signal.SIGKILL)
    for pid in sorted(pids):
        if not alive(pid):
            continue
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if pid != root and os.getpgid(pid) != root:
                report.escaped_group.append(pid)
            os.kill(pid, signal.SIGKILL)
            report.signalled.append(pid)
    return report


def wait_gone(pids: Iterable[int], timeout: float = 5.0) -> list[int]:
    """The processes of ``pids`` still alive (not even zombies) after ``timeout``."""
    deadline = time.monotonic() + timeout
    left = [pid for pid in pids if alive(pid)]
    while left and time.monotonic() < deadline:
        time.sleep(0.01)
        left = [pid for pid in left if alive(pid)]
    return left
