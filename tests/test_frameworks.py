"""The frameworks people build durable agents on, crashed at every commit of their own stores.

What the bundled framework targets must show (issue: beyond one contract):
LangGraph with the default durability runs an effect before its call is
durable and, on a slow disk, repeats it under a new call id; in sync mode it
keeps its documented promise (at least once, one call id) and is flagged when
declared at most once; the Agents SDK runs effects before the call is durable;
with an approval, resumed from the saved RunState, it runs the approved tool
again and stores two outputs for one call. Every kill lands exactly. The
frameworks are optional extras: their tests skip without them, unless
CHAOS_REQUIRE_FRAMEWORKS=1 (CI) makes a missing one a failure.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from chaos import api
from chaos.api import SweepResult
from chaos.case.verdict import Verdict
from chaos.cli import main
from chaos.scenario.model import Boundary, Scenario, Strike
from tests.conftest import REPO, needs_modules, needs_ptrace

ONE = REPO / "scenarios" / "frameworks" / "deploy-one-service.toml"
SLOW = REPO / "scenarios" / "frameworks" / "deploy-slow-store.toml"


langgraph = needs_modules("langgraph.checkpoint.sqlite", "langchain_openai")
agents_sdk = needs_modules("agents")
dbos = needs_modules("dbos", "openai")
pydantic_ai = needs_modules("pydantic_ai.durable_exec.dbos", "dbos")
adk = needs_modules("google.adk", "aiosqlite", "openai")
agent_framework = needs_modules("agent_framework", "openai")
pytestmark = [pytest.mark.slow, needs_ptrace]


def _causes(done: SweepResult) -> dict[str, str]:
    """Each failing check of any case, by its cause (the words failures are grouped by)."""
    return {c.cause: c.id for r in done.summary.findings for c in r.failed}


def _all_exact(done: SweepResult) -> None:
    results = done.summary.results
    landed = [r for r in results if r.start is not None and r.start.reached]
    assert len(landed) == len(results) - 1, [r.case for r in results if r not in landed]
    assert all(r.exact for r in landed), [r.case for r in landed if not r.exact]


def _problems(verdict: Verdict) -> list[str]:
    return [c.cause for c in verdict.failed]


@langgraph
def test_langgraph_async_runs_effects_before_they_are_durable_and_repeats_them(tmp_path: Path) -> None:
    done = api.sweep([SLOW], "langgraph-async", results=tmp_path, jobs=2)
    causes = _causes(done)
    assert (
        causes["effect deploy ran before its tool call was durable in the store"]
        == "effect-after-durable-call"
    )
    repeated = "effect deploy repeated under a new call id (at least once with a stable id declared)"
    assert causes[repeated] == "effects-as-declared"
    # one failure, however many commits show it: the repeat under a new id is its consequence (the call
    # was never durable), and every case, the uninterrupted one first, shows the cause
    assert [g.check for g in done.summary.groups] == ["effect-after-durable-call"], causes
    _all_exact(done)
    assert "effect deploy ran before its tool call was durable" in (tmp_path / "report.html").read_text()


@langgraph
def test_langgraph_sync_keeps_at_least_once_with_a_stable_id(tmp_path: Path) -> None:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "chaos",
            "sweep",
            "--fault",
            "kill",
            str(SLOW),
            "--target",
            "langgraph",
            "-j",
            "2",
            "--results",
            str(tmp_path),
            "--junit",
            str(tmp_path / "junit.xml"),
            "--keep-all",
            "--mine",
            "none",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["distinct"] == 0 and summary["reached"] >= 12
    assert summary["exact"] == summary["reached"]
    assert 'failures="0"' in (tmp_path / "junit.xml").read_text()
    ledgers = [json.loads(p.read_text()) for p in (tmp_path / "cases").glob("*/ledger.json")]
    repeated = [ledger for ledger in ledgers if len([e for e in ledger if e["phase"] == "start"]) > 1]
    assert repeated, "no crash made LangGraph run the deploy again: the sweep shows nothing of at-least-once"
    assert all(len({e["callId"] for e in ledger}) == 1 for ledger in repeated)


@langgraph
def test_langgraph_runs_the_tools_after_a_task_s_writes_failed_to_sync(tmp_path: Path) -> None:
    """LangGraph 1.2.24, ``durability="sync"``: the commit that makes the deploy's call durable is the
    model task's ``put_writes``; its sync fails (EIO), and LangGraph, which waits before the next step only
    for the checkpoint's own save, deploys anyway (the error surfaces at exit). With the pages the failed
    sync dropped, the call is gone and the resume deploys under a new id."""
    crash = Strike(Boundary("call-durable", {}, 1), fault_name="fsync-error")
    verdict = api.run(api.load(ONE).with_crash(crash), "langgraph", results=tmp_path)
    assert verdict.evidence.start.landing.exact and verdict.evidence.start.process.outcome == "failed"
    first = verdict.failed[0] if verdict.failed else None
    assert first is not None and first.id == "effect-after-durable-call", _problems(verdict)
    assert "written but never synced" in first.got


@langgraph
def test_a_users_graph_declared_at_most_once_is_flagged(tmp_path: Path) -> None:
    scenario = api.load(ONE).with_crash(Strike(Boundary("effect-done", {"effect": "deploy"})))
    verdict = api.run(scenario, REPO / "tests" / "targets" / "langgraph-at-most-once.toml", results=tmp_path)
    assert verdict.evidence.start.landing.exact
    assert _problems(verdict) == ["effect deploy ran more than once (at most once declared)"]


@agents_sdk
def test_the_agents_sdk_runs_effects_before_the_call_is_durable(tmp_path: Path) -> None:
    verdict = api.run(api.load(ONE).with_crash(None), "openai-agents", results=tmp_path)
    failed = {c.id: c.cause for c in verdict.failed}
    assert failed == {
        "effect-after-durable-call": "effect deploy ran before its tool call was durable in the store"
    }
    again = api.load(ONE).with_crash(Strike(Boundary("effect-running", {"effect": "deploy"})))
    verdict = api.run(again, "openai-agents", results=tmp_path / "running")
    assert verdict.evidence.start.landing.exact
    anew = ", again under a new call id (the call was lost, the model asked anew)"  # (not the same call)
    assert f"effect deploy ran more than once (at most once declared){anew}" in _problems(verdict)


@agents_sdk
def test_an_approved_tool_runs_again_from_the_saved_run_state(tmp_path: Path) -> None:
    done = api.sweep([ONE], "openai-agents-approval", results=tmp_path, jobs=2, keep_all=True)
    causes = _causes(done)
    assert causes["effect deploy ran more than once (at most once declared)"] == "effects-as-declared"
    assert causes["two outputs for one tool call in the final store"] == "store-consistent"
    twice = next(r for r in done.summary.findings if any(c.id == "store-consistent" for c in r.failed))
    ledger = json.loads((Path(twice.folder) / "ledger.json").read_text())
    ids = {e.get("callId") for e in ledger if e["phase"] == "start"}
    assert len(ids) == 1, "the approved call ran twice under its one id, from the saved RunState"
    _all_exact(done)


@langgraph
def test_the_pytest_plugin_runs_a_framework_scenario(tmp_path: Path) -> None:
    """``pytest --chaos`` on a framework scenario: items from its store's boundaries, judged on the store."""
    # (on the slow disk: with LangGraph's async durability, whether the deploy outruns its call's
    # checkpoint at normal speed is a race the uninterrupted run can win either way)
    argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--chaos", str(SLOW)]
    argv += ["--chaos-target", "langgraph-async", "--chaos-results", str(tmp_path / "r")]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    listed = subprocess.run([*argv, "--collect-only"], capture_output=True, text=True, cwd=tmp_path, env=env)
    assert "commit#11" in listed.stdout and "effect-done[effect=deploy]#1" in listed.stdout, listed.stdout
    done = subprocess.run([*argv, "-k", "crash"], capture_output=True, text=True, cwd=tmp_path, env=env)
    assert done.returncode == 1, done.stdout + done.stderr  # the uninterrupted run already shows the bug
    assert "effect deploy ran before its tool call was durable in the store" in done.stdout
    assert "reproduce: chaos run " in done.stdout


