"""Temporal (issue 52): the world's Temporal server, the relay that sees each call recording history, the
history read as a store (Pydantic AI's reading of it too), and the bundled workflow agents (plain, and
Pydantic AI's ``TemporalDurability``) and their broken variants.

The relay's reading of HTTP/2 and the history's reading are pure and tested on bytes; everything else runs
the real dev server (the Temporal CLI, from the temporal extra) and the real SDK. Without them these tests
skip, unless CHAOS_REQUIRE_FRAMEWORKS=1 (CI) makes that a failure."""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from chaos import api
from chaos.cli import main
from chaos.process.ptrace import default_signals
from chaos.scenario.target import load_target
from chaos.store import store_named
from chaos.world.grpcwire import END_HEADERS, END_STREAM, HEADERS, PREFACE, SERVICE, Calls
from chaos.world.services import open_world
from tests.conftest import REPO, needs_modules, needs_ptrace

ONE = REPO / "scenarios" / "frameworks" / "deploy-one-service.toml"
TEMPORAL = REPO / "targets" / "temporal.toml"
PYDANTIC_AI = REPO / "targets" / "pydantic-ai-temporal.toml"
needs_temporal = needs_modules("temporalio", "hpack")
DATA = 0x0


# -- the relay's reading, on bytes -------------------------------------------------------------------------
def _frame(kind: int, flags: int, stream: int, payload: bytes) -> bytes:
    return len(payload).to_bytes(3, "big") + bytes([kind, flags]) + stream.to_bytes(4, "big") + payload


