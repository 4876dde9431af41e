"""Running one phase of a target: start it in the world, stop it at the boundary, keep the prefix.

A ``Launch`` is one target process tree with its output in files, traced
(``chaos.trace``) so a durable boundary stops it before its next write, or
polled where tracing is unavailable. ``run_phase`` adds the world: it arms
the boundary, waits with a timeout, kills (or interrupts) the target, and
copies the log to the results folder before anything else touches it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chaos import trace
from chaos.contract.framing import committed_length
from chaos.kill import KillReport, Trigger, alive, signal_tree, wait_gone
from chaos.scenario import Configuration, Crash
from chaos.world.build import World
from chaos.world.ledger import read_ledger

ABORT = threading.Event()  # set when chaos itself is interrupted: every phase stops and kills its target


class Interrupted(Exception):
    """chaos was interrupted (Ctrl-C, SIGTERM) while a phase ran; its target has been killed."""


class TargetUnusable(Exception):
    """The target cannot be started at all (exit 2): a missing program, a bad working directory."""


@dataclass
class Launch:
    """One target process tree; ``check`` (called at every trap, or every 2 ms when polling) says stop."""

    argv: list[str]
    cwd: Path
    env: dict[str, str]
    stdout: Path
    stderr: Path
    check: Callable[[], bool] | None = None
    stop_signal: int = signal.SIGKILL
    tear: Callable[[], Path | None] | None = None  # the log, to tear its next write at the boundary
    hold: bool = False  # at the boundary, freeze the target until ``decide`` (chaos run --pause)
    choice: str = ""  # kill / continue / quit, once decided
    torn: bool = False  # a write to the log was cut short before the kill
    exact: bool = field(default_factory=trace.exact_kills_available)
    pid: int = 0
    returncode: int | None = None
    stopped: bool = False  # ``check`` asked for the stop (or ``stop`` was called)
    pids: set[int] = field(default_factory=set)
    report: KillReport = field(default_factory=KillReport)
    _exited: threading.Event = field(default_factory=threading.Event)
    _gone: threading.Event = field(default_factory=threading.Event)
    _error: BaseException | None = None
    _tearing: bool = False
    _held: threading.Event = field(default_factory=threading.Event)
    _decided: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        program = shutil.which(self.argv[0], path=self.env.get("PATH"))
        if program is None:
            raise TargetUnusable(
                f"cannot start the target: {self.argv[0]!r} is not an executable on its PATH"
            )
        if not self.cwd.is_dir():
            raise TargetUnusable(f"cannot start the target: working directory {self.cwd} does not exist")
        started = threading.Event()
        threading.Thread(target=self._main, args=(started,), daemon=True, name="chaos-launch").start()
        started.wait()
        if self._error is not None:
            raise TargetUnusable(f"cannot start the target {self.argv[0]!r}: {self._error}")

    def _main(self, started: threading.Event) -> None:
        try:
            if self.exact and not trace.exact_kills_available():
                raise OSError("exact kills were asked for, but ptrace and seccomp are not available here")
            with self.stdout.open("wb") as out, self.stderr.open("wb") as err:
                proc = subprocess.Popen(
                    self.argv,
                    cwd=self.cwd,
                    env=self.env,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=err,
                    start_new_session=True,
                    preexec_fn=trace.child_setup() if self.exact else None,
                )
        except Exception as err:  # a failed start must never leave the caller waiting
            self._error = err
            started.set()
            self._exited.set()
            self._gone.set()
            return
        self.pid = proc.pid
        self.pids.add(proc.pid)
        started.set()
        try:
            if self.exact:
                trace.trace(proc, self._trap, self.pids.add, self._exit)
            else:
                while proc.poll() is None:
                    self._trap(proc.pid, 0)
                    time.sleep(0.002)
                self._exit(proc.returncode)
        finally:
            self._exited.set()
            self._gone.set()

    def _exit(self, returncode: int) -> None:
        self.returncode = returncode
        self._exited.set()

    def _trap(self, pid: int, tag: int) -> bool:
        """Judge the log at a trap; True asks the tracer to stop again when the trapped call returns."""
        if self.stopped:
            return False
        if self._tearing:
            return self._tear(pid, tag)
        if self.check is None or not self.check():
            return False
        if self.hold:
            self._freeze()
            if self.choice == "continue":
                self.check = None
                return False
        if self.tear is None or not self.exact or self.hold:
            self.stop()
            return False
        self._tearing = True
        return self._tear(pid, tag)

    def _freeze(self) -> None:
        """Hold the target at the boundary until a person decides. Traced, it is already stopped
        at the trap; polled, it gets SIGSTOP (and SIGCONT if it may continue)."""
        if not self.exact:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.pid, signal.SIGSTOP)
        self._held.set()
        self._decided.wait()
        if not self.exact and self.choice == "continue":
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.pid, signal.SIGCONT)

    @property
    def waiting_for_decision(self) -> bool:
        return self._held.is_set() and not self._decided.is_set()

    def decide(self, choice: str) -> None:
        self.choice = choice
        self._decided.set()

    def _tear(self, pid: int, tag: int) -> bool:
        """Let the next write to the log through half-done, then kill: a real torn tail."""
        if tag == trace.AFTER:
            self.torn = True
            self.stop()
            return False
        log = self.tear() if self.tear else None
        if tag == trace.WRITE and log is not None:
            path, count = trace.written_file(pid)
            if path == str(log) and count > 1:
                trace.shorten_write(pid, count // 2)
                return True
        if tag == trace.EXIT:
            self.stop()  # the target is ending with no later write to tear
        return False

    def stop(self) -> None:
        """Stop the target now: SIGKILL its whole tree, or deliver ``stop_signal`` to the root."""
        self.stopped = True
        if self.stop_signal == signal.SIGKILL:
            found = signal_tree(self.pid, self.pids)
            self.report.killed += found.killed
            self.report.escaped_group += found.escaped_group
        else:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, self.stop_signal)

    def wait(self, timeout: float) -> bool:
        """True when the root exited within ``timeout``."""
        return self._exited.wait(timeout)

    def finish(self) -> KillReport:
        """Kill whatever is left of the tree and wait until it is gone; survivors are a finding."""
        if self.exact and self._gone.is_set():
            return self.report  # the tracer saw every process of the tree exit: nothing is left
        leftovers = [] if self.stopped else [pid for pid in self.pids if pid != self.pid and alive(pid)]
        found = signal_tree(self.pid, self.pids)
        self.report.killed += found.killed
        self.report.escaped_group += found.escaped_group
        self._gone.wait(10)
        self.report.survivors = wait_gone(self.pids)
        self.report.outlived = leftovers
        return self.report

    @property
    def running(self) -> bool:
        return not self._exited.is_set()


@dataclass
class Phase:
    """What one process of the run did; ``crash`` is the requested boundary, if any."""

    name: str
    argv: list[str]
    crash: str | None
    returncode: int | None = None
    outcome: str | None = None
    seconds: float = 0.0
    timed_out: bool = False
    reached: bool | None = None
    late_facts: int | None = None
    exact: bool | None = None
    torn: bool = False  # the crash left a torn tail (the next write cut short)
    continued: bool = False  # paused at the boundary, then let go on without a crash
    mechanism: str | None = None  # how the stop was timed: ptrace, poll, or world (a held request or gate)
    kill: KillReport = field(default_factory=KillReport)
    log_before: int = 0  # committed bytes when the phase started
    log_after: int = 0
    requests: int = 0  # model requests the server received during the phase
    effects: list[str] = field(default_factory=list)  # effects the ledger saw start during the phase

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "argv": self.argv,
            "crash": self.crash,
            "returncode": self.returncode,
            "outcome": self.outcome,
            "seconds": round(self.seconds, 3),
            "timedOut": self.timed_out,
            "reached": self.reached,
            "lateFacts": self.late_facts,
            "exact": self.exact,
            "mechanism": self.mechanism,
            "torn": self.torn,
            "continued": self.continued,
            "killed": self.kill.killed,
            "escapedGroup": self.kill.escaped_group,
            "outlived": self.kill.outlived,
            "survivors": self.kill.survivors,
            "logBefore": self.log_before,
            "logAfter": self.log_after,
            "requests": self.requests,
            "effects": self.effects,
        }


def _effect_starts(world: World) -> list[str]:
    return [e["effect"] for e in read_ledger(world.box.ledger) if e["phase"] == "start"]


def _committed_length(world: World) -> int:
    path = world.log_path()
    if path is None:
        return 0
    return committed_length(path.read_bytes())


def run_phase(
    world: World,
    name: str,
    argv: list[str],
    config: Configuration,
    crash: Crash | None,
    timeout: float,
    out: Path,
    keep_as: str | None = None,
    pause: Callable[[], str] | None = None,
) -> tuple[Phase, bytes]:
    """Run one process of the target to its end, or to ``crash``; return it and the log bytes it left.

    The log is copied to ``out/NAME.jsonl`` (or ``keep_as``) the moment the process is gone,
    before holds are released or anything else may touch it.
    """
    phase = Phase(name, argv, str(crash) if crash else None, log_before=_committed_length(world))
    requests, effects = len(world.server.requests), len(_effect_starts(world))
    trigger = Trigger.arm(world, crash) if crash else None
    env = world.env(config, trigger.gates() if trigger else [])
    started = time.monotonic()
    launch = Launch(
        argv,
        world.cwd,
        env,
        out / f"{name}.stdout",
        out / f"{name}.stderr",
        check=trigger.reached if trigger and trigger.durable else None,
        stop_signal=signal.SIGINT if crash and crash.signal == "SIGINT" else signal.SIGKILL,
        tear=world.log_path if crash and crash.torn else None,
        hold=pause is not None,
    )
    deadline = started + timeout
    try:
        if trigger and not trigger.durable:
            while launch.running and time.monotonic() < deadline:
                if trigger.reached():
                    launch.choice = pause() if pause else "kill"  # the world holds it meanwhile
                    if launch.choice != "continue":
                        launch.stop()
                    trigger.disarm()
                    break
                time.sleep(0.002)
        exited = False
        while not exited and time.monotonic() < deadline:
            if ABORT.is_set():
                raise Interrupted(f"interrupted during {name}")
            if launch.waiting_for_decision and pause is not None:
                paused = time.monotonic()
                launch.decide(pause())
                deadline += time.monotonic() - paused  # a person's thinking time is not the agent's
            exited = launch.wait(min(0.1, max(0.0, deadline - time.monotonic())))
        if launch.choice == "quit":
            raise Interrupted(f"quit at the pause in {name}")
    finally:  # also when chaos itself is interrupted: the target never outlives the phase
        phase.kill = launch.finish()
    phase.timed_out = not exited
    phase.seconds = time.monotonic() - started
    path = world.log_path()
    data = path.read_bytes() if path else b""
    (out / (keep_as or f"{name}.jsonl")).write_bytes(data)
    phase.log_after = len(data)
    phase.requests = len(world.server.requests) - requests
    phase.effects = _effect_starts(world)[effects:]
    phase.returncode = None if phase.timed_out else launch.returncode
    crashed = launch.stopped and launch.stop_signal == signal.SIGKILL
    phase.outcome = None if crashed or phase.timed_out else world.target.outcome_of(phase.returncode)
    if trigger:
        phase.continued = launch.choice == "continue"
        phase.reached = launch.stopped or phase.continued
        phase.late_facts = trigger.late_facts() if launch.stopped else None
        phase.exact = launch.stopped and phase.late_facts == 0
        phase.torn = launch.torn
        phase.mechanism = ("ptrace" if launch.exact else "poll") if trigger.durable else "world"
        trigger.disarm()
    return phase, data
