"""``chaos recheck`` and ``chaos fixtures check``: stored results and fixtures judged again, nothing run.

A stored sweep re-judged by the same chaos gives the same verdicts, case by
case; judged with a deliberately changed check, it says which verdicts changed.
A fixture whose expectation the current oracle no longer meets is named.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from chaos import api
from chaos.case.result import read_journal
from chaos.check import requests as request_checks
from chaos.check.base import Check
from chaos.cli import main
from chaos.cycle.evidence import Evidence
from tests.conftest import REPO, needs_ptrace

pytestmark = pytest.mark.slow  # starts agent processes (-m 'not slow' leaves it out)

NAMES = ["pending-deploy-interrupted", "live-429-failed"]


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("swept")
    paths = [str(REPO / "scenarios" / f"{n}.toml") for n in NAMES]
    argv = ["sweep", *paths, "--fault", "kill", "-j", "2", "--mine", "none", "--results", str(folder)]
    assert main([*argv, "--target-env", "TINY_REFERENCE_BUG=replay-never-tools"]) == 1
    return folder


def _verdicts(folder: Path) -> dict[str, tuple[bool, list[dict[str, object]], str | None]]:
    return {
        r.case: (r.ok, [c.to_json() for c in r.checks], r.failure.key if r.failure else None)
        for r in read_journal(folder / "sweep.jsonl")
        if not r.skipped and r.reported
    }


@needs_ptrace
def test_a_stored_sweep_rechecked_gives_the_same_verdicts(
    swept: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["recheck", str(swept), "--out", str(tmp_path / "again")]) == 1  # the finding stands
    out = capsys.readouterr().out
    assert "0 verdict(s) changed, 0 case(s) not judged again" in out
    before, after = _verdicts(swept), _verdicts(tmp_path / "again")
    assert before == after and len(before) > 10
    summary = json.loads((tmp_path / "again" / "summary.json").read_text())
    assert summary["findings"] == json.loads((swept / "summary.json").read_text())["findings"] > 0


@needs_ptrace
def test_a_changed_check_shows_which_verdicts_changed(
    swept: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def stricter(ev: Evidence) -> Check:  # as if a checker fix now refused every live 429
        refused = any(r.get("status") == 429 for r in ev.requests)
        return Check("requests-valid", "stricter", not refused, "no 429", "a 429", cause="a 429 answered")

    monkeypatch.setattr(request_checks, "requests_valid", stricter)
    done = api.recheck([swept], tmp_path / "again")
    changed = {c.case.split(" @ ")[0] for c in done.changes}
    assert changed == {"live-429-failed"}, [c.text() for c in done.changes]
    assert all(c.before == "ok" and "a 429 answered" in c.after for c in done.changes)


@needs_ptrace
def test_a_single_run_rechecks_and_a_case_without_its_evidence_is_said(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    assert main(["run", "section8-read-replay", "--results", str(run)]) == 0
    assert main(["recheck", str(run), "--out", str(tmp_path / "a")]) == 0
    (run / "requests.json").unlink()  # as an older chaos pruned a passing case
    assert main(["recheck", str(run), "--out", str(tmp_path / "b")]) == 2
    assert "no requests.json" in capsys.readouterr().err
    assert main(["recheck", str(tmp_path / "nothing-here")]) == 2


def test_a_fixture_the_oracle_no_longer_meets_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = tmp_path / "corpus"
    shutil.copytree(REPO / "results" / "fixtures", corpus)
    assert main(["fixtures", "check", str(corpus)]) == 0
    manifest = json.loads((corpus / "planner-fixtures" / "manifest.json").read_text())["fixtures"]
    changed = corpus / "planner-fixtures" / manifest[0]["expected"]
    plan = json.loads(changed.read_text())
    changed.write_text(json.dumps({**plan, "type": "blocked", "reason": "attempts_exhausted"}))
    capsys.readouterr()
    assert main(["fixtures", "check", str(corpus)]) == 1
    out = capsys.readouterr().out
    assert f'planner fixture {manifest[0]["name"]}: .reason: expected "attempts_exhausted"' in out
    assert main(["fixtures", "check", str(tmp_path)]) == 2


def test_results_of_a_target_judged_on_its_store_are_not_passed_off_as_rechecked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A case keeps no copy of a framework's store per phase, so recheck cannot judge it again: each case
    is kept as stored, naming why, and a recheck that judged nothing is exit 2, never a pass."""
    swept = tmp_path / "swept"
    scenario = str(REPO / "scenarios" / "frameworks" / "deploy-one-service.toml")
    target = str(REPO / "tests" / "targets" / "store-agent.toml")
    argv = ["sweep", scenario, "--target", target, "--fault", "kill", "--budget", "3", "--mine", "none"]
    assert main([*argv, "--results", str(swept)]) == 0
    capsys.readouterr()
    assert main(["recheck", str(swept), "--out", str(tmp_path / "again")]) == 2
    said = capsys.readouterr().out
    assert "judged on its test-jsonl store" in said and "no case could be judged again" in said
