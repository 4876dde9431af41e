"""One crash cycle: world -> run -> kill -> resume (maybe crash again) -> resume once more.

After the crash the scenario's configuration change is applied, the session
is resumed until a resume ends by itself (crashing the first one again at
``then_crash``), and the finished session is resumed once more: a correct
agent appends nothing then (recovery is idempotent). The result is an
``Evidence`` object in memory; ``keep`` is told of every phase the moment its
process is gone, so the crash prefix is saved before anything touches it.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chaos.contract.reading import session_id
from chaos.cycle.configuration import current_of
from chaos.cycle.evidence import Evidence, timed
from chaos.errors import TargetUnusable
from chaos.ledger import entries as read_ledger
from chaos.process.approval import THEN
from chaos.process.phase import Phase, PhaseKind
from chaos.process.run import continue_phase, execute_phase, phase_steps
from chaos.process.services import open_world
from chaos.process.warm import WarmStarts
from chaos.scenario.model import Configuration, Crash, Scenario
from chaos.scenario.target import Target
from chaos.store import Store
from chaos.world.world import World

Keep = Callable[[Phase], None]


@dataclass(frozen=True)
class Paused:
    """What a person sees at ``chaos run --pause``: the agent is frozen at the boundary."""

    crash: Crash | None
    workspace: Path
    log_path: Path | None
    log: bytes
    current: dict[str, Any] | None


Pause = Callable[[Paused], str]  # the person's choice: kill, continue or quit


def _no_log(world: World, phase: Phase, out: Path) -> TargetUnusable:
    """The target's ``sessions`` glob matched nothing the agent wrote: say what it did write."""
    seeded = set(world.scenario.files)
    written = []
    for folder, _, names in os.walk(world.box.workspace):
        for name in names:
            path = os.path.relpath(os.path.join(folder, name), world.box.workspace)
            if path not in seeded:
                written.append(path)
    if not written and phase.returncode not in (None, 0):  # it never got going: a command that does not run
        said = said_last(out / f"{phase.name}.stderr")
        return TargetUnusable(
            f"{world.target.path}: the {phase.name} command did not start: {shlex.join(phase.argv)!r} exited "
            f"{phase.returncode} without writing anything"
            + (f", saying: {said}" if said else "")
            + "; check the program and its arguments in the target file"
        )
    found = ", ".join(sorted(written)[:10]) + (" ..." if len(written) > 10 else "") if written else "nothing"
    return TargetUnusable(
        f"{world.target.path}: sessions = {world.target.sessions!r} matched nothing in the workspace "
        f"after the {phase.name} phase (exit {phase.returncode}); the agent wrote there: {found}. "
        "Point sessions at the agent's session log (a glob relative to the workspace)."
    )


def said_last(path: Path, lines: int = 5) -> str:
    """The last lines a process printed, on one line (for an error message)."""
    try:
        text = path.read_text(errors="replace").strip()
    except OSError:
        return ""
    return " | ".join(text.splitlines()[-lines:])


def _decide(world: World, pause: Pause) -> Callable[[], str]:
    def ask() -> str:
        log = world.log()
        config = world.scenario.start.then(world.scenario.change)
        current = current_of(world, config, log) if log else None
        return pause(Paused(world.scenario.crash, world.box.workspace, world.log_path(), log, current))

    return ask


def _phase(
    world: World,
    phase: Phase,
    config: Configuration,
    limit: float,
    out: Path,
    keep: Keep | None,
    pause: Pause | None = None,
    paused: Phase | None = None,
    phases: list[Phase] | None = None,
) -> Phase:
    """Run one phase. With a writer ``paused`` at its boundary still holding the session, this phase is a
    second writer: when it comes to wait (for the lock the paused one holds), the cycle's next step is to
    let the paused writer go on to its end (``phases`` gets it), and the second resumes from the log it
    left."""
    decide = _decide(world, pause) if pause else None
    with closing(
        phase_steps(world, phase, config, limit, out, keep, decide, waits=paused is not None)
    ) as steps:
        for _ in steps:
            assert paused is not None and phases is not None
            phase.wrote_early = world.log() != phase.log_before
            phases.append(continue_phase(world, Phase(PhaseKind.CONTINUED, paused.argv), paused, limit, keep))
            phase.log_before, phase.waited = world.log(), True
    no_file = world.log_path() is None  # (an empty file is a log a power cut emptied: a finding)
    if no_file and not phase.timed_out and phase.kind in (PhaseKind.SETUP, PhaseKind.START):
        raise _no_log(world, phase, out)
    return phase


def _recover(
    world: World, then_crash: Crash | None, limit: float, out: Path, keep: Keep | None, phases: list[Phase]
) -> None:
    """Resume until a resume ends by itself (crashing the first at ``then_crash``), then once again."""
    config = world.scenario.start.then(world.scenario.change)
    paused = phases[-1] if phases[-1].frozen is not None else None  # a second writer resumes meanwhile
    sid = session_id(phases[-1].log_after)
    if sid is None:
        return  # the header cannot be read: nothing can be resumed (the prefix check says why)
    argv = world.argv(world.target.resume, config, session_id=sid)
    crash, index = then_crash, 1
    while True:
        phase = Phase(PhaseKind.RESUME, argv, crash, index)
        waits = paused is not None and paused.frozen is not None
        _phase(world, phase, config, limit, out, keep, paused=paused if waits else None, phases=phases)
        phases.append(phase)
        if phase.timed_out:
            return
        if not (crash and phase.reached):
            break
        crash, index = None, index + 1
    if paused is not None and paused.frozen is not None:  # the second writer ended by itself
        phases.append(continue_phase(world, Phase(PhaseKind.CONTINUED, paused.argv), paused, limit, keep))
    phases.append(_phase(world, Phase(PhaseKind.AGAIN, argv), config, limit, out, keep))


