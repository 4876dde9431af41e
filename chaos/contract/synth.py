"""Synthesize realistic valid session logs by driving the planner with random outcomes.

Tests (Hypothesis properties) and ``bench/reduce.py`` need many valid logs that
cover every state the contract has: tool runs, usage, live failures, crash-unknown
attempts and retries, pending tools resolved by replay or synthetic results,
aborts, truncation and compactions. Each outcome is drawn from ``rnd``; the
writer reduces every transaction as a candidate, so the output is valid by
construction.
"""

from __future__ import annotations

import random
from typing import Any

import orjson

from chaos.contract import facts as F
from chaos.contract.digest import digest
from chaos.contract.planner import plan_recovery
from chaos.contract.reducer import Reducer

_ZERO = "sha256:" + "0" * 64
TOOLS = [
    {"name": "read", "replay": "safe", "replayKey": "builtin:read:v1"},
    {"name": "bash", "replay": "never", "replayKey": "bash:v1"},
    {"name": "write", "replay": "never", "replayKey": "write:v1"},
    {"name": "edit", "replay": "never", "replayKey": "edit:v1"},
]
SNAPSHOT = {
    "model": "synth/model",
    "systemPromptDigest": _ZERO,
    "tools": [{"name": t["name"], "definitionDigest": _ZERO} for t in TOOLS],
    "adapterIdentity": "openai:chat-completions:v1",
    "routingIdentity": "openai:synth/model",
    "outputOptionsDigest": _ZERO,
}
CURRENT: dict[str, Any] = {
    "configurationDigest": digest(SNAPSHOT),
    "environmentIdentity": "synth",
    "tools": [{**t, "definitionDigest": _ZERO} for t in TOOLS],
}
_WORDS = [
    "the",
    "agent",
    "reads",
    "a",
    "file",
    "then",
    "runs",
    "a",
    "command",
    "and",
    "writes",
    "the",
    "result",
    "back",
    "to",
    "disk",
]


def _text(rnd: random.Random, low: int, high: int) -> str:
    return " ".join(rnd.choice(_WORDS) for _ in range(rnd.randint(low, high)))


def _calls(rnd: random.Random, turn: int) -> list[dict[str, Any]]:
    calls = []
    for i in range(rnd.choice((1, 1, 1, 2, 3))):
        name = rnd.choice(("read", "read", "bash", "write", "edit", "missing"))
        arguments = orjson.dumps({"path": f"src/{_text(rnd, 1, 2)}.py", "n": rnd.randint(0, 99)}).decode()
        if rnd.random() < 0.05:
            arguments = "not json {"
        calls.append(
            {"id": f"call_{turn}_{i}", "type": "function", "function": {"name": name, "arguments": arguments}}
        )
    return calls


def _counters(rnd: random.Random) -> dict[str, int]:
    return {k: rnd.randint(0, 5000) for k in ("input", "output", "cacheRead", "cacheWrite")}


def synthesize(rnd: random.Random, operations: int, crash_rate: float = 0.05) -> bytes:
    """A valid log of about ``operations`` runs and compactions."""
    reducer = Reducer()
    clock = {"ms": 1_710_000_000_000}

    def tick() -> int:
        clock["ms"] += 1
        return clock["ms"]

    w = F.Writer(reducer, F.counter_ids(), tick)
    lines = [w.header("/workspace", "openai", "synth/model", "synth")]
    for _ in range(operations):
        st = w.state
        if len(st.active) > 3 and rnd.random() < 0.1:
            lines += _compaction(rnd, w)
        else:
            lines += _run(rnd, w, crash_rate)
    return b"".join(lines)


def _compaction(rnd: random.Random, w: F.Writer) -> list[bytes]:
    st = w.state
    op_id, result_id = w.new_id(), w.new_id()
    lines = [w.commit(F.compaction_started(st, op_id, result_id, rnd.randint(0, 3)))]
    op = st.operation
    assert op is not None
    plan = plan_recovery(st, CURRENT)
    lines.append(w.commit(F.step_attempt(op, plan, w.new_id(), w.new_id(), SNAPSHOT)))
    lines.append(w.commit(F.compaction_entry(st, _text(rnd, 5, 40))))
    lines.append(w.commit(F.usage(op, "attemptId", op.step.attempt_id, _counters(rnd))))  # type: ignore[union-attr]
    lines.append(w.commit(*F.plan_facts(st, plan_recovery(st, CURRENT))))
    return lines


def _run(rnd: random.Random, w: F.Writer, crash_rate: float) -> list[bytes]:
    st = w.state
    lines = [w.commit(*F.start_run(w.new_id, _text(rnd, 3, 30)))]
    turn = 0
    while st.operation is not None:
        op = st.operation
        plan = plan_recovery(st, CURRENT)
        kind = plan["type"]
        if kind == "startStep":
            lines.append(
                w.commit(F.step_attempt(op, plan, plan.get("stepId") or w.new_id(), w.new_id(), SNAPSHOT))
            )
            roll = rnd.random()
            if roll < crash_rate:
                continue  # crash with the attempt open: the planner retries or gives up
            if roll < 2 * crash_rate:
                lines.append(w.commit(F.step_failed(op, "rate_limited", "HTTP 429")))
                continue
            if roll < 2.5 * crash_rate:
                lines.append(w.commit(F.abort_requested(op, "model")))
                continue
            turn += 1
            if turn < 4 and rnd.random() < 0.7:
                message = {"role": "assistant", "content": None, "tool_calls": _calls(rnd, turn)}
                stop = "length" if rnd.random() < 0.05 else "toolUse"
            else:
                message, stop = {"role": "assistant", "content": _text(rnd, 5, 80)}, "stop"
            lines.append(w.commit(F.assistant_message(op, message, stop)))
            lines.append(w.commit(F.usage(op, "attemptId", op.step.attempt_id, _counters(rnd))))  # type: ignore[union-attr]
        elif kind == "startTool":
            assistant = st.last_assistant
            assert assistant is not None
            index = plan["toolIndex"]
            if plan["mode"] == "start":
                declaration = next(t for t in CURRENT["tools"] if t["name"] == plan["toolName"])
                fact = F.tool_started(
                    op, assistant, index, plan["arguments"], declaration, w.new_id(), "synth"
                )
                lines.append(w.commit(fact))
                if rnd.random() < crash_rate:
                    continue  # crash after the intent: replay or interrupted next
            call = assistant.started[index]
            output = _text(rnd, 10, 300)
            if rnd.random() < 0.1:
                lines.append(
                    w.commit(
                        F.tool_result(call, output),
                        F.usage(op, "toolStartedId", call.tool_started_id, _counters(rnd)),
                    )
                )
            else:
                lines.append(w.commit(F.tool_result(call, output, ok=rnd.random() > 0.1)))
        elif kind == "blocked":
            lines.append(w.commit(F.abort_requested(op, "model")))
        else:
            lines.append(w.commit(*F.plan_facts(st, plan)))
    return lines
