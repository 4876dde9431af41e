"""The store adapter interface: what each adapter reads, a third adapter added from outside without a
change to the cycle, and the store checks' fail table (each check made to fail by one known bug of a
small agent on a store of its own, ``tests/agents/store_agent.py``)."""

from __future__ import annotations

import base64
import json
import os
import pickle
import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest

from chaos import api
from chaos.case.verdict import Verdict
from chaos.errors import SpecError
from chaos.scenario.model import Boundary, Strike
from chaos.store import STORES, Call, Output, View, store_named
from chaos.store.sqlite import commits_frame
from tests.conftest import MINED, REPO, needs_ptrace

SCENARIO = REPO / "scenarios" / "frameworks" / "deploy-one-service.toml"
STORE_AGENT = REPO / "tests" / "targets" / "store-agent.toml"
FILES_AGENT = REPO / "tests" / "targets" / "store-agent-files.toml"


def _causes(verdict: Verdict) -> list[str]:
    return [c.cause for c in verdict.failed]


def test_view_tells_orphans_and_duplicates() -> None:
    view = View(
        calls=(Call("a", "deploy"), Call("b", "deploy"), Call("w", "deploy")),
        outputs=(Output("a", "ok"), Output("a", "ok"), Output("z", "ok")),
        waiting=("w",),
    )
    assert [c.id for c in view.orphan_calls()] == ["b"]  # (w waits for an approval: no orphan)
    assert view.duplicated_outputs() == ["a"]
    assert [o.call_id for o in view.orphan_outputs()] == ["z"]


def test_every_target_has_a_store_and_only_a_session_log_without_store_holds_facts() -> None:
    """One track: a target without ``[store]`` has the session log its ``sessions`` glob names, judged on
    the contract's facts; the same agent with a ``[store]`` table of kind session-log is judged by the
    adapter's view. Checks are chosen by what the store gives, never by which file the target came from."""
    from chaos.check import CONCERNS
    from chaos.scenario.target import find_target, load_target

    reference = load_target(find_target("reference"))
    assert (reference.store_spec.kind, reference.store_spec.path) == ("session-log", reference.sessions)
    assert reference.facts and not reference.tools_in_code and reference.default_scenarios is None
    viewed = load_target(REPO / "tests" / "targets" / "reference-store.toml")
    assert viewed.store_spec.kind == "session-log" and not viewed.facts and viewed.tools_in_code
    reads = {concern.NEEDS for concern in CONCERNS}
    assert reads == {"facts", "view", "world"}, reads


def test_a_wal_commit_frame_is_told_from_the_others() -> None:
    assert commits_frame(b"\0\0\0\3\0\0\0\3" + b"\1" * 16)
    assert not commits_frame(b"\0\0\0\2\0\0\0\0" + b"\1" * 16)
    assert not commits_frame(b"\0\0\0\3\0\0\0\3")  # not a frame header's length


def test_the_session_log_adapter_reads_what_the_reducer_accepts() -> None:
    log = next(p for p in sorted((MINED / "fixtures").glob("*.jsonl")) if b'"toolStarted"' in p.read_bytes())
    data = log.read_bytes()
    view = store_named("session-log").read({"s.jsonl": data})
    started = [json.loads(f) for f in data.splitlines() if b'"toolStarted"' in f]
    assert view.started and view.items > 0 and view.calls
    assert view.unreadable is None and len(started) >= 1
    torn = store_named("session-log").read({"s.jsonl": data + b'{"kind":"rec'})
    assert torn.calls == view.calls  # a torn tail is not durable


def test_the_agents_sdk_adapter_reads_a_session_table(tmp_path: Path) -> None:
    db = tmp_path / "agent.db"
    with sqlite3.connect(db) as connection:
        connection.execute(
            "CREATE TABLE agent_messages (id INTEGER PRIMARY KEY, session_id TEXT, message_data TEXT)"
        )
        items = [
            {"role": "user", "content": "Deploy web."},
            {"type": "function_call", "call_id": "c1", "name": "deploy", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "ok"},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Done."}]},
        ]
        connection.executemany(
            "INSERT INTO agent_messages (session_id, message_data) VALUES ('s', ?)",
            [(json.dumps(i),) for i in items],
        )
    view = store_named("openai-agents").read({"agent.db": db.read_bytes()})
    assert view.calls == (Call("c1", "deploy", "{}"),) and view.outputs == (Output("c1", "ok"),)
    assert view.final == "Done." and view.items == 4 and view.started
    saved = {"current_step": {"data": {"interruptions": [{"raw_item": {"call_id": "c2"}}]}}}
    (tmp_path / "approvals").mkdir()
    (tmp_path / "approvals" / "run.json").write_text(json.dumps(saved))
    store = store_named("openai-agents")
    for state, waiting in ((None, ()), ("approvals/*.json", ("c2",))):  # the target's [store] state
        files = store.snapshot(tmp_path, "agent.db", state)
        assert store.read(files).waiting == waiting, (state, sorted(files))


