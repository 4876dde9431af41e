"""How facts are named: one kind per record type and entry variant, shared by boundaries, timelines,
signatures and checks.

An entry is named by what recovery cares about: an assistant entry by its stop
reason (``entry:toolUse``), a user or tool message by its role
(``entry:user``, ``entry:tool``), a compaction by its type.
"""

from __future__ import annotations

from typing import Any

RECORDS = (
    "runStarted",
    "stepAttempt",
    "stepFailed",
    "toolStarted",
    "compactionStarted",
    "abortRequested",
    "operationFinished",
)
ENTRIES = ("entry:user", "entry:stop", "entry:toolUse", "entry:length", "entry:tool", "entry:compaction")


def kind_of(fact: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """A fact's kind and the body its fields are read from (the record, the entry, or the fact itself)."""
    if fact["kind"] == "record":
        return fact["record"]["type"], fact["record"]
    if fact["kind"] == "entry":
        body = fact["entry"]
        message = body.get("message", {})
        return "entry:" + (body.get("stopReason") or message.get("role") or body["type"]), body
    return fact["kind"], fact  # usage, or the header
