"""One target process tree, started in its own session and traced (or polled), until it is reaped.

A ``TracedProcess`` knows nothing about boundaries: at every trap (every 2 ms
when polling) it asks its ``Policy`` whether to stop, and the policy acts
through ``kill`` and ``signal``. ptrace requests must come from the thread
that started the tracee, so each process owns a thread that spawns it and
runs the wait loop. Whatever goes wrong inside that thread is kept as
``fault`` and surfaces as chaos's own error, never as the agent's behaviour.

The traced agent stays stopped at each trap until that thread has judged it,
and the thread needs the GIL to do so. Any busy Python thread in the process
(another case of a ``-j 2`` sweep reducing a log, a test suite's leftovers, a
user's own code around the API) holds it for up to the interpreter's switch
interval, 5 ms by default, at every trap: a Node.js agent sweep measured 10x
slower beside one busy thread. While any process is traced, the switch
interval is therefore lowered to ``SWITCH_INTERVAL`` (``_Responsive``), and
restored when the last one is gone.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from chaos.errors import TargetUnusable
from chaos.process import ptrace
from chaos.process.reap import KillReport, alive, signal_tree, wait_gone
from chaos.process.warm import Child, Launch, WarmUnavailable
from chaos.world.contain import Cage, start_alone

GRACE = 1.0  # seconds a target's children get to end after the target exited by itself
SWITCH_INTERVAL = 0.0005  # seconds a busy Python thread may hold the GIL while an agent waits at a trap


class _Responsive:
    """Lower the interpreter's switch interval while at least one traced process is alive."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._users = 0
        self._saved = 0.0

    def enter(self) -> None:
        with self._lock:
            if self._users == 0:
                self._saved = sys.getswitchinterval()
                sys.setswitchinterval(min(self._saved, SWITCH_INTERVAL))
            self._users += 1

    def leave(self) -> None:
        with self._lock:
            self._users -= 1
            if self._users == 0:
                sys.setswitchinterval(self._saved)


RESPONSIVE = _Responsive()


class Policy(Protocol):
    def attach(self, proc: TracedProcess) -> None: ...

    def at_trap(self, pid: int, tag: int) -> bool:
        """Called with the trapping process stopped; True asks for a stop when the call returns."""
        ...


