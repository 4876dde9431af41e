"""Scenario files: one world and one crash, read strictly (see ``scenarios/README.md``).

A scenario names its target, the prompt, the workspace files, the model
script, where to crash (and optionally where to crash the recovery again),
what configuration changes between the crash and the resume, and what
recovery must end in. Everything else a run checks comes from the contract.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import tomli_w

from chaos.spec import SpecError, Table, load_toml
from chaos.watch import Boundary
from chaos.world import Turn, WorkspaceFile

OUTCOMES = ("completed", "blocked", "failed", "aborted")
BLOCKED_REASONS = (
    "configuration_changed",
    "environment_changed",
    "replay_declaration_changed",
    "attempts_exhausted",
)
SIGNALS = ("SIGKILL", "SIGINT")
FINISH = ("stop", "tool_calls", "length")


@dataclass(frozen=True)
class Crash:
    """Where to stop the agent, and how: SIGKILL (a crash) or SIGINT (an abort the agent handles)."""

    boundary: Boundary
    signal: str = "SIGKILL"
    torn: bool = False  # let the next write to the log happen half-way before the kill

    def __str__(self) -> str:
        extra = [self.signal] if self.signal != "SIGKILL" else []
        extra += ["torn tail"] if self.torn else []
        return f"{self.boundary} ({', '.join(extra)})" if extra else str(self.boundary)


@dataclass(frozen=True)
class Configuration:
    """What the agent is told about its configuration; ``None`` keeps the target's default."""

    model: str | None = None
    environment_identity: str | None = None
    tools: dict[str, dict[str, str]] = field(default_factory=dict)  # name -> {description, replay, replayKey}
    env: dict[str, str] = field(default_factory=dict)

    def then(self, change: Configuration) -> Configuration:
        """This configuration with ``change`` applied on top."""
        tools = {name: dict(values) for name, values in self.tools.items()}
        for name, values in change.tools.items():
            tools.setdefault(name, {}).update(values)
        return Configuration(
            change.model or self.model,
            change.environment_identity or self.environment_identity,
            tools,
            {**self.env, **change.env},
        )

    @property
    def changes_anything(self) -> bool:
        return bool(self.model or self.environment_identity or self.tools or self.env)


@dataclass(frozen=True)
class Expect:
    """What recovery must end in. ``derived``: nobody wrote it down, the oracle says it.

    A scenario's hand-written expectations belong to its own crash; crashing
    it elsewhere (``--kill-at``, a sweep) derives the outcome from the oracle's
    reading of the final log instead (blocked with the planner's reason, or the
    operation's recorded outcome), and drops plan and effect counts.
    """

    outcome: str = "completed"
    reason: str | None = None  # the blocked reason
    plan: dict[str, Any] | None = None  # fields the oracle's plan for the crash prefix must have
    effects: dict[str, int] = field(default_factory=dict)  # effect name -> count of runs at the end
    derived: bool = False
    must_reach: bool = True  # False: a crash the run never reaches is no finding (generated scenarios)


@dataclass(frozen=True)
class Scenario:
    path: Path
    name: str
    description: str
    target: str
    prompt: str
    files: dict[str, WorkspaceFile]
    turns: list[Turn]
    crash: Crash | None
    then_crash: Crash | None
    start: Configuration
    change: Configuration
    expect: Expect
    operation: str = "run"  # or "compaction": run the prompt to its end, then crash the target's compact
    timeout: float = 60.0

    def with_crash(self, crash: Crash | None, then_crash: Crash | None = None) -> Scenario:
        """The same world crashed elsewhere; expectations become derived unless the crashes are the scenario's."""
        if (crash, then_crash) == (self.crash, self.then_crash):
            return self
        return replace(self, crash=crash, then_crash=then_crash, expect=Expect(derived=True))


def _crash(table: Table) -> Crash | None:
    if not table.data:
        return None
    at = table.take("at", str)
    where = table.take("where", dict, {})
    effect = table.take("effect", str, None)
    if effect is not None:
        where = {**where, "effect": effect}
    nth = table.take("nth", int, 1)
    signal = table.choice("signal", SIGNALS, "SIGKILL")
    torn = table.take("torn", bool, False)
    if torn and signal != "SIGKILL":
        table.fail("torn", "a torn tail comes from a SIGKILL mid-write; drop signal or torn")
    table.done()
    try:
        return Crash(Boundary(at, where, nth), signal, torn)
    except ValueError as err:
        table.fail("at", str(err))
    raise AssertionError("unreachable")


def _configuration(table: Table) -> Configuration:
    tools: dict[str, dict[str, str]] = {}
    tools_table = table.table("tools")
    for name in list(tools_table.data):
        tool = tools_table.table(name)
        values = {}
        for key in ("description", "replay", "replayKey"):
            value = tool.take(key, str, None)
            if value is not None:
                values[key] = value
        if values.get("replay") not in (None, "safe", "never"):
            tool.fail("replay", f"{values['replay']!r} is not allowed; use safe or never")
        tool.done()
        tools[name] = values
    tools_table.done()
    env_table = table.table("env")
    env = {key: env_table.take(key, str) for key in list(env_table.data)}
    config = Configuration(
        table.take("model", str, None), table.take("environment_identity", str, None), tools, env
    )
    table.done()
    return config