@needs_modules("hpack")
def test_the_relay_holds_only_the_end_of_a_call_that_records_history() -> None:
    """Three calls on one connection, the second one's header block indexed from the first's (HPACK's
    table, decoded in order): the heartbeat and the poll pass, the activity's completion ends in a piece of
    its own (its trailers: the server recorded it), and every byte goes on unchanged, in order."""
    import hpack

    encoder = hpack.Encoder()

    def request(stream: int, method: str) -> bytes:
        block = encoder.encode([(":method", "POST"), (":path", SERVICE + method), ("te", "trailers")])
        return _frame(HEADERS, END_HEADERS, stream, block) + _frame(DATA, END_STREAM, stream, b"\0\0\0\0\0")

    calls = Calls()
    asked = PREFACE + _frame(0x4, 0, 0, b"") + request(1, "PollActivityTaskQueue")
    asked += request(3, "RecordActivityTaskHeartbeat") + request(5, "RespondActivityTaskCompleted")
    for at in range(0, len(asked), 7):  # as it comes, a few bytes at a time
        calls.asked(asked[at : at + 7])
    assert calls.commits == {5}
    answers = [
        _frame(0x4, 0, 0, b""),
        _frame(HEADERS, END_HEADERS, 3, b"\x88"),
        _frame(DATA, 0, 3, b"\0\0\0\0\0"),
        _frame(HEADERS, END_HEADERS | END_STREAM, 3, b"trailers"),
        _frame(HEADERS, END_HEADERS, 5, b"\x88"),
        _frame(HEADERS, END_HEADERS | END_STREAM, 5, b"trailers"),
        _frame(HEADERS, END_HEADERS | END_STREAM, 1, b"trailers"),
    ]
    stream = b"".join(answers)
    pieces = [p for at in range(0, len(stream), 5) for p in calls.feed(stream[at : at + 5])]
    assert b"".join(p.data for p in pieces) == stream
    assert [p.data for p in pieces if p.commit] == [answers[5]]
    with pytest.raises(ValueError, match="claims"):
        Calls().feed(b"\xff\xff\xff" + bytes(6))
    with pytest.raises(ValueError, match="no HTTP/2"):
        Calls().asked(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")


# -- the history, read as a store ----------------------------------------------------------------------------
def _payload(value: object, encoding: str = "json/plain") -> dict[str, object]:
    return {
        "metadata": {"encoding": base64.b64encode(encoding.encode()).decode()},
        "data": base64.b64encode(json.dumps(value).encode()).decode(),
    }


def _history(*events: tuple[str, str, dict[str, object]]) -> dict[str, bytes]:
    listed = [
        {"eventId": str(n), "eventType": f"EVENT_TYPE_{kind}", attributes: value}
        for n, (kind, attributes, value) in enumerate(events, 1)
    ]
    return {"history.json": json.dumps({"workflows": [{"id": "w", "history": {"events": listed}}]}).encode()}


def _scheduled(name: str, kept: dict[str, str] | None = None) -> tuple[str, str, dict[str, object]]:
    return ("ACTIVITY_TASK_SCHEDULED", "activityTaskScheduledEventAttributes", {"activityType": {"name": name}, "kept": kept})  # fmt: skip


def _completed(scheduled: int, result: dict[str, object]) -> tuple[str, str, dict[str, object]]:
    return ("ACTIVITY_TASK_COMPLETED", "activityTaskCompletedEventAttributes", {"result": {"payloads": [result]}, "scheduledEventId": str(scheduled)})  # fmt: skip


def test_a_history_is_read_as_its_activities_chat_messages() -> None:
    """The model activity's result holds the call, the tool activity's answers it, the workflow's result is
    the answer; a payload in an encoding chaos does not decode (protobuf, a codec's) makes chaos blind, and
    a copy that is not what chaos writes (a fixture is a file) is unreadable: both a view, never a raise."""
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "deploy", "arguments": '{"service":"web"}'},
    }
    answer = {"role": "assistant", "content": None, "tool_calls": [call]}
    output = {"role": "tool", "tool_call_id": "call_1", "content": "deployed web"}
    started = ("WORKFLOW_EXECUTION_STARTED", "workflowExecutionStartedEventAttributes", {"input": {"payloads": [_payload("Deploy web.")]}})  # fmt: skip
    done = [
        event
        for at, m in ((2, answer), (4, output))
        for event in (_scheduled("run_tool"), _completed(at, _payload(m)))
    ]
    final = ("WORKFLOW_EXECUTION_COMPLETED", "workflowExecutionCompletedEventAttributes", {"result": {"payloads": [_payload("Deployed web.")]}})  # fmt: skip
    store = store_named("temporal")
    view = store.read(_history(started, *done, final))
    assert [c.id for c in view.calls] == ["call_1"] and [o.call_id for o in view.outputs] == ["call_1"]
    assert view.final == "Deployed web." and view.inputs == ("Deploy web.",) and view.items == 6
    assert store.read(_history(started, *done[:2])).orphan_calls() and store.read({}) == type(view)(
        replays=()
    )
    assert view.replays == () and store.read({}).replays == ()
    nondeterministic = ("WORKFLOW_TASK_FAILED", "workflowTaskFailedEventAttributes", {"cause": "WORKFLOW_TASK_FAILED_CAUSE_NON_DETERMINISTIC_ERROR", "failure": {"message": "[TMPRL1100] Nondeterminism error: no command scheduled"}})  # fmt: skip
    other = ("WORKFLOW_TASK_FAILED", "workflowTaskFailedEventAttributes", {"cause": "WORKFLOW_TASK_FAILED_CAUSE_WORKFLOW_WORKER_UNHANDLED_FAILURE", "failure": {"message": "ImportError"}})  # fmt: skip
    replayed = store.read(_history(started, other, nondeterministic))
    assert replayed.replays == ("[TMPRL1100] Nondeterminism error: no command scheduled",)
    blind = store.read(_history(started, _scheduled("ask"), _completed(2, _payload(1, "binary/protobuf"))))
    assert blind.blind is not None and "binary/protobuf" in blind.blind, blind
    for copy in (b'{"workflows": [{"history": {"events": ["x"]}}]}', b"[1]", b'{"workflows": 1}', b"{"):
        assert store.read({"history.json": copy}).unreadable, copy
    assert store.read(
        _history(started, _completed(9, _payload(answer)))
    ).unreadable  # an activity never scheduled  # a finding, never chaos's own fault


