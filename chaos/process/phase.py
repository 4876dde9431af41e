"""Running one phase of a target: start it in the world, stop it at the boundary, keep the log.

A phase is one process of the target (the clean setup run of a compaction
scenario, the start, each resume, the idempotence rerun), with a timeout. The
log's bytes are read the moment the process is gone, before held requests and
gates are released or anything else may touch it, and handed to ``keep``
(which saves a crash prefix at once).
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

from chaos.contract.framing import committed_length
from chaos.errors import ChaosFault, Interrupted
from chaos.process.reap import KillReport
from chaos.process.stop import Decide, Stopper, Trigger
from chaos.process.traced import TracedProcess
from chaos.scenario.model import Configuration, Crash
from chaos.world.ledger import read_ledger
from chaos.world.world import World

ABORT = threading.Event()  # set when chaos itself is interrupted: every phase stops and kills its target


class PhaseKind(Enum):
    SETUP = "setup"  # a compaction scenario's clean run before the crashed compaction
    START = "start"  # the run that is crashed
    RESUME = "resume"  # a recovery (numbered: a recovery may itself be crashed)
    AGAIN = "resume-again"  # the finished session resumed once more: must append nothing


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
    continued: bool = False  # paused at the boundary, then let go on without a crash
    killed: bool = False  # chaos SIGKILLed it at its boundary (a crash, not an exit of its own)
    mechanism: str | None = None  # how the stop was timed: ptrace, poll, or world (a held request or gate)
    kill: KillReport = field(default_factory=KillReport)
    log_before: bytes = b""  # the log when the phase started
    log_after: bytes = b""  # the log the moment the process was gone
    requests: tuple[int, int] = (0, 0)  # the model server's requests [from, to) received during the phase
    effects: list[str] = field(default_factory=list)  # effects the ledger saw start during the phase
    strays: list[str] = field(default_factory=list)  # written beside the workspace during the phase

    @property
    def name(self) -> str:
        return f"resume-{self.index}" if self.kind is PhaseKind.RESUME else self.kind.value

    @property
    def committed_before(self) -> int:
        return committed_length(self.log_before)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "argv": self.argv,
            "crash": str(self.crash) if self.crash else None,
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
            "signalled": self.kill.signalled,
            "escapedGroup": self.kill.escaped_group,
            "outlived": self.kill.outlived,
            "survivors": self.kill.survivors,
            "logBefore": self.committed_before,
            "logAfter": len(self.log_after),
            "requests": self.requests[1] - self.requests[0],
            "effects": self.effects,
            "strays": self.strays,
        }


def _effect_starts(world: World) -> list[str]:
    return [e["effect"] for e in read_ledger(world.box.ledger) if e["phase"] == "start"]


def run_phase(
    world: World,
    phase: Phase,
    config: Configuration,
    timeout: float,
    out: Path,
    keep: Callable[[Phase], None] | None = None,
    pause: Decide | None = None,
) -> Phase:
    """Run ``phase``'s process to its end, or to its crash; fill in what it did and the log it left."""
    crash = phase.crash
    phase.log_before = world.log()
    first_request, effects_before = len(world.server.requests), len(_effect_starts(world))
    strays_before = set(world.box.strays())
    trigger = Trigger.arm(world, crash) if crash else None
    tear = (lambda: str(world.log_path())) if crash and crash.torn else None
    stopper = Stopper(trigger, crash, tear, pause)
    env = world.env(config, trigger.gates() if trigger else [])
    started = time.monotonic()
    durable = trigger is not None and trigger.durable
    stdout, stderr = out / f"{phase.name}.stdout", out / f"{phase.name}.stderr"
    proc = TracedProcess(phase.argv, world.cwd, env, stdout, stderr, stopper, traps=durable)
    deadline, exited = started + timeout, False
    try:
        while not exited and time.monotonic() < deadline:
            if ABORT.is_set():
                raise Interrupted(f"interrupted during {phase.name}")
            asking = time.monotonic()
            stopper.tick()
            if pause is not None:
                deadline += time.monotonic() - asking  # a person's thinking time is not the agent's
            exited = proc.wait(0.002 if trigger and not trigger.durable and not stopper.stopped else 0.05)
        if stopper.choice == "quit":
            raise Interrupted(f"quit at the pause in {phase.name}")
    finally:  # also when chaos itself is interrupted: the target never outlives the phase
        stopper.release()
        phase.kill = proc.reap()
        phase.log_after = world.log()
        if keep is not None:
            keep(phase)
    if proc.fault is not None:
        raise ChaosFault(f"the tracer of {phase.name} failed: {proc.fault!r}") from proc.fault
    phase.seconds = time.monotonic() - started
    phase.timed_out = not exited
    phase.requests = (first_request, len(world.server.requests))
    phase.effects = _effect_starts(world)[effects_before:]
    phase.strays = sorted(set(world.box.strays()) - strays_before)
    phase.returncode = None if phase.timed_out else proc.returncode
    phase.killed = stopper.stopped and stopper.signum == signal.SIGKILL  # SIGINT: an abort it handles
    phase.outcome = None if phase.killed or phase.timed_out else world.target.outcome_of(phase.returncode)
    if trigger is not None:
        phase.continued = stopper.continued
        phase.reached = stopper.stopped or phase.continued
        phase.torn = stopper.torn
        if trigger.durable:
            phase.late_facts = trigger.late_facts() if stopper.stopped else None
            phase.exact = stopper.stopped and phase.late_facts == 0
            phase.mechanism = "ptrace" if proc.exact else "poll"
        else:
            phase.late_facts = 0 if stopper.held_at_stop else None
            phase.exact = bool(stopper.stopped and stopper.held_at_stop)
            phase.mechanism = "world"
        trigger.disarm()
    return phase
