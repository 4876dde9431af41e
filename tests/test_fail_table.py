"""Every check chaos reports, made to fail: a check that cannot fail is a defect.

One row per check of ``chaos.check.CATALOG``: a deliberately broken agent (a
bug switch of the reference agent, or a broken target in ``tests/targets/``),
or, where no agent can break it without breaking chaos first, crafted
evidence. Each row must make its check fail, and every check has a row.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import replace
from functools import cache
from pathlib import Path

import pytest

from chaos.case.run import run_case
from chaos.case.verdict import Verdict
from chaos.check import CATALOG, Check, check_all
from chaos.cycle.evidence import Evidence
from chaos.mine.oracles import OtherOracle
from chaos.scenario import Scenario, Strike, load_scenario, load_target
from chaos.scenario.model import Boundary
from tests.conftest import REPO

pytestmark = pytest.mark.slow  # starts agent processes (-m 'not slow' leaves it out)

TARGETS = Path(__file__).parent / "targets"
WORK: list[Path] = []


def _scenario(name: str) -> Scenario:
    return load_scenario(REPO / "scenarios" / f"{name}.toml")


@cache
def _run(
    name: str, bug: str = "", target: str = "reference", crash: str = "", then: str = "", expect: str = ""
) -> list[Check]:
    scenario = _scenario(name)
    if crash:
        scenario = scenario.with_crash(
            Strike(Boundary.parse(crash)), Strike(Boundary.parse(then)) if then else None
        )
    if expect == "plan:finish":
        scenario = replace(scenario, expect=replace(scenario.expect, plan={"type": "finish"}))
    if expect == "reason:configuration_changed":
        scenario = replace(scenario, expect=replace(scenario.expect, reason="configuration_changed"))
    bundled = REPO / "targets" / f"{target}.toml"
    spec = bundled if target.startswith("reference") else TARGETS / f"{target}.toml"
    env = {"TINY_REFERENCE_BUG": bug} if bug else {}
    folder = WORK[0] / f"{name}-{bug}-{target}-{len(list(WORK[0].iterdir()))}"
    timeout = 3.0 if target == "hang-on-resume" else None
    return run_case(scenario, load_target(spec), env, folder, timeout).checks


@cache
def _clean() -> Verdict:
    return run_case(
        _scenario("section8-read-replay"),
        load_target(REPO / "targets" / "reference.toml"),
        {},
        WORK[0] / "clean",
    )


def _crafted(change: Callable[[Evidence], None]) -> list[Check]:
    evidence = _clean().evidence
    evidence = replace(evidence, phases=[replace(p) for p in evidence.phases])
    change(evidence)
    return check_all(evidence)


@cache
def _clean_mcp() -> Verdict:
    return run_case(
        _scenario("full-workflow"), load_target(REPO / "targets" / "reference-mcp.toml"), {}, WORK[0] / "mcp"
    )


def _answers_rewritten() -> list[Check]:
    """The agent's log as it is, the server's answers other than those it recorded: a success the server
    never reported (no bundled agent invents one; the row rewrites what the server said instead)."""
    evidence = _clean_mcp().evidence
    ledger = [
        {**e, "result": "not what the log says"} if e["phase"] == "answer" else e for e in evidence.ledger
    ]
    return check_all(replace(evidence, ledger=ledger))


def _corrupt_prefix(evidence: Evidence) -> None:
    evidence.start.kept.log_after += b'{"kind":"record","broken"\n'


def _append_again(evidence: Evidence) -> None:
    again = evidence.again
    assert again is not None
    again.kept.log_after += b'{"kind":"usage"}\n'


def _store_run(bug: str, crash: str = "", fault: str = "kill", target: str = "store-agent") -> list[Check]:
    """The store agent (``tests/agents/store_agent.py``, a framework agent judged on its own store) with
    one of its bug switches, on the bundled framework scenario."""
    scenario = load_scenario(REPO / "scenarios" / "frameworks" / "deploy-one-service.toml")
    scenario = scenario.with_crash(Strike(Boundary.parse(crash), fault) if crash else None)
    folder = WORK[0] / f"store-{bug}-{len(list(WORK[0].iterdir()))}"
    return run_case(
        scenario, load_target(TARGETS / f"{target}.toml"), {"STORE_AGENT_BUG": bug}, folder
    ).checks


def _framework_run(scenario: str, target: str, bug: str = "") -> list[Check]:
    """A bundled framework target on a bundled framework scenario, with a bug switch of the LangGraph
    driver's (or none: a bug of the framework's own)."""
    loaded = load_scenario(REPO / "scenarios" / "frameworks" / f"{scenario}.toml")
    folder = WORK[0] / f"{target}-{bug}-{len(list(WORK[0].iterdir()))}"
    spec = load_target(REPO / "targets" / f"{target}.toml")
    return run_case(loaded, spec, {"LANGGRAPH_DRIVER_BUG": bug} if bug else {}, folder).checks


def _temporal_run(app: str, crash: str) -> list[Check]:
    """The bundled Temporal workflow agent with another workflow of ``temporal_app`` (a broken variant; its
    deploys leave a file, its worker caches workflows)."""
    loaded = load_scenario(REPO / "scenarios" / "frameworks" / "deploy-one-service.toml")
    loaded = loaded.with_crash(Strike(Boundary.parse(crash)))
    target = WORK[0] / f"temporal-{app}.toml"
    module = "chaos.bundled.targets.frameworks.temporal_app"
    named = f'"--app", "{module}:{app}", "--activities", "{module}:MARKING", "--cache", "--workflow"'
    target.write_text((REPO / "targets" / "temporal.toml").read_text().replace('"--workflow"', named))
    return run_case(loaded, load_target(target), {}, WORK[0] / f"temporal-{app}-run").checks


def _liar(tmp: Path) -> list[Check]:
    liar = tmp / "liar.py"
    liar.write_text("import json\nprint(json.dumps({'ok': True, 'state': {}}))\n")
    scenario = _scenario("section8-read-replay")
    target = load_target(REPO / "targets" / "reference.toml")
    return run_case(
        scenario, target, {}, tmp / "liar", judges=(OtherOracle(f"{sys.executable} {liar}"),)
    ).checks


ROWS: dict[str, Callable[[Path], list[Check]]] = {
    "reached": lambda t: _run("section8-read-replay", crash="toolStarted#5"),
    "prefix-reduces": lambda t: _crafted(_corrupt_prefix),
    "prefix-plan": lambda t: _run("section8-read-replay", expect="plan:finish"),
    "outcome": lambda t: _run("attempts-exhausted", "unbounded-retry"),
    "blocked-reason": lambda t: _run("blocked-environment-changed", expect="reason:configuration_changed"),
    "final-reduces": lambda t: _run("section8-read-replay", "stale-assistant-calls"),
    "append-only": lambda t: _run("section8-read-replay", target="rewrites-log"),
    "blocked-stops": lambda t: _run("attempts-exhausted", "unbounded-retry"),
    "blocked-appends-nothing": lambda t: _run("attempts-exhausted", "unbounded-retry"),
    "idle-terminal": lambda t: _run("open-attempt-retry", "skip-finish-on-resume"),
    "plan-followed": lambda t: _run("pending-deploy-interrupted", "replay-never-tools"),
    "intent-before-effect": lambda t: _run("deploy-intent-durable", "intent-after-effect"),
    "intent-synced": lambda t: _run("power-loss-after-deploy", "no-fsync"),
    "damage-not-silent": lambda t: _run("bit-flip", "corrupt-as-torn"),
    "requests-attempted": lambda t: _run("live-429-failed", "client-retries"),
    "requests-valid": lambda t: _run("pending-deploy-interrupted", "hide-synthetic-results"),
    "answer-delivered": lambda t: _run("provider-invalid-json", "unreadable-as-empty"),
    "request-context": lambda t: _run("full-workflow", "results-reordered"),
    "usage-billed": lambda t: _run("full-workflow", "double-usage", crash="stepAttempt#2"),
    "one-writer": lambda t: _run("two-writers", "no-session-lock"),
    "never-once": lambda t: _run("pending-deploy-interrupted", "replay-never-tools"),
    "effect-count": lambda t: _run("pending-deploy-interrupted", "replay-never-tools"),
    "third-attempt": lambda t: _run(
        "attempts-exhausted", "unbounded-retry", crash="model-request", then="model-request"
    ),
    "again-appends-nothing": lambda t: _crafted(_append_again),
    "timeout": lambda t: _run("section8-read-replay", target="hang-on-resume"),
    "processes": lambda t: _run("section8-read-replay", target="leaves-daemon"),
    "sandbox": lambda t: _run("section8-read-replay", target="writes-outside"),
    "oracle-agrees": _liar,
    "effect-after-durable-call": lambda t: _store_run("effect-first"),
    "effects-as-declared": lambda t: _store_run("rerun", crash="effect-done[effect=deploy]"),
    "output-once": lambda t: _store_run(
        "rerun-answered", crash="output-durable[tool=deploy]", target="store-agent-at-least-once"
    ),
    "store-consistent": lambda t: _store_run("duplicate-output"),
    "same-outcome": lambda t: _store_run("no-final"),
    "inputs-once": lambda t: _store_run("prompt-again", crash="effect-done[effect=deploy]"),
    "resume-adds-nothing": lambda t: _store_run("again-asks"),
    "approval-first": lambda t: _framework_run("deploy-one-service", "langgraph-approval", "resume-approves"),
    # langgraph#8039, open on the pinned release: the next checkpoint's save begins before a task's writes
    "saved-in-order": lambda t: _framework_run("deploy-saves-overtaken", "langgraph"),
    "mcp-trust": lambda t: _run("full-workflow", "mcp-trusts-hints", target="reference-mcp"),
    "mcp-answer": lambda t: _answers_rewritten(),
    # a workflow that reads the world in its own code: replayed by a new worker, it takes another path
    "replay-deterministic": lambda t: _temporal_run("ReadsTheWorld", "output-durable[tool=deploy]"),
}


# plan-followed compares every field the contract defines for what each kind of plan makes durable: one
# row per plan type and mode, each an agent that writes the planned kind of fact with one field its own
PLAN_ROWS: dict[str, Callable[[], list[Check]]] = {
    "startStep": lambda: _run("open-attempt-retry", "retry-forgets-step"),
    "startTool mode=start": lambda: _run("section8-read-replay", "stale-replay-key", crash="entry:toolUse"),
    "startTool mode=replay": lambda: _run("section8-read-replay", "give-up-on-replay"),
    "appendSynthetic": lambda: _run("pending-deploy-interrupted", "replay-never-tools"),
    "closeAttempt": lambda: _run("abort-in-flight-crash-loop", "abort-other-message"),
    "finish outcome=completed completion=truncated": lambda: _run(
        "length-with-tool-calls", "truncated-as-normal", crash="entry:tool"
    ),
    "finish outcome=failed": lambda: _run("live-429-failed", "finish-other-error"),
}


def test_a_boundary_written_but_seen_late_by_polling_is_not_exercised_not_a_finding(work: Path) -> None:
    """A paused writer is not traced (a traced tree cannot be left stopped for another's turn): chaos polls
    its log, and a writer that writes its boundary and ends at once can outrun the poll on a loaded
    machine (the CI of stop 67: ``entry:stop#1`` of ``full-workflow``, two cases of 137). The boundary is
    in its log: chaos was late, not the agent; ``reached`` says the case was not exercised. Where chaos
    traces the writer, an unreached boundary is the agent's."""

    def outran(mechanism: str) -> Callable[[Evidence], None]:
        def change(evidence: Evidence) -> None:
            start = evidence.start
            start.landing = replace(start.landing, reached=False, mechanism=mechanism)

        return change

    reached = {
        mechanism: next(c for c in _crafted(outran(mechanism)) if c.id == "reached")
        for mechanism in ("poll", "ptrace")
    }
    assert reached["poll"].ok and "not exercised" in reached["poll"].unjudged, reached
    assert not reached["ptrace"].ok and "ended first" in reached["ptrace"].got, reached


def test_every_check_of_the_catalog_has_a_row() -> None:
    assert set(ROWS) == set(CATALOG)


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    WORK[:] = [tmp_path_factory.mktemp("fail-table")]
    return WORK[0]


@pytest.mark.parametrize("check_id", list(ROWS))
def test_the_row_makes_its_check_fail(check_id: str, work: Path, tmp_path: Path) -> None:
    checks = ROWS[check_id](tmp_path)
    failed = [c for c in checks if c.id == check_id and not c.ok]
    assert failed, f"{check_id} held: {[c.text() for c in checks if c.id == check_id]}"


@pytest.mark.parametrize("plan", list(PLAN_ROWS))
def test_each_kind_of_plan_is_compared_in_full(plan: str, work: Path) -> None:
    failed = [c for c in PLAN_ROWS[plan]() if c.id == "plan-followed" and not c.ok]
    assert failed and failed[0].expected.startswith(plan), [c.text() for c in failed]


def test_resuming_a_failed_run_again_must_end_failed(work: Path) -> None:
    """resume-adds-nothing's own row for a failed run: the provider resets the first request, the run ends
    failed and its first resume keeps it failed; the next resume runs it on to the end (an agent that
    forgets a failure it reported once)."""
    checks = _store_run("failed-then-done", crash="model-request#1", fault="reset")
    failed = [c.text() for c in checks if c.id == "resume-adds-nothing" and not c.ok]
    assert any("resuming a failed run did not end failed" in f for f in failed), failed