def _adk_db(path: Path, events: list[object], columns: str = "event_data TEXT") -> dict[str, bytes]:
    """An ADK session database as its session services write it: one row an event, JSON."""
    with sqlite3.connect(path) as connection:
        connection.execute(f"CREATE TABLE events (id TEXT, invocation_id TEXT, timestamp REAL, {columns})")
        for n, event in enumerate(events):
            connection.execute("INSERT INTO events VALUES (?, 'e-1', ?, ?)", (str(n), n, json.dumps(event)))
    return {path.name: path.read_bytes()}


def test_the_adk_adapter_reads_events_and_refuses_what_adk_could_not_read(tmp_path: Path) -> None:
    """Google ADK's events (pydantic's JSON): the user's message, the model's calls, their responses by
    call id, the final text; an error event ends no run. A row that is not an object is a finding; the
    legacy schema (no ``event_data``: a column per field, actions pickled) is not read: chaos says so."""
    call = {"function_call": {"id": "c1", "name": "deploy", "args": {"service": "web"}}}
    answer = {"function_response": {"id": "c1", "name": "deploy", "response": {"result": "deployed web"}}}
    events = [
        {"author": "user", "content": {"role": "user", "parts": [{"text": "Deploy web."}]}},
        {"author": "deployer", "content": {"role": "model", "parts": [call]}},
        {"author": "deployer", "content": {"role": "user", "parts": [answer]}},
        {"author": "deployer", "error_code": "APIConnectionError"},
    ]
    adk = store_named("google-adk")
    view = adk.read(_adk_db(tmp_path / "a.db", events))
    assert view.calls == (Call("c1", "deploy", '{"service": "web"}'),) and view.started
    assert view.outputs == (Output("c1", '{"result": "deployed web"}'),)
    assert view.inputs == ("Deploy web.",) and view.final is None and not view.orphan_calls()
    final = {"author": "deployer", "content": {"role": "model", "parts": [{"text": "Deployed web."}]}}
    assert adk.read(_adk_db(tmp_path / "b.db", [*events, final])).final == "Deployed web."
    assert "not an object" in str(adk.read(_adk_db(tmp_path / "c.db", [*events, [1]])).unreadable)
    deep: object = "x"
    for _ in range(500):
        deep = [deep]
    assert "deep" in str(adk.read(_adk_db(tmp_path / "e.db", [{"content": deep}])).blind)
    legacy = _adk_db(tmp_path / "d.db", [], columns="content TEXT, actions BLOB")
    assert "legacy" in str(adk.read(legacy).blind)


def _checkpoint(path: Path, stamp: str, conversation: object, pickled: object = None) -> None:
    """A Microsoft Agent Framework checkpoint file: the conversation in the workflow's state, and a pending
    message pickled as the framework pickles values (base64 in the JSON)."""
    messages = (
        {}
        if pickled is None
        else {"tools": [{"__pickled__": base64.b64encode(pickle.dumps(pickled)).decode()}]}
    )
    path.write_text(
        json.dumps({"timestamp": stamp, "state": {"conversation": conversation}, "messages": messages})
    )


def test_the_agent_framework_adapter_reads_the_latest_checkpoint_and_runs_no_pickle(tmp_path: Path) -> None:
    """The latest checkpoint (by its timestamp) is the store's state: its longest conversation of chat
    messages, in its state or a pending message's pickle (read without running it); a pickle naming any
    other class makes chaos blind, never runs; a checkpoint that is not a JSON object is a finding."""
    call = {"id": "c1", "type": "function", "function": {"name": "deploy", "arguments": "{}"}}
    asked = [{"role": "user", "content": "Deploy web."}, {"role": "assistant", "tool_calls": [call]}]
    answered = [*asked, {"role": "tool", "tool_call_id": "c1", "content": "deployed web"}]
    store = store_named("agent-framework")
    _checkpoint(tmp_path / "a.json", "2026-12-07T08:00:01", asked)
    _checkpoint(tmp_path / "b.json", "2026-12-07T08:00:02", asked, pickled=answered)
    files = {p.name: p.read_bytes() for p in tmp_path.glob("*.json")}
    view = store.read(files)
    assert view.calls == (Call("c1", "deploy", "{}"),) and view.outputs == (Output("c1", "deployed web"),)
    assert view.inputs == ("Deploy web.",) and view.final is None and view.items == 2
    done = [*answered, {"role": "assistant", "content": "Deployed web."}]
    _checkpoint(tmp_path / "c.json", "2026-12-07T08:00:03", done)
    assert store.read({**files, "c.json": (tmp_path / "c.json").read_bytes()}).final == "Deployed web."
    marker = tmp_path / "ran"
    _checkpoint(tmp_path / "d.json", "2026-12-07T08:00:04", asked, pickled=[_Runs(marker)])
    assert "posix.system" in str(store.read({"d.json": (tmp_path / "d.json").read_bytes()}).blind)
    assert not marker.exists()
    assert "not an object" in str(store.read({"e.json": b"[1]"}).unreadable)


