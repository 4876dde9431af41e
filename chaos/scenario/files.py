"""Scenario files: read strictly (every error names file, line and field), written back exactly.

``write_scenario`` is the inverse of ``load_scenario``: a run folder's
``scenario.toml`` is the scenario as used, so ``chaos run FOLDER/scenario.toml``
reruns exactly that case.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import tomli_w

from chaos.errors import SpecError
from chaos.fault import FAULTS
from chaos.scenario.model import (
    BLOCKED_REASONS,
    FINISH,
    KINDS,
    MAX_NTH,
    MAX_STORE_DELAY,
    OPERATIONS,
    OUTCOMES,
    PERSISTENCE,
    Boundary,
    Configuration,
    Expect,
    Scenario,
    Strike,
    Turn,
    WorkspaceFile,
    file_conflicts,
    workspace_path_problem,
)
from chaos.scenario.strict_toml import Table
from chaos.secrets import scrub

T = TypeVar("T")


def _built(table: Table, key: str | None, make: Callable[[], T]) -> T:
    """Build a model object, turning its ValueError into an error at ``table.key``."""
    try:
        return make()
    except ValueError as err:
        return table.fail(key, str(err))  # type: ignore[no-any-return]


LEGACY = {"signal": 'fault = "abort" (SIGINT) or fault = "paused-writer" (SIGSTOP)', "torn": 'fault = "torn"'}
LEGACY["power_loss"] = 'fault = "power-loss"'


def _crash(table: Table) -> Strike | None:
    if not table.data:
        return None
    for key, instead in LEGACY.items():
        if key in table.data:
            table.fail(key, f"a crash names its fault now: write {instead}")
    at = table.take("at", str)
    where_table = table.table("where")
    where = dict(where_table.data)
    effect = table.take("effect", str, None)
    if effect is not None:
        where = {**where, "effect": effect}
    nth = table.integer("nth", 1, 1, MAX_NTH, "an occurrence")
    fault = table.choice("fault", tuple(FAULTS), "kill")
    table.done()
    if at not in KINDS:
        table.fail("at", f"{at!r} is not a boundary; use one of: {', '.join(KINDS)}")
    for key, value in (
        where.items() if not at.startswith("effect-") else ()
    ):  # each filter alone, so an error points at its own field
        _built(where_table, key, lambda k=key, v=value: Boundary(at, {k: v}, nth))  # type: ignore[misc]
    boundary = _built(table, "where", lambda: Boundary(at, where, nth))
    return _built(table, "fault", lambda: Strike(boundary, fault))


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
        arguments: dict[str, Any] | str = call.take("arguments", (dict, str), {})
        call.done()
        calls.append({"name": name, "arguments": arguments})
    text = table.take("text", str, None)
    finish = table.choice("finish", FINISH, None)
    error = table.integer("error", None, 400, 599, "an HTTP error status")
    timeout = table.take("timeout", bool, False)
    delay = table.number("delay", 0.0, 0.0)
    usage_table = table.table("usage")
    usage = {
        k: usage_table.integer(k, 0, 0, 2**53 - 1, "a token count") for k in list(usage_table.data)
    } or None
    table.done()
    return _built(table, "usage", lambda: Turn(text, calls, finish, error, timeout, delay, False, usage))


def _files(table: Table) -> dict[str, WorkspaceFile]:
    files = {}
    for name in list(table.data):
        problem = workspace_path_problem(name)
        if problem:
            table.fail(name, problem)
        if isinstance(table.data[name], str):
            files[name] = WorkspaceFile(table.take(name, str))
            continue
        spec = table.table(name)
        files[name] = WorkspaceFile(spec.take("content", str), spec.take("executable", bool, False))
        spec.done()
    table.done()
    conflict = file_conflicts(list(files))
    if conflict:
        table.fail(conflict[1], f"{conflict[0]!r} is a file, so it cannot also be a folder")
    return files


def _expect(table: Table) -> Expect:
    if table.take("derive", bool, False):
        must_reach = table.take("must_reach", bool, False)
        table.done()  # nothing else: the oracle says what recovery must end in
        return Expect(derived=True, must_reach=must_reach)
    outcome = table.choice("outcome", OUTCOMES, "completed")
    reason = table.choice("reason", BLOCKED_REASONS, None)
    if (outcome == "blocked") != (reason is not None):
        table.fail("reason", "give a reason exactly when the outcome is blocked")
    plan: dict[str, Any] | str | None = table.take("plan", (str, dict), None)
    effects_table = table.table("effects")
    effects = {
        name: effects_table.integer(name, 0, 0, 1_000_000, "a count") for name in list(effects_table.data)
    }
    must_reach = table.take("must_reach", bool, True)
    table.done()
    return Expect(
        outcome, reason, {"type": plan} if isinstance(plan, str) else plan, effects, False, must_reach
    )


def load_scenario(path: Path) -> Scenario:
    """Read and validate a scenario file; raise ``SpecError`` naming the file, line and field."""
    top = Table.top(path)
    values: dict[str, Any] = {
        "name": top.take("name", str, path.stem),
        "description": top.take("description", str, ""),
        "target": top.take("target", str, "reference"),
        "prompt": _prompt(top),
        "files": _files(top.table("files")),
        "turns": [_turn(t) for t in top.tables("turns")],
        "crash": _crash(top.table("crash")),
        "then_crash": _crash(top.table("then_crash")),
        "start": _configuration(top.table("configuration")),
        "change": _configuration(top.table("change")),
        "expect": _expect(top.table("expect")),
        "operation": top.choice("operation", OPERATIONS, "run"),
        "timeout": top.number("timeout", 60.0, 0.0, exclusive=True),
        "requires": tuple(top.strings("requires", [])),
        "persistence": top.choice("persistence", PERSISTENCE, "posix"),
        "store_delay": _store_delay(top),
    }
    top.done()
    if not values["turns"]:
        top.fail("turns", "a scenario needs at least one [[turns]] entry (the model script)")
    return _built(top, None, lambda: Scenario(**values, path=path))


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


def _crash_document(c: Strike) -> dict[str, Any]:
    out: dict[str, Any] = {"at": c.boundary.what, "nth": c.boundary.nth}
    if c.boundary.where:
        out["where"] = dict(c.boundary.where)
    if c.fault_name != "kill":
        out["fault"] = c.fault_name
    return out


def _turn_document(t: Turn) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in ("text", "finish", "error"):
        if getattr(t, key) is not None:
            out[key] = getattr(t, key)
    if t.tool_calls:
        out["tool_calls"] = t.tool_calls
    if t.timeout:
        out["timeout"] = True
    if t.delay:
        out["delay"] = t.delay
    if t.usage is not None:
        out["usage"] = dict(t.usage)
    return out


def _config_document(c: Configuration) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in ("model", "environment_identity"):
        if getattr(c, key):
            out[key] = getattr(c, key)
    if c.tools:
        out["tools"] = c.tools
    if c.env:
        out["env"] = c.env
    return out


def _expect_document(expect: Expect) -> dict[str, Any]:
    if expect.derived:
        return {"derive": True} | ({"must_reach": True} if expect.must_reach else {})
    out: dict[str, Any] = {"outcome": expect.outcome}
    if expect.reason:
        out["reason"] = expect.reason
    if expect.plan:
        out["plan"] = expect.plan
    if expect.effects:
        out["effects"] = expect.effects
    if not expect.must_reach:
        out["must_reach"] = False
    return out


def scenario_document(scenario: Scenario) -> dict[str, Any]:
    """A scenario as the TOML document ``load_scenario`` reads back (the inverse of loading)."""
    doc: dict[str, Any] = {
        "name": scenario.name,
        "description": scenario.description,
        "target": scenario.target,
        "prompt": scenario.prompt,
        "files": {
            name: {"content": f.content, "executable": True} if f.executable else f.content
            for name, f in scenario.files.items()
        },
        "turns": [_turn_document(t) for t in scenario.turns],
    }
    if scenario.crash:
        doc["crash"] = _crash_document(scenario.crash)
    if scenario.then_crash:
        doc["then_crash"] = _crash_document(scenario.then_crash)
    for key, config in (("configuration", scenario.start), ("change", scenario.change)):
        if _config_document(config):
            doc[key] = _config_document(config)
    if scenario.operation != "run":
        doc["operation"] = scenario.operation
    doc["timeout"] = scenario.timeout
    if scenario.requires:
        doc["requires"] = list(scenario.requires)
    if scenario.persistence != "posix":
        doc["persistence"] = scenario.persistence
    if scenario.store_delay:
        doc["store_delay"] = scenario.store_delay
    doc["expect"] = _expect_document(scenario.expect)
    return doc


MAX_ARGUMENT = 131_072  # bytes: Linux's cap on one argument or environment string (MAX_ARG_STRLEN)


def _prompt(top: Table) -> str:
    """The prompt reaches the agent as one argument (or one environment value): the kernel's cap holds."""
    prompt = top.take("prompt", str)
    if "\0" in prompt:
        top.fail("prompt", "cannot hold a NUL character (it is passed as a command-line argument)")
    if len(prompt.encode()) >= MAX_ARGUMENT:
        top.fail(
            "prompt",
            f"{len(prompt.encode()):,} bytes; a prompt is passed as one command-line argument, which Linux "
            f"caps below {MAX_ARGUMENT:,} bytes: put the long text in a workspace file and point at it",
        )
    return prompt


def _store_delay(top: Table) -> float:
    """Seconds each commit of a framework's store takes: 0 to ``MAX_STORE_DELAY``."""
    delay = top.number("store_delay", 0.0, 0.0)
    if delay > MAX_STORE_DELAY:
        top.fail("store_delay", f"must be at most {MAX_STORE_DELAY:g} seconds; got {delay:g}")
    return delay


def scenario_toml(scenario: Scenario) -> str:
    return tomli_w.dumps(scenario_document(scenario))


def write_scenario(scenario: Scenario, path: Path) -> None:
    path.write_bytes(scrub(scenario_toml(scenario).encode()))
