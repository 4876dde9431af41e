"""A scenario written back to TOML is the same scenario, and a reproduce command reruns exactly its case."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chaos.case.run import run_case
from chaos.cli import main
from chaos.scenario import load_scenario, load_target, write_scenario
from chaos.scenario.model import (
    BLOCKED_REASONS,
    Boundary,
    Configuration,
    Expect,
    Scenario,
    Strike,
    Turn,
    WorkspaceFile,
)
from tests.conftest import REPO

pytestmark = pytest.mark.slow  # starts agent processes (-m 'not slow' leaves it out)

words = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
names = st.text("abcdefghij-_", min_size=1, max_size=8)
arguments = st.one_of(
    st.dictionaries(names, st.one_of(words, st.integers(-5, 5), st.booleans()), max_size=3), words
)
turns = st.builds(
    Turn,
    text=st.none() | words,
    tool_calls=st.lists(st.builds(lambda n, a: {"name": n, "arguments": a}, names, arguments), max_size=2),
    finish=st.sampled_from([None, "stop", "tool_calls", "length"]),
    error=st.none() | st.integers(400, 599),
    timeout=st.booleans(),
    delay=st.sampled_from([0.0, 0.05, 1.5]),
)
durable = st.builds(
    lambda what, nth, where: Boundary(what, where, nth),
    st.sampled_from(["stepAttempt", "entry:tool", "usage", "any", "operationFinished"]),
    st.integers(1, 4),
    st.just({}),
) | st.builds(lambda nth: Boundary("toolStarted", {"toolName": "bash"}, nth), st.integers(1, 3))
in_flight = st.sampled_from(
    [Boundary("model-request", {}, 2), Boundary("effect-running", {"effect": "deploy"}, 1)]
)
crashes = st.one_of(
    st.builds(
        Strike,
        durable,
        st.sampled_from(["kill", "abort", "torn", "power-loss", "paused-writer", "disk-full"]),
    ),
    st.builds(Strike, in_flight, st.sampled_from(["kill", "abort", "power-loss"])),
    st.builds(
        Strike, st.just(Boundary("model-request", {}, 1)), st.sampled_from(["reset", "hang", "trickle"])
    ),
)
configurations = st.builds(
    Configuration,
    model=st.none() | names,
    environment_identity=st.none() | names,
    tools=st.dictionaries(
        st.sampled_from(["read", "bash"]),
        st.fixed_dictionaries(
            {},
            optional={"description": words, "replay": st.sampled_from(["safe", "never"]), "replayKey": names},
        ),
        max_size=2,
    ),
    env=st.dictionaries(st.text("ABCDEFGH_", min_size=1, max_size=6), words, max_size=2),
)
expects = st.one_of(
    st.builds(lambda r: Expect(derived=True, must_reach=r), st.booleans()),
    st.builds(
        lambda outcome, reason, plan, effects, reach: Expect(
            "blocked" if reason else outcome, reason, plan, effects, False, reach
        ),
        st.sampled_from(["completed", "failed", "aborted"]),
        st.none() | st.sampled_from(BLOCKED_REASONS),
        st.none() | st.just({"type": "startTool", "mode": "replay"}),
        st.dictionaries(names, st.integers(0, 3), max_size=2),
        st.booleans(),
    ),
)
scenarios = st.builds(
    Scenario,
    prompt=words.filter(lambda text: bool(text) and "\x00" not in text),  # an argv cannot hold NUL
    turns=st.lists(turns, min_size=1, max_size=3),
    files=st.dictionaries(
        st.sampled_from(["README.md", "deploy.sh", "src/a.py", "docs/x y.txt"]),
        st.builds(WorkspaceFile, words, st.booleans()),
        max_size=3,
    ),
    crash=st.none() | crashes,
    then_crash=st.none() | crashes,
    start=configurations,
    change=configurations,
    expect=expects,
    name=names,
    description=words,
    target=st.sampled_from(["reference", "node-reference", "targets/x.toml"]),
    operation=st.sampled_from(["run", "compaction"]),
    timeout=st.sampled_from([60.0, 3.0, 0.5]),
)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(scenarios)
def test_a_written_scenario_loads_back_equal(
    tmp_path_factory: pytest.TempPathFactory, scenario: Scenario
) -> None:
    path = tmp_path_factory.mktemp("s") / "scenario.toml"
    write_scenario(scenario, path)
    assert load_scenario(path) == scenario


@pytest.mark.parametrize("path", sorted((REPO / "scenarios").glob("*.toml")), ids=lambda p: p.stem)
def test_every_shipped_scenario_round_trips(path: Path, tmp_path: Path) -> None:
    scenario = load_scenario(path)
    write_scenario(scenario, tmp_path / "again.toml")
    assert load_scenario(tmp_path / "again.toml") == scenario


def _rerun(reproduce: str, folder: Path, env: dict[str, str] | None = None) -> dict:
    """Run a reproduce command as a shell would, with ``env`` exported (it names variables, not values)."""
    for key, value in (env or {}).items():
        reproduce = reproduce.replace(f'"${key}"', shlex.quote(value))
    argv = shlex.split(reproduce)
    assert argv[:2] == ["chaos", "run"]
    main([*argv[1:], "--results", str(folder)])
    return json.loads((folder / "verdict.json").read_text())  # type: ignore[no-any-return]


def test_the_reproduce_command_of_a_torn_tail_case_tears_the_same_tail(tmp_path: Path) -> None:
    """Issue 12: the torn case's reproduce command used to drop ``torn`` (3126 bytes instead of 3297)."""
    bug = {"TINY_REFERENCE_BUG": "no-torn-tail-repair"}
    scenario = load_scenario(REPO / "scenarios" / "torn-tail.toml")
    first = run_case(scenario, load_target(REPO / "targets" / "reference.toml"), bug, tmp_path / "first")
    assert not first.ok and first.evidence.start.landing.torn
    again = _rerun(first.reproduce(), tmp_path / "again", bug)
    assert [c["name"] for c in again["checks"] if not c["ok"]] == [c.name for c in first.failed]
    assert (tmp_path / "again" / "prefix.jsonl").stat().st_size == len(first.evidence.prefix)
    assert again["phases"][0]["torn"] is True


