"""Running one phase of a target: start it in the world, stop it at the boundary, keep the log.

A phase is one process of the target (the clean setup run of a compaction
scenario, the start, each resume, the idempotence rerun), with a timeout. The
log's bytes are read the moment the process is gone, before held requests and
gates are released or anything else may touch it, and handed to ``keep``
(which saves a crash prefix at once).
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import MISSING, asdict, dataclass, field, fields
from enum import Enum
from pathlib import Path
from typing import Any

from chaos.contract.framing import committed_length
from chaos.contract.reading import appended_finishes
from chaos.errors import ChaosFault, Interrupted, UsageError
from chaos.ledger import entries as read_ledger
from chaos.process import ptrace
from chaos.process.durability import Durability
from chaos.process.reap import KillReport
from chaos.process.stop import Decide, Stopper, Trigger
from chaos.process.tree import TracedProcess
from chaos.process.waiting import Waiting
from chaos.scenario.model import Configuration, Crash
from chaos.store import View
from chaos.world.sandbox import sandbox_disk_full
from chaos.world.world import World

ABORT = threading.Event()  # set when chaos itself is interrupted: every phase stops and kills its target


@dataclass(frozen=True)
class PhaseResult:
    """One process of the run, as recorded."""

    name: str
    argv: list[str]
    crash: str | None
    returncode: int | None
    outcome: str | None
    seconds: float
    timed_out: bool
    reached: bool | None
    late_facts: int | None
    exact: bool | None
    mechanism: str | None
    torn: bool
    failed_calls: int
    continued: bool
    waited: bool
    signalled: list[int]
    escaped_group: list[int]
    outlived: list[int]
    survivors: list[int]
    log_before: int
    log_after: int
    requests: int
    streams: int
    effects: list[str]
    strays: list[str]
    durable: int | None
    written: int | None
    # what judging the phase again needs (chaos recheck); an older verdict.json lacks them
    killed: bool = False
    wrote_early: bool = False
    ledger_before: int = 0
    synced_at_ledger: list[int] | None = None
    # a framework's store (a target with a ``[store]``): items its view held before and after, and the
    # commits the tracer saw complete (None: no store, or not traced)
    store_before: int | None = None
    store_after: int | None = None
    commits: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {camel(k): v for k, v in asdict(self).items()}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PhaseResult:
        return cls(
            **{
                f.name: data[camel(f.name)] if f.default is MISSING else data.get(camel(f.name), f.default)
                for f in fields(cls)
            }
        )


def camel(name: str) -> str:
    """A field's name in the JSON files chaos writes (``timed_out`` -> ``timedOut``)."""
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


class PhaseKind(Enum):
    SETUP = "setup"  # a compaction scenario's clean run before the crashed compaction
    START = "start"  # the run that is crashed
    RESUME = "resume"  # a recovery (numbered: a recovery may itself be crashed)
    CONTINUED = "start-continued"  # a writer paused at its boundary (SIGSTOP), let go on after a resume
    AGAIN = "resume-again"  # the finished session resumed once more: must append nothing

    def named(self, index: int) -> str:
        """A phase's name in files and reports: ``resume-N`` for the N-th resume, else its kind."""
        return f"resume-{index}" if self is PhaseKind.RESUME else self.value


# The fields a phase's result keeps as they are (``chaos recheck`` sets them back from a stored result).
KEPT = (
    "returncode",
    "outcome",
    "timed_out",
    "reached",
    "late_facts",
    "exact",
    "mechanism",
    "torn",
    "failed_calls",
    "continued",
    "waited",
    "streams",
    "effects",
    "strays",
    "durable",
    "killed",
    "wrote_early",
    "ledger_before",
    "synced_at_ledger",
)


