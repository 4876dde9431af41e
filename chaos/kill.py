"""The crash: when a boundary is reached, and killing a target's whole tree with proof none survived.

A ``Trigger`` arms one boundary in the world before the phase starts: a
durable boundary is judged on the committed log (with the target stopped at
its next write, see ``chaos.trace``); an in-flight boundary is one the world
holds exactly (the model server keeps a request, a ledger gate keeps an
effect). A SIGKILL to the process group reaches what stayed in the group; the
traced (or psutil-found) descendants that moved to their own group are killed
too and reported as having escaped.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

import psutil

from chaos.scenario import Crash
from chaos.watch import Watch
from chaos.world.build import World
from chaos.world.ledger import read_ledger


@dataclass
class Trigger:
    world: World
    crash: Crash
    watch: Watch | None = None  # durable boundaries
    request: int | None = None  # the held model request's number
    gate: str | None = None  # the ledger gate, e.g. deploy.during#2

    @classmethod
    def arm(cls, world: World, crash: Crash) -> Trigger:
        """Prepare the world so the boundary's ``nth`` occurrence *in this phase* is caught."""
        boundary = crash.boundary
        if boundary.what == "model-request":
            number = len(world.server.requests) + boundary.nth
            world.server.hold_request(number)
            return cls(world, crash, request=number)
        if boundary.in_flight:
            effect = boundary.where["effect"]
            done = sum(
                1 for e in read_ledger(world.box.ledger) if e["effect"] == effect and e["phase"] == "start"
            )
            moment = "during" if boundary.what == "effect-running" else "after"
            return cls(world, crash, gate=f"{effect}.{moment}#{done + boundary.nth}")
        watch = Watch(world.log_glob, boundary)
        watch.skip_existing()
        return cls(world, crash, watch=watch)

    @property
    def durable(self) -> bool:
        return self.watch is not None

    def gates(self) -> list[str]:
        return [self.gate] if self.gate else []

    def reached(self) -> bool:
        if self.watch is not None:
            return self.watch.poll()
        if self.request is not None:
            return len(self.world.server.requests) >= self.request
        assert self.gate is not None
        return self.world.box.waiting(self.gate)

    def late_facts(self) -> int:
        """Committed facts after the boundary when the target stopped (0: an exact kill)."""
        if self.watch is None:
            return 0
        self.watch.poll()
        return self.watch.after

    def disarm(self) -> None:
        """Let held requests and gates go, so nothing of this phase blocks the next."""
        self.world.server.release_requests()
        if self.gate:
            self.world.box.release(self.gate)


@dataclass
class KillReport:
    killed: list[int] = field(default_factory=list)
    escaped_group: list[int] = field(default_factory=list)  # descendants outside the target's group
    survivors: list[int] = field(default_factory=list)  # still alive after the wait: a finding
    outlived: list[int] = field(default_factory=list)  # alive after the target exited by itself: a finding


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
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
            report.killed.append(pid)
    return report


def wait_gone(pids: Iterable[int], timeout: float = 5.0) -> list[int]:
    """The processes of ``pids`` still alive (not even zombies) after ``timeout``."""
    deadline = time.monotonic() + timeout
    left = [pid for pid in pids if alive(pid)]
    while left and time.monotonic() < deadline:
        time.sleep(0.01)
        left = [pid for pid in left if alive(pid)]
    return left