def _turn(table: Table) -> Turn:
    calls = []
    for call in table.tables("tool_calls"):
        name = call.take("name", str)
        arguments = call.take("arguments", (dict, str), {})
        call.done()
        calls.append({"name": name, "arguments": arguments})
    turn = Turn(
        text=table.take("text", str, None),
        tool_calls=calls,
        finish=table.choice("finish", FINISH, None),
        error=table.take("error", int, None),
        timeout=table.take("timeout", bool, False),
        delay=float(table.take("delay", (int, float), 0.0)),
    )
    table.done()
    return turn


def _files(table: Table) -> dict[str, WorkspaceFile]:
    files = {}
    for name in list(table.data):
        if name.startswith("/") or ".." in Path(name).parts:
            table.fail(name, "workspace file paths must be relative and stay inside the workspace")
        if isinstance(table.data[name], str):
            files[name] = WorkspaceFile(table.take(name, str))
            continue
        spec = table.table(name)
        files[name] = WorkspaceFile(spec.take("content", str), spec.take("executable", bool, False))
        spec.done()
    table.done()
    return files


def _expect(table: Table) -> Expect:
    if table.take("derive", bool, False):
        table.done()  # nothing else: the oracle says what recovery must end in
        return Expect(derived=True, must_reach=False)
    outcome = table.choice("outcome", OUTCOMES, "completed")
    reason = table.choice("reason", BLOCKED_REASONS, None)
    if (outcome == "blocked") != (reason is not None):
        table.fail("reason", "give a reason exactly when the outcome is blocked")
    plan = table.take("plan", (str, dict), None)
    effects_table = table.table("effects")
    effects = {name: effects_table.take(name, int) for name in list(effects_table.data)}
    table.done()
    return Expect(outcome, reason, {"type": plan} if isinstance(plan, str) else plan, effects)


def load_scenario(path: Path) -> Scenario:
    """Read and validate a scenario file; raise ``SpecError`` naming the file, line and field."""
    data, source = load_toml(path)
    top = Table(path, source, "", data)
    scenario = Scenario(
        path=path,
        name=top.take("name", str, path.stem),
        description=top.take("description", str, ""),
        target=top.take("target", str, "reference"),
        prompt=top.take("prompt", str),
        files=_files(top.table("files")),
        turns=[_turn(t) for t in top.tables("turns")],
        crash=_crash(top.table("crash")),
        then_crash=_crash(top.table("then_crash")),
        start=_configuration(top.table("configuration")),
        change=_configuration(top.table("change")),
        expect=_expect(top.table("expect")),
        operation=top.choice("operation", ("run", "compaction"), "run"),
        timeout=float(top.take("timeout", (int, float), 60.0)),
    )
    top.done()
    if not scenario.turns:
        top.fail("turns", "a scenario needs at least one [[turns]] entry (the model script)")
    return scenario


def scenario_files(paths: list[Path]) -> list[Path]:
    """Expand folders to their ``*.toml`` files, sorted, so runs are deterministic."""
    out: list[Path] = []
    for path in paths:
        if path.is_dir():
            out += sorted(path.glob("*.toml"))
        elif path.exists():
            out.append(path)
        else:
            raise SpecError(f"{path}: no such scenario file or folder")
    return out


def scenario_document(scenario: Scenario) -> dict[str, Any]:
    """A scenario as the TOML document ``load_scenario`` reads back (the inverse of loading)."""

    def crash(c: Crash) -> dict[str, Any]:
        out: dict[str, Any] = {"at": c.boundary.what, "nth": c.boundary.nth}
        if c.boundary.where:
            out["where"] = dict(c.boundary.where)
        if c.signal != "SIGKILL":
            out["signal"] = c.signal
        if c.torn:
            out["torn"] = True
        return out

    def turn(t: Turn) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key in ("text", "finish", "error"):
            if getattr(t, key) is not None:
                out[key] = getattr(t, key)
        if t.tool_calls:
            out["tool_calls"] = t.tool_calls
        if t.delay:
            out["delay"] = t.delay
        return out

    def config(c: Configuration) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key in ("model", "environment_identity"):
            if getattr(c, key):
                out[key] = getattr(c, key)
        if c.tools:
            out["tools"] = c.tools
        if c.env:
            out["env"] = c.env
        return out

    doc: dict[str, Any] = {
        "name": scenario.name,
        "description": scenario.description,
        "target": scenario.target,
        "prompt": scenario.prompt,
        "files": {
            name: {"content": f.content, "executable": True} if f.executable else f.content
            for name, f in scenario.files.items()
        },
        "turns": [turn(t) for t in scenario.turns],
    }
    if scenario.crash:
        doc["crash"] = crash(scenario.crash)
    if scenario.then_crash:
        doc["then_crash"] = crash(scenario.then_crash)
    if config(scenario.change):
        doc["change"] = config(scenario.change)
    if config(scenario.start):
        doc["configuration"] = config(scenario.start)
    if scenario.operation != "run":
        doc["operation"] = scenario.operation
    doc["timeout"] = scenario.timeout
    doc["expect"] = _expect_document(scenario.expect)
    return doc


def _expect_document(expect: Expect) -> dict[str, Any]:
    if expect.derived:
        return {"derive": True}
    out: dict[str, Any] = {"outcome": expect.outcome}
    if expect.reason:
        out["reason"] = expect.reason
    if expect.plan:
        out["plan"] = expect.plan
    if expect.effects:
        out["effects"] = expect.effects
    return out


def write_scenario(scenario: Scenario, path: Path) -> None:
    path.write_text(tomli_w.dumps(scenario_document(scenario)))