def test_a_local_activity_is_read_from_its_marker_and_a_copy_keeps_its_type_and_result_alone() -> None:
    """A local activity runs in the worker and is recorded as a marker when its workflow task completes: a
    copy keeps the marker's activity type and result (not its times, its attempt, its ids), and the view
    reads it as a completed activity. A failed one (no result) and another kind of marker answer nothing."""
    from chaos.store.temporal import _kept

    output = {"role": "tool", "tool_call_id": "call_1", "content": "deployed web"}
    data = {"seq": 3, "attempt": 1, "activity_id": "call_1", "activity_type": "run_tool", "complete_time": {"seconds": 1}}  # fmt: skip
    raw = {
        "eventId": "9",
        "eventType": "EVENT_TYPE_MARKER_RECORDED",
        "markerRecordedEventAttributes": {
            "markerName": "core_local_activity",
            "details": {"data": {"payloads": [_payload(data)]}, "result": {"payloads": [_payload(output)]}},
            "workflowTaskCompletedEventId": "8",
        },
    }
    kept = _kept(raw, lambda name, given: None)
    marker = kept["markerRecordedEventAttributes"]
    assert marker == {"activityType": {"name": "run_tool"}, "result": {"payloads": [_payload(output)]}}
    failed = {**raw, "markerRecordedEventAttributes": {"markerName": "core_local_activity", "details": {}}}
    other = {**raw, "markerRecordedEventAttributes": {"markerName": "core_patch", "details": {"result": {}}}}
    assert "markerRecordedEventAttributes" not in _kept(failed, lambda n, g: None)
    assert "markerRecordedEventAttributes" not in _kept(other, lambda n, g: None)
    call = {"id": "call_1", "type": "function", "function": {"name": "deploy", "arguments": "{}"}}
    asked = (_scheduled("ask"), _completed(1, _payload({"role": "assistant", "tool_calls": [call]})))
    view = store_named("temporal").read(
        _history(*asked, ("MARKER_RECORDED", "markerRecordedEventAttributes", marker))
    )
    assert [(o.call_id, o.text) for o in view.outputs] == [
        ("call_1", "deployed web")
    ] and not view.orphan_calls()


def test_pydantic_ai_s_activities_are_read_from_its_responses_and_its_tool_inputs_call_ids() -> None:
    """Pydantic AI's model activity returns a ``ModelResponse`` (its ``tool-call`` parts the calls); its tool
    activity returns the tool's value untagged by call: the call id comes from the activity's input, and a
    copy keeps that id alone of the input (the run context's other fields, its run id and usage, are the
    app's: never written). An input chaos cannot read leaves no id: the view says so, never guesses."""
    store = store_named("pydantic-ai-temporal")
    context = {"tool_call_id": "call_1", "run_id": "the app's own", "usage": {"requests": 1}, "deps": None}
    given = [_payload({"name": "deploy", "tool_args": {"service": "web"}, "serialized_run_context": context})]
    kept = store.kept_input("agent__deployer__toolset__<agent>__call_tool", given)
    assert kept == {"tool_call_id": "call_1"}
    assert store.kept_input("agent__deployer__model_request", given) is None
    assert "blind" in (store.kept_input("x__call_tool", [_payload({}, "binary/protobuf")]) or {})
    assert "unreadable" in (store.kept_input("x__call_tool", [_payload({"name": "deploy"})]) or {})
    part = {
        "tool_name": "deploy",
        "args": '{"service": "web"}',
        "tool_call_id": "call_1",
        "part_kind": "tool-call",
    }
    response = {"parts": [part], "kind": "response"}
    started = ("WORKFLOW_EXECUTION_STARTED", "workflowExecutionStartedEventAttributes", {"input": {"payloads": [_payload("Deploy web.")]}})  # fmt: skip
    model = (_scheduled("agent__deployer__model_request"), _completed(2, _payload(response)))
    tool = "agent__deployer__toolset__<agent>__call_tool"
    answered = (
        _scheduled(tool, kept),
        _completed(4, _payload({"result": "deployed web", "kind": "tool_return"})),
    )
    view = store.read(_history(started, *model, *answered))
    assert [(c.id, c.name) for c in view.calls] == [("call_1", "deploy")]
    assert [(o.call_id, o.text) for o in view.outputs] == [("call_1", "deployed web")]
    retried = (_scheduled(tool, kept), _completed(4, _payload({"message": "again", "kind": "model_retry"})))
    assert [o.text for o in store.read(_history(started, *model, *retried)).outputs] == ["model_retry"]
    assert store.read(_history(started, *model)).orphan_calls()  # the tool's output not durable
    lost = (_scheduled(tool, {"unreadable": "no id"}), answered[1])
    assert store.read(_history(started, *model, *lost)).unreadable
    assert store.read(_history(started, *model, _scheduled(tool, {"blind": "protobuf"}), answered[1])).blind
    assert store.read(_history(started, _scheduled("a__model_request"), _completed(2, _payload("hi")))).blind


