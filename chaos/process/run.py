"""Running one phase of a target: start it in the world, stop it at the boundary, keep what it left.

A phase is one process of the target (the clean setup run of a compaction
scenario, the start, each resume, the idempotence rerun), with a timeout. The
log's bytes (or a framework's store files) are read the moment the process is
gone, before held requests and gates are released or anything else may touch
it, and handed to ``keep`` (which saves a crash prefix at once). One runner,
one stop policy (``chaos.process.stop``) and one durability model interface
(``chaos.process.durability.Model``) for every target: what differs is the
store's model (a session log's synced length, a framework store's commits and
synced files), which sees every trap first, keeps what the phase left and
says what a power cut keeps; how the boundaries show at the tracer follows
from it (facts of a log, commits of a store).
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Generator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from chaos.contract.framing import committed_length
from chaos.errors import InternalError, Interrupted, UsageError
from chaos.fault.base import Fault, Misbehaviour
from chaos.ledger import STARTS
from chaos.ledger import entries as read_ledger
from chaos.process import ptrace
from chaos.process.commits import Commits
from chaos.process.durability import Durability, LogModel, Model
from chaos.process.phase import ABORT, Phase
from chaos.process.record import Landed
from chaos.process.state import crash_state, ledger_of
from chaos.process.stop import Decide, Stopper, Trigger
from chaos.process.tree import TracedProcess
from chaos.process.waiting import Waiting
from chaos.process.warm import WarmStarts
from chaos.scenario.model import Configuration, Strike
from chaos.world.sandbox import sandbox_disk_full
from chaos.world.world import World


def _effect_starts(ledger: list[dict[str, Any]]) -> list[str]:
    return [e["effect"] for e in ledger if e["phase"] in STARTS]


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
    phase.process.seconds = time.monotonic() - started
    phase.process.timed_out = not ended
    phase.seen.requests = (before.requests, len(world.server.requests))
    phase.seen.streams = world.server.streams - before.streams
    phase.seen.effects = _effect_starts(read_ledger(world.box.ledger))[before.effects :]
    phase.seen.strays = sorted(set(world.box.strays()) - before.strays)
    kinds = {save.kind for save in world.store.saves}  # (written in the agent's process: only those named)
    phase.seen.saves = [kind for kind, _, _ in world.box.saves() if kind in kinds] if kinds else []
    phase.process.returncode = None if phase.process.timed_out or phase.process.frozen else proc.returncode
    phase.process.outcome = (
        None if phase.process.returncode is None else world.target.outcome_of(phase.process.returncode)
    )


def own_faults(world: World, proc: TracedProcess, name: str) -> None:
    """chaos's own failures during phase ``name`` (its tracer's, its model server's): raised as a
    ``InternalError``, never taken for the agent's behaviour."""
    if proc.fault is not None:
        raise InternalError(f"the tracer of {name} failed: {proc.fault!r}") from proc.fault
    sandbox_disk_full(world.box.root)
    if world.server.fault is not None:
        fault = world.server.fault
        raise InternalError(f"the model server failed during {name}: {fault!r}") from fault
    if world.relay is not None and world.relay.fault is not None:
        fault = world.relay.fault
        raise InternalError(f"the database relay failed at a commit during {name}: {fault!r}") from fault


def continue_phase(
    world: World, phase: Phase, paused: Phase, timeout: float, keep: Callable[[Phase], None] | None = None
) -> Phase:
    """Let the paused writer of ``paused`` go on (SIGCONT) after another process resumed its session,
    and wait for it to end, as ``execute_phase`` waits for a process of its own."""
    proc = paused.process.frozen
    assert proc is not None
    paused.process.frozen = None
    phase.kept.log_before = world.log()
    before = Before.of(world)
    phase.kept.ledger_before = before.ledger
    started, exited = time.monotonic(), False
    try:
        proc.signal_group(signal.SIGCONT)
        while not exited and time.monotonic() < started + timeout:
            if ABORT.is_set():
                raise Interrupted(f"interrupted during {phase.name}")
            exited = proc.wait(0.05)
    finally:
        phase.process.reaped = proc.reap()
        phase.kept.log_after = world.log()
        if keep is not None:
            keep(phase)
    settle(world, phase, proc, started, exited, before)
    return phase