@langgraph
@pytest.mark.parametrize(
    ("app", "said"),
    [
        ("not_on_the_path:graph", "No module named 'not_on_the_path'; the agent cannot import its code:"),
        ("chaos.bundled.targets.frameworks.langgraph_app:grahp", "has no attribute 'grahp'"),
        ("chaos.bundled.targets.frameworks.langgraph_app", "write it as module:attr"),
    ],
)
def test_a_graph_that_cannot_be_loaded_is_a_setup_error_named_with_its_fix(
    app: str, said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A missing module, a wrong name in it, an ``--app`` without one: the driver's own words and the fix
    (exit 2), not advice about the store path."""
    spec = tmp_path / "wrong-app.toml"
    text = (REPO / "targets" / "langgraph.toml").read_text()
    spec.write_text(text.replace('"--db"', f'"--app", "{app}", "--db"'))
    code = main(["target", "check", str(spec), "--results", str(tmp_path / "r")])
    out = capsys.readouterr().out
    assert code == 2, out
    assert said in out, out
    assert "point [store] path" not in out, out


@langgraph
def test_a_graph_module_that_runs_on_import_is_a_setup_error_named_with_its_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A module that runs its command line when imported writes the store before the driver runs: named as
    that, with the guard to add (exit 2), not judged as an agent that changes its store when resumed."""
    spec = tmp_path / "acts-on-import.toml"
    text = (REPO / "tests" / "targets" / "langgraph-at-most-once.toml").read_text()
    spec.write_text(
        text.replace("my_graph:make", "acts_on_import:make").replace(
            "{target_dir}/../agents", str(REPO / "tests" / "agents")
        )
    )
    code = main(["target", "check", str(spec), "--results", str(tmp_path / "r")])
    out = capsys.readouterr().out
    assert code == 2, out
    assert "importing acts_on_import changed the store state.db" in out, out
    assert 'if __name__ == "__main__":' in out, out
    code = main(["run", str(ONE), "--target", str(spec), "--results", str(tmp_path / "run")])
    out = capsys.readouterr().out
    assert code == 2, out


@langgraph
def test_checkpoints_chaos_cannot_decode_get_no_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A saver with a serializer of the app's own: LangGraph's default reader cannot decode it, so neither
    can chaos. Exit 2 naming that, in target check and in a run, never a verdict on what was not seen."""
    spec = _shape(tmp_path, "own_serde")
    code = main(["target", "check", str(spec), "--results", str(tmp_path / "r")])
    out = capsys.readouterr().out
    assert code == 2, out
    assert "cannot decode the checkpoints" in out and "serializer of its own" in out, out
    assert main(["run", str(ONE), "--target", str(spec), "--results", str(tmp_path / "run")]) == 2
    assert "of the serialization type 'reversed-pickle'" in capsys.readouterr().err


@langgraph
def test_a_resume_that_sends_the_prompt_again_is_caught_as_one_cause(tmp_path: Path) -> None:
    """A resume command that starts the run over (the prompt again, not ``--resume``) completes, yet its
    store holds the user's input twice: ``inputs-once`` says so, and what the restart dropped is its
    symptom (measured on ``deploy-one-service``, ``--fault kill``: 17 of 17 cases, one group)."""
    prompt = api.load(ONE).prompt
    text = (REPO / "targets" / "langgraph.toml").read_text()
    spec = tmp_path / "prompt-again.toml"
    spec.write_text(text.replace('"{session_id}", "--resume"]', f'"{{session_id}}", "{prompt}"]'))
    scenario = api.load(ONE).with_crash(Strike(Boundary("effect-done", {"effect": "deploy"})))
    verdict = api.run(scenario, spec, results=tmp_path / "case")
    assert [c.id for c in verdict.failed] == ["inputs-once"], [c.text() for c in verdict.failed]
    assert "'Deploy web to production.' 3 times, not 1" in verdict.failed[0].got  # resumed, then again


def _shape(tmp_path: Path, app: str, durability: str = "sync") -> Path:
    """A target file for a graph of ``tests/agents/shapes.py``, at least once as LangGraph promises."""
    text = (REPO / "tests" / "targets" / "langgraph-at-most-once.toml").read_text()
    text = text.replace("my_graph:make", f"shapes:{app}").replace('"sync"', f'"{durability}"')
    text = text.replace('semantics = "at-most-once"', 'semantics = "at-least-once"')
    text = text.replace("{target_dir}/../agents", str(REPO / "tests" / "agents"))
    spec = tmp_path / f"{app}-{durability}.toml"
    spec.write_text(text)
    return spec


@langgraph
@pytest.mark.parametrize("app", ["subgraph", "custom_channel", "fan_out", "approval"])
def test_a_call_is_durable_wherever_the_graph_keeps_it(app: str, tmp_path: Path) -> None:
    """A subgraph checkpoints its calls in its own namespace; a graph may keep its work item in a channel
    of its own, or send each call to a worker task (``Send``), or park for approval (``interrupt()``,
    approved with ``Command(resume=True)``, at once or by the resume). All are correct designs in sync mode:
    crashed where the call became durable, and where the deploy is running, they pass (reading only the
    root's messages failed the first two, 20 of 22 cases)."""
    spec = _shape(tmp_path, app)
    for crash in (None, Strike(Boundary("effect-running", {"effect": "deploy"}))):
        scenario = api.load(ONE) if crash is None else api.load(ONE).with_crash(crash)
        verdict = api.run(scenario, spec, results=tmp_path / str(crash))
        assert verdict.ok, [c.cause for c in verdict.failed]
        assert verdict.evidence.start.landing.exact in (True, None)


@langgraph
@pytest.mark.parametrize("app", ["subgraph", "fan_out", "custom_channel"])
def test_a_shape_in_async_mode_is_still_caught(app: str, tmp_path: Path) -> None:
    """Seeing the subgraph's namespace, a ``Send`` packet's call, or a call kept in a channel of the graph's
    own, does not hide the async-durability bug of the same graph."""
    verdict = api.run(api.load(SLOW), _shape(tmp_path, app, "async"), results=tmp_path / "r")
    assert "effect deploy ran before its tool call was durable in the store" in _problems(verdict)


@langgraph
def test_the_asyncio_saver_is_judged_as_the_sqlite_one(tmp_path: Path) -> None:
    """``AsyncSqliteSaver`` with ``ainvoke`` (``--saver async``): the same file, written from aiosqlite's
    thread; a kill while the deploy runs lands exactly and the sync design passes (a kill sweep of
    deploy-one-service and deploy-two-at-once: 36 cases, 34/34 exact, 0 findings), and async durability
    on the slow disk is caught as on the blocking saver."""
    text = (REPO / "targets" / "langgraph.toml").read_text().replace('"sync"', '"sync", "--saver", "async"')
    spec = tmp_path / "aio.toml"
    spec.write_text(text)
    running = api.load(ONE).with_crash(Strike(Boundary("effect-running", {"effect": "deploy"})))
    verdict = api.run(running, spec, results=tmp_path / "sync")
    assert verdict.ok and verdict.evidence.start.landing.exact, [c.cause for c in verdict.failed]
    spec.write_text(text.replace('"sync"', '"async"'))
    verdict = api.run(api.load(SLOW), spec, results=tmp_path / "async")
    assert "effect deploy ran before its tool call was durable in the store" in _problems(verdict)


@langgraph
def test_parallel_calls_reach_the_second_effects_crash_points(tmp_path: Path) -> None:
    """Two deploys in one answer run at once in ToolNode's threads: the second is its own effect (number
    2, its own gate), so a kill while it runs lands, exactly, and the sync design passes."""
    two = REPO / "scenarios" / "frameworks" / "deploy-two-at-once.toml"
    verdict = api.run(api.load(two), "langgraph", results=tmp_path)
    assert verdict.evidence.start.landing.reached and verdict.evidence.start.landing.exact
    assert verdict.ok, [c.cause for c in verdict.failed]
    started = [e for e in verdict.evidence.ledger if e["phase"] == "start"]
    assert len({e["callId"] for e in started}) == 2, started


@pytest.mark.parametrize(
    ("target", "careless"),
    [
        pytest.param(
            "dbos",
            ('"--db"', '"--app", "chaos.bundled.targets.frameworks.dbos_app:unrecorded_model", "--db"'),
            marks=dbos,
        ),
        pytest.param("pydantic-ai-dbos", (":agent", ":forgetful"), marks=pydantic_ai),
    ],
)
def test_recorded_steps_are_recovered_and_a_model_outside_them_is_caught(
    target: str, careless: tuple[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """DBOS on a SQLite system database, a workflow of its own or Pydantic AI's agent made durable by
    ``DBOSDurability`` inside the app's workflow: a kill while the deploy step runs lands exactly, the
    recovery replays the recorded model answer and runs the step again under its call id (at least once,
    as DBOS documents), and the run passes. A model called outside a step (the workflow's own code, or
    the agent without the capability) is asked again on recovery, and its deploy starts while no
    recorded step holds the call (measured: DBOS 29 kill cases of the two bundled scenarios clean, 27/27
    exact, its unrecorded model 9 of 11 failing, one group; Pydantic AI 26 clean, 24/24 exact, the
    forgetful agent 18 of 22 failing, one group, 19/19 exact)."""
    assert main(["target", "check", target, "--results", str(tmp_path / "check")]) == 0, (
        capsys.readouterr().out
    )
    running = api.load(ONE).with_crash(Strike(Boundary("effect-running", {"effect": "deploy"})))
    verdict = api.run(running, target, results=tmp_path / "correct")
    assert verdict.ok and verdict.evidence.start.landing.exact, [c.cause for c in verdict.failed]
    ids = {e["callId"] for e in verdict.evidence.effects()}
    assert len(verdict.evidence.effects()) == 2 and len(ids) == 1, verdict.evidence.ledger
    spec = tmp_path / "careless.toml"
    spec.write_text((REPO / "targets" / f"{target}.toml").read_text().replace(*careless))
    committed = api.load(ONE).with_crash(Strike(Boundary.parse("commit#4")))  # (#1 switches it to WAL)
    verdict = api.run(committed, spec, results=tmp_path / "careless")
    assert "effect deploy ran before its tool call was durable in the store" in _problems(verdict)


@dbos
def test_a_store_in_the_rollback_journal_commits_where_chaos_sees_it(tmp_path: Path) -> None:
    """DBOS on its system database in SQLite's default rollback journal (DELETE), which DBOS and ADK use
    unless told otherwise: each commit ends the journal, the tracer sees it, and a kill lands at a commit
    exactly, as in WAL mode. A [store] path naming another file sees no commit: exit 2 naming it, never
    a pass."""
    from chaos.errors import UsageError

    bundled = (REPO / "targets" / "dbos.toml").read_text()
    journal = tmp_path / "journal.toml"
    journal.write_text(
        bundled.replace('"--db", "dbos.sqlite"', '"--db", "dbos.sqlite", "--journal", "delete"')
    )
    committed = api.load(ONE).with_crash(Strike(Boundary.parse("call-durable[tool=deploy]")))
    verdict = api.run(committed, journal, results=tmp_path / "journal")
    assert verdict.ok and verdict.evidence.start.landing.exact and verdict.evidence.start.process.killed
    assert verdict.evidence.start.kept.commits and not any(
        f.endswith("-wal") for f in verdict.evidence.start.kept.store_files
    )
    running = api.load(ONE).with_crash(Strike(Boundary("effect-running", {"effect": "deploy"})))
    elsewhere = tmp_path / "elsewhere.toml"
    elsewhere.write_text(bundled.replace('path = "dbos.sqlite"', 'path = "other.sqlite"'))
    with pytest.raises(UsageError, match=r"left nothing chaos reads at \[store\] path = 'other.sqlite'"):
        api.run(running, elsewhere, results=tmp_path / "elsewhere")
    assert main(["run", str(ONE), "--target", str(elsewhere), "--results", str(tmp_path / "cli")]) == 2


@dbos
def test_a_full_disk_under_dbos_fails_the_start_and_the_resume_finishes_it(tmp_path: Path) -> None:
    """DBOS's SQLite store, its writes refused (ENOSPC) from its fifth commit on, after the deploy's step
    began: SQLite reports the full disk, the start ends failed by itself (not killed), and the resume,
    the disk with room again, completes the run (the deploy again under the same call id, as at least
    once allows)."""
    crash = Strike(Boundary("commit", nth=5), fault_name="disk-full")
    verdict = api.run(api.load(ONE).with_crash(crash), "dbos", results=tmp_path)
    start = verdict.evidence.start
    assert (
        start.landing.reached
        and not start.process.killed
        and start.landing.failed_calls >= 1
        and start.process.outcome == "failed"
    )
    assert verdict.evidence.recoveries[0].process.outcome == "completed"
    assert verdict.ok, _problems(verdict)
    # a provider's fault at the recovery's retried step fails the workflow (DBOS records the step's error)
    # as the same fault fails it in the first run: the run's honest end, not a finding
    retried = api.load(ONE).with_crash(
        Strike(Boundary("model-request")), Strike(Boundary("model-request"), fault_name="reset")
    )
    verdict = api.run(retried, "dbos", results=tmp_path / "retried")
    assert verdict.evidence.recoveries[0].landing.exact, verdict.result().to_json()["phases"]
    assert verdict.evidence.ended.process.outcome == "failed" and verdict.ok, _problems(verdict)


@langgraph
@pytest.mark.parametrize("fault", ["abort", "terminate"])
def test_a_graph_stopped_by_a_signal_mid_tool_is_recovered(fault: str, tmp_path: Path) -> None:
    """SIGINT (a person's Ctrl-C) or SIGTERM (a supervisor's stop) while the deploy runs: the graph's
    process ends on the signal by its own code (chaos does not kill it), the held deploy goes on, and the
    resume completes the run with the deploy under its one call id (at least once, as declared)."""
    crash = Strike(Boundary("effect-running", {"effect": "deploy"}), fault_name=fault)
    verdict = api.run(api.load(ONE).with_crash(crash), "langgraph", results=tmp_path)
    start = verdict.evidence.start
    assert start.landing.reached and not start.process.killed and not start.process.timed_out, (
        verdict.result().to_json()
    )
    assert (
        start.process.returncode in (-2, -15)
        and verdict.evidence.recoveries[0].process.outcome == "completed"
    )
    assert verdict.ok, _problems(verdict)


@langgraph
def test_a_run_resumed_by_the_next_version_with_a_renamed_node_is_stranded(tmp_path: Path) -> None:
    """A deploy while runs are in flight: the graph crashed once the deploy's call was durable is resumed
    by the next version ([upgrade]), whose tools node is renamed. LangGraph (1.2.x) finds no next task for
    the thread: the resume ends as if done (exit 0), the deploy never runs and the call keeps no output.
    The same crash resumed by the same version holds every check."""
    crash = Strike(Boundary.parse("call-durable[tool=deploy]"))
    scenario = api.load(ONE).with_crash(crash)
    upgraded = api.run(
        scenario, REPO / "tests" / "targets" / "langgraph-upgraded.toml", results=tmp_path / "up"
    )
    resume = upgraded.evidence.recoveries[0]
    assert "langgraph_app:renamed" in " ".join(resume.argv) and resume.process.outcome == "completed"
    assert {"effects-as-declared", "store-consistent", "same-outcome"} <= {c.id for c in upgraded.failed}
    assert "effect deploy never completed" in " ".join(_problems(upgraded))
    same = api.run(scenario, "langgraph", results=tmp_path / "same")
    assert same.ok, _problems(same)


@langgraph
def test_an_approval_given_later_by_a_separate_command(tmp_path: Path) -> None:
    """A graph that parks for approval (``interrupt()``) exits parked; the target's approve command, run
    as a person would later, gives it (``Command(resume=True)``) in a process of its own. chaos chains
    the two in one phase, so the deploy, which runs only in the approval, is crashed there exactly, and
    the design passes, in sync durability and in async too (parking writes the checkpoint that holds the
    call, so it is durable before anyone approves it). Declared at most once (an approval does not make
    a deploy run once), a kill after the approved deploy is caught with its one failure (measured on the
    bundled approval graph: kill sweep of deploy-one-service and deploy-two-at-once, 44 cases, 42/42
    exact, 0 failures)."""
    text = (REPO / "targets" / "langgraph-approval.toml").read_text()
    text = text.replace("chaos.bundled.targets.frameworks.langgraph_app:approval", "shapes:approval")
    text = text.replace("[env]\n", f'[env]\nPYTHONPATH = "{REPO / "tests" / "agents"}"\n')
    spec = tmp_path / "approval.toml"
    spec.write_text(text)
    running = api.load(ONE).with_crash(Strike(Boundary("effect-running", {"effect": "deploy"})))
    verdict = api.run(running, spec, results=tmp_path / "sync")
    assert verdict.ok and verdict.evidence.start.landing.exact, [c.cause for c in verdict.failed]
    clean = (tmp_path / "sync" / "clean" / "start.stdout").read_text()
    assert clean.startswith("parked: waiting for approval"), "the start parked, the approve command went on"
    spec.write_text(text.replace('"sync"', '"async"'))
    verdict = api.run(api.load(SLOW), spec, results=tmp_path / "async")
    assert verdict.ok, [c.cause for c in verdict.failed]
    spec.write_text(text.replace('semantics = "at-least-once"', 'semantics = "at-most-once"'))
    done = api.load(ONE).with_crash(Strike(Boundary("effect-done", {"effect": "deploy"})))
    verdict = api.run(done, spec, results=tmp_path / "at-most-once")
    assert verdict.evidence.start.landing.exact
    assert _problems(verdict) == ["effect deploy ran more than once (at most once declared)"]


@langgraph
def test_an_interleaving_exploration_reports_the_orders_it_reached(tmp_path: Path) -> None:
    """``--fault overtaken`` parks each call of a parallel answer at its effect's end while the rest of the
    process goes on, and kills at the store's next commit. ToolNode runs both deploys in one task, whose
    writes come together: nothing commits while a call is parked, the order is unreachable and the summary
    says so; a ``Send`` fan-out saves each task's writes as it finishes, so parking the first deploy lets
    the second's output be durable first, and the sync design recovers from that order. (Parking the
    second reaches nothing new where the first's writes were already made: the natural order.)

    It also holds each save LangGraph's saver begins, in the agent's interpreter: the next checkpoint's
    save begins while a task's writes are held (langgraph#8039, open on the pinned release), one distinct
    failure, ``saved-in-order``, in both designs; with the fix the issue's pull request proposes (applied
    at run time) no checkpoint begins while writes are held, and the sweep is clean. (Which of the held
    writes a checkpoint overtakes is not the same in every run under load: a save that begins in the
    instant between a held save's line and its waiting mark is not held behind it, and the second task's
    writes then decide whether the checkpoint begins; at least one always is. The corpus case,
    ``save[kind=writes]#3``, is 5 of 5.)"""
    two = REPO / "scenarios" / "frameworks" / "deploy-two-at-once.toml"
    ordered = str(REPO / "tests" / "targets" / "langgraph-ordered-saves.toml")
    reached, failed = {}, {}
    for target in ("langgraph", "langgraph-fan-out", ordered):
        done = api.sweep([two], target, results=tmp_path / Path(target).stem, jobs=2, faults=("overtaken",))
        failed[target] = set(_causes(done).values())
        ran = [r for r in done.summary.ran if r.start and r.start.overtaken is not None]
        reached[target] = {r.case: r.start.overtaken for r in ran if "effect-done" in r.case}
        held = [r for r in ran if "save[kind=writes]" in r.case]
        broken = [r for r in held if r.start.out_of_order]
        assert held and (not broken if target == ordered else broken), (target, [r.case for r in held])
        summary = json.loads((tmp_path / Path(target).stem / "summary.json").read_text())
        assert summary["orders"] == dict(zip(("parked", "overtaken"), done.summary.orders, strict=True))
        writes = summary["orderKinds"]["save[kind=writes]"]
        assert writes["held"] == len(held) and writes["broken"] == len(broken)
    assert failed == {
        "langgraph": {"saved-in-order"},
        "langgraph-fan-out": {"saved-in-order"},
        ordered: set(),
    }
    assert len(reached["langgraph"]) == 2 and not any(reached["langgraph"].values()), reached
    first = [
        case for case in reached["langgraph-fan-out"] if "effect=deploy]#1" in case or "deploy_1" in case
    ]
    assert first and all(reached["langgraph-fan-out"][case] for case in first), reached


@pydantic_ai
def test_parallel_steps_on_dbos_are_numbered_in_the_other_order_in_recovery(tmp_path: Path) -> None:
    """Pydantic AI begins the tool calls of one answer at once by default, each a DBOS step that takes the
    workflow's next number as it starts. ``overtaken`` at a call (``save[kind=call]#n``) holds it as
    Pydantic AI begins it, before its step is numbered: the other call's step takes its number and is
    recorded, the tree is killed there, and the recovery begins the held call first, so it is numbered as
    the other was and handed the other's output: its deploy never runs (dbos-transact-py#688, same name),
    and the other call, numbered next, runs its deploy again after its output was durable. The sequential mode (the bundled agent) starts nothing
    while a call is held, so the order is unreachable, and its recovery passes."""
    two = api.load(REPO / "scenarios" / "frameworks" / "deploy-two-at-once.toml")
    parallel = REPO / "bench" / "corpus" / "pydantic-ai-dbos-688" / "target.toml"
    for n, target in ((2, parallel), (1, "pydantic-ai-dbos")):
        crash = Strike(Boundary("save", {"kind": "call"}, n), "overtaken")
        verdict = api.run(two.with_crash(crash), target, results=tmp_path / f"{n}")
        start = verdict.evidence.start
        assert start.landing.reached and start.landing.overtaken == (target == parallel), target
        if target == parallel:  # (the first held: bench/corpus/pydantic-ai-dbos-688, run by test_corpus)
            assert {c.id for c in verdict.failed} == {"effects-as-declared", "output-once"}, _problems(
                verdict
            )
            assert "effect deploy never completed (at least once declared)" in _problems(verdict)
            assert "the held call begun first in recovery" in json.dumps(verdict.result().to_json())
        else:
            assert verdict.ok, _problems(verdict)


@langgraph
def test_a_cold_sweep_says_its_frameworks_saves_are_not_held(tmp_path: Path) -> None:
    """Saves are held in a warm start only (chaos's bootstrap in the target's interpreter): a target that
    starts cold explores its effects' ends alone, and the sweep says so rather than passing in silence."""
    spec = (REPO / "targets" / "langgraph.toml").read_text().replace("cwd = ", "warm = false\ncwd = ", 1)
    (tmp_path / "cold.toml").write_text(spec)
    done = api.sweep(
        [ONE], str(tmp_path / "cold.toml"), results=tmp_path / "out", jobs=2, faults=("overtaken",)
    )
    assert done.summary.ok
    assert not [r for r in done.summary.ran if r.crash and r.crash.startswith("save")]
    assert any("saves are held only in a warm start" in line for line in done.summary.starts), (
        done.summary.starts
    )


def _runs_the_call_again_under_its_id(target: str, results: Path) -> Scenario:
    """Killed while the deploy runs, the bundled ``target`` runs it again under the call's id on resume (at
    least once, as it declares) and passes, the kill exact; the scenario crashed there, for its variants."""
    running = api.load(ONE).with_crash(Strike(Boundary("effect-running", {"effect": "deploy"})))
    verdict = api.run(running, target, results=results)
    assert verdict.ok and verdict.evidence.start.landing.exact, _problems(verdict)
    ids = {e["callId"] for e in verdict.evidence.effects()}
    assert len(verdict.evidence.effects()) == 2 and len(ids) == 1, verdict.evidence.ledger
    return running


def _with_app(target: str, before: str, app: str, folder: Path) -> Path:
    """The bundled ``target``'s file with ``--app`` naming another bundled app (``module:attr``), before
    the option ``before`` of its commands."""
    spec = folder / f"{app.partition(':')[2]}.toml"
    named = f'"--app", "chaos.bundled.targets.frameworks.{app}", "{before}"'
    spec.write_text((REPO / "targets" / f"{target}.toml").read_text().replace(f'"{before}"', named))
    return spec


@adk
def test_adk_resumes_its_invocation_and_its_schema_setup_is_caught_unfinished(tmp_path: Path) -> None:
    """Google ADK, a resumable app on ``DatabaseSessionService`` (SQLite, its default rollback journal):
    killed while the deploy runs (its call durable in the session's events), the resume runs the call
    again under its id, at least once as ADK documents, and passes; the app made without resumability
    resumes by asking the model again, and deploys again under a new call id. A kill inside the first
    start's schema setup (its tables made by statements each committed alone, its version row by a later
    transaction) leaves a database every later open refuses: the one failure the bundled target shows
    (ADK 2.13.0; measured: the two bundled scenarios' default sweep, 92 cases, 24 failing, that one group,
    90/90 exact)."""
    running = _runs_the_call_again_under_its_id("google-adk", tmp_path / "resumable")
    spec = _with_app("google-adk", "--db", "adk_app:forgetful", tmp_path)
    verdict = api.run(running, spec, results=tmp_path / "forgetful")
    assert not verdict.ok and "repeated under a new call id" in " ".join(_problems(verdict))
    setup = api.load(ONE).with_crash(Strike(Boundary.parse("commit#1")))
    verdict = api.run(setup, "google-adk", results=tmp_path / "setup")
    assert verdict.evidence.start.landing.exact and verdict.failed[0].id == "same-outcome", _problems(verdict)
    said = (tmp_path / "setup" / "resume-1.stderr").read_text()
    assert "Schema version not found in adk_internal_metadata" in said


@agent_framework
def test_agent_framework_checkpoints_are_renamed_into_place_and_never_synced(tmp_path: Path) -> None:
    """Microsoft Agent Framework, a workflow of a model executor and a tools executor checkpointed by
    ``FileCheckpointStorage`` (each checkpoint a JSON file renamed into place: a commit the tracer stops
    at): killed while the deploy runs, the resume from the latest checkpoint runs the tools superstep
    again under the call's id and passes; the model and its tools in one superstep (``one_step``) deploy
    before any checkpoint holds the call. Two behaviours of the framework (1.23.0) fail the correct
    workflow: a checkpoint that cannot be written does not fail the run (the deploy runs on a call no
    checkpoint holds), and no checkpoint is ever synced (a power cut takes the call of a deploy that ran);
    and one more under damage at rest (below)."""
    running = _runs_the_call_again_under_its_id("agent-framework", tmp_path / "workflow")
    spec = _with_app("agent-framework", "--checkpoints", "maf_app:one_step", tmp_path)
    verdict = api.run(running, spec, results=tmp_path / "one-step")
    assert "effect deploy ran before its tool call was durable in the store" in _problems(verdict)
    for fault, said in (
        ("disk-full", "while the store held no call"),
        ("power-loss", "the power cut took it"),
    ):
        crash = Strike(Boundary.parse("commit#1" if fault == "disk-full" else "commit#3"), fault_name=fault)
        verdict = api.run(api.load(ONE).with_crash(crash), "agent-framework", results=tmp_path / fault)
        first = verdict.failed[0] if verdict.failed else None
        assert first is not None and first.id == "effect-after-durable-call" and said in first.got, _problems(
            verdict
        )
    # a third: a checkpoint it cannot read is skipped with a warning, and the resume goes back to the one
    # before it (the file the tracer saw renamed into place last, damaged at rest)
    crash = Strike(Boundary.parse("commit#3"), fault_name="bit-flip")
    verdict = api.run(api.load(ONE).with_crash(crash), "agent-framework", results=tmp_path / "bit-flip")
    assert _problems(verdict) == ["went on from an older state"]
    assert "ran again the effect of call" in verdict.failed[0].got
