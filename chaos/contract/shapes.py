"""The per-line shape of the session schema (``session.schema.json``), checked in code.

The schema ships beside the contract, not with chaos, and each violation must map
to a contract error code rather than a validator message; so the shapes are
written here as small composable checkers. Integral floats (``1.0``) are valid
JSON Schema integers, as in every JavaScript port; they are normalised to int.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

MAX_SAFE = 2**53 - 1
Check = Callable[[Any], bool]

_UUID7 = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")


def uuid7(v: Any) -> bool:
    return type(v) is str and _UUID7.fullmatch(v) is not None


def digest_str(v: Any) -> bool:
    return type(v) is str and _DIGEST.fullmatch(v) is not None


def text(v: Any) -> bool:
    return type(v) is str


def nonempty(v: Any) -> bool:
    return type(v) is str and v != ""


def is_object(v: Any) -> bool:
    return type(v) is dict


def integer(lo: int, hi: int) -> Check:
    def check(v: Any) -> bool:
        if type(v) is int:
            return lo <= v <= hi
        return type(v) is float and v.is_integer() and lo <= v <= hi

    check.integer = True  # type: ignore[attr-defined]
    return check


def const(expected: Any) -> Check:
    return lambda v: type(v) is type(expected) and v == expected


def one_of(*allowed: str) -> Check:
    options = frozenset(allowed)
    return lambda v: type(v) is str and v in options


def nullable_text(v: Any) -> bool:
    return v is None or type(v) is str


def array(item: Check, min_items: int = 0) -> Check:
    return lambda v: type(v) is list and len(v) >= min_items and all(item(x) for x in v)


safe_int = integer(0, MAX_SAFE)
positive_int = integer(1, MAX_SAFE)


class Shape:
    """A closed object: required and optional fields, no others (``additionalProperties: false``)."""

    def __init__(self, required: dict[str, Check], optional: dict[str, Check] | None = None) -> None:
        self.required = required
        self.optional = optional or {}
        self.fields = {**self.required, **self.optional}
        self.ints = [k for k, c in self.fields.items() if getattr(c, "integer", False)]

    def why(self, v: Any, path: str = "") -> str | None:
        """The first reason ``v`` does not fit, naming the field path, or None when it fits."""
        if type(v) is not dict:
            return f"{path or 'value'}: expected an object"
        for key in v:
            if key not in self.fields:
                return f"{path}{key}: unknown field (allowed: {', '.join(self.fields)})"
        for key in self.required:
            if key not in v:
                return f"{path}{key}: missing required field"
        for key, value in v.items():
            check = self.fields[key]
            if isinstance(check, Shape):
                reason = check.why(value, f"{path}{key}.")
                if reason:
                    return reason
            elif not check(value):
                return f"{path}{key}: invalid value {value!r}"
        return None

    def __call__(self, v: Any) -> bool:
        if type(v) is not dict:
            return False
        fields = self.fields
        for key, value in v.items():
            check = fields.get(key)
            if check is None or not check(value):
                return False
        if not all(k in v for k in self.required):
            return False
        for key in self.ints:
            if key in v:
                v[key] = int(v[key])
        return True


tool_call = Shape(
    {"id": nonempty, "type": const("function"), "function": Shape({"name": nonempty, "arguments": text})}
)
user_message = Shape({"role": const("user"), "content": nonempty})
assistant_message = Shape(
    {"role": const("assistant"), "content": nullable_text}, {"tool_calls": array(tool_call, 1)}
)
tool_message = Shape({"role": const("tool"), "content": text, "tool_call_id": nonempty})


_MESSAGES = {"user": user_message, "assistant": assistant_message, "tool": tool_message}


def any_message(v: Any) -> bool:
    role = v.get("role") if type(v) is dict else None
    shape = _MESSAGES.get(role) if isinstance(role, str) else None
    return shape is not None and shape(v)


PRE_EXECUTION_REASONS = ("invalidArguments", "unknownTool", "truncated", "aborted")
_plain_result = Shape({"type": one_of("success", "error")})
_interrupted_result = Shape({"type": const("synthetic"), "reason": const("interrupted")})


def started_result(v: Any) -> bool:
    return _plain_result(v) or _interrupted_result(v)


pre_execution_result = Shape({"type": const("synthetic"), "reason": one_of(*PRE_EXECUTION_REASONS)})

user_entry = Shape({"type": const("message"), "message": user_message})
assistant_entry = Shape(
    {
        "type": const("message"),
        "stepId": uuid7,
        "attemptId": uuid7,
        "stopReason": one_of("stop", "toolUse", "length"),
        "message": assistant_message,
    }
)
started_tool_entry = Shape(
    {
        "type": const("message"),
        "stepId": uuid7,
        "message": tool_message,
        "toolName": nonempty,
        "toolStartedId": uuid7,
        "result": started_result,
    }
)
synthetic_tool_entry = Shape(
    {
        "type": const("message"),
        "stepId": uuid7,
        "assistantEntryId": uuid7,
        "toolIndex": safe_int,
        "message": tool_message,
        "toolName": nonempty,
        "result": pre_execution_result,
    }
)
compaction_entry = Shape(
    {
        "type": const("compaction"),
        "operationId": uuid7,
        "summary": text,
        "compactedThroughEntryId": uuid7,
        "retainedTail": array(Shape({"sourceEntryId": uuid7, "message": any_message})),
    }
)


def entry_kind(entry: Any) -> str | None:
    """Which entry variant this is ("user", "assistant", "tool", "synthetic", "compaction"), or None."""
    if type(entry) is not dict:
        return None
    if entry.get("type") == "compaction":
        return "compaction" if compaction_entry(entry) else None
    if "attemptId" in entry:
        kind, shape = "assistant", assistant_entry
    elif "toolStartedId" in entry:
        kind, shape = "tool", started_tool_entry
    elif "assistantEntryId" in entry:
        kind, shape = "synthetic", synthetic_tool_entry
    else:
        kind, shape = "user", user_entry
    return kind if shape(entry) else None


error_object = Shape({"code": nonempty, "message": nonempty})
snapshot_shape = Shape(
    {
        "model": nonempty,
        "systemPromptDigest": digest_str,
        "tools": array(Shape({"name": nonempty, "definitionDigest": digest_str})),
        "adapterIdentity": nonempty,
        "routingIdentity": nonempty,
        "outputOptionsDigest": digest_str,
    }
)

_base = {"type": text, "operationId": uuid7}
RECORDS: dict[str, Shape] = {
    "runStarted": Shape({**_base, "operationKind": const("run"), "inputEntryId": uuid7}),
    "compactionStarted": Shape(
        {
            **_base,
            "operationKind": const("compaction"),
            "inputThroughEntryId": uuid7,
            "resultEntryId": uuid7,
            "compactedEntryIds": array(uuid7, 1),
            "retainedEntryIds": array(uuid7),
            "sourceDigest": digest_str,
        }
    ),
    "stepAttempt": Shape(
        {
            **_base,
            "stepId": uuid7,
            "attemptId": uuid7,
            "stepKind": one_of("assistant", "compaction"),
            "attempt": integer(1, 2),
            "contextThroughEntryId": uuid7,
            "configurationSnapshot": snapshot_shape,
            "configurationDigest": digest_str,
        }
    ),
    "stepFailed": Shape({**_base, "stepId": uuid7, "attemptId": uuid7, "error": error_object}),
    "toolStarted": Shape(
        {
            **_base,
            "stepId": uuid7,
            "assistantEntryId": uuid7,
            "toolIndex": safe_int,
            "toolCallId": nonempty,
            "toolName": nonempty,
            "arguments": is_object,
            "replay": one_of("safe", "never"),
            "replayKey": nonempty,
            "resultEntryId": uuid7,
            "environmentIdentity": nonempty,
        }
    ),
    "abortRequested": Shape(
        {
            **_base,
            "operationKind": one_of("run", "compaction"),
            "phase": one_of("model", "tool", "compact"),
            "reason": const("escape"),
        },
        {"toolCallId": nonempty},
    ),
}
_finished = {**_base, "operationKind": one_of("run", "compaction")}
FINISHED: dict[tuple[str, str], Shape] = {
    ("run", "completed"): Shape(
        {**_finished, "outcome": text, "completion": one_of("normal", "truncated"), "finalEntryId": uuid7}
    ),
    ("compaction", "completed"): Shape({**_finished, "outcome": text, "finalEntryId": uuid7}),
    ("run", "aborted"): Shape({**_finished, "outcome": text}),
    ("run", "failed"): Shape({**_finished, "outcome": text, "error": error_object}),
}
FINISHED[("compaction", "aborted")] = FINISHED[("run", "aborted")]
FINISHED[("compaction", "failed")] = FINISHED[("run", "failed")]


def record_valid(record: Any) -> bool:
    if type(record) is not dict:
        return False
    kind = record.get("type")
    if kind == "operationFinished":
        shape = FINISHED.get((record.get("operationKind"), record.get("outcome")))  # type: ignore[arg-type]
    else:
        shape = RECORDS.get(kind)  # type: ignore[arg-type]
    if shape is None or not shape(record):
        return False
    return not (kind == "abortRequested" and record["phase"] == "tool" and "toolCallId" not in record)


usage_counters = Shape({"input": safe_int, "output": safe_int, "cacheRead": safe_int, "cacheWrite": safe_int})
_fact_base = {"kind": text, "seq": positive_int, "id": uuid7, "timestamp": safe_int}
entry_fact = Shape({**_fact_base, "entry": is_object})
record_fact = Shape({**_fact_base, "record": record_valid})
usage_fact = Shape(
    {**_fact_base, "operationId": uuid7, "usage": usage_counters},
    {"attemptId": uuid7, "toolStartedId": uuid7},
)
FACTS = {"entry": entry_fact, "record": record_fact, "usage": usage_fact}

header_shape = Shape(
    {
        "kind": const("header"),
        "version": const(2),
        "id": uuid7,
        "createdAt": safe_int,
        "cwd": nonempty,
        "provider": nonempty,
        "model": nonempty,
        "environmentIdentity": nonempty,
    }
)

current_configuration = Shape(
    {
        "configurationDigest": digest_str,
        "environmentIdentity": nonempty,
        "tools": array(
            Shape(
                {
                    "name": nonempty,
                    "definitionDigest": digest_str,
                    "replay": one_of("safe", "never"),
                    "replayKey": nonempty,
                }
            )
        ),
    }
)
