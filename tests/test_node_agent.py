"""The bundled Node.js agent: written from the contract alone, sharing no code with chaos. A full sweep
of the shipped scenarios passes with exact kills (Node is multi-threaded), and each of its bug switches
is caught. Skipped with a reason where ``node`` is absent (.ci/run installs it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from chaos.cli import main
from tests.conftest import REPO, needs_node, needs_ptrace

pytestmark = [needs_node, pytest.mark.slow]
NODE = ["--target", "node-reference"]


def test_the_agent_imports_nothing_of_chaos() -> None:
    source = (REPO / "targets" / "node" / "agent.js").read_text()
    required = {
        line.split('require("')[1].split('")')[0] for line in source.splitlines() if 'require("' in line
    }
    assert required <= {"fs", "path", "http", "crypto", "child_process"}, required


def _sweep(paths: list[str], results: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """A kill at every boundary of ``paths``, against the Node agent, in a process of its own."""
    argv = ["sweep", *paths, *NODE, "--fault", "kill", "-j", "2", "--mine", "none", "--results", str(results)]
    return subprocess.run(
        [sys.executable, "-m", "chaos", *argv, *extra], capture_output=True, text=True, check=False
    )


@needs_ptrace
def test_a_full_sweep_passes_with_exact_kills(tmp_path: Path) -> None:
    """Run as a user runs it, in a process of its own (nothing of the test process shares its GIL). CI runs
    one of two deterministic shares of the kill sweep of every shipped scenario (``--shard``: every case
    falls in one share; ``CHAOS_NODE_SHARD=2/2`` runs the other)."""
    share = os.environ.get("CHAOS_NODE_SHARD", "1/2")
    done = _sweep([str(REPO / "scenarios")], tmp_path, "--shard", share)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert done.returncode == 0, done.stdout + done.stderr
    assert summary["findings"] == 0 and summary["cases"] > 150
    assert summary["exact"] == summary["reached"] == summary["crashes"] > 125


SWITCHES = [
    ("stale-assistant-calls", "section8-read-replay", "final-reduces"),
    ("replay-never-tools", "pending-deploy-interrupted", "never-once"),
    ("no-fsync", "power-loss-after-deploy", "intent-synced"),
]


@needs_ptrace
@pytest.mark.parametrize(("bug", "scenario", "check"), SWITCHES, ids=[s[0] for s in SWITCHES])
def test_each_switch_is_caught(bug: str, scenario: str, check: str, tmp_path: Path) -> None:
    argv = ["run", scenario, *NODE, "--target-env", f"NODE_AGENT_BUG={bug}", "--results", str(tmp_path)]
    assert main(argv) == 1
    failed = {c["id"] for c in json.loads((tmp_path / "verdict.json").read_text())["checks"] if not c["ok"]}
    assert check in failed, failed


GROUPED = ["section8-read-replay", "pending-deploy-interrupted", "deploy-intent-durable", "full-workflow"]


@needs_ptrace
def test_two_switches_at_once_give_exactly_two_groups(tmp_path: Path) -> None:
    """Grouping measured on an agent that shares no code with chaos: one group per bug, however many
    cases each fails, and even where both bugs meet in one case (the earlier divergence names it)."""
    paths = [str(REPO / "scenarios" / f"{name}.toml") for name in GROUPED]
    done = _sweep(paths, tmp_path, "--target-env", "NODE_AGENT_BUG=stale-assistant-calls,replay-never-tools")
    assert done.returncode == 1, done.stdout + done.stderr
    summary = json.loads((tmp_path / "summary.json").read_text())
    labels = sorted(g["label"].split(":")[0] for g in summary["groups"])
    assert labels == ["log-rejected", "plan-followed"], done.stdout
    assert sum(g["count"] for g in summary["groups"]) == summary["findings"] > 20
