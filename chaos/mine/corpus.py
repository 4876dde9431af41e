"""A fixture corpus judged again: every log re-reduced and every planner case re-planned by the current
oracle, against what the corpus expects (``chaos fixtures check``).

A contract change that alters a reduction or a plan shows its blast radius
here before it lands: each fixture whose expected state or plan no longer
matches is named, with the first place they part. Works on any corpus in the
golden layout (``fixtures/manifest.json``, ``planner-fixtures/manifest.json``):
the contract's own, or one chaos mined. A framework agent's crash prefixes
(``store-fixtures/``: the store's files and the view its adapter read of them)
are read again by the adapter and compared the same way.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chaos.contract import Reducer, plan_recovery, reduce
from chaos.errors import UsageError
from chaos.store import known, store_named


@dataclass(frozen=True)
class FixtureVerdict:
    kind: str  # reducer | planner | store
    name: str
    ok: bool
    differs: str = ""  # where the current oracle parts from the expectation


class NotACorpus(ValueError):
    """The folder holds no manifest of the golden layout."""


def first_difference(expected: Any, got: Any, where: str = "") -> str:
    """The first path where two JSON values differ, with both values (shortened)."""
    if isinstance(expected, dict) and isinstance(got, dict):
        for key in sorted(set(expected) | set(got)):
            if expected.get(key, "<absent>") != got.get(key, "<absent>"):
                return first_difference(
                    expected.get(key, "<absent>"), got.get(key, "<absent>"), f"{where}.{key}"
                )
        return ""
    if isinstance(expected, list) and isinstance(got, list) and len(expected) == len(got):
        for n, (a, b) in enumerate(zip(expected, got, strict=True)):
            if a != b:
                return first_difference(a, b, f"{where}[{n}]")
        return ""
    if expected == got:
        return ""
    return f"{where or '(top)'}: expected {json.dumps(expected)[:120]}, got {json.dumps(got)[:120]}"


def _manifest(root: Path, folder: str) -> list[dict[str, Any]]:
    path = root / folder / "manifest.json"
    return list(json.loads(path.read_text())["fixtures"]) if path.is_file() else []


def _store_fixture(root: Path, entry: dict[str, Any]) -> FixtureVerdict:
    """A framework store's crash prefix read again by its adapter, against the view it was mined with."""
    expected = json.loads((root / "store-fixtures" / entry["expected"]).read_text())
    if expected["store"] not in known():
        return FixtureVerdict("store", entry["name"], False, f"no store adapter {expected['store']!r} here")
    folder = root / "store-fixtures" / entry["files"]
    files = {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }
    view = store_named(expected["store"]).read(files)
    if view.blind is not None:  # what chaos cannot read is no verdict either way
        raise UsageError(f"store-fixtures/{entry['files']}: chaos cannot read it: {view.blind}")
    read = view.normalized()
    got = {k: v for k, v in read.items() if k in expected["view"]}  # (a field newer than the fixture is
    # not judged: what it was mined with still must read the same)
    return FixtureVerdict(
        "store", entry["name"], got == expected["view"], first_difference(expected["view"], got)
    )


def check_corpus(root: Path) -> list[FixtureVerdict]:
    reducer_cases, planner_cases = _manifest(root, "fixtures"), _manifest(root, "planner-fixtures")
    store_cases = _manifest(root, "store-fixtures")
    if not reducer_cases and not planner_cases and not store_cases:
        raise NotACorpus(
            f"{root}: no fixtures/manifest.json, planner-fixtures/manifest.json or store-fixtures/manifest.json"
        )
    out = [_store_fixture(root, entry) for entry in store_cases]
    for entry in reducer_cases:
        expected = json.loads((root / "fixtures" / entry["expected"]).read_text())
        got = reduce((root / "fixtures" / entry["file"]).read_bytes())
        out.append(FixtureVerdict("reducer", entry["name"], got == expected, first_difference(expected, got)))
    for entry in planner_cases:
        case = json.loads((root / "planner-fixtures" / entry["input"]).read_text())
        expected = json.loads((root / "planner-fixtures" / entry["expected"]).read_text())
        reducer = Reducer.of((root / "fixtures" / case["sessionFile"]).read_bytes())
        if reducer.state is None or reducer.error is not None:
            out.append(
                FixtureVerdict("planner", entry["name"], False, f"{case['sessionFile']} no longer reduces")
            )
            continue
        got = plan_recovery(reducer.state, case["current"])
        out.append(FixtureVerdict("planner", entry["name"], got == expected, first_difference(expected, got)))
    return out
