"""The framing layer against an independent strict parser (Hypothesis, differential).

chaos parses with orjson and finds duplicate keys by counting; the reference is
the standard library's ``json`` with an ``object_pairs_hook`` that refuses
duplicates and a walk that refuses lone surrogates. Both must give the same
verdict (value, or error code) on arbitrary JSON text: random whitespace,
strings full of quotes, colons, backslashes and escapes, ``\\u`` sequences with
lone surrogates, raw non-ASCII, deep nesting, duplicate keys at any depth, and
invalid UTF-8. Two rules the contract takes from I-JSON (RFC 7493) are written
into the reference, since ``json`` is laxer: NaN/Infinity and numbers that
overflow a double are malformed, and integers beyond 64 bits are read as
doubles (as orjson and most parsers do; RFC 8259 section 6 leaves it to them).
"""

from __future__ import annotations

import json
import math
import random
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from chaos.contract import reduce
from chaos.contract.framing import FramingError, committed_lines, parse_json, parse_line
from chaos.contract.synth import synthesize

EXAMPLES = 4_000  # 10,000 found nothing more in any run so far; the suite must fit CI's budget


class _Refused(ValueError):
    pass


def _pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [key for key, _ in items]
    if len(set(keys)) != len(keys):
        raise _Refused("duplicate key")
    return dict(items)


def _constant(name: str) -> Any:
    raise _Refused(f"{name} is not JSON")


def _float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise _Refused("overflows a double")
    return value


def _int(text: str) -> int | float:
    value = int(text)
    return value if -(2**63) <= value < 2**64 else float(text)


def _lone_surrogate(value: Any) -> bool:
    if isinstance(value, str):
        return any(0xD800 <= ord(c) <= 0xDFFF for c in value)
    if isinstance(value, list):
        return any(map(_lone_surrogate, value))
    if isinstance(value, dict):
        return any(_lone_surrogate(k) or _lone_surrogate(v) for k, v in value.items())
    return False


def reference(data: bytes) -> tuple[str, Any]:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return ("error", "INVALID_UTF8")
    try:
        value = json.loads(
            text, object_pairs_hook=_pairs, parse_constant=_constant, parse_float=_float, parse_int=_int
        )
    except (ValueError, RecursionError):
        return ("error", "MALFORMED_JSON")
    if _lone_surrogate(value):
        return ("error", "MALFORMED_JSON")
    return ("ok", value)


def reference_line(line: bytes) -> tuple[str, Any]:
    if line.endswith(b"\r"):
        return ("error", "CRLF_NOT_ALLOWED")
    if line.strip(b" \t") == b"":
        return ("error", "BLANK_LINE")
    return reference(line)


def _ours(parse: Any, data: bytes) -> tuple[str, Any]:
    try:
        return ("ok", parse(data))
    except FramingError as err:
        return ("error", err.code)


# -- JSON text, written token by token -------------------------------------------------------------

space = st.text(alphabet=" \t\n\r", max_size=3)
_ESCAPES = ['\\"', "\\\\", "\\/", "\\b", "\\f", "\\n", "\\r", "\\t"]


_TROUBLE = list(' :,"{}[]a\\é😀\u2028') + _ESCAPES + ["\\ud83d\\ude00"]  # a valid surrogate pair too
_char = st.one_of(
    st.sampled_from(_TROUBLE),
    st.integers(0, 0xFFFF).map(lambda c: f"\\u{c:04x}"),
    st.integers(0xD800, 0xDFFF).map(lambda c: f"\\u{c:04X}"),  # lone, or paired by luck
    st.characters(blacklist_categories=("Cs",), blacklist_characters='"\\', min_codepoint=0x20),
)


def _string(draw: st.DrawFn, keys: bool = False) -> str:
    if keys and draw(st.integers(0, 2)):
        return draw(st.sampled_from(['"a"', '"b"', '"\\u0061"', '" :"', '":"', '""', '"a\\""']))
    return '"' + "".join(draw(st.lists(_char, max_size=8))) + '"'


_NUMBERS = st.one_of(
    st.integers(-(2**70), 2**70).map(str),
    st.sampled_from(
        ["-0", "0.5", "-1.25e3", "1E+2", "1e-400", "1e400", "-1e999", "2.5E-3", "01", "1.", ".5"]
    ),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
)


@st.composite
def json_text(draw: st.DrawFn, depth: int = 0) -> str:
    ws = draw(space)
    kind = draw(st.integers(0, 6 if depth < 40 else 3))
    if kind == 0:
        return ws + draw(st.sampled_from(["null", "true", "false"])) + ws
    if kind == 1:
        return ws + draw(_NUMBERS) + ws
    if kind in (2, 3):
        return ws + _string(draw) + ws
    if kind == 4:
        items = draw(st.lists(json_text(depth + 1), max_size=4))
        return ws + "[" + ",".join(items or [draw(space)]) + "]" + ws
    members = []
    for _ in range(draw(st.integers(0, 4))):
        members.append(
            draw(space) + _string(draw, keys=True) + draw(space) + ":" + draw(json_text(depth + 1))
        )
    return ws + "{" + ",".join(members or [draw(space)]) + "}" + ws