class _Arming:
    """What a fault arms before the phase (``chaos.fault.Arming``): the world's misbehaving answer to
    the request the trigger catches, the tracer's failing system calls."""

    def __init__(self, world: World, trigger: Trigger, stopper: Stopper) -> None:
        self.world, self.trigger, self.stopper = world, trigger, stopper

    def misbehave(self, how: Misbehaviour) -> None:
        assert self.trigger.request is not None, "a network fault lands at a model-request boundary"
        self.world.server.misbehave(self.trigger.request, how)


def _truncate(world: World, length: int) -> None:
    """Cut the session log to ``length`` bytes (what a power cut keeps of it)."""
    path = world.log_path()
    if path is not None:
        os.truncate(path, length)


def _tracer_needed(crash: Strike | None) -> str | None:
    """Why this crash cannot be carried out without the tracer, where it is unavailable (None: it can)."""
    if crash is None or ptrace.unavailable() is None:
        return None
    if crash.boundary.in_store:
        return (
            f"{crash.boundary} is a commit of the store, caught only by the tracer, and exact kills are "
            f"unavailable here ({ptrace.unavailable()}); run it where ptrace is allowed, or crash at an "
            "in-flight boundary"
        )
    if crash.fault.traced:
        return (
            f"the {crash.fault.name} fault needs the tracer (to see the agent's syncs, or to fail its system "
            f"calls), and exact kills are unavailable here ({ptrace.unavailable()}); chaos does not pretend: "
            "run it where ptrace is allowed"
        )
    return None


def execute_phase(
    world: World,
    phase: Phase,
    config: Configuration,
    timeout: float,
    out: Path,
    keep: Callable[[Phase], None] | None = None,
    pause: Decide | None = None,
) -> Phase:
    """Run ``phase``'s process to its end, or to its crash; fill in what it did and what it left durable:
    the session log, or a framework's store (``world.store``: its files, read through its adapter, its
    commits seen at the tracer's traps)."""
    for _ in phase_steps(world, phase, config, timeout, out, keep, pause):
        pass  # (it waits for no one: nothing else is running)
    return phase


@dataclass
class _Armed:
    """What a phase arms before its process starts: the boundary's trigger, the store's durability model
    (a session log's syncs, or a framework store's commits and syncs), and the stop policy over them."""

    fault: Fault | None
    trigger: Trigger | None
    model: Model  # the store's durability model (``chaos.process.durability.Model``)
    stopper: Stopper
    traps: bool  # the tracer stops the target at its writes and syncs
    at_commit: bool  # the boundary is a commit of a framework's store, seen by the tracer or the relay
    before: Before

    @property
    def cuts(self) -> bool:
        """A power cut ends the phase: only what was synced stays."""
        return self.fault is not None and self.fault.cuts_to_synced and self.stopper.stopped


def _prepare(world: World, phase: Phase, pause: Decide | None) -> _Armed:
    """Read what the phase starts from and arm its boundary, its store's model and its fault."""
    crash, store, spec = phase.crash, world.store, world.target.store_spec
    fault = crash.fault if crash is not None else None
    refused = _tracer_needed(crash)
    if refused is not None:
        raise UsageError(refused)
    workspace = world.box.workspace
    found: dict[str, bytes] = {}
    if not spec.facts:  # judged by what its adapter reads: its files, before and after
        found = store.snapshot(workspace, spec.path, spec.state)
        phase.kept.view_before = store.read(found)
    else:
        phase.kept.log_before = world.log()
    before = Before.of(world)
    phase.kept.ledger_before = before.ledger
    at_commit = crash is not None and crash.boundary.in_store  # a store's commit, seen by the tracer
    trigger = Trigger.arm(world, crash) if crash is not None and not at_commit else None
    cuts = fault is not None and fault.cuts_to_synced
    commits = (
        None
        if spec.facts
        else Commits(
            store,
            workspace,
            spec.path,
            str(world.box.ledger),
            world.scenario.store_delay,
            cuts,
            spec.state,
            found,
        )
    )
    traps = (
        commits is not None
        or (trigger is not None and trigger.durable)
        or (fault is not None and fault.traced)
    )
    model: Model
    if commits is not None:
        model = commits
    else:
        durability = None
        log_path = lambda: str(world.log_path() or "")  # noqa: E731 (read at every sync)
        if traps and ptrace.unavailable() is None:
            start = committed_length(phase.kept.log_before)
            durability = Durability(
                log_path,
                str(world.box.ledger),
                start,
                world.scenario.persistence,
                str(workspace),
                world.log_glob,
            )
            if cuts:
                limit = durability
                world.durable_limit = lambda: limit.durable  # requests count only what a power cut keeps
        model = LogModel(log_path, world.log, lambda n: _truncate(world, n), durability)
    abort = world.target.capabilities.abort or "SIGINT"
    stopper = Stopper(world, trigger, crash, signal.Signals[abort], pause, model, phase.kept.view_before)
    if world.relay is not None and commits is not None:
        world.relay.on_commit = stopper.at_wire_commit  # a server store's commits, seen on the wire
        world.relay.on_write = stopper.at_wire_write  # and its writes inside an open transaction
    if fault is not None and trigger is not None:
        fault.arm(_Arming(world, trigger, stopper))
    return _Armed(fault, trigger, model, stopper, traps, at_commit, before)


