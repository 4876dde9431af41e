"""Recovery: apply the scenario's configuration change, resume, maybe crash again, resume to the end.

After the last resume the finished session is resumed once more: a correct
agent appends nothing then (recovery is idempotent), so that run is part of
what the checks judge. The current configuration is learnt the way the
target spec says, under the resume's configuration, so the oracle plans with
exactly what the agent will see.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chaos.contract import Reducer
from chaos.contract.framing import FramingError, committed_facts, parse_json
from chaos.contract.shapes import current_configuration
from chaos.run import Phase, TargetUnusable, run_phase
from chaos.scenario import Configuration, Crash, Expect, Scenario
from chaos.target import Target
from chaos.world import Turn
from chaos.world.build import World, build_world


@dataclass
class Recovery:
    phases: list[Phase] = field(default_factory=list)  # the resumes, the last one is the idempotence rerun
    logs: list[bytes] = field(default_factory=list)  # the log after each of them


def resume_configuration(world: World) -> Configuration:
    return world.scenario.start.then(world.scenario.change)


def current_of(world: World, config: Configuration, log: bytes) -> dict[str, Any]:
    """The planner's ``current`` configuration of the target under ``config``."""
    target = world.target
    if target.configuration_command is None:
        return _derived(world, config, log)
    argv = world.argv(target.configuration_command, config)
    try:
        done = subprocess.run(
            argv, cwd=world.cwd, env=world.env(config, []), capture_output=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        raise TargetUnusable(f"{target.path}: configuration command {argv[0]!r} failed: {err}") from None
    try:
        value = parse_json(done.stdout.strip())
    except FramingError as err:
        raise TargetUnusable(
            f"{target.path}: configuration.command printed no strict JSON ({err.code}); "
            f"exit {done.returncode}: {done.stderr.decode(errors='replace')[-300:]}"
        ) from None
    reason = current_configuration.why(value)
    if reason:
        raise TargetUnusable(f"{target.path}: configuration.command printed a bad configuration: {reason}")
    return value


def target_current(target: Target, extra_env: dict[str, str]) -> dict[str, Any]:
    """The target's default current configuration, asked in a throwaway world (no log needed)."""
    probe = Scenario(
        path=Path("probe.toml"),
        name="probe",
        description="",
        target=target.name,
        prompt="",
        files={},
        turns=[Turn(text="-")],
        crash=None,
        then_crash=None,
        start=Configuration(),
        change=Configuration(),
        expect=Expect(),
    )
    world = build_world(probe, target, extra_env)
    try:
        return current_of(world, Configuration(), b"")
    finally:
        world.close()


def _derived(world: World, config: Configuration, log: bytes) -> dict[str, Any]:
    """The recorded configuration, with the target's declared tools: only valid when nothing changes."""
    if config.model or config.tools:
        raise TargetUnusable(
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


def session_id(log: bytes) -> str:
    header = parse_json(log[: log.find(b"\n")] if b"\n" in log else log)
    return str(header["id"])


def recover(world: World, then_crash: Crash | None, timeout: float, out: Path, log: bytes) -> Recovery:
    """Resume until the target ends by itself (crashing once more at ``then_crash``), then once again."""
    config = resume_configuration(world)
    argv = world.argv(world.target.resume, config, session_id=session_id(log))
    recovery = Recovery()
    crash = then_crash
    while True:
        name = f"resume-{len(recovery.phases) + 1}"
        phase, log = run_phase(world, name, argv, config, crash, timeout, out)
        recovery.phases.append(phase)
        recovery.logs.append(log)
        if phase.timed_out:
            return recovery
        if not (crash and phase.reached):
            break
        crash = None
    phase, log = run_phase(world, "resume-again", argv, config, None, timeout, out)
    recovery.phases.append(phase)
    recovery.logs.append(log)
    return recovery
