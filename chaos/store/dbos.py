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
app's own is not decoded: chaos says it cannot see it). In WAL mode (the bundled driver sets it) or in
DBOS's default rollback journal. ``pip install 'durable-chaos[dbos]'``.
"""

from __future__ import annotations

import base64
import binascii
import sqlite3
from collections.abc import Iterable
from typing import Any

from chaos.store.base import Call, Output, View, register, text_of
from chaos.store.inert import Blind, json_value, pickled_value
from chaos.store.postgres import ServerStore
from chaos.store.sqlite import SqliteStore, tables

# The tables that hold a run (the rest is DBOS's bookkeeping: migrations, versions, schedules); DBOS 2 keeps
# a run's input and output in its workflow_status row, DBOS 3 in tables of their own
RUN_TABLES = ("workflow_status", "workflow_input", "workflow_output", "operation_outputs")


def _opaque(what: str) -> Blind:
    return Blind(
        f"DBOS wrote {what}, which chaos does not decode: let the workflow's steps return plain values (chat "
        "messages as dicts, strings), or configure DBOS with its portable JSON serializer"
    )


def decoded(value: str | None, serialization: str | None, readable: tuple[str, ...] = ()) -> Any:
    """A value DBOS wrote (a step's output, a workflow's arguments or result), as plain values and
    ``Pickled`` objects of the modules ``readable`` names; bounded (``chaos.store.inert``): a value too
    large, too deep or expanding past the bound makes chaos blind, one that is no pickle is unreadable."""
    if value is None:
        return None
    if serialization == "portable_json":
        return json_value(value, "a value DBOS wrote")
    if serialization not in (None, "", "py_pickle"):
        raise _opaque(f"values serialized as {serialization!r}")
    try:
        return pickled_value(base64.b64decode(value), readable, "a value DBOS wrote", _opaque)
    except binascii.Error as err:
        raise ValueError(f"a step's output is no pickle: {err}") from None


def chat_steps(values: Iterable[Any]) -> tuple[dict[str, Call], list[Output]]:
    """The calls and outputs that recorded step outputs hold as chat messages in OpenAI's format (each
    value a message, or a list of them): an assistant message's tool calls, a tool message's output."""
    calls: dict[str, Call] = {}
    outputs: list[Output] = []
    for value in values:
        items = value if isinstance(value, list) else [value]
        for message in items:
            if not isinstance(message, dict) or message.get("role") not in ("assistant", "tool"):
                continue
            if message["role"] == "assistant":
                for c in message.get("tool_calls") or []:
                    function = c.get("function") or {}
                    call = Call(str(c["id"]), str(function.get("name")), str(function.get("arguments", "")))
                    calls.setdefault(call.id, call)
            else:
                outputs.append(Output(str(message["tool_call_id"]), text_of(message.get("content"))))
    return calls, outputs


class DbosStore(SqliteStore):
    name = "dbos"
    marker = "operation_outputs"
    description = "DBOS Transact's system database on SQLite: recorded step outputs of durable workflows"

    def from_database(self, connection: sqlite3.Connection) -> View:
        held = [t for t in RUN_TABLES if t in tables(connection)]
        items = sum(int(connection.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0]) for t in held)
        runs = connection.execute(
            "SELECT s.status, s.serialization, i.inputs, o.output FROM workflow_status AS s "
            "LEFT JOIN workflow_input AS i USING (workflow_uuid) LEFT JOIN workflow_output AS o USING (workflow_uuid)"
            if "workflow_input" in held
            else "SELECT status, serialization, inputs, output FROM workflow_status"  # DBOS 2: in the status row
        ).fetchall()
        calls, outputs = self.steps(connection)
        inputs: list[str] = []
        final = None
        for status, serialization, given, answer in runs:
            arguments = decoded(given, serialization)
            if isinstance(arguments, dict):
                positional = arguments.get("args", arguments.get("positionalArgs", []))
                inputs += [str(a) for a in positional or () if isinstance(a, str)]
            if status == "SUCCESS":
                final = None if answer is None else str(decoded(answer, serialization))
        return View(
            tuple(calls.values()), tuple(outputs), final, items, started=bool(runs), inputs=tuple(inputs)
        )

    def steps(self, connection: sqlite3.Connection) -> tuple[dict[str, Call], list[Output]]:
        """The calls and outputs the recorded steps hold: here, chat messages in OpenAI's format."""
        steps = connection.execute(
            "SELECT output, serialization FROM operation_outputs ORDER BY workflow_uuid, function_id"
        ).fetchall()
        return chat_steps(decoded(output, serialization) for output, serialization in steps)


class DbosPostgresStore(ServerStore, DbosStore):
    """The same tables in the ``dbos`` schema of a PostgreSQL system database (DBOS's default there)."""

    name = "dbos-postgres"
    description = "DBOS Transact's system database on the world's PostgreSQL server: recorded step outputs"


DBOS_STORE = register(DbosStore())
register(DbosPostgresStore())
