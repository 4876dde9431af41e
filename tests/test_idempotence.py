"""Planner idempotence: carrying out a plan as a writer would never leads to the same effect again."""

from __future__ import annotations

import json
from typing import Any

from chaos.contract import Reducer, plan_recovery
from chaos.contract import facts as F
from chaos.contract.framing import committed_facts
from chaos.contract.synth import SNAPSHOT
from tests.conftest import unpack_case

APPENDING = {"appendSynthetic", "closeAttempt", "startStep", "startTool"}


def _carry_out(w: F.Writer, plan: dict[str, Any], snapshot: dict[str, Any]) -> bytes:
    """Commit what a writer appends to carry out ``plan`` (model and tools simulated); return the bytes."""
    st = w.state
    op = st.operation
    assert op is not None
    if plan["type"] == "startStep":
        line = w.commit(F.step_attempt(op, plan, plan.get("stepId") or w.new_id(), w.new_id(), snapshot))
        if plan["stepKind"] == "compaction":
            return line + w.commit(F.compaction_entry(w.state, "summary"))
        return line + w.commit(F.assistant_message(op, {"role": "assistant", "content": "done"}, "stop"))
    if plan["type"] == "startTool":
        assistant = st.last_assistant
        assert assistant is not None
        line = b""
        if plan["mode"] == "start":
            declaration = {"replay": "safe", "replayKey": "builtin:read:v1"}
            index = plan["toolIndex"]
            line = w.commit(
                F.tool_started(op, assistant, index, plan["arguments"], declaration, w.new_id(), "fixture")
            )
        return line + w.commit(F.tool_result(assistant.started[plan["toolIndex"]], "contents"))
    return w.commit(*F.plan_facts(st, plan))


def _snapshot(data: bytes) -> dict[str, Any] | None:
    """The configuration snapshot the log itself recorded last, if it has one."""
    attempts = [
        f["record"]["configurationSnapshot"]
        for f in committed_facts(data)
        if f["kind"] == "record" and f["record"]["type"] == "stepAttempt"
    ]
    return attempts[-1] if attempts else None


def _effect_key(plan: dict[str, Any]) -> Any:
    if plan["type"] == "appendSynthetic":
        return {(r["assistantEntryId"], r["toolIndex"]) for r in plan["results"]}
    if plan["type"] == "startTool":
        return {(plan["assistantEntryId"], plan["toolIndex"])}
    return {json.dumps(plan, sort_keys=True)}


def test_applied_plan_is_never_planned_again(planner_case: Any) -> None:
    root, entry = unpack_case(planner_case)
    case = json.loads((root / "planner-fixtures" / entry["input"]).read_text())
    data = (root / "fixtures" / case["sessionFile"]).read_bytes()
    reducer = Reducer()
    reducer.feed(data)
    assert reducer.state is not None
    first = plan_recovery(reducer.state, case["current"])
    if first["type"] not in APPENDING:
        return
    snapshot = _snapshot(data) or SNAPSHOT
    w = F.Writer(reducer, F.counter_ids(1_800_000_000_000))
    appended = _carry_out(w, first, snapshot)
    reopened = Reducer()  # a fresh process reopening the file sees the same state
    reopened.feed(data[: reducer.repaired_length - len(appended)] + appended)
    assert reopened.result() == reducer.result() and reopened.state is not None
    again = plan_recovery(reopened.state, case["current"])
    assert not (_effect_key(again) & _effect_key(first)), (first, again)
