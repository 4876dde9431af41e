"""Every shipped golden fixture, through the library and through the CLI, compared as parsed JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from chaos.cli import main
from chaos.contract import Reducer, plan_recovery, reduce
from tests.conftest import unpack_case


def _load(path: Path) -> Any:
    return json.loads(path.read_text())


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any]:
    code = main(list(argv))
    return code, json.loads(capsys.readouterr().out)


def test_reducer_fixture(reducer_case: Any, capsys: pytest.CaptureFixture[str]) -> None:
    root, entry = unpack_case(reducer_case)
    log = root / "fixtures" / entry["file"]
    expected = _load(root / "fixtures" / entry["expected"])
    assert reduce(log.read_bytes()) == expected
    code, printed = _cli(capsys, "reduce", str(log))
    assert printed == expected
    assert code == (0 if expected["ok"] else 1)


def test_planner_fixture(planner_case: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    root, entry = unpack_case(planner_case)
    case = _load(root / "planner-fixtures" / entry["input"])
    expected = _load(root / "planner-fixtures" / entry["expected"])
    log = root / "fixtures" / case["sessionFile"]
    reducer = Reducer()
    reducer.feed(log.read_bytes())
    assert reducer.state is not None and reducer.error is None
    assert plan_recovery(reducer.state, case["current"]) == expected
    current = tmp_path / "current.json"
    current.write_text(json.dumps(case["current"]))
    code, printed = _cli(capsys, "plan", str(log), "--current", str(current))
    assert (code, printed) == (0, expected)