def _dbos_db(
    path: Path,
    steps: list[tuple[str, str]],
    serialization: str = "py_pickle",
    names: list[str] | None = None,
    major: int = 3,
) -> dict[str, bytes]:
    """A DBOS system database's run tables as DBOS ``major`` writes them (``steps``: each output,
    serialized; ``names``: each step's function name, ``None`` a step not recorded): DBOS 3 keeps a run's
    input and output in tables of their own, DBOS 2 in its status row."""
    given = base64.b64encode(pickle.dumps({"args": ("Deploy web.",), "kwargs": {}})).decode()
    answer = base64.b64encode(pickle.dumps("Done.")).decode()
    with sqlite3.connect(path) as connection:
        if major == 2:
            connection.execute(
                "CREATE TABLE workflow_status (workflow_uuid TEXT, status TEXT, serialization TEXT, "
                "inputs TEXT, output TEXT)"
            )
            connection.execute(
                "INSERT INTO workflow_status VALUES ('w', 'SUCCESS', ?, ?, ?)", (serialization, given, answer)
            )
        else:
            connection.execute(
                "CREATE TABLE workflow_status (workflow_uuid TEXT, status TEXT, serialization TEXT)"
            )
            connection.execute("CREATE TABLE workflow_input (workflow_uuid TEXT, inputs TEXT)")
            connection.execute("CREATE TABLE workflow_output (workflow_uuid TEXT, output TEXT)")
            connection.execute("INSERT INTO workflow_status VALUES ('w', 'SUCCESS', ?)", (serialization,))
            connection.execute("INSERT INTO workflow_input VALUES ('w', ?)", (given,))
            connection.execute("INSERT INTO workflow_output VALUES ('w', ?)", (answer,))
        connection.execute(
            "CREATE TABLE operation_outputs (workflow_uuid TEXT, function_id INTEGER, function_name TEXT, "
            "output TEXT, error TEXT, serialization TEXT)"
        )
        named = names or ["step"] * len(steps)
        connection.executemany(
            "INSERT INTO operation_outputs VALUES ('w', ?, ?, ?, NULL, ?)",
            [
                (n, name, o, kind)
                for n, (name, (o, kind)) in enumerate(zip(named, steps, strict=True), 1)
                if name
            ],
        )
    return {path.name: path.read_bytes()}


class _AppsOwn:
    """A class of an app's own, as a step might return it pickled."""


def test_the_dbos_adapter_reads_recorded_steps_as_chat_messages_and_runs_no_app_code(tmp_path: Path) -> None:
    asked = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "c1", "function": {"name": "deploy", "arguments": "{}"}}],
    }
    answered = {"role": "tool", "tool_call_id": "c1", "content": "deployed web"}
    steps = [
        (base64.b64encode(pickle.dumps(asked)).decode(), "py_pickle"),
        (json.dumps(answered), "portable_json"),
    ]
    view = store_named("dbos").read(_dbos_db(tmp_path / "a.sqlite", steps))
    assert view.calls == (Call("c1", "deploy", "{}"),) and view.outputs == (Output("c1", "deployed web"),)
    assert view.final == "Done." and view.inputs == ("Deploy web.",) and view.started and view.items == 5
    older = store_named("dbos").read(
        _dbos_db(tmp_path / "2.sqlite", steps, major=2)
    )  # (as DBOS 2.23 wrote it)
    assert (older.calls, older.outputs, older.final, older.inputs) == (
        view.calls,
        view.outputs,
        view.final,
        view.inputs,
    )
    assert older.items == 3 and not older.unreadable
    opaque = [(base64.b64encode(pickle.dumps(_AppsOwn())).decode(), "py_pickle")]
    view = store_named("dbos").read(_dbos_db(tmp_path / "b.sqlite", opaque))
    assert view.blind is not None and "test_store._AppsOwn" in view.blind and not view.unreadable


def _pickled(value: object) -> tuple[str, str]:
    return base64.b64encode(pickle.dumps(value)).decode(), "py_pickle"


