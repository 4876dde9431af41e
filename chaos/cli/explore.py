"""``chaos explore``: generated worlds and crash plans, each distinct failure shrunk and saved."""

from __future__ import annotations

import argparse
from pathlib import Path

from chaos import api
from chaos.cli.options import (
    Commands,
    faults,
    notice_polling,
    positive_int,
    say,
    seconds,
    seconds_or_zero,
    target_env,
)
from chaos.errors import ExitCode
from chaos.explore.strategies import size


def explore(args: argparse.Namespace) -> int:
    shrink = args.shrink_budget if args.shrink_budget is not None else min(args.budget, 60.0)
    notice_polling()
    say(
        f"chaos explore: generating for {args.budget:g}s; shrinking what is found may take up to {shrink:g}s more"
    )
    done = api.explore(
        args.target,
        target_env=dict(args.target_env),
        results=Path(args.results),
        budget=args.budget,
        seed=args.seed,
        max_examples=args.max_examples,
        max_failures=args.max_failures,
        shrink_budget=shrink,
        faults=tuple(args.fault or api.EXPLORED),
        persistence=args.persistence,
    )
    if done.ok:
        say(f"chaos explore: {done.cycles} crash cycles in {done.seconds:.0f}s, no failure found")
        return ExitCode.OK
    first = min(done.found, key=lambda f: f.seconds)
    say(
        f"chaos explore: {len(done.found)} distinct failure(s); the first failure after {first.cycles} cycle(s) "
        f"({first.seconds:.1f}s); {done.cycles} cycles in {done.seconds:.0f}s with shrinking"
    )
    for item in done.found:
        say(f"  ✗ [{item.key}] {item.label}")
        say(f"      smallest case fails: {item.check_text()}")
        say(f"      shrunk scenario (size {size(item.scenario)}): {item.saved}")
        say(f"      run folder: {item.verdict.folder}")
        say(f"      reproduce: {item.verdict.reproduce()}")
    return ExitCode.FINDING


def add(commands: Commands) -> None:
    p = commands.add_parser(
        "explore", help="generate worlds and crash plans with Hypothesis; shrink each failure"
    )
    p.add_argument("--target", default="reference", help="target name or spec path")
    p.add_argument("--budget", type=seconds, default=120.0, metavar="SECONDS", help="generate for this long")
    p.add_argument("--seed", type=int, help="make the exploration reproducible")
    p.add_argument("--max-examples", type=positive_int, default=500, help="crash cycles at most, in all")
    p.add_argument(
        "--max-failures", type=positive_int, help="stop once this many distinct failures are found"
    )
    faults(p, api.EXPLORED, "the faults each crash is drawn from")
    p.add_argument(
        "--shrink-budget",
        type=seconds_or_zero,
        metavar="SECONDS",
        help="shrink for at most this long (default: min(budget, 60))",
    )
    p.add_argument("--results", default="results/explore", metavar="DIR", help="default: results/explore")
    target_env(p)
    p.set_defaults(func=explore)
