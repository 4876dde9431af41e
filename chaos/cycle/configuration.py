"""The planner's ``current`` configuration of a target, learnt the way its spec says.

A configuration command is asked once per target, configuration and extra
environment, then remembered: it is the same for every case of a scenario
(asking it cost a process per case). Where its answer names the world it was
asked in (the sandbox path, the model server's URL), those are kept as
placeholders and filled in for each world.
"""

from __future__ import annotations

import subprocess
import threading
from typing import Any

import orjson

from chaos.bundled import frameworks_folder, targets_folder
from chaos.bundled.targets.reference.tools import (  # type: ignore[import-not-found]
    DEFINITIONS as MCP_DEFINITIONS,
)
from chaos.contract import Reducer
from chaos.contract.framing import FramingError, committed_facts, parse_json
from chaos.contract.shapes import current_configuration
from chaos.errors import ConfigurationUnusable
from chaos.scenario.files import load_scenario, scenario_files
from chaos.scenario.model import Configuration, Scenario, Turn
from chaos.scenario.target import Target, load_target
from chaos.world.contain import run_caged
from chaos.world.services import open_world
from chaos.world.world import World

_ROOT, _URL = "\u241fchaos-sandbox\u241f", "\u241fchaos-model-url\u241f"
_ANSWERS: dict[str, str] = {}
_LOCK = threading.Lock()


def _ask(world: World, config: Configuration) -> dict[str, Any]:
    target = world.target
    assert target.configuration_command is not None
    argv = world.argv(target.configuration_command, config)
    try:
        returncode, stdout, stderr = run_caged(argv, world.cwd, world.env(config, []), 30)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise ConfigurationUnusable(
            f"{target.path}: configuration command {argv[0]!r} failed: {err}"
        ) from None
    try:
        value = parse_json(stdout.strip())
    except FramingError as err:
        raise ConfigurationUnusable(
            f"{target.path}: configuration.command printed no strict JSON ({err.code}): "
            f"{stdout.decode(errors='replace')[:200]!r}; exit {returncode}, stderr "
            f"{stderr.decode(errors='replace')[-300:]!r}"
        ) from None
    reason = current_configuration.why(value)
    if reason:
        raise ConfigurationUnusable(
            f"{target.path}: configuration.command printed a bad configuration: {reason}"
        )
    return value  # type: ignore[no-any-return]


def _escaped(text: str) -> str:
    return orjson.dumps(text).decode()[1:-1]


def current_of(world: World, config: Configuration, log: bytes) -> dict[str, Any]:
    """The planner's ``current`` configuration of the world's target under ``config``."""
    if world.target.configuration_command is None:
        return _derived(world, config, log)
    key = repr((world.target, config, sorted(world.extra_env.items())))
    root, url = _escaped(str(world.box.root)), _escaped(world.server.url)
    with _LOCK:
        template = _ANSWERS.get(key)
    if template is None:
        text = orjson.dumps(_ask(world, config)).decode()
        template = text.replace(root, _ROOT).replace(url, _URL)
        with _LOCK:
            _ANSWERS[key] = template
    return orjson.loads(template.replace(_ROOT, root).replace(_URL, url))  # type: ignore[no-any-return]


def target_current(target: Target, extra_env: dict[str, str]) -> dict[str, Any]:
    """The target's default current configuration (for ``chaos show --target`` and exploration)."""
    world = open_world(Scenario(prompt="-", turns=[Turn(text="-")]), target, extra_env)
    try:
        return current_of(world, Configuration(), b"")
    finally:
        world.close()


def _derived(world: World, config: Configuration, log: bytes) -> dict[str, Any]:
    """The recorded configuration, with the target's declared tools: only valid when nothing changes."""
    if config.model or config.tools:
        raise ConfigurationUnusable(
            f"{world.target.path}: derives its configuration from the log, so a scenario cannot change "
            "the model or tools; give the target a configuration command"
        )
    reducer = Reducer.of(log)
    digest, definitions = "", {}
    for fact in committed_facts(log, reducer.line):
        record = fact.get("record", {})
        if record.get("type") == "stepAttempt":
            digest = record["configurationDigest"]
            definitions = {t["name"]: t["definitionDigest"] for t in record["configurationSnapshot"]["tools"]}
    identity = config.environment_identity or world.target.environment_identity
    return {
        "configurationDigest": digest,
        "environmentIdentity": identity,
        "tools": [
            {
                "name": t.name,
                "definitionDigest": definitions.get(t.name, ""),
                "replay": t.replay,
                "replayKey": t.replay_key,
            }
            for t in world.target.tools
        ],
    }


def _over_mcp(name: str) -> bool:
    """The bundled target ``name`` takes its tools from the world's MCP server."""
    path = targets_folder() / f"{name}.toml"
    return path.is_file() and load_target(path).mcp is not None


def tool_names(target: Target, extra_env: dict[str, str]) -> list[str]:
    """The target's declared tools, as its configuration says. A framework agent's tools are its code:
    unless it declares some, those the world's MCP server serves where its tools are there, else those
    the bundled framework worlds of its kind call (``deploy``)."""
    if target.tools_in_code and target.mcp is not None:
        return sorted(MCP_DEFINITIONS)  # the workspace tools it serves (``chaos.world.mcp_server``)
    if target.tools_in_code and not target.tools:
        worlds = [load_scenario(p) for p in scenario_files([target.default_scenarios or frameworks_folder()])]
        alike = [w for w in worlds if not _over_mcp(w.target)]
        return sorted({c["name"] for world in alike for t in world.turns for c in t.tool_calls})
    if target.configuration_command is None:
        return [t.name for t in target.tools]
    return [t["name"] for t in target_current(target, extra_env)["tools"]]