class _Runs:
    """A pickle that would run a command when loaded (as any class's ``__reduce__`` may)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return os.system, (f"touch {self.marker}",)


def test_the_pydantic_ai_dbos_adapter_reads_model_responses_without_importing_a_class(tmp_path: Path) -> None:
    """Pydantic AI's recorded ``ModelResponse`` is read from the pickle with its classes named, never
    built; a tool's step answers the call it was started for (the k-th step after the model's answers
    its k-th call, also when an earlier one is not recorded); any other class, and a step that is no
    ModelResponse, is blind (exit 2), with nothing run."""
    messages = pytest.importorskip("pydantic_ai.messages")
    asked = messages.ModelResponse(
        parts=[
            messages.TextPart("Deploying both."),
            messages.ToolCallPart("deploy", {"service": "web"}, "c1"),
            messages.ToolCallPart("deploy", '{"service": "api"}', "c2"),
        ]
    )
    done = messages.ModelResponse(parts=[messages.TextPart("Done.")])
    steps = [_pickled(asked), _pickled("deployed web"), _pickled("deployed api"), _pickled(done)]
    names = ["deployer__model.request", None, "deploy", "deployer__model.request"]
    view = store_named("pydantic-ai-dbos").read(_dbos_db(tmp_path / "a.sqlite", steps, names=names))
    assert view.calls == (
        Call("c1", "deploy", '{"service": "web"}'),
        Call("c2", "deploy", '{"service": "api"}'),
    )
    assert view.outputs == (Output("c2", "deployed api"),), "the third step was started for the second call"
    assert view.final == "Done." and view.inputs == ("Deploy web.",) and not view.blind
    failed = tmp_path / "failed.sqlite"
    _dbos_db(failed, [_pickled(asked)], names=names[:1])
    with sqlite3.connect(failed) as connection:  # the request raised: DBOS recorded its error, no output
        connection.execute("UPDATE operation_outputs SET output = NULL, error = 'gASV'")
    view = store_named("pydantic-ai-dbos").read({failed.name: failed.read_bytes()})
    assert view.calls == () and not view.blind and not view.unreadable, view
    marker = tmp_path / "ran"
    for n, (step, name) in enumerate(
        [(_Runs(marker), "deploy"), ("deployed web", "deployer__model.request")]
    ):
        db = _dbos_db(tmp_path / f"{n}.sqlite", [_pickled(asked), _pickled(step)], names=[names[0], name])
        view = store_named("pydantic-ai-dbos").read(db)
        assert view.blind is not None and not view.unreadable, view
    assert not marker.exists()
    assert (
        "posix.system"
        in store_named("pydantic-ai-dbos")
        .read(_dbos_db(tmp_path / "x.sqlite", [_pickled(_Runs(marker))], names=[names[0]]))
        .blind
    )


def test_the_registry_holds_the_bundled_adapters_and_the_test_one() -> None:
    store_named("session-log")
    bundled = {
        "session-log",
        "langgraph",
        "openai-agents",
        "dbos",
        "pydantic-ai-dbos",
        "google-adk",
        "agent-framework",
    }
    assert bundled | {"test-jsonl"} <= set(STORES)


def test_the_cycle_imports_no_adapter() -> None:
    """A third store is one ``register`` away: no stage above ``chaos.store`` imports an adapter, only the
    interface (``chaos.store``, ``chaos.store.base``), the commit kinds' formats (``chaos.store.sqlite``;
    ``chaos.store.postgres``, ``chaos.store.temporal``: how the world's engine of a server store, and
    only it, finds its server in the sandbox), and the bounded readers ``chaos.extend`` hands an adapter
    (``chaos.store.inert``)."""
    from tests.test_structure import MODULES, _imports

    interface = {
        "chaos.store",
        "chaos.store.base",
        "chaos.store.sqlite",
        "chaos.store.postgres",
        "chaos.store.temporal",
        "chaos.store.inert",
    }
    for module, path in MODULES.items():
        if module.startswith("chaos.store"):
            continue
        used = {m for m in _imports(module, path) if m.startswith("chaos.store")}
        assert used <= interface, (module, used - interface)


@pytest.mark.slow
@needs_ptrace
def test_a_third_store_sweeps_with_exact_kills_and_passes(tmp_path: Path) -> None:
    done = api.sweep([SCENARIO], STORE_AGENT, results=tmp_path, jobs=2)
    results = done.summary.results
    kinds = {r.column.split("#")[0].split("[")[0] for r in results}
    assert {"no crash", "commit", "model-request", "effect-running", "effect-done"} <= kinds
    landed = [r for r in results if r.start is not None and r.start.reached]
    assert len(landed) == len(results) - 1 and all(r.exact for r in landed)
    assert done.ok, [g.label for g in done.summary.groups]
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["exact"] == summary["reached"] == len(landed), summary
    assert (tmp_path / "report.html").is_file()


def test_a_store_agent_s_requests_are_judged_by_the_same_check(tmp_path: Path) -> None:
    """``requests-valid`` reads any agent's requests: a framework agent's resume that sends a call
    without its output is refused by the provider, as a session-log agent's would be."""
    scenario = api.load(SCENARIO).with_crash(Strike(Boundary.parse("effect-running[effect=deploy]")))
    verdict = api.run(
        scenario, STORE_AGENT, target_env={"STORE_AGENT_BUG": "orphan-request"}, results=tmp_path
    )
    assert "requests-valid" in {c.id for c in verdict.failed}, [c.to_json() for c in verdict.checks]
    assert verdict.evidence.start.landing.exact and (tmp_path / "prefix" / "store.jsonl").is_file()


