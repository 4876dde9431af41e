"""Reading logs the way every stage does: reduced once, their facts, their plans, their errors in words.

Checks, triage, mining, the doctor, the sweep and the reports all read the same
few logs of a case many times over; ``reduced`` reduces each once (the cache
is keyed by the bytes, and read only). Everything here is pure over bytes.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from chaos.contract.framing import (
    FramingError,
    committed_facts,
    committed_length,
    committed_lines,
    facts_of,
    parse_json,
    parse_line,
)
from chaos.contract.planner import Decision, decide
from chaos.contract.reducer import Reducer


@lru_cache(maxsize=64)
def reduced(data: bytes) -> Reducer:
    """``data`` reduced, once. Read only: feeding it more would change every later reader's view."""
    return Reducer.of(data)


def facts(data: bytes) -> list[dict[str, Any]]:
    """The facts of the lines the reducer accepts (a rejected line and all after it are left out)."""
    return committed_facts(data, reduced(data).line)


def reduces(data: bytes) -> bool:
    """The log reduces (an empty log does not: it has no header)."""
    return bool(reduced(data).result()["ok"])


def rejected_at(data: bytes) -> int | None:
    """The line the reducer rejects (an empty log: line 1), or None when the log reduces."""
    reducer = reduced(data)
    if reducer.error is not None:
        return reducer.error.line
    return None if reducer.state is not None else 1


def error_text(data: bytes) -> str:
    """``ok``, or the reducer's error with what broke: ``INVALID_FACT at line 5 (seq 6): ...``."""
    reducer = reduced(data)
    if reducer.state is None and reducer.error is None:
        return "MISSING_HEADER at line 1: the log is empty"
    error = reducer.error
    if error is None:
        return "ok"
    seq = f" (seq {error.seq})" if error.seq is not None else ""
    return f"{error.code} at line {error.line}{seq}" + (f": {error.detail}" if error.detail else "")


def decision(data: bytes, current: dict[str, Any] | None) -> Decision | None:
    """The oracle's decision (row and plan) for ``data`` under ``current``; None when it cannot plan."""
    reducer = reduced(data)
    if reducer.error is not None or reducer.state is None or current is None:
        return None
    return decide(reducer.state, current)


def plan(data: bytes, current: dict[str, Any] | None) -> dict[str, Any] | None:
    """The oracle's plan for ``data`` under ``current``, or None when the log does not reduce."""
    made = decision(data, current)
    return None if made is None else made.plan


def finishes(data: bytes) -> list[dict[str, Any]]:
    """The ``operationFinished`` records of the lines the reducer accepts."""
    return [f["record"] for f in facts(data) if f.get("record", {}).get("type") == "operationFinished"]


def appended_finishes(before: bytes, after: bytes) -> list[dict[str, Any]]:
    """The ``operationFinished`` records ``after`` holds beyond the committed part of ``before``."""
    committed = before[: committed_length(before)]
    return finishes(after)[len(finishes(committed)) if committed else 0 :]


def raw_facts(lines: list[bytes]) -> list[Any]:
    """The facts of committed lines as written, parsed leniently: what an agent appended, even where the
    reducer rejects it (a line that is not JSON at all is left out)."""
    out: list[Any] = []
    for line in lines:
        try:
            out += facts_of(parse_line(line))
        except FramingError:
            continue
    return out


def appended_lines(before: bytes, after: bytes) -> list[bytes]:
    """The committed lines ``after`` holds beyond the committed part of ``before`` (an append-only
    writer's transactions)."""
    return committed_lines(after)[len(committed_lines(before)) :]


def session_id(log: bytes) -> str | None:
    """The session id from the log's header, or None when the header cannot be read."""
    try:
        header = parse_json(log[: log.find(b"\n")] if b"\n" in log else log)
    except FramingError:
        return None
    value = header.get("id") if isinstance(header, dict) else None
    return value if isinstance(value, str) else None
