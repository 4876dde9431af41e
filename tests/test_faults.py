"""The fault table: every registered fault has a shipped scenario, a bug it exposes (a switch of the
reference agent, caught by the checks the fault enables) that the correct agents pass, a CLI spelling
and a README row. Adding a fault is one module and one registry line; this table says what else is due.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

from chaos.case.run import run_case
from chaos.check import CATALOG
from chaos.cli import build_parser
from chaos.fault import FAULTS
from chaos.scenario import load_scenario, load_target
from tests.conftest import REPO, needs_node, needs_ptrace

pytestmark = pytest.mark.slow  # starts agent processes (-m 'not slow' leaves it out)

AT_MOST_ONCE = "declared at most once"
# fault -> (its shipped scenario, the reference agent's bug switch it exposes, the check that catches it)
TABLE = {
    "kill": ("section8-read-replay", "stale-assistant-calls", "final-reduces"),
    "abort": ("abort-during-deploy", "abort-shortcut", "prefix-reduces"),
    "torn": ("torn-tail", "no-torn-tail-repair", "final-reduces"),
    "power-loss": ("power-loss-after-deploy", "no-fsync", "intent-synced"),
    "paused-writer": ("two-writers", "no-session-lock", "one-writer"),
    "abort-then-kill": ("abort-then-crash", "resume-ignores-abort", "plan-followed"),
    "terminate": ("terminate-mid-run", "sigterm-aborts", "outcome"),
    "disk-full": ("disk-full", "ignore-log-errors", "intent-before-effect"),
    "fsync-error": ("fsync-error", "ignore-log-errors", "intent-synced"),
    "short-write": ("short-write", "ignore-log-errors", "final-reduces"),
    "write-error": ("write-error", "ignore-log-errors", "intent-before-effect"),
    "bit-flip": ("bit-flip", "corrupt-as-torn", "damage-not-silent"),
    "reset": ("provider-reset", "client-retries", "requests-attempted"),
    "cut-stream": ("provider-cut-stream", "client-retries", "requests-attempted"),
    "duplicate": ("provider-duplicate", "client-retries", "requests-attempted"),
    "hang": ("provider-hang", "client-retries", "requests-attempted"),
    "invalid-json": ("provider-invalid-json", "client-retries", "requests-attempted"),
    "trickle": ("provider-trickle", "client-retries", "requests-attempted"),
    "mcp-restart": ("mcp-server-restart", "mcp-call-again", "never-once"),
    "mcp-session-lost": ("mcp-session-lost", "mcp-call-again", "never-once"),
    "mcp-cut-answer": ("mcp-cut-answer", "mcp-cut-call-again", "never-once"),
    "mcp-error": ("mcp-error-answer", "mcp-error-call-again", "never-once"),
    # a store on the world's PostgreSQL server: the bug is the LangGraph driver's (LANGGRAPH_DRIVER_BUG)
    "postgres-crash": ("frameworks/deploy-database-crash", "prompt-again-on-lost-connection", "inputs-once"),
    "connection-lost": (
        "frameworks/deploy-connection-lost",
        "prompt-again-on-lost-connection",
        "inputs-once",
    ),
    # a store on the world's Temporal server: the bug is the Temporal driver's starter (TEMPORAL_DRIVER_BUG)
    "temporal-crash": ("frameworks/deploy-engine-crash", "prompt-again-on-lost-connection", "inputs-once"),
    # parallel calls of a framework's graph: the "bug" is the target's declaration (at most once), which the
    # first call, run again on resume since its output was not durable when the second's was, breaks
    "overtaken": ("frameworks/deploy-overtaken", AT_MOST_ONCE, "effects-as-declared"),
}
SCENARIOS = REPO / "scenarios"


def test_every_registered_fault_has_a_row_a_scenario_a_spelling_and_a_readme_row() -> None:
    assert set(TABLE) == set(FAULTS)
    for name, (scenario, _, check) in TABLE.items():
        loaded = load_scenario(SCENARIOS / f"{scenario}.toml")
        assert loaded.crash is not None and loaded.crash.fault_name == name, f"{scenario} crashes by {name}"
        assert check in FAULTS[name].enables and check in CATALOG, f"{name} enables {check}"
    run = next(a for a in build_parser()._subparsers._actions if a.dest == "command").choices["run"]  # type: ignore[union-attr]
    choices = next(a.choices for a in run._actions if a.dest == "fault")
    assert set(choices or ()) == set(FAULTS), "--fault spells every fault"
    documented = (REPO / "docs" / "crash-model.md").read_text()
    rows = set(re.findall(r"^\| `([a-z-]+)` \|", documented, re.M))
    assert set(FAULTS) <= rows, f"docs/crash-model.md has no row for {sorted(set(FAULTS) - rows)}"


@needs_ptrace
@pytest.mark.parametrize("name", list(TABLE))
def test_the_fault_exposes_its_bug_and_the_correct_agent_passes(name: str, tmp_path: Path) -> None:
    scenario_name, bug, check = TABLE[name]
    scenario = load_scenario(SCENARIOS / f"{scenario_name}.toml")
    target = load_target(REPO / "targets" / f"{scenario.target}.toml")  # reference, reference-mcp, ...
    if target.store_spec.kind.endswith("-postgres"):
        pytest.importorskip(
            "psycopg", reason="a store on the world's PostgreSQL server is the postgres extra"
        )
    if target.store_spec.kind == "temporal":
        pytest.importorskip(
            "temporalio", reason="a store on the world's Temporal server is the temporal extra"
        )
    fine = run_case(scenario, target, {}, tmp_path / "fine")
    assert fine.ok, [c.text() for c in fine.failed]
    switch = (
        "TINY_REFERENCE_BUG" if target.facts else f"{target.store_spec.kind.split('-')[0].upper()}_DRIVER_BUG"
    )
    if bug == AT_MOST_ONCE:
        target, env = replace(target, store_spec=replace(target.store_spec, semantics="at-most-once")), {}
    else:
        env = {switch: bug}
    broken = run_case(scenario, target, env, tmp_path / "broken")
    assert check in {c.id for c in broken.failed}, [c.text() for c in broken.checks]


@needs_ptrace
@needs_node
@pytest.mark.parametrize("name", list(TABLE))
def test_the_node_agent_passes_every_fault(name: str, tmp_path: Path) -> None:
    """The Node agent, with its tools its own or, for an MCP fault, on the world's MCP server."""
    over_mcp = any(need.startswith("mcp") for need in FAULTS[name].needs)
    if FAULTS[name].unavailable_on_log():
        pytest.skip(f"{name} lands only on a framework's store; the Node agent keeps a session log")
    if over_mcp:
        pytest.importorskip("mcp", reason="the world's MCP server is the mcp extra")
    scenario = load_scenario(SCENARIOS / f"{TABLE[name][0]}.toml")
    target = load_target(REPO / "targets" / ("node-mcp.toml" if over_mcp else "node-reference.toml"))
    verdict = run_case(scenario, target, {}, tmp_path)
    assert verdict.ok, [c.text() for c in verdict.failed]


