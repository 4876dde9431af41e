"""The ``chaos`` command line: a thin shell over ``chaos.api`` and the report stage.

Exit statuses: 0 nothing found, 1 a finding against the agent, 2 unusable
input (named with its file, line and field, or its option) or a failure of
chaos itself, 130 interrupted. A user's mistake is never a finding and never a
traceback.
"""

from __future__ import annotations

import argparse
import math
import signal
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson

from chaos import api
from chaos.bundled import scenario_names
from chaos.check.checks import Check
from chaos.contract import Reducer, plan_recovery
from chaos.contract.framing import FramingError, parse_json
from chaos.contract.shapes import current_configuration
from chaos.errors import (
    EXIT_FINDING,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    ChaosFault,
    Interrupted,
    UsageError,
)
from chaos.process import trace
from chaos.report.text import printable
from chaos.scenario.model import Boundary, Crash
from chaos.world.sandbox import remove_stale

DEMO = "section8-read-replay"


def _emit(value: Any) -> None:
    sys.stdout.write(orjson.dumps(value, option=orjson.OPT_INDENT_2).decode() + "\n")


def _say(text: str, stream: Any = None) -> None:
    print("\n".join(printable(line) for line in text.split("\n")), file=stream or sys.stdout, flush=True)


def _read(path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as err:
        raise UsageError(f"{path}: cannot read: {err.strerror}") from None


# -- option types: a bad value is refused by argparse, naming the option (exit 2) ----------------------
def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {value}")
    return value


def seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a finite number of seconds more than 0, got {text}")
    return value


def seconds_or_zero(text: str) -> float:
    return 0.0 if text.strip() in ("0", "0.0") else seconds(text)


def key_value(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key, value


def shard(text: str) -> tuple[int, int]:
    index, sep, count = text.partition("/")
    if not (sep and index.isdigit() and count.isdigit() and 1 <= int(index) <= int(count)):
        raise argparse.ArgumentTypeError(f"expected K/N with 1 <= K <= N, e.g. 2/4; got {text!r}")
    return int(index), int(count)


def boundary(text: str) -> Boundary:
    try:
        return Boundary.parse(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _notice_polling() -> None:
    """One line, once, when exact kills are unavailable here."""
    reason = trace.unavailable()
    if reason is not None:
        _say(
            f"chaos: exact kills unavailable ({reason}); polling the log instead: "
            "a kill may land late, and each verdict says how late",
            sys.stderr,
        )


# -- oracle commands ----------------------------------------------------------------------------------
def load_current(path: str) -> dict[str, Any]:
    """Read a current-configuration file (the planner fixtures' ``current`` shape)."""
    try:
        value = parse_json(_read(path))
    except FramingError as err:
        raise UsageError(f"{path}: not strict JSON ({err.code})") from None
    reason = current_configuration.why(value)
    if reason:
        raise UsageError(f"{path}: {reason}")
    return value  # type: ignore[no-any-return]


def cmd_reduce(args: argparse.Namespace) -> int:
    reducer = Reducer.of(_read(args.file))
    _emit(reducer.result())
    return EXIT_OK if reducer.error is None and reducer.state is not None else EXIT_FINDING


def cmd_plan(args: argparse.Namespace) -> int:
    current = load_current(args.current)
    reducer = Reducer.of(_read(args.file))
    result = reducer.result()
    if not result["ok"]:
        _emit(result)
        return EXIT_FINDING
    assert reducer.state is not None
    _emit(plan_recovery(reducer.state, current))
    return EXIT_OK


# -- running ------------------------------------------------------------------------------------------
def cmd_run(args: argparse.Namespace) -> int:
    from chaos.report.console import ask_at_pause, render

    scenario = api.load(args.scenario)
    crash = scenario.crash
    if args.kill_at is not None:
        crash = Crash(replace(args.kill_at, nth=args.nth or args.kill_at.nth))
    elif args.nth is not None and crash is not None:
        crash = replace(crash, boundary=replace(crash.boundary, nth=args.nth))
    then = Crash(args.then_kill_at) if args.then_kill_at else scenario.then_crash
    if args.power_loss:
        crash = replace(crash, power_loss=True, signal="SIGKILL") if crash else None
        then = replace(then, power_loss=True, signal="SIGKILL") if then else None
    scenario = scenario.with_crash(crash, then)
    _notice_polling()
    verdict = api.run(
        scenario,
        args.target,
        target_env=dict(args.target_env),
        results=Path(args.results) if args.results else None,
        timeout=args.timeout,
        pause=ask_at_pause if args.pause else None,
    )
    _say(render(verdict))
    return EXIT_OK if verdict.ok else EXIT_FINDING


def cmd_target_check(args: argparse.Namespace) -> int:
    _notice_polling()
    diagnosis = api.check_target(
        args.target, Path(args.results) if args.results else None, args.timeout or 20.0
    )
    _say(diagnosis.text())
    return diagnosis.exit_code


def cmd_demo(args: argparse.Namespace) -> int:
    return cmd_run(build_parser().parse_args(["run", DEMO, *_passed_on(args)]))


def _passed_on(args: argparse.Namespace) -> list[str]:
    """The options of ``chaos demo`` as ``chaos run`` options."""
    out = [item for key, value in args.target_env for item in ("--target-env", f"{key}={value}")]
    return out + (["--results", args.results] if args.results else [])


def render_summary(summary: dict[str, Any], mined: list[str] | None) -> str:
    """The end of a sweep: counts, then each distinct failure once, with its smallest case."""
    groups = summary["groups"]
    lines = [
        f"chaos sweep: {summary['cases']} case(s), {summary['findings']} finding(s) in {summary['seconds']:.1f}s",
        f"  {len(groups)} distinct failure(s) in {summary['findings']} failing case(s) of {summary['cases']}"
        + (f" ({summary['new']} new)" if any(g["known"] for g in groups) or summary["fixed"] else ""),
        f"  kill precision: {summary['exact']}/{summary['reached']} crashes landed exactly at their boundary",
    ]
    if summary.get("paused"):
        lines.append(
            f"  paused writers: {summary['pausedExact']}/{summary['paused']} paused exactly at their boundary "
            "(timed by polling)"
        )
    if summary["skipped"]:
        lines.append(f"  {len(summary['skipped'])} case(s) not run: the budget ran out")
    if mined is not None:
        lines.append(f"  mined {len(mined)} new fixture(s)" + (f": {', '.join(mined)}" if mined else ""))
    failed = {f["case"]: f for f in summary["failures"]}
    for number, found in enumerate(groups, 1):
        rep = found["representative"]
        mark = (
            "known"
            if found["known"]
            else "✗ new"
            if summary["fixed"] or any(g["known"] for g in groups)
            else "✗"
        )
        lines.append(f"  {mark} {number}. [{found['key']}] {found['label']}")
        lines.append(
            f"      smallest case: {rep['case']}: {Check(**failed[rep['case']]['failed'][0]).text()}"
        )
        lines.append(f"      reproduce: {rep['reproduce']}")
        if found["count"] > 1:
            lines.append(f"      same failure, {found['count'] - 1} more case(s)")
    for gone in summary["fixed"]:
        lines.append(f"  fixed: [{gone['key']}] {gone['label']} (known, and no case failed this way)")
    return "\n".join(lines)


def cmd_sweep(args: argparse.Namespace) -> int:
    _notice_polling()
    result = api.sweep(
        args.scenarios,
        args.target,
        results=Path(args.results or "results/sweep"),
        jobs=args.jobs,
        depth=args.depth,
        budget=args.budget,
        shard=args.shard,
        target_env=dict(args.target_env),
        keep_all=args.keep_all,
        resume=args.resume,
        timeout=args.timeout,
        mine=None if args.mine == "none" else Path(args.mine),
        oracles=args.oracle,
        junit=Path(args.junit) if args.junit else None,
        power_loss=args.power_loss,
        two_writers=args.two_writers,
        baseline=Path(args.baseline) if args.baseline else None,
        write_baseline=Path(args.write_baseline) if args.write_baseline else None,
    )
    _say(render_summary(result.summary, result.mined if args.mine != "none" else None))
    _say(f"  report: {result.results / 'report.html'}")
    if result.interrupted:
        _say(
            f"chaos sweep: interrupted; finished verdicts are in {result.results / 'sweep.jsonl'}; rerun with --resume"
        )
        return EXIT_INTERRUPTED
    return EXIT_FINDING if result.summary["new"] else EXIT_OK


def _reported_entries(folder: str) -> list[dict[str, Any]]:
    """The verdicts a sweep's results folder counts, from its journal."""
    from chaos.report.outputs import read_journal, reported

    journal = Path(folder) / "sweep.jsonl"
    if not journal.exists():
        raise UsageError(f"{folder}: no sweep.jsonl here; give a --results folder of chaos sweep")
    return reported(read_journal(journal))


def _baseline(path: str | None) -> dict[str, str] | None:
    from chaos.triage.groups import read_baseline

    return read_baseline(Path(path)) if path else None


def cmd_merge(args: argparse.Namespace) -> int:
    from chaos.report.outputs import summarize, write_html, write_junit, write_summary

    entries = {entry["case"]: entry for folder in args.folders for entry in _reported_entries(folder)}
    values = list(entries.values())
    known = _baseline(args.baseline)
    summary = summarize(values, [], sum(e.get("seconds", 0.0) for e in values), known)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    write_summary(out / "summary.json", summary)
    with (out / "sweep.jsonl").open("wb") as journal:
        for entry in values:
            journal.write(orjson.dumps(entry) + b"\n")
    if args.junit:
        write_junit(Path(args.junit), values, baseline=known)
    write_html(out / "report.html", values, baseline=known)
    _say(render_summary(summary, None))
    return EXIT_FINDING if summary["new"] else EXIT_OK


def cmd_explore(args: argparse.Namespace) -> int:
    from chaos.explore.exploration import Exploration
    from chaos.explore.strategies import size, tool_names
    from chaos.mine.miner import Miner
    from chaos.scenario.target import find_target, load_target

    target = load_target(find_target(args.target))
    shrink = args.shrink_budget if args.shrink_budget is not None else min(args.budget, 60.0)
    exploration = Exploration(
        target,
        dict(args.target_env),
        Path(args.results),
        args.budget,
        args.seed,
        args.max_examples,
        shrink,
        args.max_failures,
        args.power_loss,
        args.two_writers,
    )
    _notice_polling()
    _say(
        f"chaos explore: generating for {args.budget:g}s; shrinking what is found may take up to {shrink:g}s more"
    )
    exploration.run(tool_names(target, exploration.target_env))
    spent = time.monotonic() - exploration.started
    if not exploration.found:
        if exploration.cycles == 0:
            raise UsageError(f"--budget {args.budget:g}: no crash cycle ran; give a longer budget")
        _say(f"chaos explore: {exploration.cycles} crash cycles in {spent:.0f}s, no failure found")
        return EXIT_OK
    found = exploration.save(Miner(Path(args.results) / "fixtures"))
    first = min(found, key=lambda f: f.seconds)
    _say(
        f"chaos explore: {len(found)} distinct failure(s); the first failure after {first.cycles} cycle(s) "
        f"({first.seconds:.1f}s); {exploration.cycles} cycles in {spent:.0f}s with shrinking"
    )
    for item in found:
        _say(f"  ✗ [{item.key}] {item.label}")
        _say(f"      smallest case fails: {item.check_text()}")
        _say(f"      shrunk scenario (size {size(item.scenario)}): {item.saved}")
        _say(f"      run folder: {item.verdict.folder}")
        _say(f"      reproduce: {item.verdict.reproduce()}")
    return EXIT_FINDING


# -- debugging ----------------------------------------------------------------------------------------
def cmd_show(args: argparse.Namespace) -> int:
    from chaos.report.show import render, timeline

    current = load_current(args.current) if args.current else None
    if current is None and args.target:
        from chaos.cycle.configuration import target_current
        from chaos.scenario.target import find_target, load_target

        current = target_current(load_target(find_target(args.target)), {})
    tl = timeline(_read(args.file), current)
    if args.json:
        _emit(tl.to_json())
    else:
        print(render(tl, colour=sys.stdout.isatty() and not args.no_colour))
    return EXIT_OK if tl.error is None else EXIT_FINDING


def _log_of(path: str, which: str) -> bytes:
    """A log file, or the ``which`` log (prefix / final) of a run folder."""
    folder = Path(path)
    return _read(str(folder / f"{which}.jsonl") if folder.is_dir() else path)


def cmd_diff(args: argparse.Namespace) -> int:
    from chaos.report.show import diff, render_diff

    if args.b is None:
        before, after = _log_of(args.a, "prefix"), _log_of(args.a, "final")
    else:
        before, after = _log_of(args.a, "final"), _log_of(args.b, "final")
    print(render_diff(diff(before, after), colour=sys.stdout.isatty()))
    return EXIT_OK


def cmd_report(args: argparse.Namespace) -> int:
    from chaos.report.outputs import write_html

    entries = _reported_entries(args.results)
    out = Path(args.out) if args.out else Path(args.results) / "report.html"
    write_html(out, entries, baseline=_baseline(args.baseline))
    _say(f"chaos report: {len(entries)} case(s) -> {out}")
    return EXIT_OK


# -- the parser ---------------------------------------------------------------------------------------
def _target_env(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--target-env",
        action="append",
        default=[],
        type=key_value,
        metavar="KEY=VALUE",
        help="extra agent environment",
    )


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
        "--then-kill-at",
        type=boundary,
        metavar="BOUNDARY",
        help="crash the first resume again at this boundary",
    )
    p.add_argument("--timeout", type=seconds, help="seconds per phase (default: the scenario's, 60)")
    p.add_argument("--pause", action="store_true", help="freeze the agent at the boundary and ask what to do")
    p.add_argument(
        "--power-loss", action="store_true", help="crash by power loss: only synced log bytes stay"
    )
    p.add_argument("--results", metavar="DIR", help="results folder (default: results/runs/<case>-<time>)")
    _target_env(p)
    p.set_defaults(func=cmd_run)
    p = sub.add_parser(
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
    p.add_argument("--mine", default="results/fixtures", metavar="DIR", help="fixture corpus ('none': off)")
    p.add_argument("--oracle", action="append", default=[], metavar="CMD", help="another reducer to compare")
    p.add_argument("--keep-all", action="store_true", help="keep every run folder, not only findings'")
    p.add_argument("--resume", action="store_true", help="continue an interrupted sweep in --results")
    p.add_argument("--timeout", type=seconds, help="seconds per phase")
    p.add_argument(
        "--power-loss", action="store_true", help="every crash a power loss: only synced bytes stay"
    )
    p.add_argument(
        "--two-writers", action="store_true", help="pause each writer at its boundary while another resumes"
    )
    p.add_argument("--results", metavar="DIR", help="default: results/sweep")
    p.add_argument(
        "--baseline", metavar="FILE", help="known failures: reported, but they do not fail the run"
    )
    p.add_argument("--write-baseline", metavar="FILE", help="write this sweep's failures as a baseline")
    _target_env(p)
    p.set_defaults(func=cmd_sweep)
    p = sub.add_parser("merge", help="combine the result folders of sharded sweeps into one summary")
    p.add_argument("folders", nargs="+", metavar="RESULTS_DIR")
    p.add_argument("--out", default="results/merged", metavar="DIR")
    p.add_argument("--junit", metavar="FILE")
    p.add_argument(
        "--baseline", metavar="FILE", help="known failures: reported, but they do not fail the run"
    )
    p.set_defaults(func=cmd_merge)
    p = sub.add_parser("explore", help="generate worlds and crash plans with Hypothesis; shrink each failure")
    p.add_argument("--target", default="reference", help="target name or spec path")
    p.add_argument("--budget", type=seconds, default=120.0, metavar="SECONDS", help="generate for this long")
    p.add_argument("--seed", type=int, help="make the exploration reproducible")
    p.add_argument("--max-examples", type=positive_int, default=500, help="crash cycles at most, in all")
    p.add_argument(
        "--max-failures", type=positive_int, help="stop once this many distinct failures are found"
    )
    p.add_argument("--power-loss", action="store_true", help="also generate power cuts (needs ptrace)")
    p.add_argument("--two-writers", action="store_true", help="also pause writers while another resumes")
    p.add_argument(
        "--shrink-budget",
        type=seconds_or_zero,
        metavar="SECONDS",
        help="shrink for at most this long (default: min(budget, 60))",
    )
    p.add_argument("--results", default="results/explore", metavar="DIR")
    _target_env(p)
    p.set_defaults(func=cmd_explore)
    p = sub.add_parser("show", help="a readable timeline of a session log, its state and plan")
    p.add_argument("file")
    p.add_argument("--current", metavar="CURRENT.json", help="also show the plan under this configuration")
    p.add_argument("--target", help="or plan under this target's current configuration")
    p.add_argument("--json", action="store_true", help="the timeline as JSON")
    p.add_argument("--no-colour", action="store_true")
    p.set_defaults(func=cmd_show)
    p = sub.add_parser("diff", help="what recovery appended (RUN: prefix vs final; RUN_A RUN_B: two finals)")
    p.add_argument("a", metavar="RUN_OR_LOG")
    p.add_argument("b", nargs="?", metavar="RUN_OR_LOG")
    p.set_defaults(func=cmd_diff)
    p = sub.add_parser("report", help="a self-contained HTML report of a sweep's results folder")
    p.add_argument("results", metavar="RESULTS_DIR")
    p.add_argument("--out", metavar="FILE", help="default: RESULTS_DIR/report.html")
    p.add_argument("--baseline", metavar="FILE", help="mark the failures it lists as known")
    p.set_defaults(func=cmd_report)
    p = sub.add_parser("target", help="work with target files: chaos target check TARGET")
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
    p.set_defaults(func=cmd_target_check)
    p = sub.add_parser("demo", help=f"chaos run {DEMO}: the contract's section-8 crash")
    p.add_argument("--results", metavar="DIR", help="results folder (default: results/runs/<case>-<time>)")
    _target_env(p)
    p.set_defaults(func=cmd_demo)
    return parser


def _terminate(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exit:  # argparse refused an option (it printed which): exit 2, no traceback
        return exit.code if isinstance(exit.code, int) else EXIT_USAGE
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _terminate)  # SIGTERM cleans up like Ctrl-C: no child left
    remove_stale()
    try:
        return int(args.func(args))
    except UsageError as err:
        _say(f"chaos: {err}", sys.stderr)
        return EXIT_USAGE
    except ChaosFault as err:
        _say(f"chaos: chaos itself failed, not the agent: {err}", sys.stderr)
        return EXIT_USAGE
    except (Interrupted, KeyboardInterrupt) as err:
        _say(
            f"chaos {args.command}: interrupted ({err or 'Ctrl-C'}); every agent it started is dead; nothing more ran",
            sys.stderr,
        )
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
