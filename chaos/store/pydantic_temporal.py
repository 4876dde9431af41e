"""Pydantic AI's durable agent on Temporal as a store: the activities its ``TemporalDurability`` records.

An agent made durable this way (``Agent(..., capabilities=[TemporalDurability()])``, run inside the app's
own ``@workflow.defn``) runs each model request as an activity named ``agent__NAME__model_request`` (or
``_stream``), whose result is the model's ``ModelResponse`` as JSON: its ``tool-call`` parts are the calls,
durable before any of them runs. Each tool call is an activity of its toolset (``...__call_tool``) whose
result is what the tool returned, tagged with its kind (``{"result": ..., "kind": "tool_return"}``) but
not with the call it answers: that is in the activity's input, the serialized run context's
``tool_call_id``, the only part of the input a copy keeps. A tool taken out of its activity (``"temporal":
False``) records nothing: it runs in the workflow's code again on every replay. Payloads are Pydantic's
JSON (``json/plain``); the history is read as ``chaos.store.temporal`` reads it.
``pip install 'durable-chaos[pydantic-ai,temporal]'``.
"""

from __future__ import annotations

import json
from typing import Any

from chaos.store.base import Call, Output, register
from chaos.store.inert import Blind
from chaos.store.temporal import Activity, Kept, TemporalStore, payload

MODEL = ("__model_request", "__model_request_stream")
TOOL = "__call_tool"
RETURNED = ("tool_return", "tool_content")  # the kinds of result that are the tool's return value


def _calls(response: Any) -> list[Call]:
    """The tool calls a model activity's ``ModelResponse`` holds."""
    if not isinstance(response, dict) or response.get("kind") != "response":
        raise Blind("a Pydantic AI model activity returned no ModelResponse chaos reads")
    calls = []
    for part in response.get("parts") or []:
        if isinstance(part, dict) and part.get("part_kind") == "tool-call":
            arguments = part.get("args")
            text = arguments if isinstance(arguments, str) else json.dumps(arguments or {})
            calls.append(Call(str(part["tool_call_id"]), str(part["tool_name"]), text))
    return calls


def _first(values: list[Any]) -> Any:
    return values[0] if values else None


def _text(result: Any) -> str:
    """A tool activity's result as the output's text: the tool's return value, or the kind of what it
    recorded instead (a retry the tool asked for, its failure, an approval it needs)."""
    if not isinstance(result, dict):
        raise Blind("a Pydantic AI tool activity returned no tool result chaos reads")
    kind = str(result.get("kind", ""))
    if kind not in RETURNED:
        return kind
    value = result.get("result")
    return value if isinstance(value, str) else json.dumps(value, default=str)


class PydanticAiTemporalStore(TemporalStore):
    name = "pydantic-ai-temporal"
    description = (
        "Pydantic AI's Temporal-durable agent: its model and tool activities in the workflow histories"
    )

    def kept_input(self, activity: str, payloads: list[Any]) -> Kept:
        if not activity.endswith(TOOL):
            return None
        try:
            context = payload(payloads[0], "a tool activity's input")["serialized_run_context"]
            return {"tool_call_id": str(context["tool_call_id"])}
        except Blind as err:
            return {"blind": str(err)}
        except (ValueError, KeyError, TypeError, IndexError) as err:
            return {"unreadable": f"a tool activity's input holds no tool call id: {err!r}"[:200]}

    def activities(self, done: list[Activity]) -> tuple[dict[str, Call], list[Output]]:
        calls: dict[str, Call] = {}
        outputs: list[Output] = []
        for activity in done:
            if activity.name.endswith(MODEL):
                calls.update((c.id, c) for c in _calls(_first(activity.result)) if c.id not in calls)
            elif activity.name.endswith(TOOL):
                kept = activity.kept or {}
                if "blind" in kept:
                    raise Blind(kept["blind"])
                if "tool_call_id" not in kept:
                    raise ValueError(kept.get("unreadable", "a tool activity whose input was not kept"))
                outputs.append(Output(kept["tool_call_id"], _text(_first(activity.result))))
        return calls, outputs


register(PydanticAiTemporalStore())