def _landed(world: World, armed: _Armed, proc: TracedProcess, landed: Landed) -> Landed:
    """Where the fault landed: reached or not, how late, timed how; and the fault's own landing record."""
    stopper, trigger, fault = armed.stopper, armed.trigger, armed.fault
    own = stopper.landing()
    landed = replace(
        landed,
        overtaken=own.overtaken,
        out_of_order=own.out_of_order,
        failed_calls=own.failed_calls,
        failed_at=own.failed_at,
    )
    if armed.at_commit:
        # a fault that lets the agent go on lands at the held commit itself: what it commits next is its due
        commits = stopper.late_commits if fault is None or fault.crashes else 0
        mechanism = "wire" if world.relay is not None else "ptrace"
        exact = stopper.stopped and commits == 0
        return replace(landed, reached=stopper.stopped, late_facts=commits, exact=exact, mechanism=mechanism)
    if trigger is None:
        return landed
    continued = stopper.continued
    landed = replace(landed, continued=continued, reached=stopper.stopped or continued, torn=own.torn)
    if trigger.durable:
        lands = fault.lands_after if fault is not None else 0  # the facts a fault lets through are its own
        late = None if stopper.late is None else max(0, stopper.late - lands)
        mechanism = "ptrace" if proc.exact else "poll"
        return replace(landed, late_facts=late, exact=stopper.stopped and late == 0, mechanism=mechanism)
    held = stopper.held_at_stop
    return replace(
        landed, late_facts=0 if held else None, exact=bool(stopper.stopped and held), mechanism="world"
    )


def _log_name(world: World) -> str | None:
    """The session log's path relative to the workspace (None: a store, or no log yet)."""
    path = world.log_path() if world.target.facts else None
    return str(path.relative_to(world.box.workspace)) if path is not None else None


def _at_rest(world: World, fault: Fault, phase: Phase) -> str | None:
    """What ``fault`` does to the store's files once the crash prefix is saved (its ``at_rest``): the
    damaged file is written back for the resume to find; what was done, in words."""
    kept, log = phase.kept, _log_name(world)
    files = dict(kept.store_files) | ({log: kept.log_after} if log is not None else {})
    damage = fault.at_rest(files, kept.renamed_last)
    if damage is None:
        return None
    damaged = world.box.workspace / damage.path
    damaged.write_bytes(damage.data)
    # at rest: the machine came back, and SQLite rebuilds its shared-memory index from the files
    Path(f"{str(damaged).removesuffix('-wal')}-shm").unlink(missing_ok=True)
    return damage.said


def _state(world: World, phase: Phase) -> str | None:
    """The crash state the phase left: what the next phase reads (``chaos.process.state``)."""
    box = world.box
    effects = ledger_of(box.ledger)
    if effects is None:
        return None
    at = (effects, world.server.attempts_per_step())
    return crash_state(phase.kept, box.workspace, _log_name(world), box.root, phase.landing.damaged, at)


