"""The doctor's small worlds: each ends one way, so a target's exit codes can be held against its logs."""

from __future__ import annotations

from chaos.scenario.model import Boundary, Configuration, Expect, Scenario, Strike, Turn, WorkspaceFile

READ = {"name": "read", "arguments": {"path": "README.md"}}
PROBES = (
    Scenario(
        prompt="Say hello.",
        turns=[Turn(text="Hello.")],
        name="doctor-one-turn",
        description="one turn: start runs it to its end, resume of the finished session appends nothing",
    ),
    Scenario(
        prompt="Read the README.",
        files={"README.md": WorkspaceFile("hello\n")},
        turns=[Turn(tool_calls=[READ]), Turn(text="It says hello.")],
        crash=Strike(Boundary("toolStarted", {"toolName": "read"})),
        name="doctor-two-turns",
        description="two turns, SIGKILL at the read's toolStarted: resume must finish the session",
    ),
    Scenario(
        prompt="Say hello.",
        turns=[Turn(error=429)],
        expect=Expect(outcome="failed"),
        name="doctor-failed",
        description="a live 429: the run ends failed, and its exit code must say so",
    ),
    Scenario(
        prompt="Say hello.",
        turns=[Turn(text="Hello.")],
        crash=Strike(Boundary("model-request")),
        change=Configuration(environment_identity="doctor-another-machine"),
        expect=Expect(outcome="blocked", reason="environment_changed"),
        name="doctor-blocked",
        description="SIGKILL with the request in flight, then another environment: resume stops blocked",
    ),
)
ABORT_PROBE = Scenario(
    prompt="Say hello.",
    turns=[Turn(text="Hello.")],
    crash=Strike(Boundary("model-request"), "abort"),
    expect=Expect(outcome="aborted"),
    name="doctor-aborted",
    description="the abort signal with the request in flight: the run ends aborted (by the agent or its resume)",
)
