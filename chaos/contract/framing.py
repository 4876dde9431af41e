"""Strict byte framing of a session log line (contract section 2).

orjson is the fast path, but it quietly keeps the last value of a duplicated
key, and the contract calls a duplicate key at any depth malformed. Rather than
fall back to a slow hook-based parser for every line, we count keys twice at C
speed: once in the source text and once in orjson's re-serialisation of what
it parsed. Once escape sequences are removed, every remaining quote is a
string delimiter, so a quote followed by optional whitespace and a colon ends
exactly one object key. A dropped duplicate makes the second count smaller.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

_ESCAPE = re.compile(rb"\\.", re.DOTALL)
_KEY_END_WITH_SPACE = re.compile(rb'"[ \t\r\n]+:')
_BLANK = re.compile(rb"[ \t]*")


class FramingError(Exception):
    """A committed line that is not one strict JSON value; ``code`` is the contract's error code."""

    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


def _count_keys(text: bytes, may_have_space: bool) -> int:
    if b"\\" in text:
        text = _ESCAPE.sub(b"", text)
    count = text.count(b'":')
    if may_have_space:
        count += len(_KEY_END_WITH_SPACE.findall(text))
    return count


def parse_line(line: bytes) -> Any:
    """Parse one committed line (without its LF) or raise FramingError."""
    if line.endswith(b"\r"):
        raise FramingError("CRLF_NOT_ALLOWED")
    if _BLANK.fullmatch(line):
        raise FramingError("BLANK_LINE")
    return parse_json(line)


def parse_json(data: bytes) -> Any:
    """Parse one strict JSON value: UTF-8, no lone surrogates, no duplicate keys."""
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            raise FramingError("INVALID_UTF8") from None
        raise FramingError("MALFORMED_JSON") from None
    if isinstance(value, dict | list):
        source_keys = _count_keys(data, True)
        if source_keys and source_keys != _count_keys(orjson.dumps(value), False):
            raise FramingError("MALFORMED_JSON")
    return value


def facts_of(value: Any) -> list[Any]:
    """The facts of one parsed transaction line (a single fact or an array of them)."""
    return value if isinstance(value, list) else [value]


def committed_length(data: bytes) -> int:
    """Bytes up to and including the last LF: what is committed; anything after is a torn tail."""
    return data.rfind(b"\n") + 1


def committed_lines(data: bytes) -> list[bytes]:
    """The committed lines, without their LFs; a torn tail is left out."""
    return data[: committed_length(data)].splitlines()


def committed_facts(data: bytes, lines: int | None = None) -> list[dict[str, Any]]:
    """The facts of the committed lines after the header (the first ``lines`` lines, when given).

    Only for bytes the reducer has accepted up to that line; nothing is re-validated.
    """
    body = committed_lines(data)[1 : None if lines is None else lines]
    return [fact for line in body for fact in facts_of(orjson.loads(line))]
