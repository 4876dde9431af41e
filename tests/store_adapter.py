"""The test's own store adapters, from outside the package (``[store] kind = "test-jsonl"``): one JSON item
per line, written by ``tests/agents/store_agent.py``; and ``test-json-file``, the same items as one JSON
list written whole (a temporary file renamed over it). Registered when the test suite starts (conftest),
so every test process can load ``tests/targets/store-agent.toml`` and ``store-agent-files.toml``."""

from __future__ import annotations

import json
from typing import Any

from chaos.store import Call, Output, Store, View, register


def _view(items: list[Any]) -> View:
    """What the test agent's items make durable."""
    calls = tuple(Call(i["id"], i["name"], i["arguments"]) for i in items if i["type"] == "call")
    outputs = tuple(Output(i["callId"], i["text"]) for i in items if i["type"] == "output")
    final = items[-1]["text"] if items and items[-1]["type"] == "final" else None
    inputs = tuple(i["text"] for i in items if i["type"] == "input")
    return View(calls, outputs, final, len(items), started=bool(items), inputs=inputs)


class JsonlStore(Store):
    """The test's own adapter: one JSON item per line (written by tests/agents/store_agent.py)."""

    name = "test-jsonl"
    commit = "line"
    description = "a JSONL store of the test agent's own"

    def read(self, files: dict[str, bytes]) -> View:
        lines = [line for data in files.values() for line in data.decode().splitlines()]
        return _view([json.loads(line) for line in lines if line.endswith("}")])


class JsonFileStore(Store):
    """The same items as one JSON list, written whole by a rename (``STORE_AGENT_FILES=1``)."""

    name = "test-json-file"
    commit = "rename"
    description = "a JSON file of the test agent's own, written whole"

    def read(self, files: dict[str, bytes]) -> View:
        try:
            return _view([item for data in files.values() for item in json.loads(data)])
        except ValueError as err:
            return View(unreadable=str(err))


register(JsonlStore())
register(JsonFileStore())
