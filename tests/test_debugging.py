"""Debugging with chaos: timelines of golden fixtures, diff, --pause through a real pseudo-terminal,
and the HTML report opened in a real headless Chromium."""

from __future__ import annotations

import json
import os
import pty
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from chaos.cli import main
from tests.browser import dom as rendered
from tests.browser import require_chromium, screenshot
from tests.conftest import REPO, conformance_dir, needs_ptrace

pytestmark = pytest.mark.slow  # starts agent processes (-m 'not slow' leaves it out)

SECTION8 = str(REPO / "scenarios" / "section8-read-replay.toml")


def _golden(name: str) -> Path:
    root = conformance_dir()
    if root is None:
        pytest.skip("no conformance corpus: set CHAOS_CONFORMANCE_DIR")
    return root / "fixtures" / f"{name}.jsonl"


def _show(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(["show", *argv])
    return code, capsys.readouterr().out


def test_timeline_marks_the_torn_tail(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _show(capsys, str(_golden("torn-tail")))
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split()[:2] == ["1", "header"]
    assert re.search(r"^\s+2 ┌\s+1\s+entry:user", out, re.M) and re.search(
        r"^\s+2 └\s+2\s+runStarted", out, re.M
    )
    assert "~ torn tail: 18 byte(s) after the last LF, not committed" in out
    assert "reduces: ok; repairedLength 622" in out
    assert "\033[" not in out, "plain text when piped"


def test_timeline_points_at_the_corrupt_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _show(capsys, str(_golden("malformed-complete-line")))
    assert code == 1
    assert re.search(r"^\s+2\s+✗ MALFORMED_JSON: ", out, re.M)
    assert "reduces: no, MALFORMED_JSON at line 2" in out


def test_timeline_of_a_pending_tool_with_its_plan(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    root = conformance_dir()
    if root is None:
        pytest.skip("no conformance corpus")
    case = (
        json.loads((root / "planner-fixtures" / "pending-safe-tool.json").read_text())
        if (root / "planner-fixtures" / "pending-safe-tool.json").exists()
        else None
    )
    current = tmp_path / "current.json"
    if case is None:
        entries = json.loads((root / "planner-fixtures" / "manifest.json").read_text())["fixtures"]
        inputs = [json.loads((root / "planner-fixtures" / e["input"]).read_text()) for e in entries]
        case = next(c for c in inputs if c["sessionFile"] == "pending-safe-tool.jsonl")
    current.write_text(json.dumps(case["current"]))
    code, out = _show(capsys, str(_golden("pending-safe-tool")), "--current", str(current))
    assert code == 0
    assert re.search(r"toolStarted\s+tool=read replay=safe index=0", out)
    assert "pending tools: read" in out
    assert "plan: startTool mode=replay toolName=read" in out
    code, printed = _show(capsys, str(_golden("pending-safe-tool")), "--json")
    machine = json.loads(printed)
    assert [r["name"] for r in machine["rows"]][-1] == "toolStarted" and machine["tornTailBytes"] == 0


def test_diff_shows_what_recovery_appended(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", SECTION8, "--results", str(tmp_path / "run")]) == 0
    capsys.readouterr()
    assert main(["diff", str(tmp_path / "run")]) == 0
    out = capsys.readouterr().out
    added = [line for line in out.splitlines() if line.startswith("+")]
    assert "entry:tool" in added[0] and "result=success" in added[0], "the replayed read comes first"
    assert "operationFinished" in added[-1] and "outcome=completed" in added[-1]
    assert not any(line.startswith("-") for line in out.splitlines())


def _pty_run(tmp: Path, answer: str) -> tuple[int, str]:
    """chaos run --pause on a real pseudo-terminal, answering its prompt like a person would."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "chaos", "run", SECTION8, "--pause", "--results", str(tmp)],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        cwd=REPO,
        close_fds=True,
    )
    os.close(slave)
    seen = b""
    answered = False
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break  # the child closed the terminal
        if not chunk:
            break
        seen += chunk
        if not answered and b"[q]uit?" in seen:
            os.write(master, answer.encode() + b"\n")
            answered = True
    proc.wait(timeout=60)
    os.close(master)
    return proc.returncode, seen.decode("utf-8", "replace")


@needs_ptrace
@pytest.mark.parametrize("answer", ["k", "c"])
def test_pause_at_the_boundary_on_a_terminal(answer: str, tmp_path: Path) -> None:
    code, out = _pty_run(tmp_path, answer)
    assert "paused at toolStarted[toolName=read]#1: the agent is frozen" in out
    assert "workspace: " in out and "plan: startTool mode=replay toolName=read" in out
    assert "\033[" in out, "colour on a terminal"
    verdict = json.loads((tmp_path / "verdict.json").read_text())
    start = verdict["phases"][0]
    assert code == 0, out
    if answer == "k":
        assert start["exact"] and not start["continued"] and start["returncode"] == -9
    else:
        assert start["continued"] and start["returncode"] == 0
        assert "then continued without a crash" in out


def test_the_html_report_renders_in_headless_chromium(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    require_chromium()
    results = tmp_path / "sweep"
    path = str(REPO / "scenarios" / "deploy-intent-durable.toml")
    bug = "TINY_REFERENCE_BUG=replay-never-tools"
    code = main(
        [
            "sweep",
            path,
            "--fault",
            "kill",
            "-j",
            "2",
            "--results",
            str(results),
            "--mine",
            "none",
            "--target-env",
            bug,
        ]
    )
    assert code == 1
    summary = json.loads((results / "summary.json").read_text())
    capsys.readouterr()
    report = results / "report.html"
    dom = rendered(report, tmp_path / "profile")
    assert dom.count('class="cell pass"') + dom.count('class="cell fail"') == summary["cases"]
    assert dom.count('class="cell fail"') == summary["findings"] > 0
    failing = summary["failures"][0]["failed"][0]["name"]
    assert f"✗ {failing}" in dom
    shot = tmp_path / "report.png"
    screenshot(report, tmp_path / "profile", shot)
    assert shot.stat().st_size > 10_000
    keep = os.environ.get("CHAOS_KEEP_SCREENSHOT")
    if keep:
        shutil.copyfile(shot, keep)
