"""Running one phase of a framework agent, whose boundaries are the commits of its store.

The same ``Phase`` as a session-log agent's, filled from the store instead of a
log: the agent is started in the world and SIGKILLed (its whole tree) at its
boundary, a commit the tracer sees (``chaos.process.commits``) or a held model
request or effect; a copy of the store's files is taken the moment the tree is
gone and handed to ``keep`` (the crash prefix, saved before anything else runs).
A power cut leaves each store file as of its last sync.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from chaos.errors import Interrupted, UsageError
from chaos.fault.base import FailingCalls, Misbehaviour
from chaos.process import ptrace
from chaos.process.commits import Commits, CommitStop
from chaos.process.phase import ABORT, Phase
from chaos.process.run import Before, settle
from chaos.process.stop import Trigger
from chaos.process.tree import TracedProcess
from chaos.scenario.model import Configuration
from chaos.store import Store
from chaos.world.world import World


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


class _WorldArming:
    """What a fault arms for a store phase (``chaos.fault.Arming``): the model server's misbehaving answer
    to the request the trigger holds. A store has no log whose system calls a disk fault could fail
    (``Fault.unavailable_on_store`` keeps those faults away)."""

    def __init__(self, world: World, trigger: Trigger) -> None:
        self.world, self.trigger = world, trigger

    def misbehave(self, how: Misbehaviour) -> None:
        assert self.trigger.request is not None, "a network fault lands at a model-request boundary"
        self.world.server.misbehave(self.trigger.request, how)

    def fail_syscalls(self, how: FailingCalls) -> None:
        raise UsageError("failing a store's system calls is not available (a disk fault needs a session log)")


def execute_commit_phase(
    world: World,
    store: Store,
    phase: Phase,
    config: Configuration,
    timeout: float,
    out: Path,
    keep: Callable[[Phase], None] | None = None,
) -> Phase:
    """Run ``phase``'s process to its end or to its crash; keep its store's files the moment it is gone."""
    spec = world.target.store
    assert spec is not None, "a commit phase needs a target with a [store] table"
    workspace = world.box.workspace
    crash = phase.crash
    boundary = crash.boundary if crash is not None else None
    if boundary is not None and boundary.in_store and ptrace.unavailable() is not None:
        raise UsageError(
            f"{boundary} is a commit of the store, caught only by the tracer, and exact kills are unavailable "
            f"here ({ptrace.unavailable()}); run it where ptrace is allowed, or crash at an in-flight boundary"
        )
    found = store.snapshot(workspace, spec.path)
    phase.view_before = store.read(found)
    before = Before.of(world)
    phase.ledger_before = before.ledger
    trigger = Trigger.arm(world, crash) if crash and boundary and boundary.in_flight else None
    if crash is not None and trigger is not None:
        crash.kind.arm(_WorldArming(world, trigger))
    crashes = crash is None or crash.kind.crashes  # else the world misbehaves and the agent goes on
    power_cut = crash is not None and crash.kind.cuts_to_synced
    commits = Commits(
        store, workspace, spec.path, str(world.box.ledger), world.scenario.store_delay, power_cut
    )
    stop = CommitStop(
        commits, boundary if boundary is not None and boundary.in_store else None, phase.view_before
    )
    env = world.env(config, trigger.gates() if trigger else [])
    stdout, stderr = out / f"{phase.name}.stdout", out / f"{phase.name}.stderr"
    started = time.monotonic()
    proc = TracedProcess(phase.argv, world.cwd, env, stdout, stderr, stop, traps=True)
    exited, held, went_on = False, False, False
    try:
        while not exited and time.monotonic() < started + timeout:
            if ABORT.is_set():
                raise Interrupted(f"interrupted during {phase.name}")
            if trigger is not None and not (stop.stopped or went_on) and trigger.reached():
                held = trigger.held()
                if crashes:
                    stop.kill()
                went_on = not crashes
            exited = proc.wait(0.002 if trigger is not None and not (stop.stopped or went_on) else 0.05)
    finally:  # also when chaos itself is interrupted: the target never outlives the phase
        if exited and trigger is not None:
            trigger.disarm()
        phase.kill = proc.reap()
        if stop.stopped and power_cut:
            _power_cut(workspace, store.snapshot(workspace, spec.path), commits.durable_files(found))
        phase.store_files = store.snapshot(workspace, spec.path)
        phase.view_after = store.read(phase.store_files)
        if keep is not None:
            keep(phase)
    if trigger is not None:
        trigger.disarm()
    phase.killed = stop.stopped
    settle(world, phase, proc, started, exited or stop.stopped, before)
    if phase.killed:
        phase.outcome = None
    if proc.exact:
        phase.calls_at_ledger, phase.commits = commits.at_ledger, commits.count
    if boundary is not None:
        phase.reached = stop.stopped or went_on
        if boundary.in_store:
            phase.late_facts, phase.mechanism = stop.late, "ptrace"
            phase.exact = stop.stopped and stop.late == 0
        else:
            phase.mechanism = "world"
            phase.exact = phase.reached and held
    return phase
