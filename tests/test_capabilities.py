"""What a target can do is declared, and a case that needs more is skipped with its reason, never failed.

The contract asks for a log, a resume and an exit code per outcome. Aborting on a signal, compacting,
streaming and any tool but the contract's own are what chaos can exercise beyond it: a target declares
them (``[capabilities]``, a ``compact`` command, its configuration's tools), and a sweep of the bundled
scenarios against an agent with none of them runs everything it can and exits 0, listing the skips in
the console, ``summary.json``, JUnit, the HTML report and the pytest plugin.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from hypothesis import given, settings

from chaos.cli import main
from chaos.explore.strategies import scenarios
from chaos.scenario import load_scenario, load_target
from chaos.scenario.target import unmet
from tests.conftest import REPO, needs_ptrace

pytestmark = pytest.mark.slow  # starts agent processes (-m 'not slow' leaves it out)

MINIMAL = str(REPO / "tests" / "targets" / "minimal.toml")
SKIPPING = [
    "abort-during-deploy",
    "sigint-after-failure",
    "compaction-crash",
    "crash-mid-stream",
    "torn-tail",
]


def _paths(names: list[str]) -> list[str]:
    return [str(REPO / "scenarios" / f"{name}.toml") for name in names]


def test_what_a_scenario_needs_is_derived_from_it_and_its_declaration() -> None:
    needs = {p.stem: load_scenario(p).needs() for p in (REPO / "scenarios").glob("*.toml")}
    assert needs["abort-during-deploy"] == ["tool:bash", "abort"]
    assert needs["compaction-crash"] == ["compaction"]
    assert needs["crash-mid-stream"] == ["streaming"]
    assert needs["full-workflow"] == ["tool:bash", "tool:edit", "tool:write"]
    assert needs["section8-read-replay"] == []
    minimal, reference = load_target(Path(MINIMAL)), load_target(REPO / "targets" / "reference.toml")
    scenario = load_scenario(REPO / "scenarios" / "abort-during-deploy.toml")
    tools = ["read", "write", "edit", "bash"]
    assert unmet(scenario, reference, lambda: tools) is None
    assert "an abort on a signal" in (unmet(scenario, minimal, lambda: tools) or "")
    assert "the tool 'bash'" in (unmet(scenario, reference, lambda: ["read"]) or "")


@needs_ptrace
def test_a_sweep_against_a_contract_only_agent_skips_what_it_cannot_and_passes_the_rest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["sweep", *_paths(SKIPPING), "--target", MINIMAL, "-j", "2", "--mine", "none", "--fault", "kill"]
    code = main([*argv, "--results", str(tmp_path / "r"), "--junit", str(tmp_path / "junit.xml")])
    out, err = capsys.readouterr()
    assert code == 0, out
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    skipped = len(summary["skipped"])
    # a skipped case is not ok, and every count agrees: progress, headline, summary, journal
    journal = [json.loads(line) for line in (tmp_path / "r" / "sweep.jsonl").read_text().splitlines()]
    assert sum(1 for r in journal if r.get("skipped")) == skipped > 0
    assert all(r["ok"] is False for r in journal if r.get("skipped")), "skipped is not ok"
    final = [line for line in err.splitlines() if re.match(r"chaos sweep: \d+/\d+ cases", line)][-1]
    assert final.startswith(
        f"chaos sweep: {len(journal)}/{len(journal)} cases ({skipped} skipped), 0 finding(s)"
    )
    assert f"chaos sweep: {summary['cases']} case(s) run and {skipped} skipped, 0 finding(s)" in out
    assert summary["cases"] + skipped == len(journal)
    assert f"chaos sweep: {len(journal)} case(s) in all; about " in err, "the whole count, once known"
    assert f"chaos sweep: results in {tmp_path / 'r'}; mining off" in err, "where it writes, first"
    reasons = {s["reason"].split(" needs ")[1].split(" (")[0] for s in summary["skipped"]}
    assert reasons == {"an abort on a signal", "a compaction", "a streamed model answer"}, summary["skipped"]
    assert summary["findings"] == 0 and summary["cases"] > 30
    for reason in reasons:
        assert reason in out, "the console says what was skipped and why"
    suite = ET.parse(tmp_path / "junit.xml").getroot().find("testsuite")
    assert suite is not None and int(suite.get("skipped", "0")) == len(summary["skipped"])
    assert len(list(suite.iter("skipped"))) == len(summary["skipped"])
    page = (tmp_path / "r" / "report.html").read_text()
    assert page.count('class="cell skip"') == len(summary["skipped"])


@needs_ptrace
def test_a_single_run_that_needs_more_is_skipped_not_failed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", "compaction-crash", "--target", MINIMAL, "--results", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0
    assert (
        "chaos run: skipped: compaction-crash needs a compaction (the target has no compact command)" in out
    )


@needs_ptrace
def test_the_pytest_plugin_skips_with_the_reason(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    argv = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "-q",
        "-rs",
        "--chaos",
        _paths(["compaction-crash"])[0],
    ]
    argv += [
        "--chaos-target",
        MINIMAL,
        "--chaos-results",
        str(tmp_path / "r"),
        "--junitxml",
        str(tmp_path / "j.xml"),
    ]
    done = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "skipped" in done.stdout and "needs a compaction" in done.stdout
    assert len(list(ET.parse(tmp_path / "j.xml").getroot().iter("skipped"))) == 2  # no crash, as written


@pytest.mark.parametrize(
    ("table", "says"),
    [
        ('[capabilities]\nabort = "SIGUSR1"\n', "capabilities.abort: 'SIGUSR1' is not allowed"),
        ("[capabilities]\nstreams = true\n", "did you mean 'streaming'?"),
    ],
)
def test_a_capability_is_declared_strictly(
    tmp_path: Path, table: str, says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "mine.toml"
    spec.write_text(Path(MINIMAL).read_text() + "\n" + table)
    assert main(["run", "section8-read-replay", "--target", str(spec), "--results", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert says in err and "line" in err and "Traceback" not in err


@settings(max_examples=200, deadline=None)
@given(
    scenarios(
        load_target(Path(MINIMAL)),
        ["read", "write", "edit", "bash"],
        ("kill", "abort", "abort-then-kill", "paused-writer"),
    )
)
def test_explore_generates_only_what_the_target_can_do(scenario: object) -> None:
    assert "abort" not in scenario.needs()  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("base", "edit", "says"),
    [
        ("langgraph-approval.toml", ("parked = 4  # the run waits for approval: chaos runs approve\n", ""),
         "exit.parked: is required"),
        ("reference.toml", ("[env]", 'approve = ["{python}", "-V"]\n\n[env]'),
         "approve: a run approved by a separate command is judged on its [store]"),
        ("langgraph.toml", ('path = "state.db"', 'path = "state.db"\nstate = "saved.json"'),
         "store.state: the langgraph store reads no saved run state beside it"),
    ],
)  # fmt: skip
def test_an_approve_command_needs_a_store_and_a_parked_exit_status_and_a_state_a_reader(
    tmp_path: Path, base: str, edit: tuple[str, str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / base
    spec.write_text((REPO / "targets" / base).read_text().replace(*edit))
    assert main(["run", "deploy-one-service", "--target", str(spec), "--results", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert says in err and "line" in err and "Traceback" not in err, err
