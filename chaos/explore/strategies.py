"""Hypothesis strategies for generated scenarios: model scripts, workspaces, crash plans, changes.

A generated scenario is an ordinary ``Scenario`` (model script, workspace,
crash, optional crash during recovery, torn tail, SIGINT, configuration
change) whose expectations are derived from the oracle, so nobody writes its
expected outcome.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from chaos.scenario.model import Boundary, Configuration, Crash, Expect, Scenario, Turn, WorkspaceFile
from chaos.scenario.target import Target

DEPLOY = WorkspaceFile('#!/bin/bash\n$CHAOS_EFFECT deploy "$@"\n', executable=True)
FILES = {"README.md": WorkspaceFile("hello\n"), "deploy.sh": DEPLOY}
# Arguments that make sense in FILES for the reference agent's tools; other tools get {}.
ARGUMENTS = {
    "read": {"path": "README.md"},
    "bash": {"command": "./deploy.sh prod"},
    "write": {"path": "notes.txt", "content": "noted"},
    "edit": {"path": "README.md", "old": "hello", "new": "hi"},
}
# Kinds a crash aims at, weighted toward where recovery decides most (open attempts, pending tools).
DURABLE = (
    ("stepAttempt",) * 3 + ("toolStarted",) * 2 + ("entry:toolUse", "entry:tool", "entry:stop", "stepFailed")
)


def _calls(tools: list[str]) -> st.SearchStrategy[dict[str, Any]]:
    known = [{"name": name, "arguments": ARGUMENTS.get(name, {})} for name in tools]
    odd = [{"name": "teleport", "arguments": {"to": "mars"}}, {"name": tools[0], "arguments": "{not json"}]
    return st.sampled_from(known + odd)


def _turn(tools: list[str]) -> st.SearchStrategy[Turn]:
    calls = st.builds(
        lambda c, finish: Turn(tool_calls=c, finish=finish),
        st.lists(_calls(tools), min_size=1, max_size=2),
        st.sampled_from([None, None, None, "length"]),
    )
    return st.one_of(
        calls,
        st.builds(lambda: Turn(text="All done.")),
        st.builds(lambda e: Turn(error=e), st.sampled_from([429, 500])),
        st.builds(lambda c: Turn(tool_calls=c.tool_calls, delay=0.05), calls),
    )


def _boundary() -> st.SearchStrategy[Boundary]:
    return st.one_of(
        st.builds(lambda n: Boundary("any", {}, n), st.integers(1, 14)),
        st.builds(lambda w, n: Boundary(w, {}, n), st.sampled_from(DURABLE), st.integers(1, 2)),
        st.builds(lambda n: Boundary("model-request", {}, n), st.integers(1, 3)),
        st.builds(
            lambda w: Boundary(w, {"effect": "deploy"}, 1), st.sampled_from(["effect-running", "effect-done"])
        ),
    )


def _make_crash(boundary: Boundary, signal: str, torn: bool, power_loss: bool) -> Crash:
    if signal == "SIGSTOP" and boundary.in_flight:
        signal = "SIGKILL"  # a paused writer is frozen at a durable boundary
    kill = signal == "SIGKILL"
    return Crash(boundary, signal, torn and kill and not boundary.in_flight, power_loss and kill)


def _crash(power_loss: bool, two_writers: bool, abort: bool) -> st.SearchStrategy[Crash]:
    """A crash: mostly SIGKILL, sometimes (where the target aborts on a signal) an abort, a torn tail;
    with ``two_writers`` also a paused writer with a second one resuming (SIGSTOP), with
    ``power_loss`` also a power cut."""
    signals = ["SIGKILL"] * 5 + (["SIGINT"] if abort else []) + (["SIGSTOP"] if two_writers else [])
    return st.builds(
        _make_crash,
        _boundary(),
        st.sampled_from(signals),
        st.booleans(),
        st.booleans() if power_loss else st.just(False),
    )


CHANGES = [
    Configuration(),
    Configuration(model="scripted/another-model"),
    Configuration(environment_identity="another-machine"),
    Configuration(tools={"read": {"replay": "never"}}),
    Configuration(tools={"read": {"description": "Read a file (new wording)."}}),
    # the recorded tools' replay declarations, replay keys and definitions (section 7's gates)
    Configuration(tools={"bash": {"replay": "safe", "replayKey": "builtin:bash:safe:v1"}}),
    Configuration(tools={"read": {"replayKey": "builtin:read:v2"}}),
    Configuration(tools={"bash": {"description": "Run a command (new wording)."}}),
    Configuration(tools={"write": {"replay": "safe"}}),
]


def _then(crash: Crash) -> st.SearchStrategy[Crash | None]:
    """A second crash during recovery: none, the same kind again (a crash loop), or an early fact."""
    return st.one_of(
        st.none(),
        st.just(Crash(Boundary(crash.boundary.what, {}, 1))) if not crash.boundary.in_flight else st.none(),
        st.just(Crash(Boundary("stepAttempt", {}, 1))),
        st.builds(lambda n: Crash(Boundary("any", {}, n)), st.integers(1, 3)),
    )


def scenarios(
    target: Target, tools: list[str], power_loss: bool = False, two_writers: bool = False
) -> st.SearchStrategy[Scenario]:
    """Generated scenarios for ``target``: a script ending in a plain answer, one or two crashes, a change."""

    @st.composite
    def build(draw: st.DrawFn) -> Scenario:
        turns = draw(st.lists(_turn(tools), min_size=1, max_size=3))
        crash = draw(_crash(power_loss, two_writers, target.capabilities.abort is not None))
        return Scenario(
            path=Path("generated.toml"),
            name="generated",
            description="generated by chaos explore",
            target=target.name,
            prompt="Work on the repository.",
            files=FILES,
            turns=[*turns, Turn(text="Finished.")],
            crash=crash,
            then_crash=draw(_then(crash)),
            start=Configuration(),
            change=draw(st.sampled_from(CHANGES)),
            expect=Expect(derived=True, must_reach=False),
        )

    return build()


def size(scenario: Scenario) -> int:
    """How big a scenario is, to report shrinking: turns, tool calls, crashes and changes."""
    calls = sum(len(t.tool_calls) for t in scenario.turns)
    crashes = (scenario.crash is not None) + (scenario.then_crash is not None)
    return len(scenario.turns) + calls + crashes + int(scenario.change.changes_anything)
