"""``chaos target check`` for a framework agent: is its target file usable, judged on its store.

Two small worlds, with no tool in them (a user's graph has tools of its own): one
turn run to its end, and the same turn crashed with its model request in flight,
then resumed. What they show, one line per concern: the commands run and the
store is where ``[store] path`` says and readable by its adapter; exit codes
mean what ``[exit]`` says; the run and its resume end with the answer in the
store; resuming a finished run adds nothing.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from chaos.case.store import StoreCase, run_store_case
from chaos.cycle.drive import said_last
from chaos.doctor.diagnosis import Concern, Diagnosis
from chaos.scenario.model import Boundary, Crash, Scenario, Turn
from chaos.scenario.target import Target

HELLO = Scenario(prompt="Say hello.", turns=[Turn(text="Hello.")], name="store-hello")


def diagnose_store(target: Target, folder: Path, timeout: float = 20.0) -> Diagnosis:
    spec = target.store
    assert spec is not None
    runs = Concern(f"the start and resume commands run, and the agent keeps its store at {spec.path}", True)
    exits = Concern("exit codes mean what [exit] says", True)
    answer = Concern("the run, and its resume after a crash, end with the answer in the store", False)
    again = Concern("resuming a finished run adds nothing", False)
    scenario = HELLO.with_crash(None)
    clean = run_store_case(scenario.with_crash(None), target, None, folder / "hello", {})
    crashed = run_store_case(
        scenario.with_crash(Crash(Boundary("model-request"))),
        target,
        clean.evidence,
        folder / "hello-crashed",
        {},
    )
    for case in (clean, crashed):
        _judge(case, runs, exits, answer, again)
    return Diagnosis(target, [runs, exits, answer, again], folder)


def _judge(case: StoreCase, runs: Concern, exits: Concern, answer: Concern, again: Concern) -> None:
    name = case.scenario.name if case.scenario.crash is None else f"{case.scenario.name} @ {case.boundary}"
    for phase in case.evidence.phases:
        if phase.killed:
            continue
        if phase.timed_out:
            runs.problems.append(f"{name}: {phase.name} never ended ({phase.seconds:.0f} s)")
        elif phase.outcome is None:
            said = said_last(case.folder / f"{phase.name}.stderr", 3)
            exits.problems.append(
                f"{name}: {phase.name} ({shlex.join(phase.argv)}) exited {phase.returncode}, "
                "which [exit] does not name" + (f"; it said: {said}" if said else "")
            )
    start = case.evidence.phases[0]
    if start.after.unreadable:
        runs.problems.append(f"{name}: the store cannot be read: {start.after.unreadable}")
    elif not start.killed and not start.after.started:
        runs.problems.append(
            f"{name}: the start left no run in the store at {case.evidence.spec.path} "
            f"(store kind {case.evidence.spec.kind}); point [store] path at the file the agent writes"
        )
    for judged in case.judged:
        if judged.id in ("same-outcome", "store-consistent", "requests-valid"):
            answer.problems += [f"{name}: {p.key}: {p.text}" for p in judged.problems]
        elif judged.id == "resume-adds-nothing":
            again.problems += [f"{name}: {p.key}: {p.text}" for p in judged.problems]
