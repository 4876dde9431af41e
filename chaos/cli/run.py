"""``chaos run`` (one crash cycle) and ``chaos demo`` (the contract's section-8 crash)."""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

from chaos import api
from chaos.bundled import scenario_names
from chaos.cli.options import (
    Commands,
    boundary,
    faults,
    notice_polling,
    positive_int,
    say,
    seconds,
    target_env,
)
from chaos.errors import ExitCode, Skipped, UsageError
from chaos.fault import FAULTS
from chaos.report.console import ask_at_pause, render
from chaos.scenario.model import Strike

DEMO = "section8-read-replay"


def run(args: argparse.Namespace) -> int:
    scenario = api.load(args.scenario)
    crash, then = scenario.crash, scenario.then_crash
    try:
        # (a strike is built with its fault: not every fault lands where a kill does)
        fault = args.fault[-1] if args.fault else None
        if args.kill_at is not None:
            crash = Strike(replace(args.kill_at, nth=args.nth or args.kill_at.nth), fault or "kill")
        elif args.nth is not None and crash is not None:
            crash = replace(crash, boundary=replace(crash.boundary, nth=args.nth))
        if fault and crash is not None:
            crash = replace(crash, fault_name=fault)
        if args.then_kill_at is not None:
            then = Strike(args.then_kill_at, args.then_fault or "kill")
        if args.then_fault and then is not None:
            then = replace(then, fault_name=args.then_fault)
    except ValueError as err:
        raise UsageError(f"--fault: {err}") from None
    scenario = scenario.with_crash(crash, then)
    if args.persistence:
        scenario = replace(scenario, persistence=args.persistence)
    notice_polling()
    try:
        verdict = api.run(
            scenario,
            args.target,
            target_env=dict(args.target_env),
            results=Path(args.results) if args.results else None,
            timeout=args.timeout,
            pause=ask_at_pause if args.pause else None,
        )
    except Skipped as why:
        say(f"chaos run: skipped: {why}")
        return ExitCode.OK
    say(render(verdict))
    return ExitCode.OK if verdict.ok else ExitCode.FINDING


def demo(args: argparse.Namespace) -> int:
    argv = [DEMO, *(item for key, value in args.target_env for item in ("--target-env", f"{key}={value}"))]
    argv += ["--results", args.results] if args.results else []
    return run(parser().parse_args(argv))


def _options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "scenario",
        metavar="SCENARIO",
        help=f"a scenario file, or a bundled name: {', '.join(scenario_names()[:3])}, ...",
    )
    p.add_argument(
        "--target", help="target name (targets/NAME.toml, or bundled) or spec path; default: the scenario's"
    )
    p.add_argument(
        "--kill-at",
        type=boundary,
        metavar="BOUNDARY",
        help="SIGKILL here instead, e.g. toolStarted[toolName=bash]#2",
    )
    p.add_argument("--nth", type=positive_int, help="the occurrence of the boundary to crash at")
    p.add_argument(
        "--then-kill-at", type=boundary, metavar="BOUNDARY", help="crash the first resume again here"
    )
    p.add_argument("--timeout", type=seconds, help="seconds per phase (default: the scenario's, 60)")
    p.add_argument("--pause", action="store_true", help="freeze the agent at the boundary and ask what to do")
    faults(p, ("the scenario's",), "the fault at the crash")
    p.add_argument(
        "--then-fault", choices=list(FAULTS), metavar="FAULT", help="the fault of --then-kill-at's crash"
    )
    p.add_argument("--results", metavar="DIR", help="results folder (default: results/runs/<case>-<time>)")
    target_env(p)


def parser() -> argparse.ArgumentParser:
    """``chaos run``'s own parser (``chaos demo`` passes its options on through it)."""
    p = argparse.ArgumentParser(prog="chaos run")
    _options(p)
    return p


def add(commands: Commands) -> None:
    p = commands.add_parser(
        "run", help="crash an agent at a boundary, resume it, check what it wrote; exit 1 on a finding"
    )
    _options(p)
    p.set_defaults(func=run)
    p = commands.add_parser("demo", help=f"chaos run {DEMO}: the contract's section-8 crash")
    p.add_argument("--results", metavar="DIR", help="results folder (default: results/runs/<case>-<time>)")
    target_env(p)
    p.set_defaults(func=demo)
