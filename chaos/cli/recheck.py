"""``chaos recheck RESULTS...`` and ``chaos fixtures check DIR``: stored results and fixtures judged again by
this chaos, running nothing."""

from __future__ import annotations

import argparse
from pathlib import Path

from chaos import api
from chaos.cli.options import Commands, say
from chaos.errors import ExitCode
from chaos.report.summary import render_summary


def recheck(args: argparse.Namespace) -> int:
    done = api.recheck(
        [Path(p) for p in args.results],
        Path(args.out) if args.out else None,
        junit=Path(args.junit) if args.junit else None,
    )
    for change in done.changes:
        say(f"  changed: {change.text()}")
    for why in done.missing:
        say(f"  kept as stored: {why}")
    say(
        f"chaos recheck: {len(done.changes)} verdict(s) changed, {len(done.missing)} case(s) not judged again"
    )
    say(render_summary(done.summary))
    say(f"  report: {done.results / 'report.html'}")
    if done.missing and done.judged == 0:
        say(
            "chaos recheck: no case could be judged again: the stored verdicts stand, unchecked by this chaos"
        )
        return ExitCode.USAGE
    return ExitCode.OK if done.ok else ExitCode.FINDING


def fixtures(args: argparse.Namespace) -> int:
    verdicts = api.check_fixtures(Path(args.corpus))
    wrong = [v for v in verdicts if not v.ok]
    for v in wrong:
        say(f"  ✗ {v.kind} fixture {v.name}: {v.differs}")
    say(f"chaos fixtures check: {len(verdicts) - len(wrong)} of {len(verdicts)} fixture(s) still match")
    return ExitCode.FINDING if wrong else ExitCode.OK


def add(commands: Commands) -> None:
    p = commands.add_parser(
        "recheck", help="judge stored results again with this chaos (no agent runs); say what changed"
    )
    p.add_argument("results", nargs="+", metavar="RESULTS", help="a run's folder, a sweep's, or a merge's")
    p.add_argument(
        "--out", metavar="DIR", help="where the new summary goes (default: results/recheck/<time>)"
    )
    p.add_argument("--junit", metavar="FILE", help="write a JUnit XML report")
    p.set_defaults(func=recheck)
    p = commands.add_parser("fixtures", help="work with fixture corpora: chaos fixtures check DIR")
    actions = p.add_subparsers(dest="action", required=True)
    p = actions.add_parser(
        "check", help="re-reduce and re-plan every fixture; exit 1 when one no longer matches its expectation"
    )
    p.add_argument(
        "corpus",
        metavar="DIR",
        help="a corpus in the golden layout (fixtures/, planner-fixtures/, store-fixtures/)",
    )
    p.set_defaults(func=fixtures)