class TracedProcess:
    def __init__(
        self,
        argv: list[str],
        cwd: Path,
        env: dict[str, str],
        stdout: Path,
        stderr: Path,
        policy: Policy,
        traps: bool = True,
        traced: bool = True,
        warm: Launch | None = None,
    ) -> None:
        if shutil.which(argv[0], path=env.get("PATH")) is None:
            raise TargetUnusable(f"cannot start the target: {argv[0]!r} is not an executable on its PATH")
        if not cwd.is_dir():
            raise TargetUnusable(f"cannot start the target: working directory {cwd} does not exist")
        self.argv, self.exact, self.traps = argv, traced and ptrace.exact_kills_available(), traps
        self.pid = 0
        self.pids: set[int] = set()
        self.returncode: int | None = None
        self.fault: BaseException | None = None
        self.report = KillReport()
        self.killed = False
        self._exited, self._gone = threading.Event(), threading.Event()
        self._policy, self._warm = policy, warm
        self.cold_because: str | None = None  # a warm start failed, and the process started cold
        self.cage = Cage()  # every process of the tree, traced or not (chaos.world.contain)
        policy.attach(self)
        started = threading.Event()
        args = (cwd, env, stdout, stderr, started)
        threading.Thread(target=self._main, args=args, daemon=True, name="chaos-traced").start()
        started.wait()
        if self.pid == 0:
            raise TargetUnusable(f"cannot start the target {argv[0]!r}: {self.fault}")

    def _main(
        self, cwd: Path, env: dict[str, str], stdout: Path, stderr: Path, started: threading.Event
    ) -> None:
        RESPONSIVE.enter()
        try:
            self._serve(cwd, env, stdout, stderr, started)
        finally:
            RESPONSIVE.leave()

    def _serve(
        self, cwd: Path, env: dict[str, str], stdout: Path, stderr: Path, started: threading.Event
    ) -> None:
        proc: subprocess.Popen[bytes] | Child
        try:
            if self._warm is not None:
                trace = ("syscalls" if self.traps else "events") if self.exact else ""
                try:
                    proc = self._warm.spawn(cwd, env, stdout, stderr, self.cage.procs, trace)
                except WarmUnavailable as why:  # cold is what warm stands in for: the phase goes on
                    self._warm, self.cold_because = None, str(why)
            if self._warm is None:
                with stdout.open("wb") as out, stderr.open("wb") as err:
                    setup = _in(self.cage, ptrace.child_setup(self.exact, self.traps))
                    proc = start_alone(self.argv, cwd, env, out, err, setup)
        except Exception as err:  # a failed start must never leave the caller waiting
            self.cage.remove()
            self.fault = err
            self._exited.set()
            self._gone.set()
            started.set()
            return
        self.pid = proc.pid
        self.pids.add(proc.pid)
        started.set()
        try:
            if self.exact:
                hold = getattr(self._policy, "hold", None)
                ptrace.trace(proc, self._policy.at_trap, self.pids.add, self._exit, hold, seized=self.warm)
            elif self.traps:
                while proc.poll() is None:
                    self._policy.at_trap(proc.pid, 0)
                    time.sleep(0.002)
                self._exit(proc.wait())
            else:
                self._exit(proc.wait())
        except BaseException as err:  # the tracer broke: chaos's fault, reported as such
            self.fault = err
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                proc.wait()
        finally:
            if isinstance(proc, Child):
                proc.finish()
            self._exited.set()
            self._gone.set()

    def _exit(self, returncode: int, alone: bool = False) -> None:
        self.returncode = returncode
        if alone:
            self._gone.set()  # the tracer saw the root exit last: nothing of the tree is left
        self._exited.set()

    @property
    def warm(self) -> bool:
        """Started warm (a fork of a warm interpreter, ``chaos.process.warm``), not by exec."""
        return self._warm is not None

    @property
    def running(self) -> bool:
        return not self._exited.is_set()

    def wait(self, timeout: float) -> bool:
        """True when the root exited within ``timeout``."""
        return self._exited.wait(timeout)

    def kill(self) -> None:
        """SIGKILL the whole tree now (and whatever left it, in its cage)."""
        self.killed = True
        self.report.add(signal_tree(self.pid, self.pids))
        self.report.signalled += [pid for pid in self.cage.kill() if pid not in self.report.signalled]

    def signal(self, signum: int) -> None:
        """Deliver ``signum`` to the root alone (an abort the agent handles itself)."""
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signum)

    def signal_group(self, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pid, signum)

    def _left(self) -> list[int]:
        """The tree's processes other than the root still alive: its cage's where it has one (a process
        that left the tree untraced is still in it), else the traced ones; processes, not threads."""
        found = set(self.cage.pids()) | {pid for pid in self.pids if alive(pid) and _leader(pid)}
        return sorted(found - {self.pid})

    def reap(self) -> KillReport:
        """Kill whatever is left of the tree and wait until it is gone; survivors are a finding.

        What outlived the root counts only when the root exited by itself: a root stopped at its
        timeout or killed still had its children (and its threads) by right."""
        try:
            if self.exact and self._gone.is_set() and not self.cage.pids():
                return self.report  # the tracer saw every process of the tree exit: nothing is left
            exited = self._exited.is_set() and not self.killed
            leftovers = self._left() if exited else []
            if leftovers:  # a child finishing its last write as its parent exits is no leftover: a grace
                leftovers = wait_gone(leftovers, GRACE)
            self.report.add(signal_tree(self.pid, self.pids))
            self.report.signalled += [p for p in self.cage.kill() if p not in self.report.signalled]
            self._gone.wait(10)
            self.cage.empty(5.0)
            self.report.survivors = sorted(
                set(wait_gone(pid for pid in self.pids if _leader(pid))) | set(self.cage.pids())
            )
            self.report.outlived = leftovers
            return self.report
        finally:
            if not self.report.survivors:
                self.cage.remove()


def _in(cage: Cage, setup: Callable[[], None]) -> Callable[[], None]:
    """The child's first steps: join the cage, then the target's setup (signals, tracing)."""

    def first() -> None:
        cage.enter()
        setup()

    return first


def _leader(pid: int) -> bool:
    """``pid`` is a process (a thread group's leader), not one of its threads: the tracer follows both."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("Tgid:"):
                return int(line.split()[1]) == pid
    except (OSError, ValueError):
        return False
    return True
