"""The fault matrix (issue 37): the default sweep lands every fault where its kind of trouble happens, says
what it covered, and a bug that only another fault at another moment shows is caught, once, in words
that name its cause."""

from __future__ import annotations

import json
from dataclasses import MISSING, fields
from pathlib import Path

import pytest

from chaos.case.matrix import cell, deepens, matrix_crashes, place, request_kinds
from chaos.case.result import CaseResult
from chaos.case.space import CaseSpace, matrix_faults
from chaos.cli import main
from chaos.fault import FAULTS
from chaos.process.record import PhaseResult
from chaos.scenario import load_target
from chaos.scenario.model import Boundary, Strike
from chaos.triage.coverage import coverage_of
from tests.conftest import REPO, needs_ptrace

# One phase of a run with two tool calls: what a clean run's boundaries look like
RUN = [
    Boundary.parse(b)
    for b in (
        "header",
        "entry:user",
        "stepAttempt",
        "entry:toolUse",
        "toolStarted",
        "entry:tool",
        "toolStarted#2",
        "entry:tool#2",
        "stepAttempt#2",
        "entry:stop",
        "operationFinished",
        "model-request",
        "model-request#2",
        "model-request#3",
        "effect-running[effect=deploy]",
    )
]
KINDS = [b.what for b in RUN[:11]] + ["first request", "retry request", "first request", "effect-running"]


def _at(fault: str, recovery: bool = False) -> list[str]:
    return [str(b) for b in place(FAULTS[fault], RUN, KINDS, recovery)]


def test_each_fault_lands_where_its_kind_of_trouble_happens() -> None:
    assert _at("kill") == [str(b) for b in RUN], "a kill at every boundary"
    assert _at("power-loss") == [str(b) for b in RUN[:11]], "a power cut at every durable boundary"
    writes = ["header#1", "entry:user#1", "stepAttempt#1", "entry:toolUse#1", "toolStarted#1", "entry:tool#1"]
    writes += ["entry:stop#1", "operationFinished#1"]
    for fault in ("disk-full", "fsync-error", "short-write"):
        assert _at(fault) == writes, f"{fault}: the first write of each kind"
        assert _at(fault, recovery=True) == ["header#1"], f"{fault}: a recovery's first write"
    assert _at("power-loss", recovery=True) == writes, "a power cut at each kind of write in recovery"
    for fault in ("abort", "terminate"):
        assert _at(fault) == ["entry:toolUse#1", "entry:tool#1", "entry:tool#2"], (
            f"{fault}: between two calls"
        )
        assert _at(fault, recovery=True) == ["model-request#2"], f"{fault}: a step's retry in recovery"
    for fault in ("reset", "cut-stream", "duplicate", "hang", "invalid-json", "trickle"):
        assert _at(fault) == ["model-request#1", "model-request#2"], f"{fault}: a first request and a retry"
        assert _at(fault, recovery=True) == ["model-request#2"], f"{fault}: a recovery's retried request"
    for fault in ("torn", "paused-writer", "abort-then-kill"):
        assert _at(fault) == [], f"{fault} runs where a scenario names it"
    # a store on a server: its commits, each of a kind; the database fails in a recovery too (a failover)
    commits = [Boundary.parse(b) for b in ("commit", "commit#2", "call-durable[tool=deploy]", "commit#3")]
    kinds = ["commit", "commit", "call-durable", "commit"]
    for recovery in (False, True):
        placed = place(FAULTS["postgres-crash"], commits, kinds, recovery)
        assert [str(b) for b in placed] == ["commit#1", "call-durable[tool=deploy]#1"], recovery
    # a commit named by what it made durable is a kind of write and a moment between two calls, but
    # never a second kill or power cut at a commit already counted
    assert [str(b) for b in place(FAULTS["kill"], commits, kinds, False)] == [
        "commit#1",
        "commit#2",
        "commit#3",
    ]
    assert [str(b) for b in place(FAULTS["power-loss"], commits, kinds, False)] == [
        "commit#1",
        "commit#2",
        "commit#3",
    ]
    for fault in ("abort", "terminate"):
        assert [str(b) for b in place(FAULTS[fault], commits, kinds, False)] == [
            "call-durable[tool=deploy]#1"
        ]


def test_the_matrix_keeps_the_phase_order_and_only_what_the_target_can_take(tmp_path: Path) -> None:
    crashes = matrix_crashes(FAULTS.values(), RUN, KINDS, recovery=False)
    order = [str(c.boundary) for c in crashes]
    assert order == sorted(order, key=lambda b: [str(x) for x in RUN].index(b))
    target = load_target(REPO / "targets" / "reference.toml")
    lacking = tmp_path / "no-abort.toml"
    lacking.write_text((REPO / "targets" / "reference.toml").read_text().replace('abort = "SIGINT"', ""))
    names = {f.name for f in matrix_faults(target)}
    assert "abort" in names and "torn" not in names
    assert "abort" not in {f.name for f in matrix_faults(load_target(lacking))}, "no abort declared"


def test_a_second_crash_follows_a_kill_at_the_first_boundary_of_each_kind() -> None:
    assert deepens(Strike(Boundary.parse("toolStarted#1")))
    assert not deepens(Strike(Boundary.parse("toolStarted#2")))
    assert not deepens(Strike(Boundary.parse("toolStarted#1"), "power-loss"))
    assert not deepens(Strike(Boundary.parse("model-request#1")))
    # a store keeps no attempt: a kill mid-request is its step's only retry, crashed again there alone
    assert deepens(Strike(Boundary.parse("model-request#1")), store=True)
    assert not deepens(Strike(Boundary.parse("model-request#2")), store=True)
    assert not deepens(Strike(Boundary.parse("effect-running[effect=deploy]#1")), store=True)
    assert CaseSpace(depth=2).deepens(Strike(Boundary.parse("toolStarted#2"), "power-loss"))
    assert not CaseSpace().deepens(Strike(Boundary.parse("toolStarted#1")))


