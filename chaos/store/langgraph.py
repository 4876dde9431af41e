"""LangGraph's SQLite checkpointer as a store, read through LangGraph's own saver.

A step writes two commits: ``put_writes`` (a task's writes, kept as pending
writes until the step's checkpoint) and ``put`` (the checkpoint). A call is
durable once an ``AIMessage`` carrying it is in the latest checkpoint of its
thread or in that checkpoint's pending writes; its output once a
``ToolMessage`` answering it is. Resume applies pending writes and re-runs only
the tasks that have none, so both count. Needs ``pip install 'chaos[langgraph]'``.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from chaos.store.base import Call, Output, Store, View, register
from chaos.store.sqlite import main_file, opened_copy, rows, tables, unreadable


def _messages(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list | tuple) else [value]


def _thread_messages(connection: sqlite3.Connection) -> list[Any]:
    from langgraph.checkpoint.sqlite import SqliteSaver  # the framework's own reader of its format

    saver = SqliteSaver(connection)
    threads = [r[0] for r in connection.execute("SELECT DISTINCT thread_id FROM checkpoints ORDER BY 1")]
    messages: list[Any] = []
    for thread in threads:
        found = saver.get_tuple({"configurable": {"thread_id": thread, "checkpoint_ns": ""}})
        if found is None:
            continue
        messages += _messages(found.checkpoint["channel_values"].get("messages", []))
        for _, channel, value in found.pending_writes or []:
            if channel == "messages":
                messages += [m for m in _messages(value) if m not in messages]
    return messages


class LangGraphStore(Store):
    name = "langgraph"
    commit = "sqlite-wal"
    description = "LangGraph's SqliteSaver: checkpoints and pending writes (langgraph-checkpoint-sqlite)"

    def read(self, files: dict[str, bytes]) -> View:
        main = main_file(files)
        try:
            with opened_copy(files, main or "") as connection:
                if connection is None or "checkpoints" not in tables(connection):
                    return View()
                count = rows(connection)
                messages = _thread_messages(connection)
        except (sqlite3.Error, ValueError, KeyError, TypeError) as err:
            return View(unreadable=unreadable(err))
        calls: list[Call] = []
        outputs: list[Output] = []
        final = None
        for message in messages:
            kind = getattr(message, "type", "")
            if kind == "ai":
                calls += [Call(str(c["id"]), str(c["name"]), repr(c.get("args"))) for c in message.tool_calls]
                final = None if message.tool_calls else str(message.content)
            elif kind == "tool":
                outputs.append(Output(str(message.tool_call_id), str(message.content)))
        return View(tuple(calls), tuple(outputs), final, count, started=bool(messages))


LANGGRAPH = register(LangGraphStore())
