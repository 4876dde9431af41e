"""The pass table: legal designs kept passing, with the same rigour as the fail table.

An expectation a contract-legal agent breaks is a defect of chaos. Each legal variant of the reference
agent (``TINY_REFERENCE_VARIANT``) makes a choice the contract allows and the reference agent does not
(an abort left to the resume, a lock that waits, one fact per transaction, usage recorded before its
answer, an exit code of its own for a refused session): each passes every shipped scenario as written,
with every check of the catalogue judged and held; together they pass a full sweep, and both lock
designs a sweep with a paused writer at every durable boundary.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from chaos.case.run import run_case
from chaos.case.verdict import Verdict
from chaos.check import CATALOG
from chaos.cli import main
from chaos.errors import Skipped
from chaos.mine.oracles import OtherOracle
from chaos.scenario import load_scenario, load_target
from tests.conftest import REPO, needs_ptrace

pytestmark = pytest.mark.slow  # starts agent processes (-m 'not slow' leaves it out)

VARIANTS = ("deferred-abort", "blocking-lock", "one-fact-per-transaction", "usage-first", "refusal-exit")
TOGETHER = "deferred-abort,blocking-lock,one-fact-per-transaction,usage-first"  # (refusal-exit: no wait)
SCENARIOS = sorted((REPO / "scenarios").glob("*.toml"))
REFERENCE = REPO / "targets" / "reference.toml"
ORACLE = OtherOracle(f"{sys.executable} -m chaos reduce")  # chaos's reducer as another's: it must agree


def _as_written(variant: str, folder: Path) -> tuple[list[Verdict], list[str]]:
    verdicts, skipped = [], []
    for path in SCENARIOS:
        scenario = load_scenario(path)
        hooks = (ORACLE,) if scenario.name == "section8-read-replay" else ()
        env = {"TINY_REFERENCE_VARIANT": variant}
        try:
            verdicts.append(run_case(scenario, load_target(REFERENCE), env, folder / path.stem, hooks=hooks))
        except Skipped:
            skipped.append(scenario.name)
    return verdicts, skipped


@needs_ptrace
@pytest.mark.parametrize("variant", VARIANTS)
def test_each_legal_variant_passes_every_scenario_as_written_and_every_check_is_judged(
    variant: str, tmp_path: Path
) -> None:
    verdicts, skipped = _as_written(variant, tmp_path)
    failed = {v.scenario.name: [c.text() for c in v.failed] for v in verdicts if not v.ok}
    assert not failed, failed
    assert skipped == ["crash-mid-stream"], "the reference agent does not stream"
    held = {c.id for v in verdicts for c in v.checks if c.judged and c.ok}
    assert held == set(CATALOG), f"never judged: {sorted(set(CATALOG) - held)}"


@needs_ptrace
def test_the_legal_variants_together_pass_a_full_sweep(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["sweep", str(REPO / "scenarios"), "--target", "reference", "-j", "2", "--mine", "none"]
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
    argv = ["sweep", *paths, "--target", "reference", "--fault", "pause", "-j", "2", "--mine", "none"]
    code = main([*argv, "--results", str(tmp_path), "--target-env", f"TINY_REFERENCE_VARIANT={lock}"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "paused writers:" in out
    waited = (tmp_path / "sweep.jsonl").read_text().count('"waited":true')
    assert (waited > 0) == (lock == TOGETHER), "only a lock that waits makes chaos let the first writer go on"
