"""chaos's session line schema (written from the reducer's shapes) against the contract's own schemas."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chaos.contract.framing import committed_lines
from chaos.contract.schema import lines_valid, schema_valid
from chaos.contract.synth import synthesize
from tests.conftest import MINED, conformance_dir


def _corpus() -> Path:
    root = conformance_dir()
    if root is None:
        pytest.skip("no conformance corpus: set CHAOS_CONFORMANCE_DIR")
    return root


def _theirs() -> dict[str, Any]:
    return json.loads((_corpus() / "schemas" / "session.schema.json").read_text())  # type: ignore[no-any-return]


def test_every_golden_fixture_line_is_judged_as_the_contract_judges_it() -> None:
    root = _corpus()
    theirs = _theirs()
    for entry in json.loads((root / "fixtures" / "manifest.json").read_text())["fixtures"]:
        data = (root / "fixtures" / entry["file"]).read_bytes()
        assert lines_valid(data) == lines_valid(data, theirs), entry["name"]
        assert schema_valid(data) == entry["schemaValid"], entry["name"]


def test_the_mined_corpus_records_the_validators_verdict() -> None:
    for entry in json.loads((MINED / "fixtures" / "manifest.json").read_text())["fixtures"]:
        assert entry["schemaValid"] == schema_valid((MINED / "fixtures" / entry["file"]).read_bytes())


def _mutate(value: Any, rnd: random.Random) -> Any:
    """One small change somewhere in a line's JSON: drop, add or retype a field, or empty a string."""
    path: list[Any] = []
    node = value
    while isinstance(node, dict | list) and node and rnd.random() < 0.7:
        key = rnd.choice(list(node)) if isinstance(node, dict) else rnd.randrange(len(node))
        path.append(key)
        node = node[key]
    parent = value
    for key in path[:-1]:
        parent = parent[key]
    choice = rnd.randrange(5)
    if not path:
        return [] if choice == 0 else {"kind": "record"}
    key = path[-1]
    if choice == 0 and isinstance(parent, dict):
        del parent[key]
    elif choice == 1 and isinstance(parent, dict):
        parent["surplus"] = 1
    elif choice == 2:
        parent[key] = rnd.choice([None, 1, 1.5, "", "x", [], {}, True, -1, 2**60])
    elif choice == 3 and isinstance(node, str):
        parent[key] = ""
    else:
        parent[key] = rnd.choice(["toolStarted", "entry", "usage", "safe", "never", "tool", "length"])
    return value


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.integers(0, 10_000))
def test_mutated_lines_are_judged_alike(seed: int) -> None:
    rnd = random.Random(seed)
    lines = committed_lines(synthesize(rnd, 2, crash_rate=0.2))
    index = rnd.randrange(len(lines))
    mutated = list(lines)
    mutated[index] = orjson.dumps(_mutate(orjson.loads(lines[index]), rnd))
    data = b"\n".join(mutated) + b"\n"
    assert lines_valid(data) == lines_valid(data, _theirs())