# -- the real server and the bundled agent ----------------------------------------------------------------
def _servers(root: Path) -> list[psutil.Process]:
    """The live Temporal servers whose command line names a folder under ``root``."""
    return [
        proc
        for proc in psutil.process_iter(["name", "cmdline", "status"])
        if proc.info["name"] == "temporal"
        and proc.info["status"] != psutil.STATUS_ZOMBIE
        and str(root) in " ".join(proc.info["cmdline"] or [])
    ]


@needs_temporal
def test_the_world_runs_its_own_server_and_it_goes_with_the_world() -> None:
    world = open_world(api.load(ONE), load_target(TEMPORAL), {})
    root = world.box.root
    try:
        assert world.relay is not None and world.engine_address.startswith("127.0.0.1:")
        assert _servers(root), "no server ran in the world's sandbox"
        assert world.store.snapshot(world.box.workspace, "history.json") == {}  # no workflow yet
    finally:
        world.close()
    assert not root.exists() and not _servers(root)


@needs_temporal
def test_without_the_temporal_binary_a_target_on_temporal_is_unusable_and_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from chaos.world import temporal

    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(temporal.sysconfig, "get_path", lambda _: str(tmp_path))
    code = main(["run", str(ONE), "--target", str(TEMPORAL), "--results", str(tmp_path / "r")])
    said = capsys.readouterr()
    assert code == 2, said
    assert "pip install 'durable-chaos[temporal]'" in said.out + said.err


@needs_temporal
def test_the_bundled_temporal_target_is_usable(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["target", "check", str(TEMPORAL)]) == 0, capsys.readouterr().out


@needs_temporal
@needs_ptrace
@pytest.mark.slow
def test_a_sweep_of_the_workflow_agent_is_clean_and_each_broken_variant_is_one_failure(
    tmp_path: Path,
) -> None:
    """The default matrix over the deploy: every kill exact at its boundary (the relay holds the server's
    answer to a call that records history), and the recovery keeps Temporal's promise. The same workflow
    with its tool run in the workflow's own code (no activity) records no output: one failure (its sweep is
    docs/frameworks.md's); one that reads the world in its own code replays another path after a restart: one distinct failure,
    in Temporal's words."""
    done = api.sweep([ONE], TEMPORAL, results=tmp_path / "agent", jobs=2)
    summary = json.loads((tmp_path / "agent" / "summary.json").read_text())
    assert done.ok, [g.label for g in done.summary.groups]
    assert summary["reached"] >= 10 and summary["exact"] == summary["reached"], summary
    assert summary["coverage"]["cells"].get("kill at commit", 0) >= 1, summary["coverage"]["cells"]
    broken = tmp_path / "tool-in-workflow.toml"
    app = '"--app", "chaos.bundled.targets.frameworks.temporal_app:ToolInWorkflow", "--workflow"'
    broken.write_text(TEMPORAL.read_text().replace('"--workflow"', app))
    assert _failed(broken, tmp_path / "broken") == ["store-consistent"]


def _failed(target: Path, results: Path) -> list[str]:
    """The checks a kill of ``target`` as the deploy's output becomes durable fails (its verdict's)."""
    at = ["--kill-at", "output-durable[tool=deploy]", "--results", str(results)]
    main(["run", str(ONE), "--target", str(target), *at])
    checks = json.loads((results / "verdict.json").read_text())["checks"]
    return [c["id"] for c in checks if c["ok"] is False]


