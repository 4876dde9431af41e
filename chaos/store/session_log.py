"""The session contract's JSONL log as a store: the first adapter, read by the contract's own reducer.

A call is durable once its ``toolStarted`` intent is (the contract's promise:
intent before effect); an output is a tool entry; the final answer the last
assistant entry that stopped. Only lines the reducer accepts count.
"""

from __future__ import annotations

from typing import Any

from chaos.contract import Reducer
from chaos.contract.framing import committed_facts
from chaos.contract.kinds import kind_of
from chaos.contract.reading import session_id
from chaos.store.base import Call, Output, Store, View, oversized, register, text_of


def _arguments(entry: dict[str, Any]) -> dict[str, str]:
    calls = entry.get("message", {}).get("tool_calls") or []
    return {str(c.get("id")): str(c.get("function", {}).get("arguments", "")) for c in calls}


class SessionLog(Store):
    name = "session-log"
    commit = "line"
    description = "the session contract's JSONL log (tiny-agent), read by chaos's reducer"

    def session_id(self, files: dict[str, bytes]) -> str | None:
        """The id in the log's header (the agent chose it)."""
        return next((found for name in sorted(files) if (found := session_id(files[name]))), None)

    def read(self, files: dict[str, bytes]) -> View:
        if (large := oversized(files)) is not None:
            return View(blind=large)
        calls: list[Call] = []
        outputs: list[Output] = []
        final, items, arguments, started = None, 0, {}, False
        inputs: list[str] = []
        for name in sorted(files):
            data = files[name]
            reducer = Reducer.of(data)
            accepted = reducer.line
            items += accepted
            for fact in committed_facts(data, accepted):
                kind, body = kind_of(fact)
                if kind == "entry:user":
                    started = True
                    inputs.append(text_of(body["message"].get("content")))
                if kind == "entry:toolUse":
                    arguments.update(_arguments(body))
                elif kind == "toolStarted":
                    call_id = str(body["toolCallId"])
                    calls.append(Call(call_id, str(body["toolName"]), arguments.get(call_id, "")))
                elif kind == "entry:tool":
                    message = body["message"]
                    outputs.append(Output(str(message["tool_call_id"]), str(message.get("content"))))
                elif kind == "entry:stop":
                    final = str(body["message"].get("content") or "")
            if reducer.error is not None:
                unreadable = f"{name}: {reducer.error}"
                return View(
                    tuple(calls),
                    tuple(outputs),
                    final,
                    items,
                    unreadable,
                    started=started,
                    inputs=tuple(inputs),
                )
        return View(tuple(calls), tuple(outputs), final, items, started=started, inputs=tuple(inputs))


SESSION_LOG = register(SessionLog())