@pytest.mark.slow
@needs_ptrace
def test_the_session_log_is_the_first_adapter(tmp_path: Path) -> None:
    """The reference agent through the store cycle: killed at the commit that makes its bash call durable
    (its toolStarted), it never runs the deploy again and ends as the uninterrupted run does."""
    scenario = api.load(REPO / "scenarios" / "deploy-intent-durable.toml")
    scenario = scenario.with_crash(Strike(Boundary("call-durable", {"tool": "bash"})))
    verdict = api.run(scenario, REPO / "tests" / "targets" / "reference-store.toml", results=tmp_path)
    start = verdict.evidence.start
    assert start.landing.exact, verdict.result().to_json()["phases"]
    assert verdict.ok, [c.to_json() for c in verdict.failed]
    assert (
        start.kept.view_after is not None
        and start.kept.view_after.calls
        and not start.kept.view_after.outputs
    )


@pytest.mark.slow
@needs_ptrace
def test_a_store_written_whole_commits_at_each_rename_and_a_power_cut_keeps_what_was_synced(
    tmp_path: Path,
) -> None:
    """A store of files written whole (a temporary file renamed over the name, as an atomic checkpoint is):
    each rename is a commit the tracer stops at exactly, a kill sweep passes, and so does a power cut where
    the file and then its directory were synced. Renamed with no sync, the name is not durable until its
    directory is synced: a power cut takes the run back to nothing, and the deploy that began meanwhile is
    caught having begun before its call was durable."""
    done = api.sweep([SCENARIO], FILES_AGENT, results=tmp_path / "sweep", faults=("kill",), jobs=2)
    assert done.summary.findings == [] and done.summary.results
    assert all(r.exact for r in done.summary.results if r.start is not None and r.start.reached)
    assert sum(1 for r in done.summary.results if r.case.startswith("deploy-one-service @ commit#")) == 4
    crash = Strike(Boundary("commit", nth=3), fault_name="power-loss")
    scenario = api.load(SCENARIO).with_crash(crash)
    verdict = api.run(scenario, FILES_AGENT, results=tmp_path / "synced")
    assert verdict.ok and verdict.evidence.start.landing.exact, _causes(verdict)
    bug = {"STORE_AGENT_BUG": "unsynced-rename"}
    verdict = api.run(scenario, FILES_AGENT, results=tmp_path / "unsynced", target_env=bug)
    assert "effect deploy ran before its tool call was durable in the store" in _causes(verdict)
    killed = api.run(scenario.with_crash(Strike(Boundary("commit", nth=3))), FILES_AGENT, target_env=bug)
    assert killed.ok, _causes(killed)  # (a kill keeps what the kernel has: the rename stands)
    # damage at rest: the file renamed into place last (the tracer saw which) changes; the agent that
    # cannot read it stops, one that takes it for no run loses the deploy's durable output
    flipped = scenario.with_crash(Strike(Boundary("commit", nth=3), fault_name="bit-flip"))
    refused = api.run(flipped, FILES_AGENT, results=tmp_path / "flipped")
    assert refused.ok, _causes(refused)
    assert "state/run.json: one byte of the file renamed into place last" in str(
        refused.evidence.start.landing.damaged
    )
    careless = {"STORE_AGENT_BUG": "unreadable-as-empty"}
    verdict = api.run(flipped, FILES_AGENT, results=tmp_path / "careless", target_env=careless)
    assert _causes(verdict) == ["went on from an older state"]


