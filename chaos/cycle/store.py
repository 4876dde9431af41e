"""One crash cycle of a framework agent, judged on its store (``chaos.store``) instead of a session log.

The same world as a session-log case (sandbox, scripted model server, effect
ledger and its gates) and the same traced process; only what is durable is
read differently. The agent is started and stopped at its boundary (a commit
of its store, a held model request, a held effect) with SIGKILL of its whole
tree; a copy of the store's files is taken the moment the tree is gone and
handed to ``keep`` (the crash prefix, saved before anything else runs); the
agent is resumed until a resume ends by itself, and the finished run is
resumed once more (it must add nothing). The result is a ``StoreEvidence`` in
memory.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chaos.errors import Interrupted, UsageError
from chaos.ledger import entries as read_ledger
from chaos.process import ptrace
from chaos.process.commits import Commits, CommitStop
from chaos.process.phase import ABORT, PhaseKind, own_faults
from chaos.process.reap import KillReport
from chaos.process.stop import Trigger
from chaos.process.tree import TracedProcess
from chaos.scenario.model import Configuration, Crash, Scenario
from chaos.scenario.target import StoreSpec, Target
from chaos.store import Store, View, store_named
from chaos.world.world import World, build_world

SESSION = "chaos-session"  # the thread (session) id a framework agent is started and resumed with


@dataclass
class StorePhase:
    """What one process of a framework agent did, and its store before and after."""

    kind: PhaseKind
    argv: list[str]
    crash: Crash | None = None
    index: int = 0
    returncode: int | None = None
    outcome: str | None = None
    seconds: float = 0.0
    timed_out: bool = False
    killed: bool = False
    reached: bool | None = None
    exact: bool | None = None
    late: int | None = None  # store commits begun after the kill (0: exact), or None in flight
    mechanism: str | None = None
    commits: int | None = None  # commits the tracer saw complete (None: not traced)
    before: View = field(default_factory=View)
    after: View = field(default_factory=View)
    files: dict[str, bytes] = field(default_factory=dict)  # the store's files when the process was gone
    requests: tuple[int, int] = (0, 0)
    ledger_before: int = 0
    at_ledger: list[list[str]] | None = None  # durable call ids at each ledger line of the phase
    kill: KillReport = field(default_factory=KillReport)

    @property
    def name(self) -> str:
        return self.kind.named(self.index)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "argv": self.argv,
            "crash": str(self.crash) if self.crash else None,
            "returncode": self.returncode,
            "outcome": self.outcome,
            "seconds": round(self.seconds, 3),
            "timedOut": self.timed_out,
            "killed": self.killed,
            "reached": self.reached,
            "exact": self.exact,
            "late": self.late,
            "mechanism": self.mechanism,
            "commits": self.commits,
            "requests": self.requests[1] - self.requests[0],
            "storeItemsBefore": self.before.items,
            "storeItemsAfter": self.after.items,
            "survivors": self.kill.survivors,
        }


@dataclass
class StoreEvidence:
    """Everything one case of a framework agent left, in memory: what the checks read."""

    scenario: Scenario
    target: Target
    spec: StoreSpec
    phases: list[StorePhase]
    ledger: list[dict[str, Any]]
    requests: list[dict[str, Any]]

    @property
    def final(self) -> View:
        return self.phases[-1].after

    @property
    def crashed(self) -> StorePhase | None:
        return next((p for p in self.phases if p.crash is not None), None)

    @property
    def began(self) -> bool:
        """The run's input was durable when it crashed (or it did not crash): there is a run to resume.
        A crash before that loses the run, and a resume that then does nothing is right."""
        crashed = self.crashed
        return crashed is None or not crashed.killed or crashed.after.started

    def effects(self, phase: str = "start") -> list[dict[str, Any]]:
        """The ledger's lines of one kind: each effect's start (or done)."""
        return [e for e in self.ledger if e["phase"] == phase]


Keep = Callable[[StorePhase], None]


def _settle(world: World, phase: StorePhase, proc: TracedProcess, started: float, ended: bool) -> None:
    own_faults(world, proc, phase.name)
    phase.seconds = time.monotonic() - started
    phase.timed_out = not ended
    phase.returncode = None if phase.timed_out or phase.killed else proc.returncode
    phase.outcome = None if phase.returncode is None else world.target.outcome_of(phase.returncode)


def _power_cut(workspace: Path, written: dict[str, bytes], durable: dict[str, bytes]) -> None:
    """Leave in the workspace only what a power cut would: each store file as of its last sync (gone if
    it never had one), and no SQLite shared-memory index (it lived in memory)."""
    for name in set(written) | set(durable):
        path = workspace / name
        if name in durable:
            path.write_bytes(durable[name])
        else:
            path.unlink(missing_ok=True)
        Path(f"{path}-shm").unlink(missing_ok=True)


def run_store_phase(
    world: World,
    store: Store,
    phase: StorePhase,
    config: Configuration,
    timeout: float,
    out: Path,
    keep: Keep | None = None,
) -> StorePhase:
    """Run ``phase``'s process to its end or to its crash; keep its store's files the moment it is gone."""
    spec = world.target.store
    assert spec is not None
    workspace = world.box.workspace
    boundary = phase.crash.boundary if phase.crash is not None else None
    if boundary is not None and boundary.in_store and ptrace.unavailable() is not None:
        raise UsageError(
            f"{boundary} is a commit of the store, caught only by the tracer, and exact kills are unavailable "
            f"here ({ptrace.unavailable()}); run it where ptrace is allowed, or crash at an in-flight boundary"
        )
    before = store.snapshot(workspace, spec.path)
    phase.before = store.read(before)
    phase.ledger_before = len(read_ledger(world.box.ledger))
    requests_before = len(world.server.requests)
    trigger = Trigger.arm(world, phase.crash) if phase.crash and boundary and boundary.in_flight else None
    power_cut = phase.crash is not None and phase.crash.fault == "power-loss"
    commits = Commits(
        store, workspace, spec.path, str(world.box.ledger), world.scenario.store_delay, power_cut
    )
    stop = CommitStop(commits, boundary if boundary is not None and boundary.in_store else None, phase.before)
    env = world.env(config, trigger.gates() if trigger else [])
    stdout, stderr = out / f"{phase.name}.stdout", out / f"{phase.name}.stderr"
    started = time.monotonic()
    proc = TracedProcess(phase.argv, world.cwd, env, stdout, stderr, stop, traps=True)
    exited, held = False, False
    try:
        while not exited and time.monotonic() < started + timeout:
            if ABORT.is_set():
                raise Interrupted(f"interrupted during {phase.name}")
            if trigger is not None and not stop.stopped and trigger.reached():
                held = trigger.held()
                stop.kill()
            exited = proc.wait(0.002 if trigger is not None and not stop.stopped else 0.05)
    finally:  # also when chaos itself is interrupted: the target never outlives the phase
        if exited and trigger is not None:
            trigger.disarm()
        phase.kill = proc.reap()
        if stop.stopped and power_cut:
            _power_cut(workspace, store.snapshot(workspace, spec.path), commits.durable_files(before))
        phase.files = store.snapshot(workspace, spec.path)
        if keep is not None:
            keep(phase)
    if trigger is not None:
        trigger.disarm()
    phase.killed = stop.stopped
    _settle(world, phase, proc, started, exited or stop.stopped)
    phase.after = store.read(phase.files)
    phase.requests = (requests_before, len(world.server.requests))
    if proc.exact:
        phase.at_ledger, phase.commits = commits.at_ledger, commits.count
    if boundary is not None:
        phase.reached = stop.stopped
        if boundary.in_store:
            phase.late, phase.mechanism = stop.late, "ptrace"
            phase.exact = stop.stopped and stop.late == 0
        else:
            phase.mechanism = "world"
            phase.exact = stop.stopped and held
    return phase


def store_world(scenario: Scenario, target: Target, extra_env: dict[str, str]) -> World:
    """A world for a framework agent: fresh tool call ids per answer, as a real provider gives, and no
    session log for the server to read attempts from."""
    world = build_world(scenario, target, extra_env)
    world.server.fresh_ids = True
    world.server.attempt_of = None
    return world


def drive_store_cycle(
    scenario: Scenario, target: Target, extra_env: dict[str, str], out: Path, keep: Keep | None = None
) -> StoreEvidence:
    """Run one crash cycle of ``scenario`` against the framework agent ``target``."""
    spec = target.store
    assert spec is not None, "a store cycle needs a target with a [store] table"
    store = store_named(spec.kind)
    world = store_world(scenario, target, extra_env)
    phases: list[StorePhase] = []
    limit = scenario.timeout
    try:
        argv = world.argv(target.start, scenario.start, prompt=scenario.prompt, session_id=SESSION)
        start = StorePhase(PhaseKind.START, argv, scenario.crash)
        phases.append(run_store_phase(world, store, start, scenario.start, limit, out, keep))
        config = scenario.start.then(scenario.change)
        resume = world.argv(target.resume, config, session_id=store.session_id(start.files) or SESSION)
        if scenario.crash is not None and start.killed:
            crash, index = scenario.then_crash, 1
            while not phases[-1].timed_out:
                phase = StorePhase(PhaseKind.RESUME, resume, crash, index)
                phases.append(run_store_phase(world, store, phase, config, limit, out, keep))
                if not (crash and phase.reached):
                    break
                crash, index = None, index + 1
        if not phases[-1].timed_out:
            again = StorePhase(PhaseKind.AGAIN, resume)
            phases.append(run_store_phase(world, store, again, config, limit, out, keep))
        return StoreEvidence(
            scenario, target, spec, phases, read_ledger(world.box.ledger), world.server.request_log()
        )
    finally:
        world.close()
