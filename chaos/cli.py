"""The ``chaos`` command line: a thin shell over the pipeline modules."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

from chaos.contract import Reducer, plan_recovery
from chaos.contract.framing import FramingError, parse_json
from chaos.contract.shapes import current_configuration


class UsageError(Exception):
    """Input chaos cannot use at all (exit 2): the message names the file and the field."""


def _emit(value: Any) -> None:
    sys.stdout.write(orjson.dumps(value, option=orjson.OPT_INDENT_2).decode() + "\n")


def _read(path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as err:
        raise UsageError(f"{path}: cannot read: {err.strerror}") from None


def load_current(path: str) -> dict[str, Any]:
    """Read a current-configuration file (the planner fixtures' ``current`` shape)."""
    try:
        value = parse_json(_read(path))
    except FramingError as err:
        raise UsageError(f"{path}: not strict JSON ({err.code})") from None
    reason = current_configuration.why(value)
    if reason:
        raise UsageError(f"{path}: {reason}")
    return value


def _reduce_file(path: str) -> Reducer:
    reducer = Reducer()
    reducer.feed(_read(path))
    return reducer


def cmd_reduce(args: argparse.Namespace) -> int:
    reducer = _reduce_file(args.file)
    _emit(reducer.result())
    return 0 if reducer.error is None and reducer.state is not None else 1


def cmd_plan(args: argparse.Namespace) -> int:
    current = load_current(args.current)
    reducer = _reduce_file(args.file)
    result = reducer.result()
    if not result["ok"]:
        _emit(result)
        return 1
    assert reducer.state is not None
    _emit(plan_recovery(reducer.state, current))
    return 0


def _key_values(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"--target-env {item!r}: expected KEY=VALUE")
        out[key] = value
    return out


def cmd_demo(args: argparse.Namespace) -> int:
    from chaos.demo import run_demo

    return run_demo(_key_values(args.target_env), Path(args.results))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="chaos", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("reduce", help="reduce a session log; exit 0 ok, 1 corrupt, 2 unusable input")
    p.add_argument("file")
    p.set_defaults(func=cmd_reduce)
    p = sub.add_parser("plan", help="plan recovery of a session log under a current configuration")
    p.add_argument("file")
    p.add_argument("--current", required=True, metavar="CURRENT.json")
    p.set_defaults(func=cmd_plan)
    p = sub.add_parser(
        "demo", help="SIGKILL the reference agent at its first read intent, resume it, check the log"
    )
    p.add_argument("--target-env", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--results", default="results/demo")
    p.set_defaults(func=cmd_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except UsageError as err:
        print(f"chaos: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
