"""Building contract facts and committing them as transactions.

A ``Writer`` turns fact bodies into one JSONL transaction line, reduces it as a
candidate on its own ``Reducer`` (a rejected candidate raises ContractError and
changes nothing) and returns the exact bytes to append. Ids come from an
injected source so that tests and synthesized logs stay deterministic.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

import orjson

from chaos.contract.digest import digest
from chaos.contract.reducer import Assistant, Operation, Reducer, SessionState, ToolCall

Fact = tuple[str, dict[str, Any], str | None]  # (kind, body, fixed fact id or None)


def uuid7(ms: int, rand: int) -> str:
    """A UUIDv7 string from a millisecond timestamp and 74 random bits."""
    value = (
        (ms & (2**48 - 1)) << 80 | 0x7 << 76 | ((rand >> 62) & 0xFFF) << 64 | 0b10 << 62 | rand & (2**62 - 1)
    )
    h = f"{value:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def system_ids() -> Callable[[], str]:
    return lambda: uuid7(time.time_ns() // 1_000_000, int.from_bytes(os.urandom(10)))


def counter_ids(base_ms: int = 1_710_000_000_000) -> Callable[[], str]:
    """Deterministic, increasing UUIDv7s."""
    state = {"n": 0}

    def new_id() -> str:
        state["n"] += 1
        return uuid7(base_ms + state["n"], state["n"])

    return new_id


class Writer:
    def __init__(
        self,
        reducer: Reducer,
        new_id: Callable[[], str] | None = None,
        clock: Callable[[], int] | None = None,
    ) -> None:
        self.reducer = reducer
        self.new_id = new_id or system_ids()
        self.clock = clock or (lambda: time.time_ns() // 1_000_000)

    @property
    def state(self) -> SessionState:
        assert self.reducer.state is not None, "the log has no header yet"
        return self.reducer.state

    def header(
        self, cwd: str, provider: str, model: str, environment_identity: str, session_id: str | None = None
    ) -> bytes:
        value = {
            "kind": "header",
            "version": 2,
            "id": session_id or self.new_id(),
            "createdAt": self.clock(),
            "cwd": cwd,
            "provider": provider,
            "model": model,
            "environmentIdentity": environment_identity,
        }
        return self._commit(value)

    def encode(self, facts: list[Fact]) -> bytes:
        """The transaction line for ``facts``, not yet committed."""
        seq, now, out = self.state.seq, self.clock(), []
        for kind, body, fixed_id in facts:
            seq += 1
            fact: dict[str, Any] = {
                "kind": kind,
                "seq": seq,
                "id": fixed_id or self.new_id(),
                "timestamp": now,
            }
            if kind == "usage":
                fact.update(body)
            else:
                fact[kind] = body
            out.append(fact)
        value: Any = out[0] if len(out) == 1 else out
        return orjson.dumps(value) + b"\n"

    def commit(self, *facts: Fact) -> bytes:
        """Reduce the transaction as a candidate; return its line, or raise ContractError."""
        line = self.encode(list(facts))
        self.reducer.append_line(line[:-1])
        return line

    def _commit(self, value: Any) -> bytes:
        line = orjson.dumps(value) + b"\n"
        self.reducer.append_line(line[:-1])
        return line


# -- fact bodies ----------------------------------------------------------------------------------


def user_message(content: str) -> Fact:
    return ("entry", {"type": "message", "message": {"role": "user", "content": content}}, None)


def start_run(new_id: Callable[[], str], content: str) -> list[Fact]:
    """The user entry and its ``runStarted``: one transaction, so "accepted" means both are durable."""
    entry_id = new_id()
    body = {"type": "runStarted", "operationId": new_id(), "operationKind": "run", "inputEntryId": entry_id}
    return [(*user_message(content)[:2], entry_id), ("record", body, None)]


def step_attempt(
    op: Operation, plan: dict[str, Any], step_id: str, attempt_id: str, snapshot: dict[str, Any]
) -> Fact:
    body = {
        "type": "stepAttempt",
        "operationId": op.operation_id,
        "stepId": step_id,
        "attemptId": attempt_id,
        "stepKind": plan["stepKind"],
        "attempt": plan["attempt"],
        "contextThroughEntryId": plan["contextThroughEntryId"],
        "configurationSnapshot": snapshot,
        "configurationDigest": digest(snapshot),
    }
    return ("record", body, None)


def assistant_message(op: Operation, message: dict[str, Any], stop_reason: str) -> Fact:
    step = op.step
    assert step is not None
    body = {
        "type": "message",
        "stepId": step.step_id,
        "attemptId": step.attempt_id,
        "stopReason": stop_reason,
        "message": message,
    }
    return ("entry", body, None)


def tool_started(
    op: Operation,
    assistant: Assistant,
    index: int,
    arguments: dict[str, Any],
    declaration: dict[str, Any],
    result_entry_id: str,
    environment_identity: str,
) -> Fact:
    call = assistant.calls[index]
    body = {
        "type": "toolStarted",
        "operationId": op.operation_id,
        "stepId": assistant.step_id,
        "assistantEntryId": assistant.entry_id,
        "toolIndex": index,
        "toolCallId": call["id"],
        "toolName": call["function"]["name"],
        "arguments": arguments,
        "replay": declaration["replay"],
        "replayKey": declaration["replayKey"],
        "resultEntryId": result_entry_id,
        "environmentIdentity": environment_identity,
    }
    return ("record", body, None)


def tool_result(call: ToolCall, content: str, ok: bool = True) -> Fact:
    body = {
        "type": "message",
        "stepId": call["stepId"],
        "message": {"role": "tool", "content": content, "tool_call_id": call["toolCallId"]},
        "toolName": call["toolName"],
        "toolStartedId": call.tool_started_id,
        "result": {"type": "success" if ok else "error"},
    }
    return ("entry", body, call["resultEntryId"])


def synthetic_results(state: SessionState, plan: dict[str, Any]) -> list[Fact]:
    """The entries an ``appendSynthetic`` plan asks for, in its order."""
    op = state.operation
    assert op is not None and op.assistant is not None
    facts: list[Fact] = []
    for result in plan["results"]:
        message = {"role": "tool", "content": result["content"], "tool_call_id": result["toolCallId"]}
        body: dict[str, Any] = {"type": "message", "stepId": op.assistant.step_id}
        if "toolStartedId" in result:
            body.update(
                message=message,
                toolName=result["toolName"],
                toolStartedId=result["toolStartedId"],
                result={"type": "synthetic", "reason": "interrupted"},
            )
            facts.append(("entry", body, result["resultEntryId"]))
        else:
            body.update(
                assistantEntryId=result["assistantEntryId"],
                toolIndex=result["toolIndex"],
                message=message,
                toolName=result["toolName"],
                result={"type": "synthetic", "reason": result["reason"]},
            )
            facts.append(("entry", body, None))
    return facts


def step_failed(op: Operation, code: str, message: str) -> Fact:
    step = op.step
    assert step is not None
    body = {
        "type": "stepFailed",
        "operationId": op.operation_id,
        "stepId": step.step_id,
        "attemptId": step.attempt_id,
        "error": {"code": code, "message": message},
    }
    return ("record", body, None)


def abort_requested(op: Operation, phase: str, tool_call_id: str | None = None) -> Fact:
    body = {
        "type": "abortRequested",
        "operationId": op.operation_id,
        "operationKind": op.kind,
        "phase": phase,
        "reason": "escape",
    }
    if tool_call_id is not None:
        body["toolCallId"] = tool_call_id
    return ("record", body, None)


def operation_finished(op: Operation, plan: dict[str, Any]) -> Fact:
    body = {"type": "operationFinished", "operationId": op.operation_id, "operationKind": op.kind}
    body.update((k, v) for k, v in plan.items() if k != "type")
    if op.kind == "compaction":
        body.pop("completion", None)
    return ("record", body, None)


def usage(op: Operation, owner: str, owner_id: str, counters: dict[str, int]) -> Fact:
    return ("usage", {"operationId": op.operation_id, owner: owner_id, "usage": counters}, None)


def compaction_started(state: SessionState, operation_id: str, result_entry_id: str, keep: int) -> Fact:
    """Compact all but the last ``keep`` active-context messages."""
    sources = [source for source, _ in state.active]
    keep = min(keep, len(sources) - 1)
    cut = len(sources) - keep
    body = {
        "type": "compactionStarted",
        "operationId": operation_id,
        "operationKind": "compaction",
        "inputThroughEntryId": state.boundary,
        "resultEntryId": result_entry_id,
        "compactedEntryIds": sources[:cut],
        "retainedEntryIds": sources[cut:],
        "sourceDigest": source_digest(state),
    }
    return ("record", body, None)


def source_digest(state: SessionState) -> str:
    """The sourceDigest a compaction started now must carry: the whole active context."""
    return digest([{"sourceEntryId": s, "message": m} for s, m in state.active])


def compaction_entry(state: SessionState, summary: str) -> Fact:
    op = state.operation
    assert op is not None and op.kind == "compaction"
    kept = dict(state.active)
    body = {
        "type": "compaction",
        "operationId": op.operation_id,
        "summary": summary,
        "compactedThroughEntryId": op.compacted[-1],
        "retainedTail": [{"sourceEntryId": s, "message": kept[s]} for s in op.retained],
    }
    return ("entry", body, op.result_entry_id)


def plan_facts(state: SessionState, plan: dict[str, Any]) -> list[Fact]:
    """The facts that carry out a plan needing no outside effect (synthetic results, closing, finishing)."""
    op = state.operation
    assert op is not None
    if plan["type"] == "appendSynthetic":
        return synthetic_results(state, plan)
    if plan["type"] == "closeAttempt":
        return [step_failed(op, plan["error"]["code"], plan["error"]["message"])]
    if plan["type"] == "finish":
        return [operation_finished(op, plan)]
    raise ValueError(f"plan {plan['type']!r} needs an outside effect")