def phase_steps(
    world: World,
    phase: Phase,
    config: Configuration,
    timeout: float,
    out: Path,
    keep: Callable[[Phase], None] | None = None,
    pause: Decide | None = None,
    waits: bool = False,
) -> Generator[None, None, None]:
    """``execute_phase`` in steps: with ``waits``, it yields once if the process comes to wait on something
    outside itself (a lock a paused writer holds, see ``chaos.process.waiting``), so that the cycle takes
    its next step meanwhile (lets the paused writer go on); the phase goes on when resumed, counting its
    own doings from there. Closing it early reaps the process, as an interruption does. Three steps:
    arm (``_prepare``), run the process to its end or its stop, and keep what it left (its store's model, ``Model.keep``,
    then what it did and where its fault landed)."""
    armed = _prepare(world, phase, pause)
    stopper, trigger, fault = armed.stopper, armed.trigger, armed.fault
    gates = trigger.gates() if trigger else []
    world.box.activate(gates)
    env = world.env(config, gates)
    started = time.monotonic()
    stdout, stderr = out / f"{phase.name}.stdout", out / f"{phase.name}.stderr"
    pausing = fault is not None and fault.hands_on  # ptrace cannot keep a tree stopped for another's turn
    starts: WarmStarts | None = world.starts
    if starts is None and trigger is not None and trigger.saving:
        # a held save lives in the target's interpreter: only a start chaos makes holds it, and the
        # recovery after it starts so too (the held save may be the one it begins first: Save.passes)
        starts = world.starts = WarmStarts()
        world.closers.append(starts.close)
    saves = tuple(save.request() for save in world.store.saves)
    launch = starts.launch(phase.argv, env, saves) if starts is not None else None
    proc = TracedProcess(
        phase.argv,
        world.cwd,
        env,
        stdout,
        stderr,
        stopper,
        traps=armed.traps,
        traced=not pausing,
        warm=launch,
    )
    phase.process.warm, phase.process.cold_because = proc.warm, proc.cold_because
    deadline, exited, handed_on, before = started + timeout, False, False, armed.before
    waiting = (
        Waiting(lambda: list(proc.pids), lambda: world.log_size(), lambda: world.server.in_flight() > 0)
        if waits
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
            if waiting is not None and waiting():
                waited = time.monotonic()
                yield  # the cycle's next step acts meanwhile: this one's doings are counted from here
                before = Before.of(world)
                phase.kept.ledger_before = before.ledger
                waiting, deadline = None, deadline + time.monotonic() - waited
            exited = proc.wait(0.002 if trigger and not trigger.durable and not stopper.stopped else 0.05)
        if stopper.choice == "quit":
            raise Interrupted(f"quit at the pause in {phase.name}")
        stopper.acted()  # (seen stopped while its fault froze the tree: handed on, not timed out)
        handed_on = stopper.frozen and not exited
    finally:  # also when chaos itself is interrupted: the target never outlives the phase
        stopper.release()
        if world.relay is not None:
            world.relay.on_commit = world.relay.on_write = None
            stopper.settle()
        world.durable_limit = None
        if handed_on:
            phase.process.frozen = proc  # a second writer resumes next; ``continue_phase`` lets it go on
        else:
            if exited and trigger is not None:
                trigger.disarm()  # chaos's own holds go first: what lives on after that is the agent's
            phase.process.reaped = proc.reap()
        armed.model.keep(phase.kept, armed.cuts)  # what it left durable, at once
        if keep is not None:
            keep(phase)
    if world.settle_tools is not None and not handed_on:  # a call the server held goes on without the agent
        if trigger is not None:
            trigger.disarm()
        world.settle_tools()
    settle(world, phase, proc, started, exited or handed_on, before)
    armed.model.record(phase.kept, proc.exact)
    phase.process.killed = stopper.killed  # an abort the agent handles, a fault of the world: it exits itself
    if phase.process.killed or handed_on:
        phase.process.outcome = None
    phase.landing = _landed(world, armed, proc, phase.landing)
    if fault is not None and stopper.killed and not handed_on:
        phase.landing.damaged = _at_rest(world, fault, phase)
    if phase.crash is not None and not handed_on and world.store.commit != "wire":
        phase.kept.state = _state(world, phase)  # (a store on a server keeps its state there)
    if trigger is not None:
        trigger.disarm()
