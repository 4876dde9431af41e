"""The ``chaos`` command line: a thin shell over the pipeline modules."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson

from chaos.contract import Reducer, plan_recovery
from chaos.contract.framing import FramingError, parse_json
from chaos.contract.shapes import current_configuration
from chaos.cycle import render, run_case
from chaos.run import TargetUnusable
from chaos.scenario import Crash, Scenario, load_scenario
from chaos.spec import SpecError
from chaos.target import REPO, Target, find_target, load_target
from chaos.watch import Boundary

DEMO = REPO / "scenarios" / "section8-read-replay.toml"


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


def _crash(text: str | None, nth: int | None, signal: str = "SIGKILL") -> Crash | None:
    if text is None:
        return None
    try:
        return Crash(Boundary.parse(text, nth), signal)
    except ValueError as err:
        raise UsageError(f"--kill-at/--then-kill-at: {err}") from None


def load_case(path: str, target_name: str | None) -> tuple[Scenario, Target]:
    """A scenario and its target (``--target`` wins over the scenario's own), or a UsageError."""
    try:
        scenario = load_scenario(Path(path))
    except SpecError as err:
        raise UsageError(str(err)) from None
    try:
        target = load_target(find_target(target_name or scenario.target, Path(path)))
    except SpecError as err:
        where = "--target" if target_name else f"{path}: target"
        raise UsageError(f"{where}: {err}") from None
    return scenario, target


def cmd_run(args: argparse.Namespace) -> int:
    scenario, target = load_case(args.scenario, args.target)
    crash = scenario.crash
    if args.kill_at is not None:
        crash = _crash(args.kill_at, args.nth, crash.signal if crash else "SIGKILL")
    elif args.nth is not None and crash is not None:
        crash = Crash(replace(crash.boundary, nth=args.nth), crash.signal)
    then = _crash(args.then_kill_at, None) if args.then_kill_at else scenario.then_crash
    scenario = scenario.with_crash(crash, then)
    try:
        verdict = run_case(
            scenario,
            target,
            _key_values(args.target_env),
            Path(args.results) if args.results else None,
            args.timeout,
        )
    except TargetUnusable as err:
        raise UsageError(str(err)) from None
    print(render(verdict))
    return 0 if verdict.ok else 1


def cmd_demo(args: argparse.Namespace) -> int:
    args.scenario, args.target, args.kill_at, args.nth, args.then_kill_at, args.timeout = (
        str(DEMO),
        None,
        None,
        None,
        None,
        None,
    )
    return cmd_run(args)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--target-env", action="append", default=[], metavar="KEY=VALUE", help="extra agent environment"
    )
    p.add_argument("--results", metavar="DIR", help="results folder (default: results/runs/<case>-<time>)")


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
        "run", help="crash an agent at a boundary, resume it, check what it wrote; exit 1 on a finding"
    )
    p.add_argument("scenario", metavar="SCENARIO.toml")
    p.add_argument("--target", help="target name (targets/NAME.toml) or spec path; default: the scenario's")
    p.add_argument("--kill-at", metavar="BOUNDARY", help="e.g. toolStarted[toolName=bash]#2, model-request#1")
    p.add_argument("--nth", type=int, help="the occurrence of the boundary to crash at")
    p.add_argument("--then-kill-at", metavar="BOUNDARY", help="crash the first resume again at this boundary")
    p.add_argument("--timeout", type=float, help="seconds per phase (default: the scenario's, 60)")
    _common(p)
    p.set_defaults(func=cmd_run)
    p = sub.add_parser("demo", help=f"chaos run {DEMO.relative_to(REPO)}: the contract's section-8 crash")
    _common(p)
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
