"""chaos sweep end to end: every boundary, exact kills, JUnit, shards and merge, --resume, mining, oracles."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
import xml.etree.ElementTree as ET
from pathlib import Path

import psutil
import pytest

from chaos.cli import main
from tests.conftest import REPO, needs_ptrace
from tests.test_run import CAUGHT

pytestmark = pytest.mark.slow  # starts agent processes (-m 'not slow' leaves it out)

SMALL = str(REPO / "scenarios" / "live-429-failed.toml")  # few boundaries, one log each
SECTION8 = str(REPO / "scenarios" / "section8-read-replay.toml")
DEPLOY = str(REPO / "scenarios" / "pending-deploy-interrupted.toml")


def _sweep(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(["sweep", "--fault", "kill", *argv])
    return code, capsys.readouterr().out


def _parallel(results: Path, junit: Path, *extra: str) -> list[str]:
    """Two workers, no mining, a results folder and a JUnit file: how these tests sweep."""
    return ["-j", "2", "--results", str(results), "--junit", str(junit), "--mine", "none", *extra]


def _summary(folder: Path) -> dict:
    return json.loads((folder / "summary.json").read_text())


@needs_ptrace
def test_a_sweep_crashes_every_boundary_exactly_and_reports_junit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    junit = tmp_path / "junit.xml"
    code, out = _sweep(capsys, SECTION8, DEPLOY, *_parallel(tmp_path / "r", junit))
    assert code == 0, out
    summary = _summary(tmp_path / "r")
    assert summary["findings"] == 0 and summary["precision"] == 1.0
    assert summary["exact"] == summary["reached"] == summary["crashes"] > 15
    cases = {v["case"] for v in summary["verdicts"]}
    for boundary in ("header#1", "stepAttempt#2", "model-request#2", "entry:stop#1", "operationFinished#1"):
        assert f"section8-read-replay @ {boundary}" in cases
    for boundary in ("effect-running[effect=deploy]#1", "effect-done[effect=deploy]#1", "toolStarted#1"):
        assert f"pending-deploy-interrupted @ {boundary}" in cases
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None and int(suite.get("tests", "0")) == summary["cases"] == len(
        suite.findall("testcase")
    )
    assert suite.get("failures") == "0"
    assert f"kill precision: {summary['exact']}/{summary['reached']}" in out


@pytest.mark.parametrize(("bug", "scenario", "check"), CAUGHT, ids=[c[0] for c in CAUGHT])
def test_a_sweep_with_a_bug_switch_finds_it(
    bug: str, scenario: str, check: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    junit = tmp_path / "junit.xml"
    path = str(REPO / "scenarios" / f"{scenario}.toml")
    code, out = _sweep(
        capsys, path, *_parallel(tmp_path / "r", junit, "--target-env", f"TINY_REFERENCE_BUG={bug}")
    )
    assert code == 1, out
    failures = ET.parse(junit).getroot().iter("failure")
    messages = [f.get("message", "") for f in failures]
    assert messages and all("reproduce: chaos run" in m for m in messages)
    assert 'TINY_REFERENCE_BUG="$TINY_REFERENCE_BUG"' in messages[0], "names the variable, not its value"
    assert bug not in messages[0]
    assert _summary(tmp_path / "r")["findings"] == len(messages)


def test_shards_split_the_cases_and_merge_joins_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    whole, first, second = (tmp_path / n for n in ("whole", "s1", "s2"))
    assert _sweep(capsys, SECTION8, "-j", "2", "--results", str(whole), "--mine", "none")[0] == 0
    assert (
        _sweep(capsys, SECTION8, "--shard", "1/2", "-j", "2", "--results", str(first), "--mine", "none")[0]
        == 0
    )
    assert (
        _sweep(capsys, SECTION8, "--shard", "2/2", "-j", "2", "--results", str(second), "--mine", "none")[0]
        == 0
    )
    cases = [{v["case"] for v in _summary(f)["verdicts"]} for f in (whole, first, second)]
    assert cases[1] and cases[2] and not (cases[1] & cases[2])
    assert cases[1] | cases[2] == cases[0]
    junit = tmp_path / "merged.xml"
    assert main(["merge", str(first), str(second), "--out", str(tmp_path / "m"), "--junit", str(junit)]) == 0
    assert {v["case"] for v in _summary(tmp_path / "m")["verdicts"]} == cases[0]
    assert len(list(ET.parse(junit).getroot().iter("testcase"))) == len(cases[0])


def test_a_bad_shard_or_scenario_is_unusable_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["sweep", SECTION8, "--shard", "3/2", "--results", str(tmp_path)]) == 2
    assert "--shard" in capsys.readouterr().err
    assert main(["sweep", str(tmp_path / "missing"), "--results", str(tmp_path)]) == 2
    assert "missing" in capsys.readouterr().err


def _marked(marker: str) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.environ().get("CHAOS_TEST_MARK") == marker:
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


def test_an_interrupted_sweep_leaves_no_process_and_resumes(tmp_path: Path) -> None:
    marker = uuid.uuid4().hex
    results = tmp_path / "r"
    argv = [
        sys.executable,
        "-m",
        "chaos",
        "sweep",
        DEPLOY,
        "--fault",
        "kill",
        "--results",
        str(results),
        "--mine",
        "none",
    ]
    argv += ["--target-env", f"CHAOS_TEST_MARK={marker}"]
    sweep = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO)
    journal = results / "sweep.jsonl"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (not journal.exists() or journal.read_bytes().count(b"\n") < 3):
        time.sleep(0.05)
    sweep.send_signal(signal.SIGTERM)
    out, _ = sweep.communicate(timeout=60)
    assert sweep.returncode == 130, out
    assert b"--resume" in out
    time.sleep(0.2)
    assert not _marked(marker), "an agent outlived the interrupted sweep"
    done = journal.read_bytes().count(b"\n")
    assert done >= 3
    resumed = subprocess.run([*argv, "--resume"], capture_output=True, cwd=REPO, timeout=300)
    assert resumed.returncode == 0, resumed.stdout
    lines = [json.loads(line) for line in journal.read_bytes().splitlines()]
    assert len({e["case"] for e in lines}) == len(lines), "no finished case ran twice"
    assert _summary(results)["cases"] == len(lines) > done


def test_mining_saves_new_prefixes_once_and_they_replay(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = tmp_path / "corpus"
    code, out = _sweep(capsys, SECTION8, "-j", "2", "--results", str(tmp_path / "a"), "--mine", str(corpus))
    assert code == 0, out
    manifest = json.loads((corpus / "fixtures" / "manifest.json").read_text())["fixtures"]
    assert len(manifest) >= 8
    code, out = _sweep(capsys, SECTION8, "-j", "2", "--results", str(tmp_path / "b"), "--mine", str(corpus))
    assert code == 0 and "mined 0 new fixture(s)" in out
    assert json.loads((corpus / "fixtures" / "manifest.json").read_text())["fixtures"] == manifest
    for entry in manifest:
        data = (corpus / "fixtures" / entry["file"]).read_bytes()
        assert b"/tmp" not in data and b"chaos-sandbox" not in data, entry["name"]
        printed = subprocess.run(
            [sys.executable, "-m", "chaos", "reduce", str(corpus / "fixtures" / entry["file"])],
            capture_output=True,
        )
        assert json.loads(printed.stdout) == json.loads((corpus / "fixtures" / entry["expected"]).read_text())
    provenance = json.loads(next((corpus / "provenance").glob("*.json")).read_text())
    assert provenance["scenario"] == "section8-read-replay" and provenance["target"] == "reference"


def test_another_oracle_that_disagrees_is_a_finding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    liar = tmp_path / "liar.py"
    liar.write_text("import json\nprint(json.dumps({'ok': True, 'state': {}}))\n")
    honest = f"{sys.executable} -m chaos reduce"
    code, out = _sweep(
        capsys, SMALL, "-j", "2", "--results", str(tmp_path / "h"), "--mine", "none", "--oracle", honest
    )
    assert code == 0, out
    code, out = _sweep(
        capsys,
        SMALL,
        "-j",
        "2",
        "--results",
        str(tmp_path / "l"),
        "--mine",
        "none",
        "--oracle",
        f"{sys.executable} {liar}",
    )
    assert code == 1
    assert "agrees on prefix.jsonl" in out


def test_the_pytest_plugin_turns_cases_into_items(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--chaos", SECTION8]
    argv += [
        "--chaos-results",
        str(tmp_path / "r"),
        "--junitxml",
        str(tmp_path / "j.xml"),
        "-k",
        "toolStarted or crash",
    ]
    ok = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "2 passed" in ok.stdout
    names = [c.get("name") for c in ET.parse(tmp_path / "j.xml").getroot().iter("testcase")]
    assert sorted(names) == ["no crash", "toolStarted#1"]
    bad = subprocess.run(
        [*argv, "--chaos-target-env", "TINY_REFERENCE_BUG=stale-assistant-calls"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=300,
    )
    assert bad.returncode == 1
    assert "✗ final log reduces: expected ok, got INVALID_TRANSITION" in bad.stdout
    message = next(ET.parse(tmp_path / "j.xml").getroot().iter("failure")).get("message", "")
    key, reproduce = message.split(" reproduce: ", 1)
    assert key.startswith("[F-") and reproduce.startswith("chaos run /"), "the key and an absolute reproduce"
    assert 'TINY_REFERENCE_BUG="$TINY_REFERENCE_BUG"' in reproduce.split("\n")[0]


def test_depth_2_crashes_each_recovery_within_the_budget(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = tmp_path / "corpus"
    scenario = str(REPO / "scenarios" / "open-attempt-retry.toml")
    code, out = _sweep(
        capsys,
        scenario,
        "--depth",
        "2",
        "--budget",
        "60",
        "-j",
        "2",
        "--results",
        str(tmp_path / "r"),
        "--mine",
        str(corpus),
    )
    assert code == 0, out
    summary = _summary(tmp_path / "r")
    during_recovery = [v for v in summary["verdicts"] if v["thenCrash"]]
    assert during_recovery, "cases that crash the recovery too"
    assert all(v["case"].count(" then ") == 1 for v in during_recovery)
    assert any("-recovery-" in p.name for p in (corpus / "provenance").glob("*.json")), (
        "recovery prefixes are mined"
    )


def test_the_pytest_plugin_runs_the_scenario_as_written(tmp_path: Path) -> None:
    """Issue 12: the plugin ran crash cases with derived expectations only, never the scenario's own."""
    argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--chaos", SECTION8]
    argv += ["--chaos-results", str(tmp_path / "r"), "-k", "written", "--junitxml", str(tmp_path / "j.xml")]
    done = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    names = [c.get("name") for c in ET.parse(tmp_path / "j.xml").getroot().iter("testcase")]
    assert names == ["as written"]
    bad = subprocess.run(
        [*argv, "--chaos-target-env", "TINY_REFERENCE_BUG=replay-never-tools", "--chaos", DEPLOY],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert bad.returncode == 1, bad.stdout
    assert "✗ effect deploy ran 1x: expected 1, got 2" in bad.stdout, (
        "the hand-written effect count is judged"
    )


def test_a_sweep_keeps_its_budget(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--budget: no case starts after it, so a sweep overruns by at most the cases already running. The
    budget is shorter than the clean run (a cold and a warm one), so it runs out on any machine: with
    warm starts the whole --fault kill sweep of full-workflow can end in four seconds."""
    path = str(REPO / "scenarios" / "full-workflow.toml")
    began = time.monotonic()
    code, out = _sweep(
        capsys, path, "--budget", "1", "-j", "2", "--results", str(tmp_path / "r"), "--mine", "none"
    )
    spent = time.monotonic() - began
    summary = _summary(tmp_path / "r")
    assert code == 0, out
    assert summary["notRun"] and "not run: the budget ran out" in out
    longest = max(v["seconds"] for v in summary["verdicts"])
    assert spent <= 1 + longest + 3, (spent, longest)


def test_a_sweep_never_mines_into_files_git_tracks_unless_told_to(tmp_path: Path) -> None:
    """Issue 38: run in a checkout, a sweep mined into ./results/fixtures and changed tracked files."""
    fixtures = tmp_path / "results" / "fixtures"
    fixtures.mkdir(parents=True)
    (fixtures / "manifest.json").write_text("[]\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(tmp_path)]
    for step in (["init", "-q"], ["add", "."], ["commit", "-qm", "corpus"]):
        subprocess.run([*git, *step], check=True, capture_output=True)
    sweep = [
        sys.executable,
        "-m",
        "chaos",
        "sweep",
        SECTION8,
        "--fault",
        "kill",
        "--results",
        str(tmp_path / "results"),
    ]

    refused = subprocess.run(sweep, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "holds 1 file(s) git tracks" in refused.stderr and f"--mine {fixtures}" in refused.stderr
    assert not (tmp_path / "results" / "sweep.jsonl").exists(), "refused before anything ran"

    # named with --mine, it mines there; a target's own fixtures folder is the default before RESULTS
    told = subprocess.run(
        [*sweep, "--mine", str(fixtures), "--budget", "3"], cwd=tmp_path, capture_output=True, text=True
    )
    assert told.returncode == 0 and f"new crash prefixes mined into {fixtures}" in told.stderr, told.stderr
    target = tmp_path / "mine.toml"
    target.write_text('fixtures = "corpus"\n' + (REPO / "targets" / "reference.toml").read_text())
    own = subprocess.run(
        [*sweep, "--target", str(target), "--budget", "3", "--results", str(tmp_path / "other")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert own.returncode == 0 and f"mined into {tmp_path / 'corpus'}" in own.stderr, own.stderr
