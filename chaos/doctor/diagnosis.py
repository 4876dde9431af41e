"""``chaos target check``: is a target file usable by ``chaos sweep``, and if not, what to change.

A new target fails first on the plumbing: a ``sessions`` glob that matches
nothing, exit codes that do not mean what ``[exit]`` says, a configuration
command that prints something else, an environment identity that never
reaches the agent. A sweep reports those as hundreds of cases; the doctor
runs the target on small worlds (one turn; two turns crashed at the
read's ``toolStarted``; a live 429 that ends failed; a crash with the request in
flight resumed in another environment, blocked; where the target aborts on a
signal, an abort) and turns what it saw into one line per concern, each
failed one with what to change in the target file, or, where the target file
is fine and the agent misbehaved, the agent's own bug named as such.

Exit codes follow chaos's contract: 0 the target is usable, 2 the target file
needs changing (unusable input), 1 the file is fine but the agent broke a
promise on these small worlds (a finding).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from chaos.case.run import run_case
from chaos.case.starts import Starts
from chaos.case.verdict import Verdict
from chaos.check.base import Check
from chaos.check.recovery import derived_outcome
from chaos.contract.reading import reduces
from chaos.contract.reducer import Reducer
from chaos.cycle.drive import said_last
from chaos.doctor.probes import ABORT_PROBE, PROBES
from chaos.errors import ConfigurationUnusable, UsageError
from chaos.process.warm import WarmStarts
from chaos.report.text import printable
from chaos.scenario.model import Boundary, Scenario, Strike, Turn
from chaos.scenario.target import Target
from chaos.store import View


@dataclass
class Concern:
    """One thing a usable target must get right; ``problems`` empty when it does."""

    title: str
    file: bool  # a problem here is the target file's (exit 2), else the agent's (exit 1)
    problems: list[str] = field(default_factory=list)
    judged: bool = True  # False: nothing ran that could show it (an earlier concern stopped the probes)

    @property
    def ok(self) -> bool:
        return not self.problems


@dataclass
class Diagnosis:
    target: Target
    concerns: list[Concern]
    folder: Path
    notes: list[str] = field(default_factory=list)  # advice that changes no verdict and no exit code

    @property
    def exit_code(self) -> int:
        if any(c.file and not c.ok for c in self.concerns):
            return 2
        return 1 if any(not c.ok for c in self.concerns) else 0

    def text(self) -> str:
        lines = [f"chaos target check {self.target.path}"]
        for concern in sorted(self.concerns, key=lambda c: c.ok):  # the fix that matters first
            if not concern.judged:
                lines.append(f"  - {concern.title}: not judged (nothing ran far enough; mend the ✗ above)")
                continue
            lines.append(f"  {'✓' if concern.ok else '✗'} {concern.title}")
            lines += [f"      {printable(p)}" for p in concern.problems]
        verdict = {
            0: "usable: chaos sweep can drive this target",
            1: "the target file is usable, but the agent broke a recovery promise on these small worlds "
            "(a finding: see the runs)",
            2: "not usable yet: change the target file as said above",
        }[self.exit_code]
        notes = [f"  note: {note}" for note in self.notes]
        return "\n".join([*lines, verdict, *notes, f"  runs: {self.folder}"])


CONFIGURATION = (
    "make [configuration] command print, as one line of JSON, the planner's current configuration "
    "(SESSION-CONTRACT.md: configurationDigest, environmentIdentity, tools), or replace it with "
    "derive = true and declare the tools in [[tools]]"
)

# Checks whose failure means the target file, not the agent, is wrong, when the log itself is fine.
ADVICE: dict[str, str] = {
    "timeout": "a phase did not end in time: if the agent is slow, raise --timeout; if it waits for input, "
    "give it everything on the command line (start/resume) or in [env]",
    "processes": "a process of the agent outlived its phase: the agent must not leave children behind",
    "sandbox": "the agent wrote beside its workspace: keep every path inside {workspace} (cwd, sessions, "
    "tool paths)",
}


def _outcome_problems(verdict: Verdict, target: Target) -> list[str]:
    """Each process's exit code against ``[exit]`` and the outcome the oracle reads in the logs (the
    operation it finished, a blocked plan, nothing to do)."""
    problems = []
    evidence = verdict.evidence
    for phase in verdict.phases:
        if (
            phase.process.returncode is None
            or phase.process.killed
            or not reduces(phase.kept.log_after)
            or evidence.refused(phase)
        ):
            continue  # an agent that refuses a corrupt log may exit as it likes: the log check says why
        logged, _ = derived_outcome(evidence, phase)
        named = target.outcome_of(phase.process.returncode)
        if named is None and logged is None:
            continue  # a process that left its work to another (a deferred abort) may exit as it likes
        if named is None:
            problems.append(
                f"{phase.name} exited {phase.process.returncode}, which [exit] does not name; its logs say {logged}: "
                f"set [exit] {logged} = {phase.process.returncode}"
            )
        elif logged and named != logged:
            problems.append(
                f"{phase.name} exited {phase.process.returncode}, which [exit] calls {named}, but the logs say {logged}: "
                f"set [exit] {logged} = {phase.process.returncode}"
            )
    return problems


def _identity_problems(verdict: Verdict, target: Target) -> list[str]:
    state = Reducer.of(verdict.evidence.start.kept.log_after).state
    header = state.header if state is not None else None
    wanted = verdict.scenario.start.environment_identity or target.environment_identity
    if header is None or not wanted:
        return []
    got = header.get("environmentIdentity")
    if got == wanted:
        return []
    return [
        f"the log's header says environmentIdentity {str(got)!r}, not the {wanted!r} chaos gave as "
        "{environment_identity}: pass {environment_identity} to the agent in [env] (the variable it reads "
        "its identity from), or the planner cannot see an environment change"
    ]


def _failed(verdicts: list[Verdict], wanted: Callable[[Check], bool]) -> list[str]:
    return [f"{v.scenario.name}: {c.text()}" for v in verdicts for c in v.failed if wanted(c)]


def diagnose(target: Target, folder: Path, timeout: float = 20.0) -> Diagnosis:
    """Run the probes against ``target`` (results under ``folder``) and say what to change."""
    if target.tools_in_code:  # the probe worlds script the contract's tools; a framework agent has its own
        return _diagnose_store(target, folder, timeout)
    runs = Concern(
        "the start and resume commands run, and the agent writes its log where sessions says", True
    )
    log = Concern("the log is a v2 session log the contract's reducer accepts, appended only", False)
    exits = Concern("exit codes mean what [exit] says", True)
    configuration = Concern(
        "the configuration command prints JSON the planner accepts (or derive works)", True
    )
    identity = Concern("the environment identity chaos gives reaches the agent", True)
    recovery = Concern("resume finishes a crashed session as the contract plans", False)
    hygiene = Concern("phases end in time, leave no process, and write nothing outside the workspace", False)
    concerns = [runs, log, exits, configuration, identity, recovery, hygiene]
    verdicts: list[Verdict] = []
    for probe in (*PROBES, ABORT_PROBE) if target.capabilities.abort else PROBES:
        try:
            verdicts.append(run_case(probe, target, folder=folder / probe.name, timeout=timeout))
        except ConfigurationUnusable as err:
            configuration.problems += [f"{probe.name}: {err}", CONFIGURATION]
            break
        except UsageError as err:
            runs.problems.append(f"{probe.name}: {err}")
            break
    for verdict in verdicts:
        exits.problems += [f"{verdict.scenario.name}: {p}" for p in _outcome_problems(verdict, target)]
        identity.problems = identity.problems or _identity_problems(verdict, target)
        _crashed_without_trace(verdict, runs)
    log.problems += _failed(verdicts, lambda c: c.id in ("prefix-reduces", "final-reduces", "append-only"))
    if any(c.id == "append-only" for v in verdicts for c in v.failed):
        log.problems.append("the agent rewrote committed bytes of its log: a session log is append-only")
    hygiene.problems += _failed(verdicts, lambda c: c.id in ("timeout", "processes", "sandbox"))
    hygiene.problems += sorted({ADVICE[c.id] for v in verdicts for c in v.failed if c.id in ADVICE})
    if not exits.problems:  # an outcome check that failed for another reason is the agent's doing
        recovery.problems += _failed(verdicts, lambda c: c.id == "outcome")
    judged = {"prefix-reduces", "final-reduces", "append-only", "timeout", "processes", "sandbox", "outcome"}
    recovery.problems += _failed(verdicts, lambda c: c.id not in judged)
    if not runs.ok or not verdicts:  # what did not run shows nothing, good or bad
        for concern in concerns:
            concern.judged = not concern.ok
    return _with_starts(Diagnosis(target, concerns, folder, notes(target)), verdicts[:1], timeout)


def _with_starts(diagnosis: Diagnosis, tried: list[Verdict], timeout: float) -> Diagnosis:
    """A usable target's diagnosis, and how a sweep would start its processes: its first case run warm
    (twice: to learn, then to compare) and compared with the cold run, as a sweep chooses."""
    if diagnosis.exit_code != 0 or not tried:
        return diagnosis
    cold, target, starts = tried[0], diagnosis.target, Starts()

    def warm(pool: WarmStarts, where: Path) -> Verdict:
        clean = cold.evidence.clean if not cold.evidence.facts else None
        return run_case(cold.scenario, target, folder=where, timeout=timeout, clean=clean, warm=pool)

    try:
        choice = starts.choose(target, cold, warm, diagnosis.folder / "starts")
    finally:
        starts.close()
    if choice is not None:
        diagnosis.notes.append(f"a sweep starts it with {choice}".replace(f"with {target.name}: ", "with "))
    return diagnosis


def notes(target: Target) -> list[str]:
    """What the target file leaves chaos to guess, where a sweep would pay for the guess."""
    if target.request_deadline is not None:
        return []
    return [
        "no request_deadline: a case whose fault withholds a model answer (hang, trickle) waits out the "
        "phase's timeout, and an agent whose own deadline is longer fails 'timeout'; declare "
        "request_deadline = SECONDS and pass {request_deadline} to the agent (docs/own-agent.md)"
    ]


def _crashed_without_trace(verdict: Verdict, runs: Concern) -> None:
    """A phase that died on its own before writing anything is a command that does not run."""
    for phase in verdict.phases:
        if (
            phase.process.returncode not in (None, 0)
            and not phase.process.killed
            and not phase.kept.log_after
        ):
            runs.problems.append(
                f"{verdict.scenario.name}: {phase.name} exited {phase.process.returncode} without writing a log; "
                f"see {verdict.folder / (phase.name + '.stderr')}"
            )


# What a Python agent prints when it cannot import the code it runs: a setup mistake, not the store's
_IMPORT_FAILED = ("No module named", "ModuleNotFoundError", "ImportError", "cannot import name")


def _no_run(verdict: Verdict, path: str, kind: str) -> str:
    """Why the start left no run in the store, and what to change: an agent that died before it wrote
    anything (its own words, where it could not import its code) is a command that does not run, not a
    store chaos looks for in the wrong place."""
    start = verdict.evidence.start
    said = said_last(verdict.folder / "start.stderr", 3)
    if start.process.returncode in (None, 0) or not said:
        return f"the start left no run in the store at {path} (store kind {kind}); point [store] path at the file the agent writes"
    return _with_import_fix(
        f"the start exited {start.process.returncode} before it wrote a run; it said: {said}"
    )


def _with_import_fix(said: str) -> str:
    """``said``, and where it is an agent that cannot import its code, what to change."""
    if not any(sign in said for sign in _IMPORT_FAILED):
        return said
    return (
        f"{said}; the agent cannot import its code: it runs in the workspace with the target's [env], "
        "so set PYTHONPATH there (or cwd) to the folder that holds the module --app names"
    )


HELLO = Scenario(prompt="Say hello.", turns=[Turn(text="Hello.")], name="store-hello")


def _diagnose_store(target: Target, folder: Path, timeout: float) -> Diagnosis:
    """A framework agent, judged on its store: two small worlds with no tool in them (a user's graph has
    tools of its own), one turn run to its end and the same turn crashed with its model request in
    flight, then resumed."""
    spec = target.store_spec
    runs = Concern(f"the start and resume commands run, and the agent keeps its store at {spec.path}", True)
    exits = Concern("exit codes mean what [exit] says", True)
    answer = Concern("the run, and its resume after a crash, end with the answer in the store", False)
    again = Concern("resuming a finished run adds nothing", False)
    concerns = [runs, exits, answer, again]
    try:
        clean = run_case(HELLO, target, folder=folder / "hello", timeout=timeout)
    except UsageError as err:  # its uninterrupted run ended as [exit] does not say: nothing to judge by
        runs.problems.append(_with_import_fix(str(err)))
        for concern in concerns:
            concern.judged = not concern.ok
        return Diagnosis(target, concerns, folder)
    crashed = run_case(
        HELLO.with_crash(Strike(Boundary("model-request"))),
        target,
        folder=folder / "hello-crashed",
        timeout=timeout,
        clean=clean.evidence,
    )
    for verdict in (clean, crashed):
        _judge_store(verdict, runs, exits, answer, again)
    return _with_starts(Diagnosis(target, concerns, folder), [clean], timeout)


def _judge_store(verdict: Verdict, runs: Concern, exits: Concern, answer: Concern, again: Concern) -> None:
    name = verdict.case
    for phase in verdict.phases:
        if phase.process.killed:
            continue
        if phase.process.timed_out:
            runs.problems.append(f"{name}: {phase.name} never ended ({phase.process.seconds:.0f} s)")
        elif phase.process.outcome is None:
            said = said_last(verdict.folder / f"{phase.name}.stderr", 3)
            exits.problems.append(
                f"{name}: {phase.name} ({shlex.join(phase.argv)}) exited {phase.process.returncode}, "
                "which [exit] does not name" + (f"; it said: {said}" if said else "")
            )
    start, spec = verdict.evidence.start.kept.view_after or View(), verdict.target.store_spec
    if start.unreadable:
        runs.problems.append(f"{name}: the store cannot be read: {start.unreadable}")
    elif not verdict.evidence.start.process.killed and not start.started:
        runs.problems.append(f"{name}: {_no_run(verdict, spec.path, spec.kind)}")
    for check in verdict.failed:
        if check.id in ("same-outcome", "store-consistent", "requests-valid"):
            answer.problems.append(f"{name}: {check.got}")
        elif check.id == "resume-adds-nothing":
            again.problems.append(f"{name}: {check.got}")
