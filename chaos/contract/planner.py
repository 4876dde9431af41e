"""planRecovery (contract section 7): the next single effect recovery must take, and the row it came from.

Pure: it reads a reduced SessionState and the current configuration, allocates
no ids and touches nothing. The checks run in the contract's order; each
branch is one *row* of the decision tree (``ROWS``), named after the step of
section 7 it implements. ``decide`` returns the row with the plan: a failure is
keyed by the row the agent broke (``chaos.triage``), and a night's coverage is
the set of rows its crash prefixes reached.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from chaos.contract.reducer import SYNTHETIC_CONTENT, Assistant, SessionState, parse_arguments

Plan = dict[str, Any]

# Every row of section 7's decision tree, in its order: id -> when it applies, and what it plans.
ROWS = {
    "0-idle": "nothing in flight: finish completed (nothing to do)",
    "1-abort-open-attempt": "abort requested, an attempt open: closeAttempt aborted",
    "1-abort-unresolved-calls": "abort requested, calls without results: appendSynthetic interrupted/aborted",
    "1-abort-finish": "abort requested, nothing left open: finish aborted",
    "2-no-step": "no step yet: startStep attempt 1",
    "3-configuration-changed": "a step attempting or failed, configuration changed: blocked",
    "3-environment-changed": "a step attempting or failed, environment changed: blocked",
    "3-step-failed": "a failed step: finish failed",
    "3-retry-attempt": "attempt 1 open (crashed): startStep attempt 2",
    "3-attempts-exhausted": "attempt 2 open (crashed): blocked attempts_exhausted",
    "4-compaction-settled": "a settled compaction: finish completed",
    "5-length-unresolved": "a length stop with calls: appendSynthetic truncated",
    "5-length-finish": "a length stop, its calls resolved: finish completed truncated",
    "5-no-tool-calls": "an answer without calls: finish completed",
    "5-unknown-tool": "the next call's tool is not declared: appendSynthetic unknownTool",
    "5-invalid-arguments": "the next call's arguments are no JSON object: appendSynthetic invalidArguments",
    "5-start-tool": "the next call has no toolStarted: startTool start",
    "5-started-environment-changed": "a started call, environment changed: blocked",
    "5-started-configuration-changed": "a started call, its tool gone or redefined: blocked",
    "5-replay-safe": "a started safe call, still safe with the same key: startTool replay",
    "5-replay-declaration-changed": "a started safe call no longer safe, or its key changed: blocked",
    "5-interrupted-never": "a started never call: appendSynthetic interrupted",
    "5-all-resolved": "every call resolved: startStep attempt 1",
}


@dataclass(frozen=True)
class Decision:
    row: str  # a key of ROWS
    plan: Plan


def _blocked(row: str, reason: str) -> Decision:
    return Decision(row, {"type": "blocked", "reason": reason})


def _synthetic(assistant: Assistant, index: int, reason: str) -> dict[str, Any]:
    call = assistant.calls[index]
    result = {
        "assistantEntryId": assistant.entry_id,
        "toolIndex": index,
        "toolCallId": call["id"],
        "toolName": call["function"]["name"],
    }
    started = assistant.started.get(index)
    if started is not None:
        result["toolName"] = started["toolName"]
        result["toolStartedId"] = started.tool_started_id
        result["resultEntryId"] = started["resultEntryId"]
    result["reason"] = reason
    result["content"] = SYNTHETIC_CONTENT[reason]
    return result


def plan_recovery(state: SessionState, current: dict[str, Any]) -> Plan:
    """Plan the next recovery effect for ``state`` under the ``current`` configuration."""
    return decide(state, current).plan


def decide(state: SessionState, current: dict[str, Any]) -> Decision:
    """The row of section 7 that applies to ``state`` under ``current``, and its plan."""
    op = state.operation
    # 0. nothing in flight
    if op is None:
        return Decision("0-idle", {"type": "finish", "outcome": "completed", "completion": "normal"})
    step = op.step
    # 1. an abort request wins over everything
    if op.abort_requested:
        if op.open_attempt():
            closing = {"type": "closeAttempt", "error": {"code": "aborted", "message": "Operation aborted"}}
            return Decision("1-abort-open-attempt", closing)
        assistant = op.assistant
        if assistant is not None and assistant.unresolved():
            results = [
                _synthetic(assistant, i, "interrupted" if i in assistant.started else "aborted")
                for i in assistant.unresolved()
            ]
            return Decision("1-abort-unresolved-calls", {"type": "appendSynthetic", "results": results})
        return Decision("1-abort-finish", {"type": "finish", "outcome": "aborted"})
    step_kind = "assistant" if op.kind == "run" else "compaction"
    # 2. no step yet
    if step is None:
        plan: Plan = {
            "type": "startStep",
            "stepKind": step_kind,
            "attempt": 1,
            "contextThroughEntryId": op.input_entry_id,
        }
        return Decision("2-no-step", plan)
    # 3. a step in flight or failed: gates first, then attempts and failure
    if step.status in ("attempting", "failed"):
        if current["configurationDigest"] != step.digest:
            return _blocked("3-configuration-changed", "configuration_changed")
        if current["environmentIdentity"] != state.header["environmentIdentity"]:
            return _blocked("3-environment-changed", "environment_changed")
        if step.status == "failed":
            return Decision("3-step-failed", {"type": "finish", "outcome": "failed", "error": step.error})
        if step.attempt == 1:
            plan = {
                "type": "startStep",
                "stepKind": step.step_kind,
                "attempt": 2,
                "stepId": step.step_id,
                "contextThroughEntryId": step.context_through,
            }
            return Decision("3-retry-attempt", plan)
        return _blocked("3-attempts-exhausted", "attempts_exhausted")
    # 4. a settled compaction
    if op.kind == "compaction":
        plan = {"type": "finish", "outcome": "completed", "finalEntryId": op.result_entry_id}
        return Decision("4-compaction-settled", plan)
    # 5. a settled assistant step: the last assistant message, whether or not it has tool calls
    assistant = state.last_assistant
    assert assistant is not None
    return decide_assistant(state, assistant, step.snapshot, current)


def decide_assistant(
    state: SessionState, assistant: Assistant, snapshot: dict[str, Any], current: dict[str, Any]
) -> Decision:
    """Section 7 step 5 for one settled assistant entry (``snapshot`` is the step's configuration)."""
    unresolved = assistant.unresolved()
    if assistant.stop_reason == "length":
        if unresolved:
            results = [_synthetic(assistant, i, "truncated") for i in unresolved]
            return Decision("5-length-unresolved", {"type": "appendSynthetic", "results": results})
        plan: Plan = {
            "type": "finish",
            "outcome": "completed",
            "completion": "truncated",
            "finalEntryId": assistant.entry_id,
        }
        return Decision("5-length-finish", plan)
    if not assistant.calls:
        plan = {
            "type": "finish",
            "outcome": "completed",
            "completion": "normal",
            "finalEntryId": assistant.entry_id,
        }
        return Decision("5-no-tool-calls", plan)
    if not unresolved:
        plan = {
            "type": "startStep",
            "stepKind": "assistant",
            "attempt": 1,
            "contextThroughEntryId": state.boundary,
        }
        return Decision("5-all-resolved", plan)
    declared = {tool["name"]: tool for tool in current["tools"]}
    index = unresolved[0]
    started = assistant.started.get(index)
    if started is None:
        call = assistant.calls[index]["function"]
        if call["name"] not in declared:
            results = [_synthetic(assistant, index, "unknownTool")]
            return Decision("5-unknown-tool", {"type": "appendSynthetic", "results": results})
        arguments = parse_arguments(call["arguments"])
        if arguments is None:
            results = [_synthetic(assistant, index, "invalidArguments")]
            return Decision("5-invalid-arguments", {"type": "appendSynthetic", "results": results})
        plan = {
            "type": "startTool",
            "mode": "start",
            "assistantEntryId": assistant.entry_id,
            "toolIndex": index,
            "toolName": call["name"],
            "arguments": arguments,
        }
        return Decision("5-start-tool", plan)
    if started["environmentIdentity"] != current["environmentIdentity"]:
        return _blocked("5-started-environment-changed", "environment_changed")
    now = declared.get(started["toolName"])
    recorded = {t["name"]: t["definitionDigest"] for t in snapshot["tools"]}.get(started["toolName"])
    if now is None or now["definitionDigest"] != recorded:
        return _blocked("5-started-configuration-changed", "configuration_changed")
    if started["replay"] == "safe":
        if now["replay"] == "safe" and now["replayKey"] == started["replayKey"]:
            plan = {
                "type": "startTool",
                "mode": "replay",
                "assistantEntryId": assistant.entry_id,
                "toolIndex": index,
                "toolStartedId": started.tool_started_id,
                "toolName": started["toolName"],
                "arguments": started["arguments"],
            }
            return Decision("5-replay-safe", plan)
        return _blocked("5-replay-declaration-changed", "replay_declaration_changed")
    results = [_synthetic(assistant, index, "interrupted")]
    return Decision("5-interrupted-never", {"type": "appendSynthetic", "results": results})
