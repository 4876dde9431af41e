"""Killing an agent and every process it started, and proving none survived.

A SIGKILL to the process group reaches what stayed in the group; psutil finds
descendants that moved to their own group or session (a tool's ``bash`` runs
in its own group) so they are killed too, and reported as having escaped.
"""

from __future__ import annotations

import contextlib
import os
import signal
from dataclasses import dataclass, field

import psutil


@dataclass
class KillReport:
    killed: list[int] = field(default_factory=list)
    escaped_group: list[int] = field(default_factory=list)  # descendants outside the agent's process group
    survivors: list[int] = field(default_factory=list)  # still alive after the wait: a finding


def kill_tree(pid: int, timeout: float = 5.0) -> KillReport:
    """SIGKILL ``pid``, its process group and all its descendants; wait until they are gone."""
    report = KillReport()
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        procs = []
    group = pid
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, signal.SIGKILL)
    for proc in procs:
        with contextlib.suppress(psutil.NoSuchProcess, ProcessLookupError):
            if proc.pid != pid and os.getpgid(proc.pid) != group:
                report.escaped_group.append(proc.pid)
            proc.kill()
            report.killed.append(proc.pid)
    _, alive = psutil.wait_procs(procs, timeout=timeout)
    report.survivors = [p.pid for p in alive]
    return report


def live_descendants(pid: int) -> list[int]:
    try:
        return [p.pid for p in psutil.Process(pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        return []
