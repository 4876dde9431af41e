"""Microsoft Agent Framework's ``FileCheckpointStorage`` as a store: a workflow's checkpoints, one JSON file
each, written whole (a temporary file beside it, renamed over its name) at the end of every superstep.

A checkpoint holds the workflow's state (``state``: what its executors set, JSON) and the messages
pending for the next superstep (``messages``: each a ``WorkflowMessage`` the framework pickled, base64
in the JSON). A resume restores the latest checkpoint, by its timestamp, and runs on from it: a call
is durable once the latest checkpoint holds it, its output once a tool message there answers it. chaos
reads the chat messages (OpenAI's format) the checkpoint holds anywhere in its state or its pending
messages, the longest conversation among them; the pickles are read without running them (only the
framework's workflow classes, named, never imported: ``chaos.extend.Pickled``); any other class
makes chaos blind. ``pip install 'durable-chaos[agent-framework]'``. Written as an outside adapter is:
through ``chaos.extend`` only, registered by its entry point.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from chaos.extend import (
    Blind,
    Call,
    Output,
    Pickled,
    Store,
    View,
    json_value,
    pickled_value,
    register,
    text_of,
)

FRAMEWORK = ("agent_framework._workflows",)  # the classes a checkpoint's pickles may name


def _opaque(what: str) -> Blind:
    return Blind(
        f"the checkpoint holds {what}, which chaos does not decode: let the executors exchange plain "
        "values (chat messages as dicts, strings)"
    )


def _plain(value: Any) -> Any:
    """A checkpoint's value with each pickled one read (``{"__pickled__": base64, "__type__": ...}``)."""
    if isinstance(value, dict) and "__pickled__" in value:
        try:
            data = base64.b64decode(str(value["__pickled__"]), validate=True)
        except binascii.Error as err:
            raise ValueError(f"a pickled checkpoint value is no base64: {err}") from None
        return _plain(pickled_value(data, FRAMEWORK, "a checkpoint value", _opaque))
    if isinstance(value, Pickled):
        return _plain(value.fields())
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _conversations(value: Any) -> list[list[dict[str, Any]]]:
    """Every list of chat messages in ``value`` (iteratively: its depth is bounded already)."""
    found, stack = [], [value]
    while stack:
        item = stack.pop()
        if isinstance(item, list) and item and all(isinstance(m, dict) and "role" in m for m in item):
            found.append(item)
        elif isinstance(item, dict):
            stack += item.values()
        elif isinstance(item, list):
            stack += item
    return found


class AgentFrameworkStore(Store):
    name = "agent-framework"
    commit = "rename"
    description = "Microsoft Agent Framework's FileCheckpointStorage: a workflow's checkpoints, JSON files"

    def read(self, files: dict[str, bytes]) -> View:
        checkpoints = []
        try:
            for name, data in sorted(files.items()):
                checkpoint = json_value(data, f"checkpoint {name}")
                if not isinstance(checkpoint, dict):
                    raise ValueError(
                        f"checkpoint {name} is a JSON {type(checkpoint).__name__}, not an object"
                    )
                checkpoints.append(checkpoint)
            if not checkpoints:
                return View()
            latest = max(checkpoints, key=lambda c: str(c.get("timestamp", "")))
            held = _plain({"state": latest.get("state"), "messages": latest.get("messages")})
        except RecursionError:  # pickles inside pickles, each within its bounds
            return View(blind="a checkpoint nests its pickled values deeper than chaos reads")
        except Blind as err:
            return View(blind=str(err))
        except ValueError as err:
            return View(unreadable=str(err))
        conversation = max(_conversations(held), key=len, default=[])
        calls, outputs = [], []
        for message in conversation:
            for call in message.get("tool_calls") or [] if message.get("role") == "assistant" else []:
                function = call.get("function") or {}
                calls.append(
                    Call(str(call.get("id")), str(function.get("name")), str(function.get("arguments", "")))
                )
            if message.get("role") == "tool":
                outputs.append(Output(str(message.get("tool_call_id")), text_of(message.get("content"))))
        last = conversation[-1] if conversation else {}
        final = (
            text_of(last.get("content"))
            if last.get("role") == "assistant" and not last.get("tool_calls")
            else None
        )
        inputs = tuple(text_of(m.get("content")) for m in conversation if m.get("role") == "user")
        items = len(checkpoints)
        return View(tuple(calls), tuple(outputs), final, items, started=bool(conversation), inputs=inputs)


register(AgentFrameworkStore())
