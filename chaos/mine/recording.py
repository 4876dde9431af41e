"""One real session recorded as a scenario: the agent runs once against a real provider through the world's
server, which forwards each request and keeps each answer (``chaos.world.recorder``); the scenario whose
script gives back those answers, turn by turn, then replays the session offline, as often as a sweep
needs."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from chaos.case.record import write
from chaos.errors import InternalError
from chaos.process.phase import Phase, PhaseKind
from chaos.process.run import execute_phase
from chaos.scenario.model import Expect, Scenario, Turn, WorkspaceFile
from chaos.scenario.target import Target
from chaos.secrets import scrub_file
from chaos.world.recorder import Upstream
from chaos.world.services import open_world


@dataclass
class Recording:
    scenario: Scenario  # the session as a scenario: its prompt, files and the answers it got
    phase: Phase  # the recorded run (its log, outcome and exit)
    requests: int  # requests forwarded


def record_session(
    prompt: str,
    target: Target,
    extra_env: dict[str, str],
    upstream: Upstream,
    files: dict[str, WorkspaceFile],
    folder: Path,
    name: str = "recorded",
    timeout: float = 300.0,
) -> Recording:
    """Run ``target`` once on ``prompt`` with its model requests forwarded to ``upstream``; the answers
    become the scenario's turns (the last answer to each turn of the conversation, compaction summaries
    aside: the scripted server writes its own)."""
    folder.mkdir(parents=True, exist_ok=True)
    draft = Scenario(prompt=prompt, turns=[Turn(text="-")], files=files, name=name, target=target.name)
    world = open_world(draft, target, extra_env)
    world.server.upstream = upstream
    try:
        argv = world.argv(target.start, draft.start, prompt=prompt)
        phase = execute_phase(world, Phase(PhaseKind.START, argv), draft.start, timeout, folder)
        write(folder / "session.jsonl", phase.kept.log_after)
        for stream in ("stdout", "stderr"):
            scrub_file(folder / f"{phase.name}.{stream}")
        if world.server.fault is not None:
            raise InternalError(f"chaos record: {world.server.fault}")
        answers = {index: turn for index, compaction, turn in world.server.recorded() if not compaction}
    finally:
        world.close()
    if not answers:
        raise InternalError("chaos record: the agent sent no model request through the recorder")
    turns = [answers[i] for i in sorted(answers)]
    expect = (
        Expect(outcome=phase.process.outcome)
        if phase.process.outcome in ("completed", "failed")
        else Expect(derived=True)
    )
    scenario = Scenario(
        prompt=prompt,
        turns=turns,
        files=files,
        expect=expect,
        name=name,
        description=f"Recorded from a real provider ({len(turns)} answer(s)); written by chaos record.",
        target=target.name,
    )
    return Recording(scenario, phase, len(world.server.requests))
