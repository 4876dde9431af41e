"""LangGraph's checkpointers (SQLite, PostgreSQL) as stores, read as data, never by LangGraph's reader.

A step writes two commits: ``put_writes`` (a task's writes, kept as pending
writes until the step's checkpoint) and ``put`` (the checkpoint). A call is
durable once the store holds it anywhere the framework resumes from: an
``AIMessage`` carrying it, or its id alone (a graph's own work item), in any
channel of the latest checkpoint of its thread in any namespace (a subgraph
checkpoints in a namespace of its own) or in that checkpoint's pending writes;
its output once a ``ToolMessage`` answering it is. Resume applies pending
writes and re-runs only the tasks that have none, so both count.

LangGraph's own serializer imports and calls whatever ``module.name`` a
checkpoint names, so a hostile agent's checkpoint would run code in chaos.
chaos decodes checkpoints itself (``chaos.store.inert``): LangGraph's msgpack
and LangChain's JSON, objects of LangChain's and LangGraph's modules and the
standard library's plain types as records, nothing imported; any other type,
a pickle, or a serializer of the app's own makes chaos blind (exit 2, naming
it). Needs ``pip install 'durable-chaos[langgraph]'`` (ormsgpack comes with it).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from chaos.store.base import Call, Output, Save, View, register, text_of
from chaos.store.inert import Blind, Record, json_records, msgpack_value
from chaos.store.postgres import ServerStore
from chaos.store.sqlite import SqliteStore, rows

# The tool call ids chaos's model server invents (``chaos.world.protocols``): a string of this shape in a
# graph's own channel names a call the graph will run when resumed
CALL_ID = re.compile(r"(call|toolu|fc)_\d+_\d+(_r\d+)?")
_MESSAGE_TYPES = ("ai", "tool", "human", "system")
# A thread's latest checkpoint in a namespace: its channel values and its pending writes' values (None: none)
Latest = Callable[[str, str], tuple[Any, list[Any]] | None]
SERDE = (
    "the graph's checkpointer has a serializer of its own (serde=...); chaos reads checkpoints as "
    "LangGraph's default one writes them, so compile the graph with the checkpointer the driver gives (--app "
    "as a function of it)"
)
# The modules whose objects a checkpoint may hold and chaos reads (as records): LangChain's messages,
# LangGraph's own types (Send, Interrupt, ...), the standard library's plain values. Any other type is the
# app's own, or a hostile name: chaos is blind to it rather than import it.
READABLE = (
    "langchain_core",
    "langgraph",
    "datetime",
    "uuid",
    "decimal",
    "builtins",
    "collections",
    "zoneinfo",
)
_TYPE_ADVICE = "; keep the graph's state in plain values and LangChain messages"


def loads_typed(kind: str, data: bytes | None, what: str) -> Any:
    """A value as LangGraph's ``JsonPlusSerializer.loads_typed`` would return it, as inert data."""
    try:
        if kind == "null" or data is None:
            return None
        if kind in ("bytes", "bytearray"):
            return bytes(data)
        if kind == "msgpack":
            return msgpack_value(bytes(data), READABLE, what)
        if kind == "json":
            return json_records(bytes(data), READABLE, what)
    except Blind as err:
        raise Blind(f"{err}{_TYPE_ADVICE}") from None
    if kind == "pickle":
        raise Blind(
            f"{what} is pickled (the saver's pickle_fallback), which chaos does not decode{_TYPE_ADVICE}"
        )
    raise Blind(f"chaos cannot decode the checkpoints: {what} is of the serialization type {kind!r}; {SERDE}")


@dataclass
class _Found:
    """What a walk over the checkpoints found: messages (each once, by id) and bare call ids."""

    messages: dict[str, Record] = field(default_factory=dict)
    held: set[str] = field(default_factory=set)
    root: int = 0  # how many of ``messages`` the root namespace holds (they come first): the run's answer

    def walk(self, value: Any, depth: int = 0) -> None:
        """Every message and call id in ``value``, however the graph nests it: a channel of its own, a
        list of work items, a ``Send`` packet's argument, a dict of anything."""
        if depth > 20:
            return
        if isinstance(value, Record):
            if value.get("type") in _MESSAGE_TYPES and "content" in value.fields:
                self.messages.setdefault(str(value.get("id") or repr(value)), value)
            else:  # a Send (node, argument), an Interrupt, a model of LangGraph's
                self.walk(value.args, depth + 1)
                self.walk(value.fields, depth + 1)
        elif isinstance(value, str):
            if CALL_ID.fullmatch(value):
                self.held.add(value)
        elif isinstance(value, dict):
            for item in value.values():
                self.walk(item, depth + 1)
        elif isinstance(value, list | tuple | set | frozenset):
            for item in value:
                self.walk(item, depth + 1)


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


def _columns(connection: sqlite3.Connection, table: str) -> set[str]:
    return {str(row[1]) for row in connection.execute(f'PRAGMA table_info("{table}")')}


