"""``chaos record --upstream URL PROMPT``: one real session through a recording proxy, written as a scenario
that replays it offline."""

from __future__ import annotations

import argparse
from pathlib import Path

from chaos import api
from chaos.cli.options import Commands, new_file, out_file, say, seconds, target_env
from chaos.scenario.files import write_scenario


def record(args: argparse.Namespace) -> int:
    out = new_file(args, f"{args.name}.toml")
    recording = api.record(
        args.prompt,
        args.upstream,
        args.target,
        target_env=dict(args.target_env or []),
        workspace=Path(args.workspace) if args.workspace else None,
        name=args.name,
        results=Path(args.results) if args.results else None,
        timeout=args.timeout or 300.0,
    )
    write_scenario(recording.scenario, out)
    phase = recording.phase
    say(
        f"recorded {recording.requests} request(s): {len(recording.scenario.turns)} answer(s); the run ended "
        f"{phase.process.outcome or 'with no known outcome'} (exit {phase.process.returncode})"
    )
    say(f"wrote {out} (no credential is written); next: chaos run {out}, or chaos sweep {out}")
    return 0


def add(commands: Commands) -> None:
    p = commands.add_parser(
        "record", help="run an agent once against a real provider and write the scenario that replays it"
    )
    p.add_argument("prompt", metavar="PROMPT", help="the user's message")
    p.add_argument(
        "--upstream",
        required=True,
        metavar="URL",
        help="the provider's base URL, e.g. https://api.openai.com/v1",
    )
    p.add_argument("--target", help="target name or spec path (default: reference)")
    target_env(p)
    p.add_argument("--workspace", metavar="DIR", help="the files the agent starts with")
    p.add_argument("--name", default="recorded", help="the scenario's name (default: recorded)")
    out_file(p, "NAME.toml")
    p.add_argument(
        "--results", metavar="DIR", help="the recorded run's folder (default: results/record/NAME-<time>)"
    )
    p.add_argument("--timeout", type=seconds, help="seconds the run may take (default 300)")
    p.set_defaults(func=record)
