"""Hypothesis properties of the reducer over synthesized valid logs."""

from __future__ import annotations

import random
from functools import cache
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chaos.contract import Reducer, reduce
from chaos.contract.digest import canonical, canonical_closed
from chaos.contract.synth import synthesize

settings.register_profile(
    "chaos", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("chaos")


@cache
def _log(seed: int, operations: int) -> bytes:
    return synthesize(random.Random(seed), operations, crash_rate=0.15)


logs = st.builds(_log, st.integers(0, 40), st.integers(1, 6))


def test_synthesized_logs_cover_the_contract() -> None:
    """The generator reaches the states the properties are meant to exercise."""
    data = b"".join(_log(seed, 6) for seed in range(41))
    for needle in (
        b'"attempt":2',
        b'"stepFailed"',
        b'"abortRequested"',
        b'"compactionStarted"',
        b'"reason":"interrupted"',
        b'"reason":"unknownTool"',
        b'"reason":"invalidArguments"',
        b'"reason":"truncated"',
        b'"toolStartedId":',
        b'"outcome":"aborted"',
    ):
        assert needle in data, needle


def test_every_byte_prefix_of_a_valid_log_is_ok() -> None:
    data = _log(3, 3)
    last_lf = 0
    reducer = Reducer()
    for size in range(1, len(data) + 1):
        reducer.feed(data[size - 1 : size])
        if data[size - 1] == 0x0A:
            last_lf = size
        assert reducer.error is None, (size, reducer.error)
        assert reducer.repaired_length == last_lf


@given(logs, st.data())
def test_prefix_reduces_ok_with_repaired_length_at_last_lf(data: bytes, draw: st.DataObject) -> None:
    cut = draw.draw(st.integers(0, len(data)))
    prefix = data[:cut]
    result = reduce(prefix)
    last_lf = prefix.rfind(b"\n") + 1
    if last_lf == 0:
        assert result == {"ok": False, "error": {"code": "MISSING_HEADER", "line": 1}}
    else:
        assert result["ok"], result
        assert result["state"]["repairedLength"] == last_lf
        assert result == reduce(prefix[:last_lf])


@given(logs, st.lists(st.integers(1, 5000), max_size=40))
def test_chunked_feeding_equals_one_shot(data: bytes, sizes: list[int]) -> None:
    reducer, pos = Reducer(), 0
    for size in sizes:
        reducer.feed(data[pos : pos + size])
        pos += size
    reducer.feed(data[pos:])
    assert reducer.result() == reduce(data)


@given(logs)
def test_reduction_is_deterministic(data: bytes) -> None:
    first, second = reduce(data), reduce(bytes(data))
    assert orjson.dumps(first) == orjson.dumps(second)


def _skeleton(result: dict[str, Any]) -> Any:
    """What recovery depends on, without the values the contract has no way to cross-check.

    No fact protects free text (message contents, summaries, error messages), usage
    counters, timestamps, header fields, or a toolStarted's replayKey and
    environmentIdentity: a flipped byte there yields a different but valid log. Every
    other byte is cross-checked by a reference, a digest, a pattern or an enum.
    """
    if not result["ok"]:
        return result
    state = result["state"]

    def message(m: dict[str, Any]) -> Any:
        calls = [(c["id"], c["function"]["name"]) for c in m.get("tool_calls", [])]
        return (m["role"], m.get("tool_call_id"), calls)

    op = dict(state["operation"])
    op["toolCalls"] = [
        {k: v for k, v in tc.items() if k not in ("replayKey", "environmentIdentity")}
        for tc in op.get("toolCalls", [])
    ]
    return (
        [message(m) for m in state["transcript"]],
        [message(m) for m in state["activeContext"]],
        op,
        state["repairedLength"],
    )


@given(logs, st.data())
@settings(max_examples=300)
def test_single_byte_corruption_is_caught_or_harmless(data: bytes, draw: st.DataObject) -> None:
    # The last LF is excluded: without it the last transaction is a torn tail by definition.
    position = draw.draw(st.integers(0, len(data) - 2))
    value = draw.draw(st.integers(0, 255).filter(lambda b: b != data[position]))
    corrupt = data[:position] + bytes([value]) + data[position + 1 :]
    result = reduce(corrupt)
    if result["ok"]:
        assert _skeleton(result) == _skeleton(reduce(data))


closed_values = st.recursive(
    st.none() | st.text(),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


@given(closed_values)
def test_fast_canonical_form_is_rfc8785_on_the_closed_domain(value: Any) -> None:
    assert canonical_closed(value) == canonical(value)