@dataclass
class Phase:
    """What one process of the run did; ``crash`` is the requested boundary, if any."""

    kind: PhaseKind
    argv: list[str]
    crash: Crash | None = None
    index: int = 0  # resumes count from 1
    returncode: int | None = None
    outcome: str | None = None
    seconds: float = 0.0
    timed_out: bool = False
    reached: bool | None = None
    late_facts: int | None = None
    exact: bool | None = None
    torn: bool = False  # the crash left a torn tail (the next write cut short)
    failed_calls: int = 0  # the log's system calls a disk fault failed (or cut short)
    continued: bool = False  # paused at the boundary, then let go on without a crash
    waited: bool = False  # a second writer that waited for the paused one (it was let go on meanwhile)
    wrote_early: bool = False  # a second writer that changed the log before it waited
    killed: bool = False  # chaos SIGKILLed it at its boundary (a crash, not an exit of its own)
    mechanism: str | None = None  # how the stop was timed: ptrace, poll, or world (a held request or gate)
    kill: KillReport = field(default_factory=KillReport)
    log_before: bytes = b""  # the log when the phase started
    log_after: bytes = b""  # the log the moment the process was gone
    requests: tuple[int, int] = (0, 0)  # the model server's requests [from, to) received during the phase
    streams: int = 0  # answers the model server streamed during the phase
    effects: list[str] = field(default_factory=list)  # effects the ledger saw start during the phase
    strays: list[str] = field(default_factory=list)  # written beside the workspace during the phase
    # Durability, where the tracer saw the syncs (None where it did not): the log's durable length when
    # the phase ended (or was cut), the log as written before a power-loss cut, and the durable length
    # at each write to the effect ledger during the phase (the ledger's lines from ``ledger_before`` on).
    durable: int | None = None
    log_written: bytes | None = None
    synced_at_ledger: list[int] | None = None
    ledger_before: int = 0
    frozen: TracedProcess | None = field(default=None, repr=False)  # paused (SIGSTOP), not yet let go on
    # A framework's store (a target with a ``[store]``, ``chaos.store``) instead of a session log: its
    # files the moment the process was gone, what they made durable before and after, the commits the
    # tracer saw complete, and the tool calls durable at each write to the effect ledger.
    store_files: dict[str, bytes] = field(default_factory=dict)
    view_before: View | None = None
    view_after: View | None = None
    commits: int | None = None
    calls_at_ledger: list[list[str]] | None = None

    @property
    def name(self) -> str:
        return self.kind.named(self.index)

    @property
    def written(self) -> bytes:
        """The log as the process wrote it: before a power cut took what it had not synced, if one did."""
        return self.log_written if self.log_written is not None else self.log_after

    @property
    def cut(self) -> bool:
        """A power cut took bytes this process wrote (it had not synced them)."""
        return self.log_written is not None and len(self.log_written) > len(self.log_after)

    @property
    def committed_before(self) -> int:
        return committed_length(self.log_before)

    @property
    def appended(self) -> int:
        """Bytes the phase added after the committed log it started from. A torn tail it found and left
        untouched is not its own: the contract truncates it only when a session is opened for writing,
        and a phase that stops need not."""
        return 0 if self.log_after == self.log_before else len(self.log_after) - self.committed_before

    @property
    def wrote(self) -> bool:
        """The phase changed the log at all: appended, or rewrote bytes in place."""
        return self.wrote_early or self.log_after != self.log_before

    def finishes(self) -> list[dict[str, Any]]:
        """The ``operationFinished`` records this phase appended."""
        return appended_finishes(self.log_before, self.log_after)

    def result(self) -> PhaseResult:
        """What is kept of this phase once its process is gone."""
        return PhaseResult(
            name=self.name,
            argv=self.argv,
            crash=str(self.crash) if self.crash else None,
            seconds=round(self.seconds, 3),
            signalled=self.kill.signalled,
            escaped_group=self.kill.escaped_group,
            outlived=self.kill.outlived,
            survivors=self.kill.survivors,
            log_before=self.committed_before,
            log_after=len(self.log_after),
            requests=self.requests[1] - self.requests[0],
            written=None if self.log_written is None else len(self.log_written),
            store_before=None if self.view_before is None else self.view_before.items,
            store_after=None if self.view_after is None else self.view_after.items,
            commits=self.commits,
            **{name: getattr(self, name) for name in KEPT},
        )


def _effect_starts(ledger: list[dict[str, Any]]) -> list[str]:
    return [e["effect"] for e in ledger if e["phase"] == "start"]


@dataclass(frozen=True)
class Before:
    """What the world had seen when a phase started, to tell what the phase itself did."""

    requests: int
    streams: int
    ledger: int  # lines in the effect ledger
    effects: int
    strays: frozenset[str]

    @classmethod
    def of(cls, world: World) -> Before:
        server, ledger = world.server, read_ledger(world.box.ledger)
        strays = frozenset(world.box.strays())
        return cls(len(server.requests), server.streams, len(ledger), len(_effect_starts(ledger)), strays)


