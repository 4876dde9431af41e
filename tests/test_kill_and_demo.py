"""Real SIGKILLs: a process tree with an escaped grandchild, and the section-8 demo end to end."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from chaos.cli import main
from chaos.kill import kill_tree
from chaos.run import start
from chaos.watch import Boundary

ESCAPER = """
import subprocess, sys, time
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
print("ready", flush=True)
time.sleep(60)
"""


def test_kill_tree_kills_descendants_that_left_the_group(tmp_path: Path) -> None:
    proc = start([sys.executable, "-c", ESCAPER], tmp_path, {"PATH": "/usr/bin:/bin"})
    assert proc.stdout is not None and proc.stdout.readline().strip() == b"ready"
    children = psutil.Process(proc.pid).children(recursive=True)
    assert len(children) == 2
    report = kill_tree(proc.pid)
    proc.communicate()
    assert len(report.escaped_group) == 1, "the grandchild in its own session is reported"
    assert report.survivors == []
    time.sleep(0.05)
    assert not any(c.is_running() and c.status() != psutil.STATUS_ZOMBIE for c in children)


def test_boundary_matching() -> None:
    started = {"kind": "record", "seq": 5, "record": {"type": "toolStarted", "toolName": "read"}}
    answer = {"kind": "entry", "seq": 6, "entry": {"type": "message", "stopReason": "stop", "message": {}}}
    assert Boundary("toolStarted", {"toolName": "read"}).matches(started)
    assert not Boundary("toolStarted", {"toolName": "bash"}).matches(started)
    assert Boundary("entry:stop").matches(answer) and not Boundary("entry:toolUse").matches(answer)


@pytest.mark.parametrize(("bug", "code"), [("", 0), ("stale-assistant-calls", 1)])
def test_demo_catches_the_section_8_bug_only_when_it_is_on(
    bug: str, code: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["demo", "--results", str(tmp_path)]
    if bug:
        argv += ["--target-env", f"TINY_REFERENCE_BUG={bug}"]
    assert main(argv) == code
    out = capsys.readouterr().out
    assert (tmp_path / "prefix.jsonl").is_file() and (tmp_path / "final.jsonl").is_file()
    if bug:
        assert "✗ final log reduces: INVALID_TRANSITION" in out
    else:
        assert "✗" not in out


def test_console_script_exit_codes(tmp_path: Path) -> None:
    missing = subprocess.run(
        [sys.executable, "-m", "chaos", "reduce", str(tmp_path / "none.jsonl")],
        capture_output=True,
        text=True,
    )
    assert missing.returncode == 2 and "none.jsonl" in missing.stderr
    bad = subprocess.run(
        [sys.executable, "-m", "chaos", "demo", "--target-env", "NOEQUALS"], capture_output=True, text=True
    )
    assert bad.returncode == 2 and "KEY=VALUE" in bad.stderr
