"""The pass table: legal designs kept passing, with the same rigour as the fail table.

An expectation a contract-legal agent breaks is a defect of chaos. Each legal variant of the reference
agent (``TINY_REFERENCE_VARIANT``) makes a choice the contract allows and the reference agent does not
(an abort left to the resume, a lock that waits, one fact per transaction, usage recorded before its
answer, an exit code of its own for a refused session, a torn tail truncated only when the session is
written): together they pass every shipped scenario as written, with every check of the catalogue
judged and held, and a sweep of every durable boundary of the scenarios where their choices show; each
alone passes those scenarios as written; both lock designs pass a sweep with a paused writer at every
durable boundary.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from chaos.case.run import run_case
from chaos.case.verdict import Verdict
from chaos.check import CONCERNS, mcp
from chaos.cli import main
from chaos.errors import Skipped
from chaos.mine.oracles import OtherOracle
from chaos.scenario import load_scenario, load_target
from tests.conftest import MCP_ONLY, REPO, needs_ptrace

pytestmark = pytest.mark.slow  # starts agent processes (-m 'not slow' leaves it out)

# Each variant, and the shipped scenarios where its choice shows (all of them run with every variant at once).
VARIANTS = {
    "deferred-abort": [
        "abort-during-deploy",
        "abort-then-crash",
        "abort-in-flight-crash-loop",
        "sigint-after-failure",
    ],
    "blocking-lock": ["two-writers"],
    "one-fact-per-transaction": [
        "full-workflow",
        "live-429-failed",
        "compaction-crash",
        "power-loss-after-deploy",
    ],
    "usage-first": ["full-workflow", "live-429-failed", "length-with-tool-calls", "model-request-in-flight"],
    "refusal-exit": ["two-writers"],
    "repair-on-write": ["torn-tail", "torn-tail-blocked", "short-write"],
}
# (refusal-exit is the other lock design: it cannot join blocking-lock)
TOGETHER = "deferred-abort,blocking-lock,one-fact-per-transaction,usage-first,repair-on-write"
SCENARIOS = sorted((REPO / "scenarios").glob("*.toml"))
REFERENCE = REPO / "targets" / "reference.toml"
ORACLE = OtherOracle(f"{sys.executable} -m chaos reduce")  # chaos's reducer as another's: it must agree
# The full sweep's scenarios: every durable boundary of those where a variant's choice can meet a crash.
SWEPT = sorted({name for names in VARIANTS.values() for name in names} | {"pending-deploy-interrupted"})


def _as_written(variants: str, folder: Path, paths: list[Path]) -> tuple[list[Verdict], list[str]]:
    verdicts, skipped = [], []
    target, env = load_target(REFERENCE), {"TINY_REFERENCE_VARIANT": variants}
    for path in paths:
        scenario = load_scenario(path)
        hooks = (ORACLE,) if scenario.name == "section8-read-replay" else ()
        try:
            verdicts.append(run_case(scenario, target, env, folder / path.stem, judges=hooks))
        except Skipped:
            skipped.append(scenario.name)
    return verdicts, skipped


def _failed(verdicts: list[Verdict]) -> dict[str, list[str]]:
    return {v.scenario.name: [c.text() for c in v.failed] for v in verdicts if not v.ok}


@needs_ptrace
def test_the_legal_variants_together_pass_every_scenario_as_written_and_every_check_is_judged(
    tmp_path: Path,
) -> None:
    verdicts, skipped = _as_written(TOGETHER, tmp_path, SCENARIOS)
    assert not _failed(verdicts), _failed(verdicts)
    # the reference agent does not stream, and its tools are its own here (MCP: tests/test_mcp.py)
    assert skipped == ["crash-mid-stream", *MCP_ONLY]
    held = {c.id for v in verdicts for c in v.checks if c.judged and c.ok}
    read = {
        i for concern in CONCERNS if concern.NEEDS != "view" and concern is not mcp for i in concern.CATALOG
    }  # a log's, an MCP agent's aside
    assert held == read, f"never judged: {sorted(read - held)}"


@needs_ptrace
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_each_legal_variant_passes_the_scenarios_where_its_choice_shows(variant: str, tmp_path: Path) -> None:
    paths = [REPO / "scenarios" / f"{name}.toml" for name in VARIANTS[variant]]
    verdicts, skipped = _as_written(variant, tmp_path, paths)
    assert not skipped and not _failed(verdicts), _failed(verdicts)


@needs_ptrace
def test_the_legal_variants_together_pass_a_sweep_of_every_boundary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = [str(REPO / "scenarios" / f"{name}.toml") for name in SWEPT]
    argv = ["sweep", *paths, "--target", "reference", "-j", "2", "--mine", "none", "--fault", "kill"]
    code = main([*argv, "--results", str(tmp_path), "--target-env", f"TINY_REFERENCE_VARIANT={TOGETHER}"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "0 distinct failure(s)" in out


PAUSED = [
    "two-writers",
    "pending-deploy-interrupted",
    "live-429-failed",
    "full-workflow",
    "abort-during-deploy",
]


@needs_ptrace
@pytest.mark.parametrize("lock", [TOGETHER, "refusal-exit"], ids=["blocking-lock", "refusal-exit"])
def test_both_lock_designs_pass_a_sweep_with_a_paused_writer_everywhere(
    lock: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A second writer that waits for the session lock is let go on once the paused one finishes (it
    used to hang until its timeout, five failures for chaos's own deadlock); one that refuses may exit
    as it likes; a paused writer whose operation had already finished reports the outcome it wrote."""
    paths = [str(REPO / "scenarios" / f"{name}.toml") for name in PAUSED]
    argv = ["sweep", *paths, "--target", "reference", "--fault", "paused-writer", "-j", "2", "--mine", "none"]
    code = main([*argv, "--results", str(tmp_path), "--target-env", f"TINY_REFERENCE_VARIANT={lock}"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "paused writers:" in out
    waited = (tmp_path / "sweep.jsonl").read_text().count('"waited":true')
    assert (waited > 0) == (lock == TOGETHER), "only a lock that waits makes chaos let the first writer go on"