def settle(
    world: World, phase: Phase, proc: TracedProcess, started: float, ended: bool, before: Before
) -> None:
    """What the phase's process did, once it is gone (or handed on, paused)."""
    own_faults(world, proc, phase.name)
    phase.seconds = time.monotonic() - started
    phase.timed_out = not ended
    phase.requests = (before.requests, len(world.server.requests))
    phase.streams = world.server.streams - before.streams
    phase.effects = _effect_starts(read_ledger(world.box.ledger))[before.effects :]
    phase.strays = sorted(set(world.box.strays()) - before.strays)
    phase.returncode = None if phase.timed_out or phase.frozen else proc.returncode
    phase.outcome = None if phase.returncode is None else world.target.outcome_of(phase.returncode)


def own_faults(world: World, proc: TracedProcess, name: str) -> None:
    """chaos's own failures during phase ``name`` (its tracer's, its model server's): raised as a
    ``ChaosFault``, never taken for the agent's behaviour."""
    if proc.fault is not None:
        raise ChaosFault(f"the tracer of {name} failed: {proc.fault!r}") from proc.fault
    sandbox_disk_full(world.box.root)
    if world.server.fault is not None:
        fault = world.server.fault
        raise ChaosFault(f"the model server failed during {name}: {fault!r}") from fault


def continue_phase(
    world: World, phase: Phase, paused: Phase, timeout: float, keep: Callable[[Phase], None] | None = None
) -> Phase:
    """Let the paused writer of ``paused`` go on (SIGCONT) after another process resumed its session,
    and wait for it to end, as ``execute_phase`` waits for a process of its own."""
    proc = paused.frozen
    assert proc is not None
    paused.frozen = None
    phase.log_before = world.log()
    before = Before.of(world)
    phase.ledger_before = before.ledger
    started, exited = time.monotonic(), False
    try:
        proc.signal_group(signal.SIGCONT)
        while not exited and time.monotonic() < started + timeout:
            if ABORT.is_set():
                raise Interrupted(f"interrupted during {phase.name}")
            exited = proc.wait(0.05)
    finally:
        phase.kill = proc.reap()
        phase.log_after = world.log()
        if keep is not None:
            keep(phase)
    settle(world, phase, proc, started, exited, before)
    return phase


class _Arming:
    """What a fault arms before the phase (``chaos.fault.Arming``): the world's misbehaving answer to
    the request the trigger catches, the tracer's failing system calls."""

    def __init__(self, world: World, trigger: Trigger, stopper: Stopper) -> None:
        self.world, self.trigger, self.stopper = world, trigger, stopper

    def misbehave(self, how: str) -> None:
        assert self.trigger.request is not None, "a network fault lands at a model-request boundary"
        self.world.server.misbehave(self.trigger.request, how)

    def fail_syscalls(self, how: str) -> None:
        self.stopper.failing = how


def _cut(world: World, durable: int) -> bytes:
    """Truncate the log to its durable length; return what had been written."""
    path, written = world.log_path(), world.log()
    if path is not None and durable < len(written):
        os.truncate(path, durable)
    return written