@pytest.mark.slow
@needs_ptrace
def test_a_power_cut_keeps_each_store_file_as_of_its_last_sync(tmp_path: Path) -> None:
    """Killed at the return of its second commit's write, before that write's fsync: a SIGKILL keeps the
    line (the page cache survives), a power cut does not."""
    kept = {}
    for fault in ("kill", "power-loss"):
        crash = Strike(Boundary("commit", nth=2), fault_name=fault)
        verdict = api.run(api.load(SCENARIO).with_crash(crash), STORE_AGENT, results=tmp_path / fault)
        start = verdict.evidence.start
        assert start.landing.exact and verdict.ok, [c.to_json() for c in verdict.failed]
        assert start.kept.view_after is not None
        kept[fault] = start.kept.view_after.items
        assert (tmp_path / fault / "prefix" / "store.jsonl").read_bytes().count(b"\n") == kept[fault]
    assert kept == {"kill": 2, "power-loss": 1}


@pytest.mark.slow
@needs_ptrace
def test_target_check_tells_a_store_path_that_matches_nothing(tmp_path: Path) -> None:
    assert api.check_target(STORE_AGENT, tmp_path / "right").exit_code == 0
    wrong = tmp_path / "wrong.toml"
    text = STORE_AGENT.read_text().replace("{target_dir}/..", str(REPO / "tests"))
    wrong.write_text(text.replace('path = "store.jsonl"', 'path = "elsewhere.jsonl"'))
    diagnosis = api.check_target(wrong, tmp_path / "wrong")
    assert diagnosis.exit_code == 2, diagnosis.text()
    assert "point [store] path at the file the agent writes" in diagnosis.text()


@pytest.mark.slow
@needs_ptrace
def test_a_store_sweep_writes_junit_naming_each_failure(tmp_path: Path) -> None:
    import xml.etree.ElementTree as ET

    done = api.sweep(
        [SCENARIO],
        STORE_AGENT,
        results=tmp_path,
        jobs=2,
        target_env={"STORE_AGENT_BUG": "duplicate-output"},
        junit=tmp_path / "junit.xml",
    )
    suite = ET.parse(tmp_path / "junit.xml").getroot()
    suite = suite if suite.tag == "testsuite" else suite[0]
    failures = [f for case in suite.iter("testcase") for f in case.iter("failure")]
    assert int(suite.get("tests", "0")) == len(done.summary.results) and len(failures) == int(
        suite.get("failures", "-1")
    )
    assert failures and all("two outputs for one tool call" in f.get("message", "") for f in failures)
    assert all("chaos run " in f.get("message", "") for f in failures)


@pytest.mark.slow
@needs_ptrace
def test_a_network_fault_lands_on_a_store_agent_and_its_run_is_recovered(tmp_path: Path) -> None:
    """A fault of the world (the model server resets the held request) lands on a framework agent as on a
    session-log one: the agent goes on through it, and a resume finishes what it left."""
    crash = Strike(Boundary("model-request"), fault_name="reset")
    verdict = api.run(api.load(SCENARIO).with_crash(crash), STORE_AGENT, results=tmp_path)
    start = verdict.evidence.start
    assert start.landing.reached and not start.process.killed and start.landing.exact, (
        verdict.result().to_json()["phases"]
    )
    assert verdict.evidence.requests[0]["fault"] == "reset", "the server answered the held request so"
    assert verdict.evidence.recoveries, "the run the fault left was resumed"
    assert verdict.ok, [c.to_json() for c in verdict.failed]


def test_a_fault_says_itself_whether_it_lands_on_a_store() -> None:
    from chaos.fault import FAULTS

    lands = sorted(name for name, fault in FAULTS.items() if fault.unavailable_on_store() is None)
    assert {"kill", "power-loss", "reset", "hang", "disk-full", "fsync-error", "short-write"} <= set(lands)
    assert {"abort", "abort-then-kill", "terminate"} <= set(lands)  # a framework runs its own code on them
    assert "needs a session log" in (FAULTS["torn"].unavailable_on_store() or "")
    # a disk fault fails the agent's own calls on its store's files: a server's store has none here
    assert "has none on this machine" in (FAULTS["disk-full"].unavailable_on_store("wire") or "")
    assert FAULTS["postgres-crash"].unavailable_on_store("wire", "postgres") is None
    assert FAULTS["temporal-crash"].unavailable_on_store("wire", "temporal") is None
    assert "Temporal server" in (FAULTS["temporal-crash"].unavailable_on_store("wire", "postgres") or "")
    assert "PostgreSQL server" in (FAULTS["postgres-crash"].unavailable_on_store("wire", "temporal") or "")
    assert all(FAULTS["bit-flip"].unavailable_on_store(commit) is None for commit in ("sqlite", "rename"))
    assert FAULTS["kill"].unavailable_on_store("rename") is None
    assert FAULTS["connection-lost"].unavailable_on_store("wire", "postgres") is None
    assert "needs a store on the world's PostgreSQL server" in (
        FAULTS["connection-lost"].unavailable_on_store() or ""
    )


