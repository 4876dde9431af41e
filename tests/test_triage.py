"""Distinct failures: each bug reported once, with its smallest case, everywhere findings appear; and a
baseline that tells a nightly's known failures from new ones."""

from __future__ import annotations

import contextlib
import io
import json
import shlex
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from chaos.cli import main
from tests.browser import dom as rendered
from tests.conftest import REPO

pytestmark = pytest.mark.slow  # starts agent processes (-m 'not slow' leaves it out)

SCENARIOS = str(REPO / "scenarios")
THREE = "replay-never-tools,intent-after-effect,skip-finish-on-resume"
# Scenarios every one of the three shows in, several times over (a full sweep of every shipped scenario
# gives the same three groups)
WIDE = [
    "pending-deploy-interrupted",
    "deploy-intent-durable",
    "section8-read-replay",
    "open-attempt-retry",
    "power-loss-after-deploy",
    "full-workflow",
    "live-429-failed",
    "abort-during-deploy",
]
# The expected groups of a sweep of every shipped scenario with the three switches on, and the switch
# behind each: one group per switch. (intent-after-effect also breaks the hand-written plan of the
# scenarios crashed while its effect runs, since the prefix lacks the intent: that prefix-plan failure is
# its symptom, not a group of its own.)
EXPECTED = {
    "plan-followed: the oracle planned finish; the agent appended nothing": "skip-finish-on-resume",
    "plan-followed: the oracle planned appendSynthetic interrupted; the agent appended entry:tool success": (
        "replay-never-tools"
    ),
    "intent-before-effect: no effect ran before its toolStarted was durable": "intent-after-effect",
}