def execute_phase(
    world: World,
    phase: Phase,
    config: Configuration,
    timeout: float,
    out: Path,
    keep: Callable[[Phase], None] | None = None,
    pause: Decide | None = None,
    on_wait: Callable[[], None] | None = None,
) -> Phase:
    """Run ``phase``'s process to its end, or to its crash; fill in what it did and the log it left.

    ``on_wait`` is called once if the process comes to wait on something outside itself (a lock a
    paused writer holds, see ``chaos.process.waiting``); the phase goes on when it returns."""
    crash = phase.crash
    fault = crash.kind if crash is not None else None
    phase.log_before = world.log()
    if fault is not None and fault.traced and ptrace.unavailable() is not None:
        raise UsageError(
            f"the {fault.name} fault needs the tracer (to see the agent's syncs, or to fail its system calls), "
            f"and exact kills are unavailable here ({ptrace.unavailable()}); chaos does not pretend: run it "
            "where ptrace is allowed"
        )
    before = Before.of(world)
    phase.ledger_before = before.ledger
    trigger = Trigger.arm(world, crash) if crash else None
    traps = (trigger is not None and trigger.durable) or (fault is not None and fault.traced)
    durability = None
    if traps and ptrace.unavailable() is None:
        start = committed_length(phase.log_before)
        log_path = lambda: str(world.log_path() or "")  # noqa: E731 (read at every sync)
        durability = Durability(log_path, str(world.box.ledger), start, world.scenario.persistence)
    abort = world.target.capabilities.abort or "SIGINT"
    stopper = Stopper(
        trigger, crash, lambda: str(world.log_path() or ""), signal.Signals[abort], pause, durability
    )
    if fault is not None and trigger is not None:
        fault.arm(_Arming(world, trigger, stopper))
    if fault is not None and fault.cuts_to_synced and durability is not None:
        world.durable_limit = lambda: durability.durable  # requests count only what a power cut keeps
    env = world.env(config, trigger.gates() if trigger else [])
    started = time.monotonic()
    stdout, stderr = out / f"{phase.name}.stdout", out / f"{phase.name}.stderr"
    pausing = fault is not None and fault.hands_on  # ptrace cannot keep a tree stopped for another's turn
    proc = TracedProcess(phase.argv, world.cwd, env, stdout, stderr, stopper, traps=traps, traced=not pausing)
    deadline, exited, handed_on = started + timeout, False, False
    waiting = (
        Waiting(lambda: list(proc.pids), lambda: world.log_size(), lambda: world.server.in_flight() > 0)
        if on_wait is not None
        else None
    )
    try:
        while not exited and time.monotonic() < deadline and not (pausing and stopper.stopped):
            if ABORT.is_set():
                raise Interrupted(f"interrupted during {phase.name}")
            asking = time.monotonic()
            stopper.tick()
            if pause is not None:
                deadline += time.monotonic() - asking  # a person's thinking time is not the agent's
            if waiting is not None and on_wait is not None and waiting():
                waited = time.monotonic()
                on_wait()  # another process acted meanwhile: this one's doings are counted from here
                before = Before.of(world)
                phase.ledger_before = before.ledger
                waiting, deadline = None, deadline + time.monotonic() - waited
            exited = proc.wait(0.002 if trigger and not trigger.durable and not stopper.stopped else 0.05)
        if stopper.choice == "quit":
            raise Interrupted(f"quit at the pause in {phase.name}")
        handed_on = stopper.frozen and not exited
    finally:  # also when chaos itself is interrupted: the target never outlives the phase
        stopper.release()
        world.durable_limit = None
        if handed_on:
            phase.frozen = proc  # a second writer resumes next; ``continue_phase`` lets this one go on
        else:
            if exited and trigger is not None:
                trigger.disarm()  # chaos's own holds go first: what lives on after that is the agent's
            phase.kill = proc.reap()
        if durability is not None and fault is not None and fault.cuts_to_synced and stopper.stopped:
            phase.log_written = _cut(world, durability.durable)  # only synced bytes stay
        phase.log_after = world.log()
        if keep is not None:
            keep(phase)
    settle(world, phase, proc, started, exited or handed_on, before)
    if durability is not None:
        phase.durable, phase.synced_at_ledger = durability.durable, durability.at_ledger
    phase.killed = stopper.killed  # an abort the agent handles, a fault of the world: it exits itself
    phase.failed_calls = stopper.failed
    if phase.killed or handed_on:
        phase.outcome = None
    if trigger is not None:
        phase.continued = stopper.continued
        phase.reached = stopper.stopped or phase.continued
        phase.torn = stopper.torn
        if trigger.durable:
            lands = (
                fault.lands_after if fault is not None else 0
            )  # the facts a fault lets through are its own
            phase.late_facts = None if stopper.late is None else max(0, stopper.late - lands)
            phase.exact = stopper.stopped and phase.late_facts == 0
            phase.mechanism = "ptrace" if proc.exact else "poll"
        else:
            phase.late_facts = 0 if stopper.held_at_stop else None
            phase.exact = bool(stopper.stopped and stopper.held_at_stop)
            phase.mechanism = "world"
        trigger.disarm()
    return phase