@pytest.mark.slow
@needs_ptrace
def test_a_disk_fault_lands_on_a_store_and_an_agent_that_ignores_it_is_caught(tmp_path: Path) -> None:
    """A full disk from the store's first commit on: the store's next write fails with ENOSPC. The correct
    agent stops by itself (failed) and its resume finishes the run; one that takes the refused write as
    made runs the deploy with its call not durable."""
    scenario = api.load(SCENARIO).with_crash(Strike(Boundary("commit", nth=1), fault_name="disk-full"))
    verdict = api.run(scenario, STORE_AGENT, results=tmp_path / "ok")
    start = verdict.evidence.start
    assert start.landing.reached and not start.process.killed and start.landing.failed_calls >= 1, (
        verdict.result().to_json()
    )
    assert start.process.outcome == "failed" and verdict.evidence.recoveries[0].process.outcome == "completed"
    assert verdict.ok, [c.to_json() for c in verdict.failed]
    careless = api.run(
        scenario, STORE_AGENT, results=tmp_path / "bug", target_env={"STORE_AGENT_BUG": "ignore-write-errors"}
    )
    assert "effect-after-durable-call" in {c.id for c in careless.failed}, careless.result().to_json()


@pytest.mark.slow
@needs_ptrace
def test_a_store_sweep_mines_its_crash_prefixes_and_fixtures_check_reads_them_again(tmp_path: Path) -> None:
    """Each new crash prefix of a framework agent is mined (the store's files and the view its adapter read
    of them); ``chaos fixtures check`` reads each again, and says which no longer reads the same."""
    done = api.sweep([SCENARIO], STORE_AGENT, results=tmp_path / "r", jobs=2, mine=tmp_path / "fx")
    assert len(done.mined) >= 3, done.mined  # one per distinct store the crashes left
    corpus = tmp_path / "fx"
    verdicts = api.check_fixtures(corpus)
    assert len(verdicts) == len(done.mined) and all(v.ok and v.kind == "store" for v in verdicts)
    expected = corpus / "store-fixtures" / f"{done.mined[0]}.expected.json"
    data = json.loads(expected.read_text())
    data["view"]["items"] += 1
    expected.write_text(json.dumps(data))
    wrong = [v for v in api.check_fixtures(corpus) if not v.ok]
    assert [v.name for v in wrong] == [done.mined[0]] and ".items" in wrong[0].differs
    provenance = json.loads((corpus / "provenance" / f"{done.mined[0]}.json").read_text())
    assert provenance["target"] == "store-agent" and "verdict" in provenance


@pytest.mark.slow
@needs_ptrace
def test_explore_generates_a_framework_agent_s_worlds_and_shrinks_what_it_finds(tmp_path: Path) -> None:
    done = api.explore(
        STORE_AGENT,
        target_env={"STORE_AGENT_BUG": "effect-first"},
        results=tmp_path,
        budget=20,
        seed=3,
        shrink_budget=20,
        max_failures=1,
    )
    assert [f.verdict.failed[0].id for f in done.found] == ["effect-after-durable-call"]
    shrunk = done.found[0].scenario
    assert shrunk.crash is not None and len(shrunk.turns) <= 3, shrunk
    assert done.found[0].saved is not None and done.found[0].saved.is_file()


@pytest.mark.slow
@needs_ptrace
def test_a_framework_agent_is_crashed_mid_stream(tmp_path: Path) -> None:
    """``model-stream`` lands on a framework agent that streams its answers: killed with the answer's first
    events delivered and the rest held, then resumed; a sweep crashes every streamed answer."""
    streaming = REPO / "tests" / "targets" / "store-agent-streaming.toml"
    scenario = api.load(SCENARIO).with_crash(Strike(Boundary("model-stream")))
    verdict = api.run(scenario, streaming, results=tmp_path / "one")
    start = verdict.evidence.start
    assert start.process.killed and start.landing.exact and start.landing.mechanism == "world", (
        verdict.result().to_json()["phases"]
    )
    assert verdict.ok, [c.to_json() for c in verdict.failed]
    done = api.sweep([SCENARIO], streaming, results=tmp_path / "sweep", jobs=2)
    streamed = [r for r in done.summary.results if r.column.startswith("model-stream")]
    assert len(streamed) == 2 and not any(r.skipped for r in streamed), [r.case for r in done.summary.results]
    assert done.ok, [g.label for g in done.summary.groups]


