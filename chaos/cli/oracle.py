"""``chaos reduce`` and ``chaos plan``: the contract's oracle on one log."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from chaos.cli.options import Commands, emit, read, say
from chaos.contract import Reducer, plan_recovery
from chaos.contract.framing import FramingError, parse_json
from chaos.contract.reading import error_text
from chaos.contract.shapes import current_configuration
from chaos.errors import ExitCode, UsageError


def load_current(path: str) -> dict[str, Any]:
    """Read a current-configuration file (the planner fixtures' ``current`` shape)."""
    try:
        value = parse_json(read(path))
    except FramingError as err:
        raise UsageError(f"{path}: not strict JSON ({err.code})") from None
    reason = current_configuration.why(value)
    if reason:
        raise UsageError(f"{path}: {reason}")
    return value  # type: ignore[no-any-return]


def reduce(args: argparse.Namespace) -> int:
    data = read(args.file)
    reducer = Reducer.of(data)
    emit(reducer.result())  # the golden shape on stdout; what broke, in words, on stderr
    if reducer.error is not None or reducer.state is None:
        say(f"chaos reduce: {error_text(data)}", sys.stderr)
        return ExitCode.FINDING
    return ExitCode.OK


def plan(args: argparse.Namespace) -> int:
    current = load_current(args.current)
    data = read(args.file)
    reducer = Reducer.of(data)
    result = reducer.result()
    if not result["ok"]:
        emit(result)
        say(f"chaos plan: {error_text(data)}", sys.stderr)
        return ExitCode.FINDING
    assert reducer.state is not None
    emit(plan_recovery(reducer.state, current))
    return ExitCode.OK


def add(commands: Commands) -> None:
    p = commands.add_parser("reduce", help="reduce a session log; exit 0 ok, 1 corrupt, 2 unusable input")
    p.add_argument("file", metavar="LOG", help="a session log (JSONL)")
    p.set_defaults(func=reduce)
    p = commands.add_parser("plan", help="plan recovery of a session log under a current configuration")
    p.add_argument("file", metavar="LOG", help="a session log (JSONL)")
    p.add_argument(
        "--current", required=True, metavar="CURRENT.json", help="the current configuration (planner input)"
    )
    p.set_defaults(func=plan)
