"""DBOS Transact's system database on SQLite as a store: a durable workflow's recorded steps.

DBOS records each step's output (``operation_outputs``) when the step returns,
in the same transaction that makes it durable, and on recovery re-runs the
workflow function, returning recorded outputs instead of running those steps
again; a step that ran but whose output was not recorded runs again. So a call
is durable once a recorded step output holds it, and its output once a
recorded step output answers it. Steps are read as chat messages in OpenAI's
format, the shape an agent's steps return: a model step's assistant message
(``{"role": "assistant", "tool_calls": [{"id", "function": {...}}]}``) holds
calls, a tool step's tool message (``{"role": "tool", "tool_call_id", "content"}``)
answers one. The run's input is the workflow's arguments, its answer the
workflow's output once it succeeded. Values are decoded as DBOS wrote them:
portable JSON, or pickle restricted to plain values (a pickled class of the
app's own is not decoded: chaos says it cannot see it). Needs the database in
WAL mode (the bundled driver sets it). ``pip install 'chaos[dbos]'``.
"""

from __future__ import annotations

import base64
import io
import json
import pickle
import sqlite3
from typing import Any

from chaos.store.base import Call, Output, View, register, text_of
from chaos.store.postgres import ServerStore
from chaos.store.sqlite import Blind, SqliteStore

# The tables that hold a run (the rest is DBOS's bookkeeping: migrations, versions, schedules)
RUN_TABLES = ("workflow_status", "workflow_input", "workflow_output", "operation_outputs")


class _Plain(pickle.Unpickler):
    """Pickle's plain values only: containers, strings, numbers. A class would run the app's code."""

    def find_class(self, module: str, name: str) -> Any:
        raise _opaque(f"a pickled {module}.{name}")


def _opaque(what: str) -> Blind:
    return Blind(
        f"DBOS wrote {what}, which chaos does not decode: let the workflow's steps return plain values (chat "
        "messages as dicts, strings), or configure DBOS with its portable JSON serializer"
    )


def _decoded(value: str | None, serialization: str | None) -> Any:
    if value is None:
        return None
    if serialization == "portable_json":
        return json.loads(value)
    if serialization not in (None, "", "py_pickle"):
        raise _opaque(f"values serialized as {serialization!r}")
    try:
        return _Plain(io.BytesIO(base64.b64decode(value))).load()
    except pickle.UnpicklingError as err:
        raise ValueError(f"a step's output is no pickle: {err}") from None


def _messages(value: Any) -> list[dict[str, Any]]:
    """The chat messages a step's output is, or holds (a list of them, or one)."""
    items = value if isinstance(value, list) else [value]
    return [m for m in items if isinstance(m, dict) and m.get("role") in ("assistant", "tool")]


class DbosStore(SqliteStore):
    name = "dbos"
    marker = "operation_outputs"
    description = "DBOS Transact's system database on SQLite: recorded step outputs of durable workflows"

    def from_database(self, connection: sqlite3.Connection) -> View:
        items = sum(int(connection.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0]) for t in RUN_TABLES)
        runs = connection.execute(
            "SELECT s.status, s.serialization, i.inputs, o.output FROM workflow_status AS s "
            "LEFT JOIN workflow_input AS i USING (workflow_uuid) LEFT JOIN workflow_output AS o USING (workflow_uuid)"
        ).fetchall()
        calls: dict[str, Call] = {}
        outputs: list[Output] = []
        inputs: list[str] = []
        final = None
        steps = connection.execute(
            "SELECT output, serialization FROM operation_outputs ORDER BY workflow_uuid, function_id"
        ).fetchall()
        for output, serialization in steps:
            for message in _messages(_decoded(output, serialization)):
                if message["role"] == "assistant":
                    for c in message.get("tool_calls") or []:
                        function = c.get("function") or {}
                        call = Call(
                            str(c["id"]), str(function.get("name")), str(function.get("arguments", ""))
                        )
                        calls.setdefault(call.id, call)
                else:
                    outputs.append(Output(str(message["tool_call_id"]), text_of(message.get("content"))))
        for status, serialization, given, answer in runs:
            arguments = _decoded(given, serialization)
            if isinstance(arguments, dict):
                positional = arguments.get("args", arguments.get("positionalArgs", []))
                inputs += [str(a) for a in positional or () if isinstance(a, str)]
            if status == "SUCCESS":
                final = None if answer is None else str(_decoded(answer, serialization))
        return View(
            tuple(calls.values()), tuple(outputs), final, items, started=bool(runs), inputs=tuple(inputs)
        )


class DbosPostgresStore(ServerStore, DbosStore):
    """The same tables in the ``dbos`` schema of a PostgreSQL system database (DBOS's default there)."""

    name = "dbos-postgres"
    description = "DBOS Transact's system database on the world's PostgreSQL server: recorded step outputs"


DBOS_STORE = register(DbosStore())
register(DbosPostgresStore())
