"""``chaos sweep`` (every boundary of every scenario), ``chaos merge`` (sharded results joined) and
``chaos report`` (the HTML report again)."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from chaos import api
from chaos.case.record import outputs_writable
from chaos.case.space import CaseSpace
from chaos.cli.options import Commands, faults, notice_polling, positive_int, say, seconds, shard, target_env
from chaos.cycle.share import MODES
from chaos.errors import ExitCode, UsageError
from chaos.report.summary import render_summary
from chaos.sweep.settings import Settings


def sweep(args: argparse.Namespace) -> int:
    notice_polling()
    results = Path(args.results or "results/sweep")
    mine = _mine(args, results)
    outputs_writable(results, mine, *(Path(p) if p else None for p in (args.junit, args.write_baseline)))
    say(
        f"chaos sweep: results in {results}; "
        + (f"new crash prefixes mined into {mine}" if mine else "mining off"),
        sys.stderr,
    )
    space = CaseSpace(
        faults=tuple(args.fault or ("kill",)),
        matrix=not args.fault,
        depth=args.depth,
        budget=args.budget,
        oracles=tuple(args.oracle),
        persistence=args.persistence,
    )
    settings = Settings(
        results=results,
        target_env=dict(args.target_env),
        space=space,
        jobs=args.jobs,
        shard=args.shard,
        keep_all=args.keep_all,
        resume=args.resume,
        timeout=args.timeout,
        crash_states=args.crash_states,
    )
    done = api.sweep(
        args.scenarios,
        args.target,
        settings=settings,
        mine=mine,
        junit=Path(args.junit) if args.junit else None,
        baseline=Path(args.baseline) if args.baseline else None,
        write_baseline=Path(args.write_baseline) if args.write_baseline else None,
    )
    say(render_summary(done.summary, done.mined if mine is not None else None, mine))
    say(f"  report: {results / 'report.html'}")
    if done.interrupted:
        say(
            f"chaos sweep: interrupted; finished verdicts are in {results / 'sweep.jsonl'}; rerun with --resume"
        )
        return ExitCode.INTERRUPTED
    return ExitCode.OK if done.ok else ExitCode.FINDING


def _mine(args: argparse.Namespace, results: Path) -> Path | None:
    """Where new crash prefixes go: ``--mine DIR`` as given; by default the target's ``fixtures`` folder,
    else ``RESULTS/fixtures``. A default that would change files git tracks is refused: a sweep run in a
    checkout must not rewrite its committed corpus unless told to (``--mine DIR``)."""
    if args.mine == "none":
        return None
    if args.mine is not None:
        return Path(args.mine)
    target = api.target_of(args.target) if args.target is not None else None
    folder = target.fixtures if target is not None and target.fixtures is not None else results / "fixtures"
    tracked = tracked_files(folder)
    if tracked:
        raise UsageError(
            f"the default fixture folder {folder} holds {len(tracked)} file(s) git tracks ({tracked[0]}, ...); "
            f"a sweep would change them: pass --mine {folder} to mine there, or --mine none"
        )
    return folder


def tracked_files(folder: Path) -> list[str]:
    """The files git tracks under ``folder`` (none outside a work tree, or without git)."""
    there = folder
    while not there.is_dir() and there != there.parent:
        there = there.parent
    try:
        done = subprocess.run(
            ["git", "-C", str(there), "ls-files", "--", str(folder.resolve())],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    return done.stdout.split() if done.returncode == 0 else []


def merge(args: argparse.Namespace) -> int:
    done = api.merge(
        [Path(f) for f in args.folders],
        Path(args.out),
        junit=Path(args.junit) if args.junit else None,
        baseline=Path(args.baseline) if args.baseline else None,
    )
    say(render_summary(done.summary))
    return ExitCode.OK if done.ok else ExitCode.FINDING


def report(args: argparse.Namespace) -> int:
    out = Path(args.out) if args.out else Path(args.results) / "report.html"
    done = api.report(Path(args.results), out, baseline=Path(args.baseline) if args.baseline else None)
    say(f"chaos report: {len(done.summary.results)} case(s) -> {out}")
    return ExitCode.OK


def add(commands: Commands) -> None:
    p = commands.add_parser(
        "sweep", help="crash every scenario at every boundary; JUnit, mining; exit 1 on findings"
    )
    p.add_argument(
        "scenarios", nargs="*", metavar="SCENARIO_OR_DIR", help="default: ./scenarios, else the bundled ones"
    )
    p.add_argument("--target", help="run every scenario against this target")
    p.add_argument("-j", "--jobs", type=positive_int, default=1, help="cases in parallel (isolated worlds)")
    p.add_argument("--depth", type=int, choices=(1, 2), default=1, help="2: also crash each recovery")
    p.add_argument("--budget", type=seconds, metavar="SECONDS", help="start no case after this long")
    p.add_argument(
        "--shard", type=shard, default=(1, 1), metavar="K/N", help="run the K-th of N deterministic shares"
    )
    p.add_argument("--junit", metavar="FILE", help="write a JUnit XML report")
    p.add_argument(
        "--mine",
        metavar="DIR",
        help="where new crash prefixes become fixtures ('none': off; default: the target's fixtures folder, "
        "else RESULTS/fixtures, never files git tracks unless named here)",
    )
    p.add_argument("--oracle", action="append", default=[], metavar="CMD", help="another reducer to compare")
    p.add_argument("--keep-all", action="store_true", help="keep every run folder, not only findings'")
    p.add_argument("--resume", action="store_true", help="continue an interrupted sweep in --results")
    p.add_argument("--timeout", type=seconds, help="seconds per phase")
    p.add_argument(
        "--crash-states",
        choices=MODES,
        default="shared",
        help="shared (default): a crash state's recovery runs once, and the cases that leave the same state "
        "take it; every: each case runs its own; verify: both, compared case by case (a difference is exit 3)",
    )
    faults(
        p,
        ("the fault matrix: each fault where its kind of trouble happens, docs/crash-model.md",),
        "at each boundary, a case per fault named that lands there",
    )
    p.add_argument("--results", metavar="DIR", help="default: results/sweep")
    p.add_argument(
        "--baseline", metavar="FILE", help="known failures: reported, but they do not fail the run"
    )
    p.add_argument("--write-baseline", metavar="FILE", help="write this sweep's failures as a baseline")
    target_env(p)
    p.set_defaults(func=sweep)
    p = commands.add_parser("merge", help="combine the result folders of sharded sweeps into one summary")
    p.add_argument("folders", nargs="+", metavar="RESULTS_DIR", help="the --results folders of the shards")
    p.add_argument("--out", default="results/merged", metavar="DIR", help="default: results/merged")
    p.add_argument("--junit", metavar="FILE", help="write a JUnit XML report of all shards")
    p.add_argument(
        "--baseline", metavar="FILE", help="known failures: reported, but they do not fail the run"
    )
    p.set_defaults(func=merge)
    p = commands.add_parser("report", help="a self-contained HTML report of a sweep's results folder")
    p.add_argument("results", metavar="RESULTS_DIR", help="a sweep's or a merge's --results folder")
    p.add_argument("--out", metavar="FILE", help="default: RESULTS_DIR/report.html")
    p.add_argument("--baseline", metavar="FILE", help="mark the failures it lists as known")
    p.set_defaults(func=report)
