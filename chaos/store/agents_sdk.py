"""The OpenAI Agents SDK's ``SQLiteSession`` as a store, with the ``RunState`` a paused run saves.

A session is the table ``agent_messages``: one row per item, JSON, in order.
``Runner`` adds items once per turn: the input; the tool calls and their
outputs together, after the tools ran; the final message. A run paused for an
approval is saved by the agent as a ``RunState`` (JSON) beside the database,
``NAME.run-state.json`` (or where the target's ``[store] state`` says); the calls it holds for approval
are ``waiting``, not orphans. Read with the standard library (the rows are JSON): the SDK need not be
installed to read its store.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from chaos.store.base import Call, Output, Store, View, beside, matches, oversized, register, text_of
from chaos.store.inert import Blind, json_value
from chaos.store.sqlite import main_file, opened_copy, rows, tables, unreadable

RUN_STATE = ".run-state.json"


def _is_state(name: str, data: bytes) -> bool:
    """A saved run state among the store's files: a JSON object, not the SQLite database (whose file may
    still be empty) nor its write-ahead log or journal (the conventional ``NAME.run-state.json``, or wherever the
    target's ``[store] state`` says)."""
    return not beside(name) and data.lstrip()[:1] == b"{"


def _waiting(files: dict[str, bytes]) -> tuple[str, ...]:
    for name, data in files.items():
        if _is_state(name, data):
            try:
                state = json_value(data, "the saved run state")
                held = state.get("current_step", {}).get("data", {}).get("interruptions", [])
                return tuple(str(i.get("raw_item", {}).get("call_id")) for i in held)
            except (ValueError, AttributeError, TypeError, Blind):
                return ()  # no RunState the SDK would resume: nothing waits
    return ()


class AgentsSessionStore(Store):
    name = "openai-agents"
    commit = "sqlite"
    description = "the OpenAI Agents SDK's SQLiteSession (agent_messages), and a saved RunState"

    reads_state = True

    def files(self, workspace: Path, path: str, state: str | None = None) -> list[Path]:
        found = super().files(workspace, path)
        if state is not None:  # where the target says a parked run saves itself
            return found + matches(workspace, state)
        states = [Path(f"{f}{RUN_STATE}") for f in found if not beside(str(f))]
        return found + [s for s in states if s.is_file()]

    def read(self, files: dict[str, bytes]) -> View:
        if (large := oversized(files)) is not None:
            return View(blind=large)
        main = main_file({k: v for k, v in files.items() if not _is_state(k, v)})
        try:
            with opened_copy(files, main or "") as connection:
                if connection is None or "agent_messages" not in tables(connection):
                    return View(waiting=_waiting(files))
                count = rows(connection)
                data = [
                    r[0] for r in connection.execute("SELECT message_data FROM agent_messages ORDER BY id")
                ]
        except sqlite3.Error as err:
            return View(unreadable=unreadable(err))
        calls: list[Call] = []
        outputs: list[Output] = []
        inputs: list[str] = []
        final = None
        for number, raw in enumerate(data, 1):
            try:
                item = json_value(raw, f"session item {number}")
            except Blind as err:
                return View(blind=str(err))
            except ValueError as err:
                return View(unreadable=unreadable(err))
            if not isinstance(item, dict):  # the SDK's own reader would fail on it: a finding
                return View(
                    unreadable=f"session item {number} is a JSON {type(item).__name__}, not an object"
                )
            kind = item.get("type")
            if kind == "function_call":
                calls.append(
                    Call(str(item.get("call_id")), str(item.get("name")), str(item.get("arguments")))
                )
                final = None
            elif kind == "function_call_output":
                outputs.append(Output(str(item.get("call_id")), str(item.get("output"))))
                final = None
            elif item.get("role") == "assistant":
                final = text_of(item.get("content"))
            elif item.get("role") == "user":
                inputs.append(text_of(item.get("content")))
        return View(
            tuple(calls),
            tuple(outputs),
            final,
            count,
            waiting=_waiting(files),
            started=bool(data),
            inputs=tuple(inputs),
        )


AGENTS_SDK = register(AgentsSessionStore())
