"""Strict byte framing of a session log line (contract section 2).

The contract's JSON is I-JSON (RFC 7493): UTF-8 only, no lone surrogates, no
duplicate object keys at any depth, numbers that fit a double. orjson is the
fast path and enforces all of it but one: it quietly keeps the last value of a
duplicated key. Rather than fall back to a slow hook-based parser for every
line, keys are counted twice at C speed, once in the source text and once in
orjson's re-serialisation of what it parsed; a dropped duplicate makes the
second count smaller. Most writers emit compact JSON that is byte for byte
orjson's own output, and such text cannot have lost a key, so only lines that
differ are counted.

Counting keys in text needs to know which quotes open a string. Once escape
sequences are removed, every remaining quote delimits a string, and a scan
that consumes whole strings (``"[^"]*"``) left to right never starts inside
one, so emptying every string to ``""`` and dropping insignificant whitespace
leaves exactly one ``"":`` per object key. (An earlier version counted a quote
followed by a colon, and called any string that opened with ``" :"`` or an
escaped colon a duplicate key.)
"""

from __future__ import annotations

import re
from typing import Any

import orjson

_ESCAPE = re.compile(rb"\\.", re.DOTALL)
_STRING = re.compile(rb'"[^"]*"')
_SPACE = re.compile(rb"[ \t\r\n]+")
_BLANK = re.compile(rb"[ \t]*")


class FramingError(Exception):
    """A committed line that is not one strict JSON value; ``code`` is the contract's error code."""

    def __init__(self, code: str, detail: str = "") -> None:
        super().__init__(code)
        self.code, self.detail = code, detail


def _count_keys(text: bytes) -> int:
    """Object keys in valid JSON text: strings emptied, whitespace dropped, then each ``"":`` is one."""
    if b"\\" in text:
        text = _ESCAPE.sub(b"", text)
    text = _SPACE.sub(b"", _STRING.sub(b'""', text))
    return text.count(b'"":')


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
    except orjson.JSONDecodeError as err:
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as bad:
            raise FramingError("INVALID_UTF8", f"not UTF-8 at byte {bad.start}") from None
        raise FramingError("MALFORMED_JSON", f"not strict JSON: {err}") from None
    if isinstance(value, dict | list):
        again = orjson.dumps(value)
        # Text equal to orjson's own output dropped nothing; most writers emit exactly that.
        if again != data and _count_keys(data) != _count_keys(again):
            raise FramingError("MALFORMED_JSON", "an object has a duplicate key")
    return value


def facts_of(value: Any) -> list[Any]:
    """The facts of one parsed transaction line (a single fact or an array of them)."""
    return value if isinstance(value, list) else [value]


def committed_length(data: bytes) -> int:
    """Bytes up to and including the last LF: what is committed; anything after is a torn tail."""
    return data.rfind(b"\n") + 1


def committed_lines(data: bytes) -> list[bytes]:
    """The committed lines, without their LFs; a torn tail is left out."""
    return data[: committed_length(data)].split(b"\n")[:-1]


def committed_facts(data: bytes, lines: int | None = None) -> list[dict[str, Any]]:
    """The facts of the committed lines after the header (the first ``lines`` lines, when given).

    Only for bytes the reducer has accepted up to that line; nothing is re-validated.
    """
    body = committed_lines(data)[1 : None if lines is None else lines]
    return [fact for line in body for fact in facts_of(orjson.loads(line))]
