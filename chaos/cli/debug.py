"""``chaos show`` (a log's timeline, state and plan) and ``chaos diff`` (what recovery appended)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from chaos import api
from chaos.cli.options import Commands, emit, read
from chaos.cli.oracle import load_current
from chaos.errors import ExitCode
from chaos.report.show import diff as log_diff
from chaos.report.show import render, render_diff, timeline


def show(args: argparse.Namespace) -> int:
    current = (
        load_current(args.current) if args.current else api.current(args.target) if args.target else None
    )
    tl = timeline(read(args.file), current)
    if args.json:
        emit(tl.to_json())
    else:
        print(render(tl, colour=sys.stdout.isatty() and not args.no_colour))
    return ExitCode.OK if tl.error is None else ExitCode.FINDING


def _log_of(path: str, which: str) -> bytes:
    """A log file, or the ``which`` log (prefix / final) of a run folder."""
    folder = Path(path)
    return read(str(folder / f"{which}.jsonl") if folder.is_dir() else path)


def diff(args: argparse.Namespace) -> int:
    if args.b is None:
        before, after = _log_of(args.a, "prefix"), _log_of(args.a, "final")
    else:
        before, after = _log_of(args.a, "final"), _log_of(args.b, "final")
    print(render_diff(log_diff(before, after), colour=sys.stdout.isatty()))
    return ExitCode.OK


def add(commands: Commands) -> None:
    p = commands.add_parser("show", help="a readable timeline of a session log, its state and plan")
    p.add_argument("file", metavar="LOG", help="a session log (JSONL)")
    p.add_argument("--current", metavar="CURRENT.json", help="also show the plan under this configuration")
    p.add_argument("--target", help="or plan under this target's current configuration")
    p.add_argument("--json", action="store_true", help="the timeline as JSON")
    p.add_argument("--no-colour", action="store_true", help="plain text even on a terminal")
    p.set_defaults(func=show)
    p = commands.add_parser(
        "diff", help="what recovery appended (RUN: prefix vs final; RUN_A RUN_B: two finals)"
    )
    p.add_argument("a", metavar="RUN_OR_LOG", help="a run folder, or a session log")
    p.add_argument("b", nargs="?", metavar="RUN_OR_LOG", help="a second run folder or log to compare with")
    p.set_defaults(func=diff)