def test_the_reproduce_command_keeps_the_crash_signal_of_the_case(tmp_path: Path) -> None:
    """Issue 12: a sweep case ran with SIGKILL, and its reproduce command reran it with the scenario's SIGINT."""
    scenario = load_scenario(REPO / "scenarios" / "abort-during-deploy.toml")
    case = scenario.with_crash(Strike(Boundary.parse("stepAttempt#2")))
    first = run_case(case, load_target(REPO / "targets" / "reference.toml"), {}, tmp_path / "first")
    again = _rerun(first.reproduce(), tmp_path / "again")
    assert again["crash"] == "stepAttempt#2" == first.result().crash
    assert [(c["name"], c["ok"]) for c in again["checks"]] == [(c.name, c.ok) for c in first.checks]


def test_the_reproduce_command_works_from_any_directory(tmp_path: Path) -> None:
    """Paths in it are absolute: a relative results folder and a target found by path still rerun."""
    spec = tmp_path / "targets" / "mine.toml"
    spec.parent.mkdir()
    spec.write_text((REPO / "tests" / "targets" / "minimal.toml").read_text())
    scenario = load_scenario(REPO / "scenarios" / "section8-read-replay.toml")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    first = run_case(scenario, load_target(spec), {}, Path(os.path.relpath(tmp_path / "first")))
    argv = shlex.split(first.reproduce())
    assert all(Path(a).is_absolute() for a in argv if a.endswith(".toml")), argv
    done = subprocess.run(
        [sys.executable, "-m", "chaos", *argv[1:], "--results", str(tmp_path / "again")],
        cwd=elsewhere,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
