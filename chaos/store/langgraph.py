"""LangGraph's SQLite checkpointer as a store, read through LangGraph's own saver.

A step writes two commits: ``put_writes`` (a task's writes, kept as pending
writes until the step's checkpoint) and ``put`` (the checkpoint). A call is
durable once the store holds it anywhere the framework resumes from: an
``AIMessage`` carrying it, or its id alone (a graph's own work item), in any
channel of the latest checkpoint of its thread in any namespace (a subgraph
checkpoints in a namespace of its own) or in that checkpoint's pending writes;
its output once a ``ToolMessage`` answering it is. Resume applies pending
writes and re-runs only the tasks that have none, so both count. Needs
``pip install 'chaos[langgraph]'``.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from chaos.store.base import Call, Output, View, register, text_of
from chaos.store.postgres import ServerStore
from chaos.store.sqlite import Blind, SqliteStore, rows

# The tool call ids chaos's model server invents (``chaos.world.protocols``): a string of this shape in a
# graph's own channel names a call the graph will run when resumed
CALL_ID = re.compile(r"(call|toolu|fc)_\d+_\d+(_r\d+)?")
_MESSAGE_TYPES = ("ai", "tool", "human", "system")
# A thread's latest checkpoint in a namespace: its channel values and its pending writes' values (None: none)
Latest = Callable[[str, str], tuple[Any, list[Any]] | None]
SERDE = (
    "the graph's checkpointer has a serializer of its own (serde=...); chaos reads checkpoints with "
    "LangGraph's default one, so compile the graph with the checkpointer the driver gives (--app as a "
    "function of it)"
)


@dataclass
class _Found:
    """What a walk over the checkpoints found: messages (each once, by id) and bare call ids."""

    messages: dict[str, Any] = field(default_factory=dict)
    held: set[str] = field(default_factory=set)
    root: int = 0  # how many of ``messages`` the root namespace holds (they come first): the run's answer

    def walk(self, value: Any, depth: int = 0) -> None:
        """Every message and call id in ``value``, however the graph nests it: a channel of its own, a
        list of work items, a ``Send`` packet's argument, a dict of anything."""
        if depth > 20:
            return
        if getattr(value, "type", None) in _MESSAGE_TYPES and hasattr(value, "content"):
            self.messages.setdefault(getattr(value, "id", None) or repr(value), value)
        elif isinstance(value, str):
            if CALL_ID.fullmatch(value):
                self.held.add(value)
        elif isinstance(value, dict):
            for item in value.values():
                self.walk(item, depth + 1)
        elif isinstance(value, list | tuple | set | frozenset):
            for item in value:
                self.walk(item, depth + 1)
        elif hasattr(value, "__slots__") or hasattr(value, "__dict__"):  # a Send, a dataclass, a model
            for name in getattr(value, "__slots__", None) or list(vars(value)):
                self.walk(getattr(value, name, None), depth + 1)


def _walk(connection: sqlite3.Connection, latest: Latest) -> _Found:
    """Every message and call id the framework resumes from: the latest checkpoint of each thread in each
    namespace (a subgraph's calls live in its own), every channel of it, and its pending writes, as
    ``latest`` reads them (channel values and pending write values, or None: no checkpoint)."""
    found = _Found()
    spaces = connection.execute("SELECT DISTINCT thread_id, checkpoint_ns FROM checkpoints ORDER BY 2, 1")
    for thread, namespace in list(spaces):
        read = latest(str(thread), str(namespace))
        if read is None:
            continue
        found.walk(read[0])
        found.walk(read[1])
        if namespace == "":
            found.root = len(found.messages)
    return found


def _found(connection: sqlite3.Connection) -> _Found:
    """``_walk`` over LangGraph's SQLite checkpointer, read by its own ``SqliteSaver``."""
    from langgraph.checkpoint.sqlite import SqliteSaver  # the framework's own reader of its format

    saver = SqliteSaver(connection)

    def latest(thread: str, namespace: str) -> tuple[Any, list[Any]] | None:
        got = saver.get_tuple({"configurable": {"thread_id": thread, "checkpoint_ns": namespace}})
        if got is None:
            return None
        return got.checkpoint["channel_values"], [value for _, _, value in got.pending_writes or []]

    return _walk(connection, latest)


