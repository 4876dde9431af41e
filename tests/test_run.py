"""chaos run end to end: real agents, real kills, real resumes; and the agents it must catch."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest

from chaos.case.run import run_case
from chaos.cli import main
from chaos.contract import reduce
from chaos.contract.framing import committed_facts, facts_of
from chaos.scenario import Strike, load_scenario
from chaos.scenario.model import Boundary
from chaos.scenario.target import load_target
from tests.conftest import REPO, needs_ptrace

pytestmark = pytest.mark.slow  # starts agent processes (-m 'not slow' leaves it out)

SCENARIOS = sorted((REPO / "scenarios").glob("*.toml"))
TARGETS = Path(__file__).parent / "targets"
SECTION8 = REPO / "scenarios" / "section8-read-replay.toml"


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _verdict(folder: Path) -> dict:
    return json.loads((folder / "verdict.json").read_text())


@needs_ptrace
@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_every_shipped_scenario_passes_against_the_reference_agent(
    path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run(capsys, "run", str(path), "--results", str(tmp_path))
    assert code == 0, out
    verdict = _verdict(tmp_path)
    assert verdict["ok"] and verdict["exact"], verdict["landed"]
    for name in ("prefix.jsonl", "final.jsonl", "prefix.reduce.json", "current.json", "requests.json"):
        assert (tmp_path / name).is_file(), name
    # the reproduce command reruns exactly this case: the scenario as used, kept in the run folder, named
    # from there (the results name no host path: the line runs in the case's folder)
    reproduce = (tmp_path / "reproduce").read_text()
    assert reproduce.startswith("chaos run ./scenario.toml") and str(tmp_path) not in reproduce


# Each bug switch of the reference agent, a scenario that must catch it, and the check that fails.
CAUGHT = [
    ("stale-assistant-calls", "section8-read-replay", "final log reduces"),
    (
        "replay-never-tools",
        "pending-deploy-interrupted",
        "never-replay effects ran at most once per tool call",
    ),
    ("intent-after-effect", "deploy-intent-durable", "no effect ran before its toolStarted was durable"),
    ("no-torn-tail-repair", "torn-tail", "final log reduces"),
    ("unbounded-retry", "attempts-exhausted", "resume-2 outcome"),
    ("skip-finish-on-resume", "open-attempt-retry", "final state idle, one terminal record per operation"),
]


@pytest.mark.parametrize(("bug", "scenario", "check"), CAUGHT, ids=[c[0] for c in CAUGHT])
def test_each_bug_switch_is_a_finding_naming_its_check(
    bug: str, scenario: str, check: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = REPO / "scenarios" / f"{scenario}.toml"
    code, out, _ = _run(
        capsys, "run", str(path), "--results", str(tmp_path), "--target-env", f"TINY_REFERENCE_BUG={bug}"
    )
    assert code == 1, out
    assert f"✗ {check}" in out
    # the reproduce command names the variable (a --target-env value is a secret), the shell gives it
    assert '--target-env TINY_REFERENCE_BUG="$TINY_REFERENCE_BUG"' in out, out
    assert bug not in (tmp_path / "reproduce").read_text()
    failed = [c["name"] for c in _verdict(tmp_path)["checks"] if not c["ok"]]
    assert check in failed


def test_section8_bug_names_the_reducer_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(
        capsys,
        "run",
        str(SECTION8),
        "--results",
        str(tmp_path),
        "--target-env",
        "TINY_REFERENCE_BUG=stale-assistant-calls",
    )
    assert code == 1
    assert "✗ final log reduces: expected ok, got INVALID_TRANSITION at line" in out
    assert not reduce((tmp_path / "final.jsonl").read_bytes())["ok"]
    assert reduce((tmp_path / "prefix.jsonl").read_bytes())["ok"], "the crash prefix itself was fine"


BOUNDARIES = [
    "runStarted",
    "stepAttempt#2",
    "entry:toolUse",
    "toolStarted[toolName=read]",
    "toolStarted[toolName=bash]",
    "entry:tool#2",
    "usage#3",
    "entry:stop",
    "operationFinished",
]


@needs_ptrace
@pytest.mark.parametrize("boundary", BOUNDARIES)
def test_kills_land_exactly_at_the_boundary_even_between_commits(boundary: str, tmp_path: Path) -> None:
    """The prefix ends with the boundary's fact: no later fact is committed, whatever the agent does next."""
    scenario = load_scenario(REPO / "scenarios" / "full-workflow.toml")
    crash = Strike(Boundary.parse(boundary))
    verdict = run_case(
        scenario.with_crash(crash), load_target(REPO / "targets" / "reference.toml"), {}, tmp_path
    )
    prefix = (tmp_path / "prefix.jsonl").read_bytes()
    facts = committed_facts(prefix)
    assert sum(1 for f in facts if crash.boundary.matches(f)) == crash.boundary.nth
    last = facts_of(orjson.loads(prefix.splitlines()[-1]))
    assert any(crash.boundary.matches(f) for f in last), "the last transaction holds the boundary"
    start = verdict.phases[0]
    assert (
        start.landing.reached
        and start.landing.exact
        and start.landing.late_facts == 0
        and start.landing.mechanism == "ptrace"
    )
    assert verdict.ok, [c for c in verdict.checks if not c.ok]