def _found(connection: sqlite3.Connection) -> _Found:
    """``_walk`` over LangGraph's SQLite checkpointer (``SqliteSaver``'s tables): the latest checkpoint is
    one serialized value holding its channel values; its pending writes are the ``writes`` rows."""
    order = "task_path, task_id, idx" if "task_path" in _columns(connection, "writes") else "task_id, idx"

    def latest(thread: str, namespace: str) -> tuple[Any, list[Any]] | None:
        where = (thread, namespace)
        found = connection.execute(
            "SELECT checkpoint_id, type, checkpoint FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ? "
            "ORDER BY checkpoint_id DESC LIMIT 1",
            where,
        ).fetchone()
        if found is None:
            return None
        checkpoint = loads_typed(str(found[1]), found[2], "a checkpoint")
        values = checkpoint.get("channel_values") if isinstance(checkpoint, dict) else None
        writes = connection.execute(
            f"SELECT type, value FROM writes WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ? "
            f"ORDER BY {order}",
            (*where, found[0]),
        )
        return values or {}, [loads_typed(str(kind), blob, "a pending write") for kind, blob in writes]

    return _walk(connection, latest)


def _found_postgres(connection: sqlite3.Connection) -> _Found:
    """``_walk`` over the tables of LangGraph's ``PostgresSaver`` (copied from the server,
    ``chaos.store.postgres``), read as that saver reads them: a checkpoint's JSON keeps its plain channel
    values, the rest are blobs of the channel's version; pending writes are the checkpoint's writes."""

    def latest(thread: str, namespace: str) -> tuple[Any, list[Any]] | None:
        where = (thread, namespace)
        checkpoint_id, text = connection.execute(
            "SELECT checkpoint_id, checkpoint FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ? "
            "ORDER BY checkpoint_id DESC LIMIT 1",
            where,
        ).fetchone()
        checkpoint = json_records(text, READABLE, "a checkpoint")
        checkpoint = checkpoint if isinstance(checkpoint, dict) else {}
        values = dict(checkpoint.get("channel_values") or {})
        for channel, version in (checkpoint.get("channel_versions") or {}).items():
            blob = connection.execute(
                "SELECT type, blob FROM checkpoint_blobs WHERE thread_id = ? AND checkpoint_ns = ? "
                "AND channel = ? AND version = ?",
                (*where, channel, str(version)),
            ).fetchone()
            if blob is not None and blob[0] != "empty":
                values[channel] = loads_typed(str(blob[0]), blob[1], "a channel's value")
        writes = connection.execute(
            "SELECT type, blob FROM checkpoint_writes WHERE thread_id = ? AND checkpoint_ns = ? "
            "AND checkpoint_id = ? ORDER BY task_path, task_id, idx",
            (*where, checkpoint_id),
        )
        return values, [loads_typed(str(kind), blob, "a pending write") for kind, blob in writes]

    return _walk(connection, latest)


# Where LangGraph's savers begin a save: a finished task's writes (``put_writes``, keyed by the checkpoint
# they belong to) and the next checkpoint (``put``, keyed by the checkpoint it supersedes). The loop submits
# both to its background executor; its own comment promises that "a checkpoint never becomes durable before
# the writes that produced it" (it waits so only for delta channels' writes: langgraph#8039).
_CONFIG_ID = ("configurable", "checkpoint_id")
_ORDER = (
    "LangGraph's loop promises a checkpoint never becomes durable before the writes that produced it; "
    "langgraph#8039: its saves of a task's writes and of the next checkpoint are not ordered"
)
_SAVERS = (
    ("langgraph.checkpoint.sqlite:SqliteSaver", "put_writes", "put"),
    ("langgraph.checkpoint.sqlite.aio:AsyncSqliteSaver", "aput_writes", "aput"),
    ("langgraph.checkpoint.postgres:PostgresSaver", "put_writes", "put"),
    ("langgraph.checkpoint.postgres.aio:AsyncPostgresSaver", "aput_writes", "aput"),
)
SAVES = tuple(
    save
    for saver, writes, checkpoint in _SAVERS
    for save in (
        Save(f"{saver}.{writes}", "writes", _CONFIG_ID),
        Save(f"{saver}.{checkpoint}", "checkpoint", _CONFIG_ID, after=("writes",), promise=_ORDER),
    )
)


class LangGraphStore(SqliteStore):
    name = "langgraph"
    marker = "checkpoints"
    description = "LangGraph's SqliteSaver: checkpoints and pending writes (langgraph-checkpoint-sqlite)"
    saves = SAVES

    def from_database(self, connection: sqlite3.Connection) -> View:
        count = rows(connection)
        found = self.found(connection)
        calls: dict[str, Call] = {}
        outputs: list[Output] = []
        inputs: list[str] = []
        final = None
        for n, message in enumerate(found.messages.values()):
            kind = message.get("type")
            if kind == "human":
                inputs.append(text_of(message.get("content")))
            elif kind == "ai":
                asked = [c for c in message.get("tool_calls") or [] if isinstance(c, dict)]
                for c in asked:
                    calls.setdefault(
                        str(c.get("id")), Call(str(c.get("id")), str(c.get("name")), repr(c.get("args")))
                    )
                if n < found.root or not found.root:  # a subgraph's answer is not the run's
                    final = None if asked else str(message.get("content"))
            elif kind == "tool":
                outputs.append(Output(str(message.get("tool_call_id")), str(message.get("content"))))
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
