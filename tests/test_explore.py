"""chaos explore: Hypothesis finds each reference bug with a fixed seed, and the shrunk scenario reproduces it."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from chaos.cli import main
from chaos.cycle.configuration import tool_names
from chaos.explore.strategies import scenarios
from chaos.scenario import load_scenario, write_scenario
from chaos.scenario.target import load_target
from tests.conftest import REPO

pytestmark = pytest.mark.slow  # starts agent processes (-m 'not slow' leaves it out)

REFERENCE = REPO / "targets" / "reference.toml"
# Each bug switch, and the seed that finds it quickly (Hypothesis is deterministic given a seed).
BUGS = [
    ("stale-assistant-calls", 1),
    ("replay-never-tools", 5),
    ("intent-after-effect", 1),
    ("no-torn-tail-repair", 1),
    ("unbounded-retry", 1),
    ("skip-finish-on-resume", 1),
]


def _explore(
    tmp: Path, bug: str | None, seed: int, examples: int, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str]:
    argv = ["explore", "--seed", str(seed), "--budget", "240", "--shrink-budget", "15", "--max-failures", "1"]
    argv += ["--max-examples", str(examples), "--results", str(tmp)]
    if bug:
        argv += ["--target-env", f"TINY_REFERENCE_BUG={bug}"]
    code = main(argv)
    out, err = capsys.readouterr()
    # issue 38: the engine's own hints ("You can reproduce this failure by adding @seed(...)") are not
    # chaos's output, and contradicted it
    assert "@seed(" not in out + err and "reproduce this failure" not in out + err, out + err
    return code, out


@pytest.mark.parametrize(("bug", "seed"), BUGS, ids=[b for b, _ in BUGS])
def test_explore_finds_each_bug_and_the_shrunk_scenario_fails_the_same_check(
    bug: str, seed: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = _explore(tmp_path, bug, seed, 60, capsys)
    assert code == 1, out
    assert "explore: 1 distinct failure(s)" in out, "--max-failures 1: one failure, shrunk"
    found = next(tmp_path.glob("found-*.toml"))
    check = out.split("smallest case fails: ", 1)[1].split(":", 1)[0]
    assert load_scenario(found).expect.derived
    rerun = tmp_path / "rerun"
    assert (
        main(["run", str(found), "--target-env", f"TINY_REFERENCE_BUG={bug}", "--results", str(rerun)]) == 1
    )
    failed = [c["name"] for c in json.loads((rerun / "verdict.json").read_text())["checks"] if not c["ok"]]
    assert check in failed, (check, failed)
    assert (tmp_path / found.stem / "verdict.json").is_file(), "its run folder is kept"
    assert list((tmp_path / "fixtures" / "fixtures").glob("*.jsonl")), "its crash prefix is mined"
    code, out = _explore(tmp_path, bug, seed + 1, 60, capsys)
    assert code == 1 and "failure after 1 cycle(s)" in out, "the next night retries the past failure first"


def test_a_bounded_exploration_of_the_correct_agent_finds_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = _explore(tmp_path, None, 7, 15, capsys)
    assert code == 0, out
    assert "no failure found" in out


def test_generated_scenarios_round_trip_through_toml(tmp_path: Path) -> None:
    from hypothesis import given, settings

    target = load_target(REFERENCE)

    @settings(max_examples=50, deadline=None, database=None)
    @given(scenarios(target, ["read", "write", "edit", "bash"]))
    def round_trip(scenario: object) -> None:
        path = tmp_path / "s.toml"
        write_scenario(scenario, path)  # type: ignore[arg-type]
        loaded = load_scenario(path)
        assert loaded.turns == scenario.turns and loaded.crash == scenario.crash  # type: ignore[attr-defined]
        assert loaded.then_crash == scenario.then_crash and loaded.change == scenario.change  # type: ignore[attr-defined]

    round_trip()


def test_the_strategies_only_call_the_targets_tools() -> None:
    assert tool_names(load_target(REFERENCE), {}) == ["read", "write", "edit", "bash"]


SLOW = str(Path(__file__).parent / "targets" / "slow.toml")


def _timed_explore(tmp: Path, capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, float]:
    began = time.monotonic()
    code = main(["explore", "--results", str(tmp), *argv])
    return code, capsys.readouterr().out, time.monotonic() - began


def _longest_cycle(tmp: Path) -> float:
    verdicts = [json.loads(p.read_text()) for p in tmp.rglob("verdict.json")]
    return max((v["seconds"] for v in verdicts), default=0.0)


@pytest.mark.parametrize("seed", [1, 2])
def test_a_clean_exploration_ends_at_its_budget_with_exit_0(
    seed: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 12: the budget was checked inside the test with reject(), and a replay then crashed
    Hypothesis (FlakyFailure, exit 1) on a correct agent."""
    code, out, _ = _timed_explore(tmp_path, capsys, "--budget", "20", "--seed", str(seed))
    assert code == 0, out
    assert "no failure found" in out and "Flaky" not in out


def test_a_budget_ending_during_generation_of_a_slow_target(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, spent = _timed_explore(tmp_path, capsys, "--target", SLOW, "--budget", "4", "--seed", "3")
    assert code == 0, out
    assert spent <= 4 + 60, "the budget, plus at most one cycle (a slow one times out at 60 s)"


def test_a_budget_ending_during_shrinking_keeps_the_smallest_failure_so_far(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--target", SLOW, "--budget", "3", "--shrink-budget", "3", "--seed", "1"]
    code, out, spent = _timed_explore(
        tmp_path, capsys, *argv, "--target-env", "TINY_REFERENCE_BUG=skip-finish-on-resume"
    )
    assert code == 1, out
    assert list(tmp_path.glob("found-*.toml")) and "Flaky" not in out
    # generation budget + shrink budget + one cycle in flight at each deadline + one confirming rerun
    assert spent <= 3 + 3 + 3 * _longest_cycle(tmp_path) + 5, spent


def test_a_budget_ending_before_the_final_replay_still_reports_the_failure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With no shrink budget, every new example after the first failure is answered at once, so
    Hypothesis's final replay of the failure happens after the deadline: it is answered as before."""
    argv = ["--budget", "30", "--shrink-budget", "0", "--seed", "1", "--max-failures", "1"]
    code, out, _ = _timed_explore(
        tmp_path, capsys, *argv, "--target-env", "TINY_REFERENCE_BUG=stale-assistant-calls"
    )
    assert code == 1, out
    assert "final log reduces" in out and "Flaky" not in out