def test_polling_fallback_reports_where_the_kill_landed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CHAOS_NO_PTRACE", "1")
    code, out, _ = _run(capsys, "run", str(SECTION8), "--results", str(tmp_path))
    verdict = _verdict(tmp_path)
    start = verdict["phases"][0]
    assert start["mechanism"] == "poll" and start["lateFacts"] is not None
    assert verdict["exact"] == (start["lateFacts"] == 0)
    assert "(poll)" in out and code in (0, 1)


def test_a_second_crash_during_recovery(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = REPO / "scenarios" / "full-workflow.toml"
    code, out, _ = _run(
        capsys, "run", str(path), "--results", str(tmp_path), "--then-kill-at", "toolStarted[toolName=write]"
    )
    assert code == 0, out
    names = [p["name"] for p in _verdict(tmp_path)["phases"]]
    assert names == ["start", "resume-1", "resume-2", "resume-again"]
    resume1 = (tmp_path / "resume-1.jsonl").read_bytes()
    assert committed_facts(resume1)[-1]["record"]["toolName"] == "write"


def test_a_hung_resume_is_killed_at_the_timeout_and_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run(
        capsys,
        "run",
        str(SECTION8),
        "--target",
        str(TARGETS / "hang-on-resume.toml"),
        "--timeout",
        "3",
        "--results",
        str(tmp_path),
    )
    assert code == 1
    assert (
        "✗ every phase ended before its timeout: expected within 3s, got killed at the timeout: resume-1"
        in out
    )
    assert "resume-1: killed at the timeout" in out


@pytest.mark.parametrize(
    ("target", "check"),
    [
        ("rewrites-log", "append-only: committed bytes are never rewritten"),
        ("leaves-daemon", "no process outlived the run"),
    ],
)
def test_broken_targets_are_caught(
    target: str, check: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run(
        capsys, "run", str(SECTION8), "--target", str(TARGETS / f"{target}.toml"), "--results", str(tmp_path)
    )
    assert code == 1, out
    assert f"✗ {check}" in out


def test_a_target_that_cannot_start_is_unusable_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _run(
        capsys,
        "run",
        str(SECTION8),
        "--target",
        str(TARGETS / "missing-program.toml"),
        "--results",
        str(tmp_path),
    )
    assert code == 2
    assert "/nonexistent/agent" in err


BAD = [
    ("prompt = 'x'\n[[turns]]\ntext = 'hi'\n[crash]\nat = 'toolStarte'\n", "crash.at", "line 5"),
    ("prompt = 'x'\n[[turns]]\ntext = 'hi'\n[expect]\noutcome = 'done'\n", "expect.outcome", "use one of"),
    ("prompt = 'x'\n[[turns]]\ntext = 'hi'\nsurprise = 1\n", "turns[0].surprise", "unknown key"),
    ("prompt = 3\n[[turns]]\ntext = 'hi'\n", "prompt", "must be str"),
    ("prompt = 'x'\n", "turns", "at least one"),
    (
        "prompt = 'x'\n[[turns]]\ntext = 'hi'\n[crash]\nat = 'stepAttempt'\nnth = 'two'\n",
        "crash.nth",
        "must be int",
    ),
    ("prompt = 'x'\n[[turns]]\ntext = 'hi'\n[files]\n'../escape' = 'x'\n", "files.../escape", "inside"),
    ("prompt = 'x'\n[[turns]]\ntext = 'hi'\n[expect]\noutcome = 'blocked'\n", "expect.reason", "blocked"),
    ("prompt = 'x'\ntarget = 'nosuch'\n[[turns]]\ntext = 'hi'\n", "unknown target 'nosuch'", "known targets"),
    ("prompt = 'x'\n[[turns]]\ntext = = 'hi'\n", "not valid TOML", "line 3"),
]


@pytest.mark.parametrize(("source", "field", "hint"), BAD, ids=[b[1] for b in BAD])
def test_a_bad_scenario_is_refused_naming_the_field(
    source: str, field: str, hint: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(source)
    code, out, err = _run(capsys, "run", str(path), "--results", str(tmp_path / "r"))
    assert code == 2 and not out
    assert str(path) in err and field in err and hint in err, err
    assert not (tmp_path / "r").exists(), "nothing ran"


def test_a_bad_kill_at_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = _run(
        capsys, "run", str(SECTION8), "--kill-at", "toolStarted[toolName", "--results", str(tmp_path)
    )
    assert code == 2 and "--kill-at" in err and "kind[field=value]#n" in err


@needs_ptrace
def test_demo_runs_the_section8_scenario(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "demo", "--results", str(tmp_path))
    assert code == 0, out
    assert "crash at toolStarted[toolName=read]#1: exactly at the boundary (ptrace)" in out
    verdict = orjson.loads((tmp_path / "verdict.json").read_bytes())
    assert verdict["scenario"] == "section8-read-replay"


def test_a_recovery_blocked_after_its_own_progress_is_no_finding(tmp_path: Path) -> None:
    """Found by chaos explore against the correct agent: crashed before any step, resumed on another
    machine, the step failed live (429) and the environment gate then blocked it. With derived
    expectations this was judged 'not idle' (a false alarm); it is blocked, with no reason derived
    from the final log itself (that check could not fail)."""
    scenario = load_scenario(REPO / "scenarios" / "live-failure-blocked-by-environment.toml")
    case = scenario.with_crash(Strike(Boundary("any")))
    verdict = run_case(case, load_target(REPO / "targets" / "reference.toml"), {}, tmp_path)
    assert verdict.ok, [c.text() for c in verdict.failed]
    outcome = next(c for c in verdict.checks if c.id == "outcome")
    assert outcome.expected.startswith("blocked") and outcome.got.startswith("blocked")
    assert not [c for c in verdict.checks if c.id in ("blocked-reason", "idle-terminal")]


def test_a_judge_passed_to_the_api_joins_the_verdict(tmp_path: Path) -> None:
    """The ``chaos.extend.Judge`` extension point: another judge of the evidence, whose failure fails the case."""
    from chaos import api
    from chaos.check.base import Check
    from chaos.cycle.evidence import Evidence

    seen: list[int] = []

    def no_second_resume(evidence: Evidence, folder: Path) -> list[Check]:
        seen.append(len(evidence.phases))
        return [Check("oracle-agrees", "my judge: one phase only", len(evidence.phases) == 1, "1", "more")]

    verdict = api.run(SECTION8, results=tmp_path / "case", judges=[no_second_resume])
    assert seen and seen[0] > 1
    assert [c.name for c in verdict.failed] == ["my judge: one phase only"]
    assert not _verdict(tmp_path / "case")["ok"]
