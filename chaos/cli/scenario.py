"""``chaos scenario from-log LOG``: a session log (a real incident) turned into a scenario that replays it."""

from __future__ import annotations

import argparse
from pathlib import Path

from chaos import api
from chaos.cli.options import Commands, new_file, out_file, say
from chaos.scenario.files import write_scenario


def from_log(args: argparse.Namespace) -> int:
    log = Path(args.log)
    inferred = api.from_log(log, args.target, Path(args.workspace) if args.workspace else None, args.name)
    out = new_file(args, f"{inferred.scenario.name}.toml")
    write_scenario(inferred.scenario, out)
    say(f"wrote {out}: {len(inferred.scenario.turns)} turn(s), crash {inferred.scenario.crash or 'none'}")
    say("inferred:\n" + "\n".join(f"  - {line}" for line in inferred.inferred))
    if inferred.unknown:
        say("could not be inferred:\n" + "\n".join(f"  - {line}" for line in inferred.unknown))
    say(f"next: chaos run {out}   (or chaos sweep {out}: a crash at every boundary of the session)")
    return 0


def add(commands: Commands) -> None:
    p = commands.add_parser("scenario", help="write scenarios: chaos scenario from-log LOG")
    actions = p.add_subparsers(dest="action", required=True)
    p = actions.add_parser(
        "from-log",
        help="a session log turned into a scenario that replays it (its last operation, crashed where "
        "the log ends)",
    )
    p.add_argument("log", metavar="LOG", help="a session log (JSONL, the session contract's)")
    out_file(p, "from-<log>.toml")
    p.add_argument(
        "--workspace", metavar="DIR", help="the agent's workspace as it is: its files join the scenario"
    )
    p.add_argument("--target", help="the target the scenario runs against (its tools are compared)")
    p.add_argument("--name", help="the scenario's name (default: from-<log file name>)")
    p.set_defaults(func=from_log)