@st.composite
def json_bytes(draw: st.DrawFn) -> bytes:
    data = draw(json_text()).encode("utf-8", "surrogatepass")
    mutation = draw(st.integers(0, 9))
    if mutation == 0 and data:  # invalid UTF-8, or a raw surrogate, somewhere
        at = draw(st.integers(0, len(data)))
        junk = draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x80", b"\xf0\x9f\x98"]))
        data = data[:at] + junk + data[at:]
    elif mutation == 1 and data:  # cut short
        data = data[: draw(st.integers(0, len(data) - 1))]
    elif mutation == 2:  # a stray token
        at = draw(st.integers(0, len(data)))
        data = data[:at] + draw(st.sampled_from([b",", b":", b'"', b"}", b"]", b"\\", b"NaN"])) + data[at:]
    return data


SETTINGS = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))


@pytest.mark.slow  # 4,000 examples
@SETTINGS
@given(json_bytes())
@example(b'{"a":"x","b":" :)"}')
@example(b'["x", " :y"]')
@example(b'{"a":"\\u003a"}')
@example(b'{"a":1,"\\u0061":2}')
@example(b'{"k":{"a":1,"a":1}}')
@example(b'"\\ud800"')
@example(b"\xef\xbb\xbf{}")
@example(b" \t ")
@example(b"")
def test_parse_json_and_parse_line_agree_with_the_reference(data: bytes) -> None:
    assert _ours(parse_json, data) == reference(data)
    line = data.replace(b"\n", b" ") + _ENDINGS[len(data) % len(_ENDINGS)]
    assert _ours(parse_line, line) == reference_line(line)


_ENDINGS = [b"", b"\r", b" ", b"\t", b""]


def test_the_strings_that_opened_with_a_colon_are_valid() -> None:
    """Issue 12's regressions: a value that opens with ``" :"`` or an escaped colon is not a duplicate."""
    assert parse_json(b'{"a":"x","b":" :)"}') == {"a": "x", "b": " :)"}
    assert parse_json(b'["x", " :y"]') == ["x", " :y"]
    assert parse_json(b'{"a":"\\u003a"}') == {"a": ":"}
    with pytest.raises(FramingError):
        parse_json(b'{"a":1, "a" : 2}')


# -- whole lines of the session format -------------------------------------------------------------


def _shuffled(value: Any, rnd: random.Random) -> Any:
    if isinstance(value, dict):
        items = list(value.items())
        rnd.shuffle(items)
        return {k: _shuffled(v, rnd) for k, v in items}
    if isinstance(value, list):
        return [_shuffled(v, rnd) for v in value]
    return value


def _reserialised(line: bytes, rnd: random.Random) -> bytes:
    value = _shuffled(orjson.loads(line), rnd)
    item, key = rnd.choice([(",", ":"), (", ", ": "), (" ,\t", " :\r "), ("\t,", ":\t")])
    text = json.dumps(value, separators=(item, key), ensure_ascii=rnd.random() < 0.5)
    return (rnd.choice(["", " ", "\t"]) + text + rnd.choice(["", " ", "\t"])).encode()


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.integers(0, 10_000), st.integers(1, 5))
def test_a_log_reduces_the_same_whatever_its_separators_and_key_order(seed: int, operations: int) -> None:
    rnd = random.Random(seed)
    log = synthesize(rnd, operations, crash_rate=0.15)
    lines = committed_lines(log)
    torn = rnd.random() < 0.3
    cut = rnd.randint(1, len(lines))
    original = b"".join(line + b"\n" for line in lines[:cut])
    rewritten = b"".join(_reserialised(line, rnd) + b"\n" for line in lines[:cut])
    if torn and cut < len(lines):
        original += lines[cut][:5]
        rewritten += lines[cut][:5]
    ours, theirs = reduce(original), reduce(rewritten)
    assert ours["ok"] and theirs["ok"], (ours, theirs)
    assert theirs["state"]["repairedLength"] == rewritten.rfind(b"\n") + 1
    theirs["state"]["repairedLength"] = ours["state"]["repairedLength"]
    assert theirs == ours


def test_a_carriage_return_inside_a_line_is_whitespace_not_a_line_break() -> None:
    log = synthesize(random.Random(1), 1)
    first, *rest = committed_lines(log)
    spaced = first.replace(b'","', b'",\r"', 1)
    assert spaced != first
    data = spaced + b"\n" + b"".join(line + b"\n" for line in rest)
    assert reduce(data)["ok"]
    assert committed_lines(data)[0] == spaced
