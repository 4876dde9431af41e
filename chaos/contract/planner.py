"""planRecovery (contract section 7): the next single effect recovery must take.

Pure: it reads a reduced SessionState and the current configuration, allocates
no ids and touches nothing. The checks run in the contract's order; the
comments name the step of section 7 each branch implements.
"""

from __future__ import annotations

from typing import Any

from chaos.contract.reducer import SYNTHETIC_CONTENT, Assistant, SessionState, parse_arguments

Plan = dict[str, Any]


def _blocked(reason: str) -> Plan:
    return {"type": "blocked", "reason": reason}


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
    op = state.operation
    # 0. nothing in flight
    if op is None:
        return {"type": "finish", "outcome": "completed", "completion": "normal"}
    step = op.step
    # 1. an abort request wins over everything
    if op.abort_requested:
        if op.open_attempt():
            return {"type": "closeAttempt", "error": {"code": "aborted", "message": "Operation aborted"}}
        assistant = op.assistant
        if assistant is not None and assistant.unresolved():
            return {
                "type": "appendSynthetic",
                "results": [
                    _synthetic(assistant, i, "interrupted" if i in assistant.started else "aborted")
                    for i in assistant.unresolved()
                ],
            }
        return {"type": "finish", "outcome": "aborted"}
    step_kind = "assistant" if op.kind == "run" else "compaction"
    # 2. no step yet
    if step is None:
        return {
            "type": "startStep",
            "stepKind": step_kind,
            "attempt": 1,
            "contextThroughEntryId": op.input_entry_id,
        }
    # 3. a step in flight or failed: gates first, then attempts and failure
    if step.status in ("attempting", "failed"):
        if current["configurationDigest"] != step.digest:
            return _blocked("configuration_changed")
        if current["environmentIdentity"] != state.header["environmentIdentity"]:
            return _blocked("environment_changed")
        if step.status == "failed":
            return {"type": "finish", "outcome": "failed", "error": step.error}
        if step.attempt == 1:
            return {
                "type": "startStep",
                "stepKind": step.step_kind,
                "attempt": 2,
                "stepId": step.step_id,
                "contextThroughEntryId": step.context_through,
            }
        return _blocked("attempts_exhausted")
    # 4. a settled compaction
    if op.kind == "compaction":
        return {"type": "finish", "outcome": "completed", "finalEntryId": op.result_entry_id}
    # 5. a settled assistant step: the last assistant message, whether or not it has tool calls
    assistant = state.last_assistant
    assert assistant is not None
    return plan_assistant(state, assistant, step.snapshot, current)


def plan_assistant(
    state: SessionState, assistant: Assistant, snapshot: dict[str, Any], current: dict[str, Any]
) -> Plan:
    """Section 7 step 5 for one settled assistant entry (``snapshot`` is the step's configuration)."""
    unresolved = assistant.unresolved()
    if assistant.stop_reason == "length":
        if unresolved:
            return {
                "type": "appendSynthetic",
                "results": [_synthetic(assistant, i, "truncated") for i in unresolved],
            }
        return {
            "type": "finish",
            "outcome": "completed",
            "completion": "truncated",
            "finalEntryId": assistant.entry_id,
        }
    if not assistant.calls:
        return {
            "type": "finish",
            "outcome": "completed",
            "completion": "normal",
            "finalEntryId": assistant.entry_id,
        }
    if not unresolved:
        return {
            "type": "startStep",
            "stepKind": "assistant",
            "attempt": 1,
            "contextThroughEntryId": state.boundary,
        }
    declared = {tool["name"]: tool for tool in current["tools"]}
    index = unresolved[0]
    started = assistant.started.get(index)
    if started is None:
        call = assistant.calls[index]["function"]
        if call["name"] not in declared:
            return {"type": "appendSynthetic", "results": [_synthetic(assistant, index, "unknownTool")]}
        arguments = parse_arguments(call["arguments"])
        if arguments is None:
            return {"type": "appendSynthetic", "results": [_synthetic(assistant, index, "invalidArguments")]}
        return {
            "type": "startTool",
            "mode": "start",
            "assistantEntryId": assistant.entry_id,
            "toolIndex": index,
            "toolName": call["name"],
            "arguments": arguments,
        }
    if started["environmentIdentity"] != current["environmentIdentity"]:
        return _blocked("environment_changed")
    now = declared.get(started["toolName"])
    recorded = {t["name"]: t["definitionDigest"] for t in snapshot["tools"]}.get(started["toolName"])
    if now is None or now["definitionDigest"] != recorded:
        return _blocked("configuration_changed")
    if started["replay"] == "safe":
        if now["replay"] == "safe" and now["replayKey"] == started["replayKey"]:
            return {
                "type": "startTool",
                "mode": "replay",
                "assistantEntryId": assistant.entry_id,
                "toolIndex": index,
                "toolStartedId": started.tool_started_id,
                "toolName": started["toolName"],
                "arguments": started["arguments"],
            }
        return _blocked("replay_declaration_changed")
    return {"type": "appendSynthetic", "results": [_synthetic(assistant, index, "interrupted")]}