def _sweep(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(["sweep", "--fault", "kill", *argv, "--mine", "none"])
    return code, capsys.readouterr().out


@pytest.fixture(scope="module")
def three(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, str, Path]:
    folder = tmp_path_factory.mktemp("three")
    argv = ["sweep", *(str(REPO / "scenarios" / f"{n}.toml") for n in WIDE), "-j", "2", "--mine", "none"]
    argv += ["--fault", "kill"]
    argv += ["--results", str(folder / "r")]
    argv += ["--junit", str(folder / "junit.xml"), "--target-env", f"TINY_REFERENCE_BUG={THREE}"]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(argv)
    return code, out.getvalue(), folder


def test_three_switches_give_the_expected_groups_and_each_representative_reproduces_alone(
    three: tuple[int, str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, folder = three
    summary = json.loads((folder / "r" / "summary.json").read_text())
    assert code == 1
    assert {g["label"] for g in summary["groups"]} == set(EXPECTED)
    assert sum(g["count"] for g in summary["groups"]) == summary["findings"]
    assert f"3 distinct failure(s) in {summary['findings']} failing case(s) of {summary['cases']}" in out
    for found in summary["groups"]:
        assert f"[{found['key']}] {found['label']}" in out
        assert found["representative"]["case"] == found["members"][0]
    messages = [f.get("message", "") for f in ET.parse(folder / "junit.xml").getroot().iter("failure")]
    assert len(messages) == summary["findings"]
    assert all(
        any(f"[{g['key']}]" in m for g in summary["groups"]) and "smallest case:" in m for m in messages
    )
    dom = rendered(folder / "r" / "report.html", tmp_path / "profile")
    assert "3 distinct failure(s)</h2>" in dom
    assert dom.count('class="group new"') == 3
    for number, found in enumerate(summary["groups"], 1):
        assert dom.count(f'data-group="{number}"') == found["count"], "each failing cell names its group"

    # each representative, rerun with only its switch, fails the same way
    capsys.readouterr()
    for n, found in enumerate(summary["groups"]):
        argv = shlex.split(found["representative"]["reproduce"])[1:]
        argv = [
            a.replace("$TINY_REFERENCE_BUG", EXPECTED[found["label"]]) for a in argv
        ]  # the shell gives it
        assert main([*argv, "--results", str(tmp_path / str(n))]) == 1
        out = capsys.readouterr().out
        assert f"failure [{found['key']}]" in out, (found["label"], out)


def test_a_baseline_keeps_a_nightly_green_but_honest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(REPO / "scenarios" / "pending-deploy-interrupted.toml")
    baseline = tmp_path / "baseline.json"
    bug = ["--target-env", "TINY_REFERENCE_BUG=replay-never-tools"]
    code, out = _sweep(
        capsys, path, "-j", "2", "--results", str(tmp_path / "a"), *bug, "--write-baseline", str(baseline)
    )
    assert code == 1 and len(json.loads(baseline.read_text())["failures"]) == 1
    code, out = _sweep(
        capsys, path, "-j", "2", "--results", str(tmp_path / "b"), *bug, "--baseline", str(baseline)
    )
    assert code == 0, out
    assert "known 1. [" in out
    two = ["--target-env", "TINY_REFERENCE_BUG=replay-never-tools,skip-finish-on-resume"]
    code, out = _sweep(
        capsys, path, "-j", "2", "--results", str(tmp_path / "c"), *two, "--baseline", str(baseline)
    )
    assert code == 1, out
    assert "(1 new)" in out and "✗ new" in out and "known" in out
    code, out = _sweep(capsys, path, "-j", "2", "--results", str(tmp_path / "d"), "--baseline", str(baseline))
    assert code == 0
    assert "fixed: [" in out


def test_merge_groups_shards_by_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(REPO / "scenarios" / "pending-deploy-interrupted.toml")
    bug = ["--target-env", "TINY_REFERENCE_BUG=replay-never-tools"]
    for k in (1, 2):
        _sweep(capsys, path, "--shard", f"{k}/2", "-j", "2", "--results", str(tmp_path / f"s{k}"), *bug)
    keys = [
        {g["key"] for g in json.loads((tmp_path / f"s{k}" / "summary.json").read_text())["groups"]}
        for k in (1, 2)
    ]
    assert main(["merge", str(tmp_path / "s1"), str(tmp_path / "s2"), "--out", str(tmp_path / "m")]) == 1
    merged = json.loads((tmp_path / "m" / "summary.json").read_text())
    assert {g["key"] for g in merged["groups"]} == keys[0] | keys[1]
    assert sum(g["count"] for g in merged["groups"]) == merged["findings"]


def test_explore_reports_two_distinct_separately_shrunk_failures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # --max-failures ends it once both are found (22 s here); the budget is slack for a loaded machine
    argv = ["explore", "--budget", "180", "--shrink-budget", "15", "--seed", "1", "--max-failures", "2"]
    argv += ["--results", str(tmp_path)]
    bug = "TINY_REFERENCE_BUG=stale-assistant-calls,skip-finish-on-resume"
    assert main([*argv, "--target-env", bug]) == 1
    out = capsys.readouterr().out
    assert "2 distinct failure(s)" in out
    found = sorted(tmp_path.glob("found-*.toml"))
    assert [p.name.split("-f-")[0] for p in found] == ["found-log-rejected", "found-plan-followed"]


def test_one_missing_field_is_one_group_whichever_phase_writes_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A single missing-field bug gave three groups; a rejected log is keyed by the oracle's error code,
    the fact kind and the rule, whether the start wrote the line or a resume did."""
    names = ["length-with-tool-calls", "unknown-tool-invalid-arguments"]
    paths = [str(REPO / "scenarios" / f"{name}.toml") for name in names]
    bug = ["--target-env", "TINY_REFERENCE_BUG=synthetic-missing-field"]
    code, out = _sweep(capsys, *paths, "-j", "2", "--results", str(tmp_path), *bug)
    assert code == 1
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert len(summary["groups"]) == 1, out
    assert "entry lacks assistantEntryId" in summary["groups"][0]["label"]
    failed = {f["failed"][0]["id"] for f in summary["failures"]}
    assert failed == {"prefix-reduces", "final-reduces"}, "both phases wrote it, one group"


def test_coverage_is_reported_and_a_shrinking_night_fails_against_its_baseline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A nightly run that tests less than it used to is as visible as one that finds more: the decision
    tree's rows each night's recoveries faced are in the console, summary.json and JUnit; a baseline
    keeps them, and a later run that no longer faces one exits 1 naming it."""
    wide = [
        str(REPO / "scenarios" / f"{n}.toml") for n in ("section8-read-replay", "pending-deploy-interrupted")
    ]
    baseline = tmp_path / "baseline.json"
    code, out = _sweep(
        capsys, *wide, "-j", "2", "--results", str(tmp_path / "a"), "--write-baseline", str(baseline)
    )
    assert code == 0 and "decision tree:" in out and "faults landed: kill" in out
    rows = json.loads(baseline.read_text())["rows"]
    assert "5-interrupted-never" in rows and "5-replay-safe" in rows
    summary = json.loads((tmp_path / "a" / "summary.json").read_text())["coverage"]
    assert set(summary["missing"]) == {r for r, n in summary["rows"].items() if n == 0}
    argv = [wide[0], "-j", "2", "--results", str(tmp_path / "b"), "--baseline", str(baseline)]
    code, out = _sweep(capsys, *argv, "--junit", str(tmp_path / "j.xml"))
    assert code == 1, out
    assert "coverage lost against the baseline: " in out and "5-interrupted-never" in out
    properties = {
        p.get("name"): p.get("value") for p in ET.parse(tmp_path / "j.xml").getroot().iter("property")
    }
    assert "5-interrupted-never" in (properties["coverage.lost"] or "")


def test_going_on_where_recovery_must_stop_is_one_failure_whatever_the_model_answers_next(
    tmp_path: Path,
) -> None:
    """unbounded-retry gave one group per answer the script had next (an answer, a tool call, a 429):
    what a recovery appends after it should have stopped comes from the script, not from the bug."""
    from dataclasses import replace

    from chaos.case.run import run_case
    from chaos.scenario import Turn, load_scenario, load_target
    from chaos.triage.failure import failure_of

    scenario = load_scenario(REPO / "scenarios" / "attempts-exhausted.toml")
    spec = load_target(REPO / "targets" / "reference.toml")
    answers = {
        "text": Turn(text="Hello."),
        "tool": Turn(tool_calls=[{"name": "read", "arguments": {"path": "README.md"}}]),
        "429": Turn(error=429),
    }
    labels = set()
    for name, turn in answers.items():
        case = replace(scenario, turns=[turn, Turn(text="Done.")], files={"README.md": "hello\n"})
        verdict = run_case(case, spec, {"TINY_REFERENCE_BUG": "unbounded-retry"}, tmp_path / name)
        found = failure_of(verdict)
        assert found is not None, name
        labels.add(found.label)
    assert labels == {
        "plan-followed: the oracle planned blocked attempts_exhausted; the agent went on where it must stop"
    }


def test_a_line_cut_anywhere_is_one_rule() -> None:
    """The JSON parser's words name where a torn line was cut: they are left out of the rule a key holds."""
    from chaos.triage.failure import rule

    said = [
        "not strict JSON: unexpected character, expected ',' or '}': line 1 column 625 (char 624)",
        "not strict JSON: unexpected character, expected ':' after key: line 1 column 281 (char 280)",
    ]
    assert {rule(s) for s in said} == {"not strict JSON"}
    assert rule("an object has a duplicate key") == "an object has a duplicate key"


def test_coverage_counts_the_abort_an_agent_finished_in_its_own_process(tmp_path: Path) -> None:
    """Issue 38: an abort the start process made durable and finished itself showed no abort row."""
    from chaos.case.run import run_case
    from chaos.contract.reading import decision
    from chaos.scenario import load_scenario, load_target
    from chaos.triage.coverage import rows_of

    scenario = load_scenario(REPO / "scenarios" / "abort-during-deploy.toml")
    verdict = run_case(scenario, load_target(REPO / "targets" / "reference.toml"), {}, tmp_path / "r")
    assert verdict.ok, [c.text() for c in verdict.failed]
    made = decision(verdict.evidence.prefix, verdict.evidence.current)
    assert made is not None and made.row == "0-idle", "no resume faced the abort: the start finished it"
    assert "1-abort-unresolved-calls" in rows_of(verdict.evidence)
