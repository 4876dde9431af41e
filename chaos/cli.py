"""The ``chaos`` command line: a thin shell over the pipeline modules."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson

from chaos.check import Check
from chaos.contract import Reducer, plan_recovery
from chaos.contract.framing import FramingError, parse_json
from chaos.contract.shapes import current_configuration
from chaos.cycle import render, run_case
from chaos.run import Interrupted, TargetUnusable
from chaos.scenario import Crash, Scenario, load_scenario, scenario_files
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
    return Reducer.of(_read(path))


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
            args.pause,
        )
    except TargetUnusable as err:
        raise UsageError(str(err)) from None
    except Interrupted as err:
        print(f"chaos run: {err}; nothing was resumed")
        return 130
    print(render(verdict))
    return 0 if verdict.ok else 1


def _shard(text: str) -> tuple[int, int]:
    index, sep, count = text.partition("/")
    if not (sep and index.isdigit() and count.isdigit() and 1 <= int(index) <= int(count)):
        raise UsageError(f"--shard {text!r}: expected K/N with 1 <= K <= N, e.g. 2/4")
    return int(index), int(count)


def cmd_sweep(args: argparse.Namespace) -> int:
    from chaos.mine import Miner
    from chaos.oracle import OtherOracle
    from chaos.report import summarize, write_html, write_junit, write_summary
    from chaos.sweep import Sweep, run_sweep

    try:
        paths = scenario_files([Path(p) for p in args.scenarios or ["scenarios"]])
    except SpecError as err:
        raise UsageError(str(err)) from None
    cases = [load_case(str(p), args.target) for p in paths]
    if not cases:
        raise UsageError(f"no scenario files in {' '.join(args.scenarios or ['scenarios'])}")
    targets = {scenario.path: target for scenario, target in cases}
    results = Path(args.results or "results/sweep")
    sweep = Sweep(
        results,
        _key_values(args.target_env),
        jobs=args.jobs,
        depth=args.depth,
        budget=args.budget,
        shard=_shard(args.shard),
        keep_all=args.keep_all,
        resume=args.resume,
        timeout=args.timeout,
    )
    miner = Miner(Path(args.mine)) if args.mine != "none" else None
    if miner is not None:
        sweep.hooks.append(miner.mine)
    sweep.hooks += [OtherOracle(command).check for command in args.oracle]
    interrupted = False
    try:
        run_sweep(sweep, [scenario for scenario, _ in cases], lambda s: targets[s.path])
    except (KeyboardInterrupt, Interrupted):
        interrupted = True
    except TargetUnusable as err:
        raise UsageError(str(err)) from None
    entries = sweep.reported()
    summary = summarize(entries, sweep.skipped, time.monotonic() - sweep.started)
    write_summary(results / "summary.json", summary)
    if args.junit:
        write_junit(Path(args.junit), entries)
    write_html(results / "report.html", entries)
    print(render_summary(summary, miner.saved if miner else None))
    print(f"  report: {results / 'report.html'}")
    if interrupted:
        print(f"chaos sweep: interrupted; finished verdicts are in {sweep.journal}; rerun with --resume")
        return 130
    return 1 if summary["findings"] else 0


def render_summary(summary: dict[str, Any], mined: list[str] | None) -> str:
    lines = [
        f"chaos sweep: {summary['cases']} case(s), {summary['findings']} finding(s) in {summary['seconds']:.1f}s",
        f"  kill precision: {summary['exact']}/{summary['reached']} crashes landed exactly at their boundary",
    ]
    if summary["skipped"]:
        lines.append(f"  {len(summary['skipped'])} case(s) not run: the budget ran out")
    if mined is not None:
        lines.append(f"  mined {len(mined)} new fixture(s)" + (f": {', '.join(mined)}" if mined else ""))
    for failure in summary["failures"]:
        lines.append(f"  ✗ {failure['case']}: {Check(**failure['failed'][0]).text()}")
        lines.append(f"      reproduce: {failure['reproduce']}")
    return "\n".join(lines)


def _reported_entries(folder: str) -> list[dict[str, Any]]:
    """The verdicts a sweep's results folder counts, from its journal."""
    from chaos.report import read_journal, reported

    journal = Path(folder) / "sweep.jsonl"
    if not journal.exists():
        raise UsageError(f"{folder}: no sweep.jsonl here; give a --results folder of chaos sweep")
    return reported(read_journal(journal))


def cmd_merge(args: argparse.Namespace) -> int:
    from chaos.report import summarize, write_junit, write_summary

    entries = {entry["case"]: entry for folder in args.folders for entry in _reported_entries(folder)}
    values = list(entries.values())
    summary = summarize(values, [], sum(e.get("seconds", 0.0) for e in values))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    write_summary(out / "summary.json", summary)
    with (out / "sweep.jsonl").open("wb") as journal:
        for entry in values:
            journal.write(orjson.dumps(entry) + b"\n")
    if args.junit:
        write_junit(Path(args.junit), values)
    print(render_summary(summary, None))
    return 1 if summary["findings"] else 0


