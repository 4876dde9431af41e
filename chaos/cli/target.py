"""``chaos target check TARGET``: is a target file usable, and if not, what to change."""

from __future__ import annotations

import argparse
from pathlib import Path

from chaos import api
from chaos.cli.options import Commands, notice_polling, say, seconds


def check(args: argparse.Namespace) -> int:
    notice_polling()
    diagnosis = api.check_target(
        args.target, Path(args.results) if args.results else None, args.timeout or 20.0
    )
    say(diagnosis.text())
    return diagnosis.exit_code


def add(commands: Commands) -> None:
    p = commands.add_parser("target", help="work with target files: chaos target check TARGET")
    actions = p.add_subparsers(dest="action", required=True)
    p = actions.add_parser(
        "check",
        help="is TARGET usable by chaos sweep? exit 0 yes, 2 change the target file (says what), 1 agent bug",
    )
    p.add_argument(
        "target", metavar="TARGET", help="target name (targets/NAME.toml, or bundled) or spec path"
    )
    p.add_argument("--timeout", type=seconds, help="seconds per phase (default 20)")
    p.add_argument("--results", metavar="DIR", help="default: results/target-check/<target>-<time>")
    p.set_defaults(func=check)
