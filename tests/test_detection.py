"""Detection power (issues 16 and 22): each class of recovery bug that passed every earlier check is
caught by its own part: power loss, usage against bills, requests against durable attempts, every gate
under every crash, two writers, what each request said, the strict provider, and every field of a plan. Each reference bug switch below is caught by its part's scenario, fails
only that part's checks, and the correct agent passes the same scenario."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chaos.case.run import run_case
from chaos.cli import main
from chaos.scenario import Strike, load_scenario, load_target
from chaos.scenario.model import Boundary
from tests.conftest import REPO, needs_ptrace

pytestmark = pytest.mark.slow  # starts agent processes (-m 'not slow' leaves it out)

REFERENCE = REPO / "targets" / "reference.toml"
# switch -> (scenario, crash or None for the scenario's own, the checks it must fail and no others;
# for two writers, what else fails depends on how the two interleave: those may fail too)
PARTS = {
    # the power cut kept nothing (the directory entry was never synced either): what the agent did on
    # the lost facts is the finding, not the empty log
    "no-fsync": ("power-loss-after-deploy", None, {"intent-synced", "requests-attempted"}),
    "double-usage": ("full-workflow", "stepAttempt#2", {"usage-billed"}),
    "client-retries": ("live-429-failed", None, {"requests-attempted"}),
    "old-gate-order": (
        "gate-failed-step-model-changed",
        None,
        {"plan-followed", "outcome", "blocked-reason", "blocked-stops", "blocked-appends-nothing"},
    ),
    "no-session-lock": ("two-writers", None, {"one-writer"}),  # the log it breaks is a symptom of it
    # what the agent sends (issue 22): requests against the log, and the strict provider
    "results-reordered": ("full-workflow", None, {"request-context"}),
    "undigested-definition": ("section8-read-replay", None, {"request-context"}),
    "compaction-wrong-range": ("compaction-crash", None, {"request-context"}),
    "hide-synthetic-results": ("pending-deploy-interrupted", None, {"requests-valid", "request-context"}),
    # plans carried out in every field (issue 22)
    "truncated-as-normal": ("length-with-tool-calls", "entry:tool", {"plan-followed"}),
    "finish-other-error": ("live-429-failed", None, {"plan-followed"}),
    "give-up-on-replay": ("section8-read-replay", None, {"plan-followed"}),
    "abort-other-message": ("abort-in-flight-crash-loop", None, {"plan-followed"}),
    "stale-replay-key": ("section8-read-replay", "entry:toolUse", {"plan-followed"}),
}
MAY_ALSO_FAIL = {
    "no-session-lock": {"intent-before-effect", "requests-attempted", "never-once", "effect-count"}
}


@needs_ptrace
@pytest.mark.parametrize("switch", list(PARTS))
def test_each_part_catches_its_own_bug_and_passes_the_correct_agent(switch: str, tmp_path: Path) -> None:
    name, crash, expected = PARTS[switch]
    scenario = load_scenario(REPO / "scenarios" / f"{name}.toml")
    if crash:
        scenario = scenario.with_crash(Strike(Boundary.parse(crash)))
    target = load_target(REFERENCE)
    broken = run_case(scenario, target, {"TINY_REFERENCE_BUG": switch}, tmp_path / "broken")
    failed = {c.id for c in broken.failed}
    assert expected <= failed <= expected | MAY_ALSO_FAIL.get(switch, set()), [
        c.text() for c in broken.failed
    ]
    fine = run_case(scenario, target, {}, tmp_path / "fine")
    assert fine.ok, [c.text() for c in fine.failed]


@needs_ptrace
def test_a_power_loss_sweep_catches_an_agent_that_never_syncs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["sweep", str(REPO / "scenarios" / "deploy-intent-durable.toml"), "-j", "2", "--mine", "none"]
    argv += ["--results", str(tmp_path / "r"), "--fault", "power-loss"]
    assert main(argv) == 0, (
        "the correct agent fsyncs each transaction: a power cut loses nothing it relied on"
    )
    assert main([*argv, "--target-env", "TINY_REFERENCE_BUG=no-fsync", "--results", str(tmp_path / "b")]) == 1
    failures = json.loads((tmp_path / "b" / "summary.json").read_text())["failures"]
    assert any(c["id"] == "intent-synced" for f in failures for c in f["failed"])


def test_a_two_writer_sweep_catches_an_agent_without_a_session_lock(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["sweep", str(REPO / "scenarios" / "section8-read-replay.toml"), "-j", "2", "--mine", "none"]
    argv += ["--fault", "paused-writer", "--results", str(tmp_path / "r")]
    assert main(argv) == 0, capsys.readouterr().out
    assert (
        main([*argv, "--target-env", "TINY_REFERENCE_BUG=no-session-lock", "--results", str(tmp_path / "b")])
        == 1
    )
    failures = json.loads((tmp_path / "b" / "summary.json").read_text())["failures"]
    assert any(c["id"] == "one-writer" for f in failures for c in f["failed"])


def test_power_loss_needs_the_tracer_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CHAOS_NO_PTRACE", "1")
    assert main(["run", "power-loss-after-deploy", "--results", str(tmp_path)]) == 2
    assert "chaos does not pretend" in capsys.readouterr().err