def cmd_explore(args: argparse.Namespace) -> int:
    from chaos.explore import Exploration, size, tool_names
    from chaos.mine import Miner

    try:
        target = load_target(find_target(args.target))
    except SpecError as err:
        raise UsageError(f"--target: {err}") from None
    results = Path(args.results)
    exploration = Exploration(
        target,
        _key_values(args.target_env),
        results,
        args.budget,
        args.seed,
        args.max_examples,
        args.shrink_budget if args.shrink_budget is not None else args.budget,
    )
    try:
        exploration.run(tool_names(target, exploration.target_env))
    except TargetUnusable as err:
        raise UsageError(str(err)) from None
    spent = time.monotonic() - exploration.started
    if exploration.failure is None:
        print(f"chaos explore: {exploration.cycles} crash cycles in {spent:.0f}s, no failure found")
        return 0
    path = exploration.save(Miner(results / "fixtures"))
    scenario, verdict = exploration.failure
    check = next((c for c in verdict.checks if not c.ok), None)
    print(
        f"chaos explore: failure after {exploration.cycles_to_failure} cycle(s) "
        f"({exploration.first_failure:.1f}s); {exploration.cycles} cycles in {spent:.0f}s with shrinking"
    )
    print(f"  shrunk scenario (size {size(scenario)}): {path}")
    if check is None:
        print("  the shrunk scenario passed when rerun: the failure is flaky; its run folder is kept")
    else:
        print(f"  ✗ {check.text()}")
    print(f"  run folder: {verdict.folder}")
    print(f"  reproduce: {verdict.reproduce()}")
    return 1


def cmd_show(args: argparse.Namespace) -> int:
    from chaos.show import render, timeline

    current = load_current(args.current) if args.current else None
    if current is None and args.target:
        from chaos.resume import target_current

        try:
            current = target_current(load_target(find_target(args.target)), {})
        except (SpecError, TargetUnusable) as err:
            raise UsageError(f"--target: {err}") from None
    tl = timeline(_read(args.file), current)
    if args.json:
        _emit(tl.to_json())
    else:
        print(render(tl, colour=sys.stdout.isatty() and not args.no_colour))
    return 0 if tl.error is None else 1


def _log_of(path: str, which: str) -> bytes:
    """A log file, or the ``which`` log (prefix / final) of a run folder."""
    folder = Path(path)
    return _read(str(folder / f"{which}.jsonl") if folder.is_dir() else path)


def cmd_diff(args: argparse.Namespace) -> int:
    from chaos.show import diff, render_diff

    if args.b is None:
        before, after = _log_of(args.a, "prefix"), _log_of(args.a, "final")
    else:
        before, after = _log_of(args.a, "final"), _log_of(args.b, "final")
    print(render_diff(diff(before, after), colour=sys.stdout.isatty()))
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from chaos.report import write_html

    entries = _reported_entries(args.results)
    out = Path(args.out) if args.out else Path(args.results) / "report.html"
    write_html(out, entries)
    print(f"chaos report: {len(entries)} case(s) -> {out}")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    args.scenario, args.target, args.kill_at, args.nth, args.then_kill_at, args.timeout = (
        str(DEMO),
        None,
        None,
        None,
        None,
        None,
    )
    args.pause = False
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
    p.add_argument("--pause", action="store_true", help="freeze the agent at the boundary and ask what to do")
    _common(p)
    p.set_defaults(func=cmd_run)
    p = sub.add_parser(
        "sweep", help="crash every scenario at every boundary; JUnit, mining; exit 1 on findings"
    )
    p.add_argument("scenarios", nargs="*", metavar="SCENARIO_OR_DIR", help="default: scenarios/")
    p.add_argument("--target", help="run every scenario against this target")
    p.add_argument("-j", "--jobs", type=int, default=1, help="cases in parallel (isolated worlds)")
    p.add_argument("--depth", type=int, choices=(1, 2), default=1, help="2: also crash each recovery")
    p.add_argument("--budget", type=float, metavar="SECONDS", help="start no case after this long")
    p.add_argument("--shard", default="1/1", metavar="K/N", help="run the K-th of N deterministic shares")
    p.add_argument("--junit", metavar="FILE", help="write a JUnit XML report")
    p.add_argument("--mine", default="results/fixtures", metavar="DIR", help="fixture corpus ('none': off)")
    p.add_argument("--oracle", action="append", default=[], metavar="CMD", help="another reducer to compare")
    p.add_argument("--keep-all", action="store_true", help="keep every run folder, not only findings'")
    p.add_argument("--resume", action="store_true", help="continue an interrupted sweep in --results")
    p.add_argument("--timeout", type=float, help="seconds per phase")
    p.add_argument("--target-env", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--results", metavar="DIR", help="default: results/sweep")
    p.set_defaults(func=cmd_sweep)
    p = sub.add_parser("merge", help="combine the result folders of sharded sweeps into one summary")
    p.add_argument("folders", nargs="+", metavar="RESULTS_DIR")
    p.add_argument("--out", default="results/merged", metavar="DIR")
    p.add_argument("--junit", metavar="FILE")
    p.set_defaults(func=cmd_merge)
    p = sub.add_parser("explore", help="generate worlds and crash plans with Hypothesis; shrink any failure")
    p.add_argument("--target", default="reference", help="target name or spec path")
    p.add_argument("--budget", type=float, default=120.0, metavar="SECONDS", help="generate for this long")
    p.add_argument("--seed", type=int, help="make the exploration reproducible")
    p.add_argument("--max-examples", type=int, default=500)
    p.add_argument(
        "--shrink-budget", type=float, metavar="SECONDS", help="shrink for this long (default: --budget)"
    )
    p.add_argument("--target-env", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--results", default="results/explore", metavar="DIR")
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
    p.set_defaults(func=cmd_report)
    p = sub.add_parser("demo", help=f"chaos run {DEMO.relative_to(REPO)}: the contract's section-8 crash")
    _common(p)
    p.set_defaults(func=cmd_demo)
    return parser


def _terminate(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _terminate)  # SIGTERM cleans up like Ctrl-C: no child left
    try:
        return args.func(args)
    except UsageError as err:
        print(f"chaos: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
