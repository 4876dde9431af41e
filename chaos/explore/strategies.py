"""Hypothesis strategies for generated scenarios: model scripts, workspaces, crash plans, changes.

A generated scenario is an ordinary ``Scenario`` (model script, workspace,
crash by a fault of the exploration's case space, optional crash during
recovery, configuration change) whose expectations are derived from the
oracle, so nobody writes its expected outcome.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from chaos.fault import FAULTS
from chaos.scenario.model import Boundary, Configuration, Expect, Scenario, Strike, Turn, WorkspaceFile
from chaos.scenario.target import Target, fault_unavailable

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


def _usable(faults: tuple[str, ...], target: Target) -> list[str]:
    """The faults the target can take (an abort only where it declares one; on a framework's store, only
    those that say they land there)."""
    return [
        f
        for f in faults
        if (target.capabilities.abort or "abort" not in FAULTS[f].needs)
        and fault_unavailable(target, FAULTS[f]) is None
    ]


def _crash(usable: list[str]) -> st.SearchStrategy[Strike]:
    """A crash at a drawn boundary, by a fault of ``usable`` that lands there (mostly a kill where kill
    is among them)."""

    @st.composite
    def build(draw: st.DrawFn) -> Strike:
        boundary = draw(_boundary())
        fits = [f for f in usable if FAULTS[f].applies_to(boundary.what) is None] or ["kill"]
        weighted = fits + ["kill"] * 4 if "kill" in fits else fits  # crashes weigh most
        return Strike(boundary, draw(st.sampled_from(weighted)))

    return build()


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


def _then(crash: Strike, usable: list[str]) -> st.SearchStrategy[Strike | None]:
    """A second crash during recovery: none, the same kind again (a crash loop), or an early fact; by a
    fault of ``usable`` that crashes at a durable boundary (a power cut during recovery, too)."""
    again = [f for f in usable if FAULTS[f].crashes and FAULTS[f].applies_to("stepAttempt") is None]
    again = again or ["kill"]
    return st.one_of(
        st.none(),
        st.builds(lambda f: Strike(Boundary(crash.boundary.what, {}, 1), f), st.sampled_from(again))
        if not crash.boundary.in_flight
        else st.none(),
        st.builds(lambda f: Strike(Boundary("stepAttempt", {}, 1), f), st.sampled_from(again)),
        st.builds(lambda n, f: Strike(Boundary("any", {}, n), f), st.integers(1, 3), st.sampled_from(again)),
    )


def _generated(target: Target, **fields: Any) -> Scenario:
    """A scenario explore generated for ``target``; its expectations are the oracle's (derived)."""
    return Scenario(
        path=Path("generated.toml"),
        name="generated",
        description="generated by chaos explore",
        target=target.name,
        **fields,
    )


def scenarios(
    target: Target, tools: list[str], faults: tuple[str, ...] = ("kill",)
) -> st.SearchStrategy[Scenario]:
    """Generated scenarios for ``target``: a script ending in a plain answer, one or two crashes by the
    faults given (as the target can take them), a configuration change. A framework agent judged on
    its store gets worlds of its own (``store_scenarios``)."""
    if target.tools_in_code:
        return store_scenarios(target, tools, faults)

    @st.composite
    def build(draw: st.DrawFn) -> Scenario:
        turns = draw(st.lists(_turn(tools), min_size=1, max_size=3))
        usable = _usable(faults, target)
        crash = draw(_crash(usable))
        return _generated(
            target,
            prompt="Work on the repository.",
            files=FILES,
            turns=[*turns, Turn(text="Finished.")],
            crash=crash,
            then_crash=draw(_then(crash, usable)),
            start=Configuration(),
            change=draw(st.sampled_from(CHANGES)),
            expect=Expect(derived=True, must_reach=False),
        )

    return build()


SERVICES = ("web", "api")


def _store_boundary(tool: str) -> st.SearchStrategy[Boundary]:
    """Where a framework agent's store is crashed: a commit, the commit that makes a call (or its output)
    durable, a held model request, the effect running or done."""
    return st.one_of(
        st.builds(lambda n: Boundary("commit", {}, n), st.integers(1, 12)),
        st.builds(
            lambda w, n: Boundary(w, {"tool": tool}, n),
            st.sampled_from(["call-durable", "output-durable"]),
            st.integers(1, 2),
        ),
        st.builds(lambda n: Boundary("model-request", {}, n), st.integers(1, 3)),
        st.builds(
            lambda w, n: Boundary(w, {"effect": tool}, n),
            st.sampled_from(["effect-running", "effect-done"]),
            st.integers(1, 2),
        ),
    )


def store_scenarios(
    target: Target, tools: list[str], faults: tuple[str, ...] = ("kill",)
) -> st.SearchStrategy[Scenario]:
    """Generated worlds for a framework agent judged on its store: one to three turns, each calling one of
    its tools on a service, then a plain answer; a crash at a commit or in flight by a fault that lands
    on a store, maybe another during recovery; a fast or a slow disk (``store_delay``)."""
    usable = _usable(faults, target) or ["kill"]

    @st.composite
    def build(draw: st.DrawFn) -> Scenario:
        tool = draw(st.sampled_from(tools))
        calls = draw(st.lists(st.sampled_from(SERVICES), min_size=1, max_size=3))
        turns = [Turn(tool_calls=[{"name": tool, "arguments": {"service": s}}]) for s in calls]
        boundary = draw(_store_boundary(tool))
        fits = [f for f in usable if FAULTS[f].applies_to(boundary.what) is None] or ["kill"]
        crash = Strike(boundary, draw(st.sampled_from(fits + ["kill"] * 4 if "kill" in fits else fits)))
        then = draw(
            st.one_of(
                st.none(),
                st.builds(lambda n: Strike(Boundary("commit", {}, n)), st.integers(1, 3)),
                st.just(Strike(Boundary("model-request", {}, 1))),
            )
        )
        return _generated(
            target,
            prompt="Deploy the services.",
            turns=[*turns, Turn(text="Deployed.")],
            crash=crash,
            then_crash=then,
            store_delay=draw(st.sampled_from([0.0, 0.0, 0.2])),
            expect=Expect(derived=True, must_reach=False),
        )

    return build()


def size(scenario: Scenario) -> int:
    """How big a scenario is, to report shrinking: turns, tool calls, crashes and changes."""
    calls = sum(len(t.tool_calls) for t in scenario.turns)
    crashes = (scenario.crash is not None) + (scenario.then_crash is not None)
    return len(scenario.turns) + calls + crashes + int(scenario.change.changes_anything)
