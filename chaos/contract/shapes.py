"""The per-line shape of the session format, checked in code, and the JSON Schema it amounts to.

Each violation must map to a contract error code rather than a validator
message, and the reducer runs these on every fact, so the shapes are small
composable checkers. Each checker also carries the JSON Schema fragment it
checks (``schema_of``), so ``chaos.contract.schema`` writes the session
line schema from these same definitions (and a test holds it against the
contract's own). Integral floats (``1.0``) are valid JSON Schema integers, as
in every JavaScript port; they are normalised to int.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

MAX_SAFE = 2**53 - 1
Check = Callable[[Any], bool]

UUID7_PATTERN = "^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$"
DIGEST_PATTERN = "^sha256:[0-9a-f]{64}$"
_UUID7 = re.compile(UUID7_PATTERN.strip("^$"))
_DIGEST = re.compile(DIGEST_PATTERN.strip("^$"))


def _schema(fragment: dict[str, Any]) -> Callable[[Check], Check]:
    """Attach the JSON Schema ``fragment`` a checker checks."""

    def attach(check: Check) -> Check:
        check.schema = fragment  # type: ignore[attr-defined]
        return check

    return attach


def schema_of(check: Check) -> dict[str, Any]:
    if isinstance(check, Shape):
        return check.to_schema()
    fragment: dict[str, Any] = getattr(check, "schema")  # noqa: B009 (attached by _schema, not declared)
    return fragment


@_schema({"type": "string", "pattern": UUID7_PATTERN})
def uuid7(v: Any) -> bool:
    return type(v) is str and _UUID7.fullmatch(v) is not None


@_schema({"type": "string", "pattern": DIGEST_PATTERN})
def digest_str(v: Any) -> bool:
    return type(v) is str and _DIGEST.fullmatch(v) is not None


@_schema({"type": "string"})
def text(v: Any) -> bool:
    return type(v) is str


@_schema({"type": "string", "minLength": 1})
def nonempty(v: Any) -> bool:
    return type(v) is str and v != ""


@_schema({"type": "object"})
def is_object(v: Any) -> bool:
    return type(v) is dict


def integer(lo: int, hi: int) -> Check:
    @_schema({"type": "integer", "minimum": lo, "maximum": hi})
    def check(v: Any) -> bool:
        if type(v) is int:
            return lo <= v <= hi
        return type(v) is float and v.is_integer() and lo <= v <= hi

    check.integer = True  # type: ignore[attr-defined]
    return check


def const(expected: Any) -> Check:
    return _schema({"const": expected})(lambda v: type(v) is type(expected) and v == expected)


def one_of(*allowed: str) -> Check:
    options = frozenset(allowed)
    return _schema({"enum": list(allowed)})(lambda v: type(v) is str and v in options)


@_schema({"type": ["string", "null"]})
def nullable_text(v: Any) -> bool:
    return v is None or type(v) is str


def array(item: Check, min_items: int = 0) -> Check:
    def check(v: Any) -> bool:
        return type(v) is list and len(v) >= min_items and all(item(x) for x in v)

    check.schema = {"type": "array", "minItems": min_items, "items": schema_of(item)}  # type: ignore[attr-defined]
    return check


def either(*checks: Check) -> Check:
    """Any one of ``checks`` (JSON Schema ``oneOf``: the shapes here never overlap)."""

    def check(v: Any) -> bool:
        return any(c(v) for c in checks)

    check.schema = {"oneOf": [schema_of(c) for c in checks]}  # type: ignore[attr-defined]
    return check


def found(value: Any) -> str:
    """A value as an error message shows it: short, and typed (``"x"``, ``3``, ``null``, an object)."""
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return f"an array of {len(value)}"
    text = (
        repr(value)
        if isinstance(value, str)
        else str(value).lower()
        if isinstance(value, bool)
        else str(value)
    )
    return text if len(text) <= 60 else text[:57] + "..."


def _expected_of(fragment: dict[str, Any]) -> str:
    if "const" in fragment:
        return repr(fragment["const"])
    if "enum" in fragment:
        return "one of " + ", ".join(map(str, fragment["enum"]))
    if "oneOf" in fragment:
        return " or ".join(_expected_of(f) for f in fragment["oneOf"])
    kind = fragment.get("type")
    if fragment.get("pattern") == UUID7_PATTERN:
        return "a UUIDv7"
    if fragment.get("pattern") == DIGEST_PATTERN:
        return "a sha256: digest"
    if kind == "integer":
        return f"a whole number from {fragment['minimum']} to {fragment['maximum']}"
    if kind == "array":
        least = f" (at least {fragment['minItems']})" if fragment.get("minItems") else ""
        return f"an array of {_expected_of(fragment['items'])}{least}"
    if kind == "string":
        return "a non-empty string" if fragment.get("minLength") else "a string"
    if kind == ["string", "null"]:
        return "a string or null"
    return "an object"


def expected(check: Check) -> str:
    """What a checker accepts, in words (from the JSON Schema fragment it carries)."""
    return _expected_of(schema_of(check))


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
        """The first reason ``v`` does not fit, naming the field path, what was expected and what was
        found (the way ``jsonschema`` names a path), or None when it fits."""
        if type(v) is not dict:
            return f"{path.rstrip('.') or 'value'}: expected an object, found {found(v)}"
        for key in v:
            if key not in self.fields:
                return f"{path}{key}: unknown field (allowed: {', '.join(self.fields)})"
        for key in self.required:
            if key not in v:
                return f"{path.rstrip('.') or 'the object'} lacks {key} ({expected(self.fields[key])})"
        for key, value in v.items():
            check = self.fields[key]
            if isinstance(check, Shape):
                reason = check.why(value, f"{path}{key}.")
                if reason:
                    return reason
            elif not check(value):
                return f"{path}{key}: expected {expected(check)}, found {found(value)}"
        return None

    def to_schema(self) -> dict[str, Any]:
        return {
            "type": "object",
            "additionalProperties": False,
            "required": list(self.required),
            "properties": {key: schema_of(check) for key, check in self.fields.items()},
        }

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


any_message.schema = {"oneOf": [m.to_schema() for m in _MESSAGES.values()]}  # type: ignore[attr-defined]


PRE_EXECUTION_REASONS = ("invalidArguments", "unknownTool", "truncated", "aborted")
_plain_result = Shape({"type": one_of("success", "error")})
_interrupted_result = Shape({"type": const("synthetic"), "reason": const("interrupted")})


started_result = either(_plain_result, _interrupted_result)


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


ENTRY_SHAPES = (user_entry, assistant_entry, started_tool_entry, synthetic_tool_entry, compaction_entry)


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


def _record_schema() -> dict[str, Any]:
    variants = []
    for kind, shape in RECORDS.items():
        fragment = shape.to_schema()
        fragment["properties"]["type"] = {"const": kind}
        if kind == "abortRequested":  # a tool-phase abort names the call it interrupts
            fragment["if"] = {"properties": {"phase": {"const": "tool"}}}
            fragment["then"] = {"required": ["toolCallId"]}
        variants.append(fragment)
    for (operation, outcome), shape in FINISHED.items():
        fragment = shape.to_schema()
        fragment["properties"].update(
            type={"const": "operationFinished"},
            operationKind={"const": operation},
            outcome={"const": outcome},
        )
        variants.append(fragment)
    return {"oneOf": variants}


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


record_valid.schema = _record_schema()  # type: ignore[attr-defined]


USAGE_KEYS = ("input", "output", "cacheRead", "cacheWrite")  # a usage fact's counters, in this order
usage_counters = Shape(dict.fromkeys(USAGE_KEYS, safe_int))
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


ENTRY_VARIANTS = {
    "user": ("a user message entry", user_entry),
    "assistant": ("an assistant message entry", assistant_entry),
    "tool": ("a tool result entry (of a toolStarted)", started_tool_entry),
    "synthetic": ("a pre-execution synthetic tool result entry", synthetic_tool_entry),
    "compaction": ("a compaction entry", compaction_entry),
}


def _meant_entry(entry: dict[str, Any]) -> str:
    """Which entry variant a malformed entry was meant to be: by its type, role and result."""
    if entry.get("type") == "compaction":
        return "compaction"
    message = entry.get("message")
    role = message.get("role") if isinstance(message, dict) else None
    if "attemptId" in entry or role == "assistant":
        return "assistant"
    result = entry.get("result")
    if role == "tool" or "toolName" in entry or result is not None:
        reason = result.get("reason") if isinstance(result, dict) else None
        pre = reason in PRE_EXECUTION_REASONS or "assistantEntryId" in entry
        return "synthetic" if pre and "toolStartedId" not in entry else "tool"
    return "user"


def _record_shape(record: dict[str, Any]) -> Shape | None:
    kind = record.get("type")
    if kind == "operationFinished":
        return FINISHED.get((record.get("operationKind"), record.get("outcome")))  # type: ignore[arg-type]
    return RECORDS.get(kind) if isinstance(kind, str) else None


def explain(fact: Any) -> str:
    """Why ``fact`` is not a fact of the contract (INVALID_FACT): the fact's kind, the field path, and
    what was expected against what was found, e.g. ``a pre-execution synthetic tool result entry lacks
    assistantEntryId``. Only called for a fact the checkers refused, so it may be slow."""
    if type(fact) is not dict:
        return f"a transaction holds {found(fact)}, not a fact object"
    kind = fact.get("kind")
    if kind not in FACTS:
        return f"kind: expected one of entry, record, usage, found {found(kind)}"
    if kind == "usage":
        base = usage_fact.why(fact)
        return (
            f"usage fact: {base}"
            if base
            else "usage fact: needs exactly one owner, attemptId or toolStartedId"
        )
    holder = Shape({**_fact_base, kind: is_object})
    base = holder.why(fact)
    if base:
        return f"{kind} fact: {base}"
    if kind == "entry":
        entry = fact["entry"]
        variant, entry_shape = ENTRY_VARIANTS[_meant_entry(entry)]
        return f"{variant}: {entry_shape.why(entry, 'entry.') or 'does not fit its variant'}"
    record = fact["record"]
    shape = _record_shape(record)
    name = record.get("type")
    if shape is None:
        if name == "operationFinished":
            return (
                f"operationFinished: no outcome {found(record.get('outcome'))} for operationKind "
                f"{found(record.get('operationKind'))} (outcome is completed, aborted or failed)"
            )
        return (
            f"record.type: expected one of {', '.join([*RECORDS, 'operationFinished'])}, found {found(name)}"
        )
    reason = shape.why(record, "record.")
    if reason is None and name == "abortRequested":
        return "abortRequested record: a tool-phase abort lacks toolCallId (the call it interrupts)"
    return f"{name} record: {reason or 'does not fit its shape'}"
