"""Containment that needs neither the agent's cooperation nor the tracer: a cgroup per process tree.

A process tree is found by its parent links and its process group, and the
tracer sees every process it follows; an agent can leave all three (a child
cloned with ``CLONE_UNTRACED`` that calls ``setsid`` and whose parent exits
is re-parented to init, in a group of its own, and never traced). A cgroup
cannot be left: the first process of a phase joins a fresh cgroup before it
runs the target's command (its ``preexec`` step), and every process it ever
starts is born inside, whatever it does. ``Cage.pids`` is then the whole set,
``Cage.kill`` kills it with ``cgroup.kill`` (the kernel's own, race-free
across forks), and the cage is removed once empty.

Where no cgroup v2 hierarchy is writable (no ``cgroup2`` mount, not root, a
read-only ``/sys/fs/cgroup``), ``Cage.unavailable`` says why and containment
falls back to the tree, the group and the tracer: a process that leaves all
three is not seen there. Cages are named after the chaos process that owns
them, so a cage left by a chaos that was killed outright is emptied and
removed by the next chaos that starts (``remove_stale``), like its sandboxes.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import IO

import psutil

PREFIX = "chaos-"
_COUNTER = itertools.count(1)
_LIVE: set[Cage] = set()
_LOCK = threading.Lock()


def _owner() -> str:
    """This chaos process, as a cage name carries it: pid and start time (a reused pid is not it)."""
    return f"{os.getpid()}-{int(psutil.Process().create_time() * 100)}"


@cache
def _home() -> tuple[Path | None, str]:
    """The cgroup v2 directory cages are made in (the one chaos runs in), or None and why not."""
    mount = None
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            left, _, right = line.partition(" - ")
            if right.split()[:1] == ["cgroup2"]:
                mount = Path(left.split()[4])
                break
    if mount is None:
        return None, "no cgroup v2 hierarchy is mounted"
    own = "/"
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            if line.startswith("0::"):
                own = line[3:] or "/"
    home = mount / own.lstrip("/")
    probe = home / f"{PREFIX}probe-{os.getpid()}"
    try:
        probe.mkdir()
    except OSError as err:
        return None, f"cannot make a cgroup in {home} ({err.strerror})"
    try:
        if not (probe / "cgroup.kill").exists() and not (probe / "cgroup.freeze").exists():
            return None, f"a cgroup in {home} has neither cgroup.kill nor cgroup.freeze (kernel before 5.2)"
    finally:
        probe.rmdir()
    return home, ""


def unavailable() -> str | None:
    """Why processes cannot be caged here, or None when they can."""
    home, why = _home()
    return None if home is not None else why


class Cage:
    """One cgroup for one process tree (a phase's target, a configuration command)."""

    def __init__(self) -> None:
        home, _ = _home()
        self.path: Path | None = None
        if home is not None:
            path = home / f"{PREFIX}{_owner()}-{next(_COUNTER)}"
            with contextlib.suppress(OSError):
                path.mkdir()
                self.path = path
                with _LOCK:
                    _LIVE.add(self)
        self._procs = str(self.path / "cgroup.procs") if self.path else ""

    def enter(self) -> None:
        """Move the calling process into the cage: the child's first step, before it runs the target
        (async-signal-safe: one open and one write)."""
        if self._procs:
            fd = os.open(self._procs, os.O_WRONLY)
            try:
                os.write(fd, b"0")
            finally:
                os.close(fd)

    @property
    def procs(self) -> str:
        """The file a process writes 0 to, to enter the cage ("" where there is no cage)."""
        return self._procs

    def pids(self) -> list[int]:
        """Every process in the cage now (processes, not their threads)."""
        if self.path is None:
            return []
        try:
            text = (self.path / "cgroup.procs").read_text()
        except OSError:
            return []
        return sorted(int(pid) for pid in text.split())

    def kill(self) -> list[int]:
        """SIGKILL everything in the cage; return who was in it."""
        inside = self.pids()
        if self.path is None or not inside:
            return inside
        try:
            (self.path / "cgroup.kill").write_text("1")
        except OSError:  # a kernel before 5.14: freeze, kill each, thaw (no fork can race the freeze)
            with contextlib.suppress(OSError):
                (self.path / "cgroup.freeze").write_text("1")
            for pid in self.pids():
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(OSError):
                (self.path / "cgroup.freeze").write_text("0")
        return inside

    def empty(self, timeout: float) -> bool:
        """Wait until nothing is left in the cage (a killed process leaves once it is reaped)."""
        deadline = time.monotonic() + timeout
        while self.pids():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.01)
        return True

    def remove(self) -> None:
        """Kill what is left and remove the cage."""
        if self.path is None:
            return
        self.kill()
        self.empty(5.0)
        with contextlib.suppress(OSError):
            self.path.rmdir()
        self.path = None
        with _LOCK:
            _LIVE.discard(self)


def kill_all() -> None:
    """Kill every process of every live cage of this chaos (it was interrupted): a worker thread still
    waiting on one must not leave it running while chaos exits."""
    with _LOCK:
        live = list(_LIVE)
    for cage in live:
        cage.kill()


def start_alone(
    argv: list[str], cwd: Path, env: dict[str, str], out: IO[bytes], err: IO[bytes], first: Callable[[], None]
) -> subprocess.Popen[bytes]:
    """Start a target's command in a session of its own, reading nothing, with ``first`` run in the child
    before it runs the command (joining its cage, at least)."""
    return subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=out,
        stderr=err,
        start_new_session=True,
        preexec_fn=first,
    )


def run_caged(argv: list[str], cwd: Path, env: dict[str, str], timeout: float) -> tuple[int, bytes, bytes]:
    """Run a short command of the target's (its configuration command) to its end: exit status, output
    and error. What it left running (a wrapper's background child holding its output open) is killed
    when it exits, and all of it at ``timeout`` (``subprocess.TimeoutExpired``)."""
    cage = Cage()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = start_alone(argv, cwd, env, out, err, cage.enter)
        try:
            code = proc.wait(timeout)
        finally:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            cage.remove()
            proc.wait()
        out.seek(0)
        err.seek(0)
        return code, out.read(), err.read()


def remove_stale() -> list[str]:
    """Empty and remove the cages of chaos processes that are gone (killed before they could)."""
    home, _ = _home()
    removed: list[str] = []
    if home is None:
        return removed
    alive = _owner()
    for path in home.glob(f"{PREFIX}*-*-*"):
        pid, stamp = path.name.removeprefix(PREFIX).split("-")[:2]
        if f"{pid}-{stamp}" == alive or not pid.isdigit():
            continue
        with contextlib.suppress(psutil.NoSuchProcess, ValueError):
            if int(psutil.Process(int(pid)).create_time() * 100) == int(stamp):
                continue  # its chaos is still running
        cage = Cage.__new__(Cage)
        cage.path, cage._procs = path, ""
        cage.remove()
        removed.append(path.name)
    return removed