def _found_postgres(connection: sqlite3.Connection) -> _Found:
    """``_walk`` over the tables of LangGraph's ``PostgresSaver`` (copied from the server,
    ``chaos.store.postgres``), read as that saver reads them: a checkpoint's JSON keeps its plain channel
    values, the rest are blobs of the channel's version; pending writes are the checkpoint's writes."""
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer  # the saver's default serializer

    serde = JsonPlusSerializer()

    def latest(thread: str, namespace: str) -> tuple[Any, list[Any]] | None:
        where = (thread, namespace)
        checkpoint_id, text = connection.execute(
            "SELECT checkpoint_id, checkpoint FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ? "
            "ORDER BY checkpoint_id DESC LIMIT 1",
            where,
        ).fetchone()
        checkpoint = json.loads(text)
        values = dict(checkpoint.get("channel_values") or {})
        for channel, version in (checkpoint.get("channel_versions") or {}).items():
            blob = connection.execute(
                "SELECT type, blob FROM checkpoint_blobs WHERE thread_id = ? AND checkpoint_ns = ? "
                "AND channel = ? AND version = ?",
                (*where, channel, str(version)),
            ).fetchone()
            if blob is not None and blob[0] != "empty":
                values[channel] = serde.loads_typed((blob[0], blob[1]))
        writes = connection.execute(
            "SELECT type, blob FROM checkpoint_writes WHERE thread_id = ? AND checkpoint_ns = ? "
            "AND checkpoint_id = ? ORDER BY task_path, task_id, idx",
            (*where, checkpoint_id),
        )
        return values, [serde.loads_typed((kind, blob)) for kind, blob in writes]

    return _walk(connection, latest)


class LangGraphStore(SqliteStore):
    name = "langgraph"
    marker = "checkpoints"
    description = "LangGraph's SqliteSaver: checkpoints and pending writes (langgraph-checkpoint-sqlite)"

    def from_database(self, connection: sqlite3.Connection) -> View:
        count = rows(connection)
        try:
            found = self.found(connection)
        except NotImplementedError as err:  # a serializer of the app's own: LangGraph's reader cannot say
            raise Blind(
                f"LangGraph's default serializer cannot decode the checkpoints ({err}): {SERDE}"
            ) from None
        calls: dict[str, Call] = {}
        outputs: list[Output] = []
        inputs: list[str] = []
        final = None
        for n, message in enumerate(found.messages.values()):
            kind = getattr(message, "type", "")
            if kind == "human":
                inputs.append(text_of(message.content))
            elif kind == "ai":
                for c in message.tool_calls:
                    calls.setdefault(str(c["id"]), Call(str(c["id"]), str(c["name"]), repr(c.get("args"))))
                if n < found.root or not found.root:  # a subgraph's answer is not the run's
                    final = None if message.tool_calls else str(message.content)
            elif kind == "tool":
                outputs.append(Output(str(message.tool_call_id), str(message.content)))
        held = frozenset(found.held - set(calls))
        return View(
            tuple(calls.values()),
            tuple(outputs),
            final,
            count,
            started=bool(found.messages),
            held=held,
            inputs=tuple(inputs),
        )

    def found(self, connection: sqlite3.Connection) -> _Found:
        return _found(connection)


class LangGraphPostgresStore(ServerStore, LangGraphStore):
    name = "langgraph-postgres"
    description = (
        "LangGraph's PostgresSaver on the world's PostgreSQL server: checkpoints, blobs and pending writes "
        "(langgraph-checkpoint-postgres)"
    )

    def found(self, connection: sqlite3.Connection) -> _Found:
        return _found_postgres(connection)


LANGGRAPH = register(LangGraphStore())
register(LangGraphPostgresStore())