@pytest.mark.slow
@needs_ptrace
def test_a_scenario_whose_tools_the_agent_lacks_tests_nothing_and_says_so(tmp_path: Path) -> None:
    """A script that calls a tool the framework agent does not have: the agent answers "not a valid tool",
    no effect runs, and no crash can fall between a call and its effect. That is unusable input (exit 2),
    named with the tools, never a pass."""
    from chaos.errors import UsageError
    from chaos.scenario import Turn

    scenario = api.load(SCENARIO)
    scenario = replace(
        scenario, turns=[Turn(tool_calls=[{"name": "charge", "arguments": {}}]), Turn(text="Done.")]
    )
    with pytest.raises(
        UsageError,
        match=r"the script calls charge.*ran no effect; the agent offered the model deploy.*not a valid tool",
    ):
        api.sweep([scenario.with_crash(None)], STORE_AGENT, results=tmp_path / "sweep", jobs=2)
    assert api.run(api.load(SCENARIO).with_crash(None), STORE_AGENT, results=tmp_path / "ok").ok


@pytest.mark.slow
@needs_ptrace
def test_a_secret_a_framework_agent_keeps_in_its_store_is_written_nowhere(tmp_path: Path) -> None:
    """A ``--target-env`` value the agent writes into its store: the case's crash prefixes, the mined
    store fixtures and every other file chaos writes hold its name, never its value."""
    secret = "sk-store-secret-4f1d0c9a"
    done = api.sweep(
        [SCENARIO],
        STORE_AGENT,
        results=tmp_path / "r",
        jobs=2,
        mine=tmp_path / "fx",
        keep_all=True,
        target_env={"STORE_AGENT_NOTE": secret},
    )
    assert done.mined and list((tmp_path / "r").rglob("prefix/store.jsonl"))
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert not [p for p in written if secret.encode() in p.read_bytes()]
    assert any(b"${STORE_AGENT_NOTE}" in p.read_bytes() for p in (tmp_path / "fx").rglob("store.jsonl"))


def test_the_langgraph_store_knows_every_call_id_the_model_server_gives() -> None:
    """A bare call id in a graph's own channel is recognised by its shape: the shape each protocol's
    answers give, with and without the fresh-id suffix of a repeated request."""
    import re

    from chaos.scenario import Turn
    from chaos.store.langgraph import CALL_ID
    from chaos.world.model_server import default_usage
    from chaos.world.protocols import PROTOCOLS, Conversation

    turn = Turn(tool_calls=[{"name": "deploy", "arguments": {"service": "web"}}])
    for protocol in PROTOCOLS.values():
        for nonce in ("", "_r12"):
            body = json.dumps(protocol.answer(turn, 3, Conversation([], 3), default_usage(3), nonce).body)
            ids = set(re.findall(r'"(?:call_id|id)": "([^"]+)"', body))
            assert any(CALL_ID.fullmatch(i) for i in ids), (protocol.name, ids)
    assert not CALL_ID.fullmatch("call-1") and not CALL_ID.fullmatch("deploy web")


@needs_ptrace
def test_a_step_run_again_after_its_output_was_durable_is_its_own_failure(tmp_path: Path) -> None:
    """At least once declared, crashed once the deploy's output is durable: the store agent's resume, which
    reads its outputs, runs nothing again (output-once judged, and held); one that replays every step
    reading no output it recorded runs the deploy again under the same call id, which at least once
    allows: the one failure is output-once's, in words that say its output was durable."""
    target = REPO / "tests" / "targets" / "store-agent-at-least-once.toml"
    case = api.load(SCENARIO).with_crash(Strike(Boundary.parse("output-durable[tool=deploy]")))
    verdict = api.run(case, target, results=tmp_path / "correct")
    (held,) = [c for c in verdict.checks if c.id == "output-once"]
    assert verdict.ok and held.judged and verdict.evidence.start.landing.exact
    broken = api.run(
        case, target, results=tmp_path / "broken", target_env={"STORE_AGENT_BUG": "rerun-answered"}
    )
    assert [c.id for c in broken.checks if not c.ok] == ["output-once"]
    assert "ran again after its output was durable" in broken.failed[0].got
    weaker = tmp_path / "weaker.toml"  # (naming the agent by its path, wherever the copy is)
    weaker.write_text(
        target.read_text()
        .replace("{target_dir}/..", str(REPO / "tests"))
        .replace('semantics = "at-least-once"', 'semantics = "at-least-once"\nrerun_after_output = true')
    )
    declared = api.run(
        case, weaker, results=tmp_path / "weaker", target_env={"STORE_AGENT_BUG": "rerun-answered"}
    )
    assert declared.ok and not next(c for c in declared.checks if c.id == "output-once").judged
    weaker.write_text(
        STORE_AGENT.read_text()
        .replace("{target_dir}/..", str(REPO / "tests"))
        .replace('path = "store.jsonl"', 'path = "store.jsonl"\nrerun_after_output = true')
    )
    with pytest.raises(SpecError, match=r"rerun_after_output.*semantics = \"at-least-once\""):
        api.run(case, weaker, results=tmp_path / "refused")
