"""The test's own store adapter, from outside the package (``[store] kind = "test-jsonl"``): one JSON item
per line, written by ``tests/agents/store_agent.py``. Registered when the test suite starts (conftest),
so every test process can load ``tests/targets/store-agent.toml``."""

from __future__ import annotations

import json

from chaos.store import Call, Output, Store, View, register


class JsonlStore(Store):
    """The test's own adapter: one JSON item per line (written by tests/agents/store_agent.py)."""

    name = "test-jsonl"
    commit = "line"
    description = "a JSONL store of the test agent's own"

    def read(self, files: dict[str, bytes]) -> View:
        items = [
            json.loads(line)
            for data in files.values()
            for line in data.decode().splitlines()
            if line.endswith("}")
        ]
        calls = tuple(Call(i["id"], i["name"], i["arguments"]) for i in items if i["type"] == "call")
        outputs = tuple(Output(i["callId"], i["text"]) for i in items if i["type"] == "output")
        final = items[-1]["text"] if items and items[-1]["type"] == "final" else None
        inputs = tuple(i["text"] for i in items if i["type"] == "input")
        return View(calls, outputs, final, len(items), started=bool(items), inputs=inputs)


register(JsonlStore())