def test_request_kinds_and_crash_names_read_back() -> None:
    requests = [
        {"stepKey": "a"},
        {"stepKey": "a"},
        {"stepKey": "b", "compaction": True},
        {"stepKey": "c"},
    ]
    assert request_kinds(requests, 1, 4) == ["retry request", "compaction request", "first request"]
    for text in (
        "toolStarted[toolName=bash]#2",
        "entry:tool#1 (power-loss)",
        "model-request#3 (invalid-json)",
    ):
        assert str(Strike.parse(text)) == text


def _result(case: str, crash: str, found: str) -> CaseResult:
    required = [f.name for f in fields(PhaseResult) if f.default is MISSING and f.default_factory is MISSING]
    start = PhaseResult(**{name: None for name in required} | {"name": "start", "argv": [], "reached": True})
    return CaseResult(case, "s", "t", True, phases=[start], crash=crash, cell=found)


def test_coverage_counts_cells_and_a_baseline_says_which_were_lost() -> None:
    covered = coverage_of(
        [
            _result("a", "header#1 (power-loss)", cell("power-loss", "header", False)),
            _result("b", "stepAttempt#1 (disk-full)", cell("disk-full", "stepAttempt", True)),
        ]
    )
    assert covered.matrix() == {"disk-full": ([], ["stepAttempt"]), "power-loss": (["header"], [])}
    lost = covered.lost([], ["power-loss at header", "hang at retry request"])
    assert lost == ["hang at retry request"]


# bug switch -> (scenario, the one distinct failure a default sweep of it gives)
CAUGHT = {
    "abort-runs-planned": (
        "full-workflow",
        "intent-before-effect: no effect ran before its toolStarted was durable",
    ),
    "resume-no-sync": (
        "full-workflow",
        "acted-before-sync: the agent acted on facts it had written and not synced",
    ),
    "full-disk-in-memory": (
        "full-workflow",
        "acted-after-failed-write: the agent went on after a write to the log",
    ),
    "unsynced-parents": ("section8-read-replay", "unsynced-directory-entry: a power cut took the whole log"),
    "unreadable-as-empty": (
        "section8-read-replay",
        "answer-delivered: no answer the provider never delivered",
    ),
}


def _sweep(tmp_path: Path, scenario: str, bug: str = "") -> tuple[int, dict[str, object], Path]:
    results = tmp_path / (bug or "correct")
    argv = ["sweep", str(REPO / "scenarios" / f"{scenario}.toml"), "-j", "2", "--mine", "none"]
    argv += ["--results", str(results), "--write-baseline", str(results / "baseline.json")]
    if bug:
        argv += ["--target-env", f"TINY_REFERENCE_BUG={bug}"]
    code = main(argv)
    return code, json.loads((results / "summary.json").read_text()), results


@pytest.mark.slow
@needs_ptrace
@pytest.mark.parametrize("scenario", sorted({s for s, _ in CAUGHT.values()}))
def test_the_correct_agent_passes_the_whole_matrix(
    scenario: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, summary, results = _sweep(tmp_path, scenario)
    out = capsys.readouterr().out
    assert code == 0, out
    cells = summary["coverage"]["cells"]  # type: ignore[index]
    assert "power-loss at toolStarted in recovery" in cells or scenario != "full-workflow", sorted(cells)
    assert {c.split(" at ")[0] for c in cells} >= {
        "kill",
        "power-loss",
        "disk-full",
        "fsync-error",
        "invalid-json",
    }
    assert "  fault matrix: " in out and "    power-loss: " in out
    baseline = json.loads((results / "baseline.json").read_text())
    assert sorted(baseline["cells"]) == sorted(cells)


@pytest.mark.slow
@needs_ptrace
@pytest.mark.parametrize("bug", list(CAUGHT))
def test_a_default_sweep_catches_each_bug_as_one_failure_in_words_of_its_cause(
    bug: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario, label = CAUGHT[bug]
    code, summary, _ = _sweep(tmp_path, scenario, bug)
    groups = summary["groups"]  # type: ignore[index]
    assert code == 1
    assert [g["label"][: len(label)] for g in groups] == [label], [g["label"] for g in groups]


THREE = "stale-assistant-calls,replay-never-tools,intent-after-effect"
# One group per switch, whatever operation a stale step lands in (a run's or a compaction's: the reducer's
# words differ, the broken rule does not) and whatever fault exposed it
THREE_GROUPS = {
    "log-rejected: the oracle planned finish; the agent appended stepAttempt, which the reducer rejects",
    "plan-followed: the oracle planned appendSynthetic interrupted; the agent appended entry:tool success",
    "intent-before-effect: no effect ran before its toolStarted was durable",
}


@pytest.mark.slow
@needs_ptrace
def test_three_switches_at_once_give_three_groups_under_the_matrix(tmp_path: Path) -> None:
    paths = [
        str(REPO / "scenarios" / f"{n}.toml") for n in ("compaction-crash", "pending-deploy-interrupted")
    ]
    argv = ["sweep", *paths, "-j", "2", "--mine", "none", "--results", str(tmp_path)]
    assert main([*argv, "--target-env", f"TINY_REFERENCE_BUG={THREE}"]) == 1
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert {g["label"] for g in summary["groups"]} == THREE_GROUPS