@needs_modules("temporalio", "hpack", "pydantic_ai")
@needs_ptrace
@pytest.mark.slow
def test_pydantic_ai_on_temporal_is_usable_and_a_tool_out_of_its_activity_is_one_failure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The bundled agent made durable by ``TemporalDurability``: usable, and killed as its deploy's output
    becomes durable it recovers clean (the kill exact: the relay held the completion's answer). The same
    agent with the deploy out of its activity (``"temporal": False``) records no output: one failure."""
    assert main(["target", "check", str(PYDANTIC_AI)]) == 0, capsys.readouterr().out
    assert _failed(PYDANTIC_AI, tmp_path / "durable") == []
    assert "exactly at the boundary" in capsys.readouterr().out
    careless = tmp_path / "careless.toml"
    careless.write_text(PYDANTIC_AI.read_text().replace("_app:Deployer", "_app:Careless"))
    assert _failed(careless, tmp_path / "careless") == ["store-consistent"]


@needs_temporal
@needs_ptrace
@pytest.mark.slow
def test_calls_run_as_local_activities_are_reordered_within_their_workflow_task(tmp_path: Path) -> None:
    """``LocalSteps`` runs the calls of one answer at once as local activities: nothing commits while the
    first deploy is parked at its end, so ``overtaken`` lets it go once the second call has gone on to its
    change log entry, and kills at the commit that records all four markers, the other call's deploy
    first. The store reads each marker as a completed activity; a new worker replays the order the
    task recorded, and the recovery is clean (temporalio/sdk-python#1578 does not show on 1.35.0)."""
    module = "chaos.bundled.targets.frameworks.temporal_app"
    named = f'"--app", "{module}:LocalSteps", "--activities", "{module}:LOCAL", "--cache", "--workflow"'
    target = tmp_path / "local.toml"
    target.write_text(TEMPORAL.read_text().replace('"--workflow"', named))
    two = ["run", "deploy-two-at-once", "--target", str(target), "--kill-at", "effect-done[effect=deploy]"]
    assert main([*two, "--fault", "overtaken", "--results", str(tmp_path / "r")]) == 0
    verdict = json.loads((tmp_path / "r" / "verdict.json").read_text())
    assert verdict["phases"][0]["overtaken"] is True and verdict["phases"][0]["exact"], verdict["landed"]
    copy = json.loads(next((tmp_path / "r" / "prefix").rglob("history.json")).read_text())
    markers = [
        (e["markerRecordedEventAttributes"]["activityType"]["name"], json.loads(base64.b64decode(p["data"])))
        for e in copy["workflows"][0]["history"]["events"]
        if "markerRecordedEventAttributes" in e
        for p in e["markerRecordedEventAttributes"]["result"]["payloads"]
    ]
    # all four in the task, the held deploy (the first to start: the threads decide which) recorded after
    # the other's; whether the other's change log entry ends before the let-go deploy returns is the
    # machine's timing, not the fault's
    ledger = json.loads((tmp_path / "r" / "ledger.json").read_text())
    held = next(e["callId"] for e in ledger if e["effect"] == "deploy" and e["phase"] == "start")
    assert sorted(name for name, _ in markers) == ["deploy_locally"] * 2 + ["log_change"] * 2, markers
    deploys = [result["tool_call_id"] for name, result in markers if name == "deploy_locally"]
    assert markers[0][0] == "deploy_locally" and len(set(deploys)) == 2 and deploys[-1] == held, markers


@needs_temporal
@pytest.mark.slow
def test_no_server_outlives_a_chaos_killed(tmp_path: Path) -> None:
    """Killed outright (SIGKILL), chaos can remove nothing: its Temporal servers die with it (the kernel's
    parent-death signal)."""
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    args = [sys.executable, "-m", "chaos", "sweep", str(ONE), "--target", str(TEMPORAL), "-j", "2"]
    proc = subprocess.Popen(
        [*args, "--results", str(tmp_path / "r")],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=default_signals,
    )
    deadline = time.monotonic() + 120
    while not _servers(tmp_path) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert _servers(tmp_path), "no server started"
    proc.send_signal(signal.SIGKILL)
    proc.wait(60)
    deadline = time.monotonic() + 10
    while _servers(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _servers(tmp_path), [p.info["cmdline"] for p in _servers(tmp_path)]
    for child in psutil.Process().children(recursive=True):  # what the killed chaos left (the agent)
        child.kill()