SESSION = "chaos-session"  # the thread (session) id a framework agent is started and resumed with


def _approved(world: World, template: list[str], config: Configuration, **values: str) -> list[str]:
    """A phase's command: ``template`` filled; for a target whose runs park for approval, that command
    and, each time it exits parked, the target's approve command (``chaos.process.approval``): one
    process to chaos, so a crash lands in the run wherever its approval put it."""
    argv = world.argv(template, config, **values)
    target = world.target
    if target.approve is None:
        return argv
    approve = world.argv(target.approve, config, session_id=values["session_id"])
    chain = [sys.executable, "-m", "chaos.process.approval", str(target.exit_codes["parked"])]
    return [*chain, *argv, THEN, *approve]


def _store_cycle(world: World, store: Store, out: Path, keep: Keep | None, phases: list[Phase]) -> None:
    """A framework agent's cycle: started (under a session id chaos gives it), crashed at a commit or in
    flight, and, if the crash landed, resumed until a resume ends by itself (crashing the first at
    ``then_crash``); then resumed once more. A run that was not crashed is not resumed but that once."""
    scenario, target, limit = world.scenario, world.target, world.scenario.timeout

    def run(phase: Phase, config: Configuration) -> Phase:
        phases.append(execute_phase(world, phase, config, limit, out, keep))
        return phase

    argv = _approved(world, target.start, scenario.start, prompt=scenario.prompt, session_id=SESSION)
    start = run(Phase(PhaseKind.START, argv, scenario.crash), scenario.start)
    config = scenario.start.then(scenario.change)
    resume = _approved(
        world, target.resume, config, session_id=store.session_id(start.store_files) or SESSION
    )
    if scenario.crash is not None and start.reached:  # killed, or gone on through the world's fault
        crash, index = scenario.then_crash, 1
        while not phases[-1].timed_out:
            phase = run(Phase(PhaseKind.RESUME, resume, crash, index), config)
            if not (crash and phase.reached):
                break
            crash, index = None, index + 1
    if not phases[-1].timed_out:
        run(Phase(PhaseKind.AGAIN, resume), config)


def _log_cycle(
    world: World,
    out: Path,
    keep: Keep | None,
    pause: Pause | None,
    phases: list[Phase],
    timings: dict[str, float],
) -> tuple[dict[str, Any] | None, Scenario]:
    """A session-log agent's cycle: (a compaction scenario's clean setup run,) the start, crashed at its
    boundary, then recovered (``_recover``). Returns the planner's current configuration under the
    resume's configuration, and the scenario as judged (a pause that let the agent go on leaves no crash)."""
    scenario = world.scenario
    limit = world.phase_limit
    argv = world.argv(world.target.start, scenario.start, prompt=scenario.prompt)
    if scenario.operation == "compaction":
        assert world.target.compact is not None  # a case that needs compaction is skipped without it
        setup = _phase(world, Phase(PhaseKind.SETUP, argv), scenario.start, limit, out, keep)
        phases.append(setup)
        argv = world.argv(world.target.compact, scenario.start, session_id=session_id(setup.log_after) or "")
    start = Phase(PhaseKind.START, argv, scenario.crash)
    _phase(world, start, scenario.start, limit, out, keep, pause if scenario.crash else None)
    phases.append(start)
    resume_config = scenario.start.then(scenario.change)
    with timed(timings, "configuration"):
        current = current_of(world, resume_config, start.log_after) if start.log_after else None
    if not start.timed_out:
        _recover(world, scenario.then_crash, limit, out, keep, phases)
    return current, (scenario.with_crash(None) if start.continued else scenario)


def drive_cycle(
    scenario: Scenario,
    target: Target,
    extra_env: dict[str, str],
    out: Path,
    keep: Keep | None = None,
    pause: Pause | None = None,
    warm: WarmStarts | None = None,
) -> Evidence:
    """Run one crash cycle of ``scenario`` against ``target``; processes' output goes to ``out``. A target
    with a ``[store]`` is driven at the commits of its store, and read through its adapter. With ``warm``,
    its phases start as forks of a warm interpreter where they can (``chaos.process.warm``)."""
    timings: dict[str, float] = {}
    with timed(timings, "world"):
        world = open_world(scenario, target, extra_env)
        world.starts = warm
    phases: list[Phase] = []
    try:
        current: dict[str, Any] | None = None
        judged = scenario
        if world.store is not None:
            _store_cycle(world, world.store, out, keep, phases)
        else:
            current, judged = _log_cycle(world, out, keep, pause, phases, timings)
        return Evidence(
            judged,
            target,
            extra_env,
            phases,
            current,
            read_ledger(world.box.ledger, world.approval_key),
            world.server.request_log(),
            world.server.attempts_per_step(),
            timings,
        )
    finally:
        for phase in phases:  # a paused writer never outlives the cycle, whatever ended it
            if phase.frozen is not None:
                phase.kill, phase.frozen = phase.frozen.reap(), None
        with timed(timings, "teardown"):
            world.close()
