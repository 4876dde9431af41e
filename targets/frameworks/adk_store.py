"""Google ADK's session database as a store: every event of a session, in the order it was appended.

ADK's ``DatabaseSessionService`` (SQLAlchemy; SQLite in SQLite's default rollback journal, so a commit is
the journal's deletion) and its ``SqliteSessionService`` both append each event the runner yields to the
table ``events`` as JSON (``event_data``: the ``Event`` as pydantic dumps it), in the transaction that
makes it durable: the user's message, the model's answer with its function calls, each function
response (one event per answered call, or one for the calls run together), the final answer. A call is
durable once an event holds it, its output once a function response answers it by the call's id. A
resumable app (``ResumabilityConfig``) resumes an invocation from its last event and runs a call without
a response again: ADK documents at least once. Read with the standard library (the rows are JSON): ADK
need not be installed to read its store; a row's ``actions`` (older schemas pickle them) are never read.
Written as an outside adapter is: through ``chaos.extend`` only, registered by its entry point.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from chaos.extend import Call, Output, SqliteStore, View, json_value, register, rows


def _parts(event: dict[str, Any]) -> list[dict[str, Any]]:
    content = event.get("content")
    parts = content.get("parts") if isinstance(content, dict) else None
    return [part for part in parts or [] if isinstance(part, dict)]


def _field(part: dict[str, Any], snake: str, camel: str) -> dict[str, Any] | None:
    """A part's function call or response (pydantic dumps them snake_case; ADK's own JSON may be camel)."""
    found = part.get(snake, part.get(camel))
    return found if isinstance(found, dict) else None


class AdkSessionStore(SqliteStore):
    name = "google-adk"
    description = "Google ADK's session database (DatabaseSessionService or SqliteSessionService): its events"
    marker = "events"

    def from_database(self, connection: sqlite3.Connection) -> View:
        columns = {str(r[1]) for r in connection.execute("PRAGMA table_info(events)")}
        if "event_data" not in columns:  # ADK's legacy schema: a column per field, actions pickled
            return View(blind="the events table has no event_data column (ADK's legacy v0 schema, not read)")
        count = rows(connection)
        data = [r[0] for r in connection.execute("SELECT event_data FROM events ORDER BY timestamp, rowid")]
        calls: list[Call] = []
        outputs: list[Output] = []
        inputs: list[str] = []
        final = None
        for number, raw in enumerate(data, 1):
            event = json_value(raw, f"event {number}")
            if not isinstance(event, dict):  # ADK's own reader would fail on it: a finding
                raise ValueError(f"event {number} is a JSON {type(event).__name__}, not an object")
            texts, acts = [], False  # (acts: the event calls a tool or answers a call)
            for part in _parts(event):
                if (call := _field(part, "function_call", "functionCall")) is not None:
                    arguments = json.dumps(call.get("args") or {}, sort_keys=True)
                    calls.append(Call(str(call.get("id")), str(call.get("name")), arguments))
                    acts = True
                elif (answer := _field(part, "function_response", "functionResponse")) is not None:
                    response = json.dumps(answer.get("response"), sort_keys=True)
                    outputs.append(Output(str(answer.get("id")), response))
                    acts = True
                elif isinstance(part.get("text"), str) and not part.get("thought"):
                    texts.append(part["text"])
            if event.get("author") == "user":
                inputs += ["".join(texts)] if texts else []
                final = None
            elif acts:
                final = None
            elif texts and not event.get("partial"):
                final = "".join(texts)
        return View(tuple(calls), tuple(outputs), final, count, started=bool(data), inputs=tuple(inputs))


ADK = register(AdkSessionStore())
