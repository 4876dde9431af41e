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
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from chaos.contract.reading import session_id
from chaos.cycle.configuration import current_of
from chaos.cycle.evidence import Evidence, timed
from chaos.cycle.share import Recovery, Shares
from chaos.errors import TargetUnusable
from chaos.ledger import entries as read_ledger
from chaos.process.approval import THEN
from chaos.process.phase import Phase, PhaseKind
from chaos.process.run import continue_phase, phase_steps
from chaos.process.warm import WarmStarts
from chaos.scenario.model import Configuration, Scenario, Strike
from chaos.scenario.target import Target
from chaos.world.services import open_world
from chaos.world.world import World

Keep = Callable[[Phase], None]


@dataclass(frozen=True)
class Paused:
    """What a person sees at ``chaos run --pause``: the agent is frozen at the boundary."""

    crash: Strike | None
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
    if not written and phase.process.returncode not in (
        None,
        0,
    ):  # it never got going: a command that does not run
        said = said_last(out / f"{phase.name}.stderr")
        return TargetUnusable(
            f"{world.target.path}: the {phase.name} command did not start: {shlex.join(phase.argv)!r} exited "
            f"{phase.process.returncode} without writing anything"
            + (f", saying: {said}" if said else "")
            + "; check the program and its arguments in the target file"
        )
    found = ", ".join(sorted(written)[:10]) + (" ..." if len(written) > 10 else "") if written else "nothing"
    return TargetUnusable(
        f"{world.target.path}: sessions = {world.target.sessions!r} matched nothing in the workspace "
        f"after the {phase.name} phase (exit {phase.process.returncode}); the agent wrote there: {found}. "
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
            phase.landing.wrote_early = world.log() != phase.kept.log_before
            phases.append(continue_phase(world, Phase(PhaseKind.CONTINUED, paused.argv), paused, limit, keep))
            phase.kept.log_before, phase.landing.waited = world.log(), True
    no_file = world.log_path() is None  # (an empty file is a log a power cut emptied: a finding)
    first = phase.kind in (PhaseKind.SETUP, PhaseKind.START)
    if world.target.facts and no_file and not phase.process.timed_out and first:
        raise _no_log(world, phase, out)
    return phase


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


def _session(world: World, phase: Phase) -> str | None:
    """The id a resume names the run by: the one the agent wrote in its session log's header (None: it
    cannot be read, and there is nothing to resume), else the one its store chose, else chaos's."""
    if world.target.facts:
        return session_id(phase.kept.log_after)
    return world.store.session_id(phase.kept.store_files) or SESSION


@dataclass
class Borrowed:
    """A recovery this case took from the case that reached its crash state first (``chaos.cycle.share``),
    instead of running its own; under ``verify``, the one it would have taken (``twin``)."""

    took: Recovery | None = None
    twin: Recovery | None = None


def _cycle(
    world: World,
    out: Path,
    keep: Keep | None,
    pause: Pause | None,
    phases: list[Phase],
    timings: dict[str, float],
    borrowed: Borrowed,
) -> tuple[dict[str, Any] | None, Scenario]:
    """The cycle of every target: (a compaction scenario's clean setup run,) the start, crashed at its
    boundary (or paused there for a person), then resumed until a resume ends by itself (crashing the first
    at ``then_crash``; a second writer resumes meanwhile while a paused one holds the session), then resumed
    once more. Returns the planner's current configuration under the resume's configuration (a store with
    the contract's facts), and the scenario as judged (a pause that let the agent go on leaves no crash)."""
    scenario, target, limit = world.scenario, world.target, world.phase_limit
    argv = _approved(world, target.start, scenario.start, prompt=scenario.prompt, session_id=SESSION)
    if scenario.operation == "compaction":
        assert target.compact is not None  # a case that needs compaction is skipped without it
        setup = _phase(world, Phase(PhaseKind.SETUP, argv), scenario.start, limit, out, keep)
        phases.append(setup)
        argv = world.argv(target.compact, scenario.start, session_id=_session(world, setup) or "")
    start = Phase(PhaseKind.START, argv, scenario.crash)
    _phase(world, start, scenario.start, limit, out, keep, pause if scenario.crash else None)
    phases.append(start)
    target = world.target = target.upgraded()  # every resume is the next version's, where one is named
    config = scenario.start.then(scenario.change)
    current = None
    if target.facts and start.kept.log_after:
        with timed(timings, "configuration"):
            current = current_of(world, config, start.kept.log_after)
    judged = scenario.with_crash(None) if start.landing.continued else scenario
    # A session log's contract resumes every run it started (a finished one must append nothing); a store
    # is resumed where a crash left it, and the finished run's store once more.
    crashed = scenario.crash is not None and start.landing.reached
    sid = _session(world, start)
    if start.process.timed_out or sid is None:
        return current, judged  # (an unreadable header: the prefix check says why)
    if world.share is not None and crashed:
        borrowed.took = world.share.take(world, start)
        borrowed.twin = world.share.compare(world, start)
        if borrowed.took is not None:  # its recovery is the representative's, in this case's names
            for phase in borrowed.took.phases:
                if keep is not None:
                    keep(phase)
                phases.append(phase)
            return current, judged
    resume = _approved(world, target.resume, config, session_id=sid)
    paused = start if start.process.frozen is not None else None  # a second writer resumes meanwhile
    crash, index = scenario.then_crash, 1
    while crashed or target.facts:
        phase = Phase(PhaseKind.RESUME, resume, crash, index)
        waits = paused is not None and paused.process.frozen is not None
        _phase(world, phase, config, limit, out, keep, paused=paused if waits else None, phases=phases)
        phases.append(phase)
        if phase.process.timed_out:
            return current, judged
        if not (crash and phase.landing.reached):
            break
        crash, index = None, index + 1
    if paused is not None and paused.process.frozen is not None:  # the second writer ended by itself
        phases.append(continue_phase(world, Phase(PhaseKind.CONTINUED, paused.argv), paused, limit, keep))
    phases.append(_phase(world, Phase(PhaseKind.AGAIN, resume), config, limit, out, keep))
    return current, judged


def _with_recovery(evidence: Evidence, recovery: Recovery) -> Evidence:
    """``evidence`` up to its start, then ``recovery``: its phases, its ledger lines and model requests
    after what the start left, and the model's asks per step at its end."""
    started = evidence.phases.index(evidence.start) + 1
    spliced = replace(
        evidence,
        phases=evidence.phases[:started] + list(recovery.phases),
        ledger=evidence.ledger[: recovery.ledger_from] + list(recovery.ledger),
        requests=evidence.requests[: recovery.requests_from] + list(recovery.requests),
        attempts_per_step=recovery.attempts,
    )
    spliced.shared_from = recovery.case
    return spliced


def drive_cycle(
    scenario: Scenario,
    target: Target,
    extra_env: dict[str, str],
    out: Path,
    keep: Keep | None = None,
    pause: Pause | None = None,
    warm: WarmStarts | None = None,
    share: Shares | None = None,
) -> Evidence:
    """Run one crash cycle of ``scenario`` against ``target``; processes' output goes to ``out``. A target
    with a ``[store]`` is driven at the commits of its store, and read through its adapter. With ``warm``,
    its phases start as forks of a warm interpreter where they can (``chaos.process.warm``)."""
    timings: dict[str, float] = {}
    with timed(timings, "world"):
        world = open_world(scenario, target, extra_env)
        world.starts, world.share = warm, share
    phases: list[Phase] = []
    borrowed = Borrowed()
    try:
        current, judged = _cycle(world, out, keep, pause, phases, timings, borrowed)
        ledger = read_ledger(world.box.ledger, world.approval_key)
        requests, attempts = world.server.request_log(), world.server.attempts_per_step()
        evidence = Evidence(judged, target, extra_env, phases, current, ledger, requests, attempts, timings)
        if borrowed.took is not None:  # its start, then the representative's recovery
            evidence = _with_recovery(evidence, borrowed.took)
        elif world.share is not None:
            world.share.offer(world, out.name, phases, ledger, requests, attempts)
        if borrowed.twin is not None:  # (verify) the same case judged on the recovery it would have taken
            evidence.twin = _with_recovery(evidence, borrowed.twin)
        return evidence
    finally:
        if world.share is not None:
            world.share.release(world)
        for phase in phases:  # a paused writer never outlives the cycle, whatever ended it
            if phase.process.frozen is not None:
                phase.process.reaped, phase.process.frozen = phase.process.frozen.reap(), None
        with timed(timings, "teardown"):
            world.close()