@needs_ptrace
@pytest.mark.parametrize(("persistence", "caught"), [("posix", True), ("ext4-ordered", False)])
def test_the_persistence_model_decides_whether_a_new_log_needs_its_directory_synced(
    persistence: str, caught: bool, tmp_path: Path
) -> None:
    """A log created without a directory sync is lost to a power cut under strict POSIX (the effect then
    ran with no durable intent), and kept under ext4's ordered journal, where the log's own sync is enough."""
    scenario = replace(load_scenario(SCENARIOS / "power-loss-after-deploy.toml"), persistence=persistence)
    target = load_target(REPO / "targets" / "reference.toml")
    case = run_case(scenario, target, {"TINY_REFERENCE_BUG": "no-directory-sync"}, tmp_path)
    assert ("intent-synced" in {c.id for c in case.failed}) is caught, [c.text() for c in case.checks]


def test_a_withheld_answer_costs_the_short_deadline_chaos_gives_not_the_agents_everyday_one() -> None:
    """Issue 36: a hang waited out the agent's own deadline, set by agent-specific variables in the scenario."""
    from chaos.world.world import build_world

    reference = load_target(REPO / "targets" / "reference.toml")
    hang, plain = (load_scenario(SCENARIOS / f"{n}.toml") for n in ("provider-hang", "section8-read-replay"))
    for scenario, given, limit in ((hang, "2", 30.0), (plain, "20", 60.0)):
        world = build_world(scenario, reference, {})
        try:
            assert world.env(scenario.start, [])["TINY_TIMEOUT"] == given
            assert world.phase_limit == limit
        finally:
            world.close()
    # an agent that takes no deadline from chaos but declares a long one is waited for, never blamed
    fixed = replace(reference, takes_deadline=False, request_deadline=45.0)
    world = build_world(hang, fixed, {})
    try:
        assert world.deadline == 45.0 and world.phase_limit == 100.0
    finally:
        world.close()
