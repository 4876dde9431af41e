"""Sweep cost: crash cycles per second, harness overhead against the bare agent, precision, -j 2 speedup.

Run: python bench/sweep.py [--quick] [SCENARIO ...]. Sweeps the shipped
scenarios against the reference agent with -j 1 and then -j 2 (side by side,
one run). Then, for every durable crash case, it times the case again with
chaos and the same agent processes without chaos, side by side in
alternating order so that the machine's drift hits both alike: a plain child
from start until its log first holds the boundary (polled every 0.5 ms, then
killed and reaped), a plain resume of the crash prefix to its end (bare), and
the resume once more (with bare: the floor). Prints:

- cycles/s at -j 1 and -j 2, and the speedup;
- harness overhead = chaos's start + first-resume phase time / the bare time
  of the same processes (goal: at most 1.25), and the whole cycle (with the
  idempotence rerun, the configuration query and the checks) / bare (goal:
  at most 1.6; the floor is the agent's own three processes, about 1.5), and
  the whole cycle with warm starts (``chaos.process.warm``) / the floor (goal:
  at most 1.1);
- where a cycle's time goes: each phase, world setup, the configuration
  query, checks, the results folder and teardown, per case and as a share;
- kill precision: crashes that landed exactly at their boundary.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path
from typing import Any

from chaos.case.result import CaseResult, read_journal
from chaos.case.run import run_case
from chaos.cli import main as chaos
from chaos.cycle.drive import session_id
from chaos.process.warm import WarmStarts
from chaos.process.watch import Watch
from chaos.scenario import load_scenario
from chaos.scenario.model import Strike
from chaos.scenario.target import find_target, load_target
from chaos.world.world import build_world

REPO = Path(__file__).resolve().parent.parent

QUICK = ["section8-read-replay", "pending-deploy-interrupted", "full-workflow", "open-attempt-retry"]


def sweep(paths: list[str], jobs: int, results: Path) -> tuple[float, dict]:
    started = time.perf_counter()
    argv = ["sweep", *paths, "-j", str(jobs), "--results", str(results), "--mine", "none", "--keep-all"]
    chaos([*argv, "--fault", "kill"])  # kills: what the bare agent's processes are timed against
    seconds = time.perf_counter() - started
    return seconds, json.loads((results / "summary.json").read_text())


def bare_cost(entry: CaseResult) -> tuple[float, float, float]:
    """The same agent processes as the case's start and first resume, timed as plain children; and the
    resume once more (what the idempotence rerun costs the agent itself)."""
    scenario = load_scenario(Path(str(entry.scenario_file)))
    target = load_target(find_target(scenario.target))
    boundary = Strike.parse(str(entry.crash)).boundary
    world = build_world(scenario, target, {})
    try:
        watch = Watch(world.log_glob, boundary)
        argv = world.argv(target.start, scenario.start, prompt=scenario.prompt)
        env = world.env(scenario.start, [])
        began = time.perf_counter()
        proc = subprocess.Popen(
            argv, cwd=world.cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        while not watch.poll() and proc.poll() is None:
            time.sleep(0.0005)
        proc.kill()  # the crash itself is part of the cycle's bare cost: killed and reaped
        proc.wait()
        to_boundary = time.perf_counter() - began
        # Resume chaos's crash prefix, so that both do the same recovery work. The log's file name
        # holds the session id (as agents name their logs), so it must name chaos's session now.
        prefix = (Path(entry.folder) / "prefix.jsonl").read_bytes()
        assert watch.path is not None
        ours, theirs = session_id(watch.path.read_bytes()) or "", session_id(prefix) or ""
        watch.path.unlink()
        watch.path.with_name(watch.path.name.replace(ours, theirs)).write_bytes(prefix)
        config = scenario.start.then(scenario.change)
        argv = world.argv(target.resume, config, session_id=theirs)
        env = world.env(config, [])
        began = time.perf_counter()
        done = subprocess.run(argv, cwd=world.cwd, env=env, capture_output=True, check=False)
        resumed = time.perf_counter()
        subprocess.run(argv, cwd=world.cwd, env=env, capture_output=True, check=False)
        again = time.perf_counter() - resumed
        assert target.outcome_of(done.returncode) is not None, (entry.case, done.stderr[-300:])
        return to_boundary, resumed - began, again
    finally:
        world.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("scenarios", nargs="*")
    parser.add_argument("--quick", action="store_true", help=f"only {', '.join(QUICK)}")
    args = parser.parse_args()
    names = args.scenarios or (
        QUICK if args.quick else [p.stem for p in sorted((REPO / "scenarios").glob("*.toml"))]
    )
    paths = [str(REPO / "scenarios" / f"{n}.toml") if not n.endswith(".toml") else n for n in names]
    work = Path(tempfile.mkdtemp(prefix="chaos-bench-"))
    try:
        serial_s, serial = sweep(paths, 1, work / "j1")
        parallel_s, parallel = sweep(paths, 2, work / "j2")
        entries = read_journal(work / "j1" / "sweep.jsonl")
        kills = [e for e in entries if e.crash and Strike.parse(e.crash).fault == "kill"]
        crashes = [e for e in kills if not Strike.parse(str(e.crash)).boundary.in_flight]
        chaos_phases = bare = again = whole = bare_start = bare_resume = warm_whole = 0.0
        parts: dict[str, float] = {}
        starts = WarmStarts()  # warm starts, taught the agent's imports by a first case's clean run
        for n, entry in enumerate(crashes):
            scenario = load_scenario(Path(str(entry.scenario_file)))
            case = scenario.with_crash(Strike.parse(str(entry.crash)))
            target = load_target(find_target(scenario.target))
            folder = work / "paired" / str(n)
            if n == 0:
                run_case(scenario.with_crash(None), target, {}, work / "learn", warm=starts)
            steps = [
                partial(bare_cost, entry),
                partial(run_case, case, target, {}, folder),
                partial(run_case, case, target, {}, work / "warm" / str(n), warm=starts),
            ]
            order = [(n + k) % 3 for k in range(3)]  # each goes first, second and third in turn
            results: dict[int, Any] = {}
            for k in order:
                results[k] = steps[k]()
            (to_boundary, resumed, rerun), verdict, warm = results[0], results[1], results[2]
            warm_whole += warm.seconds
            cost = to_boundary + resumed
            bare_start += to_boundary
            bare_resume += resumed
            phases = {p.name: p.seconds for p in verdict.phases}
            chaos_phases += phases["start"] + phases.get("resume-1", 0.0)
            whole += verdict.seconds
            bare += cost
            again += rerun
            for name, seconds in [*phases.items(), *verdict.evidence.timings.items()]:
                parts[name] = parts.get(name, 0.0) + seconds
        starts.close()
        parts["other"] = whole - sum(parts.values())
        cycles = serial["crashes"]
        print(f"scenarios: {len(paths)}, cases: {serial['cases']} ({cycles} crash cycles)")
        print(f"-j 1: {serial_s:.1f}s, {cycles / serial_s:.2f} crash cycles/s")
        print(f"-j 2: {parallel_s:.1f}s, {parallel['crashes'] / parallel_s:.2f} crash cycles/s")
        print(f"speedup -j 2 / -j 1: {serial_s / parallel_s:.2f}x")
        print(f"bare agent cost of {len(crashes)} durable-boundary cycles: {bare:.2f}s")
        print(f"floor (bare + the agent's own idempotence rerun): {(bare + again) / bare:.2f}x bare")
        per = 1000 / len(crashes)
        print(
            f"bare per case: start to the boundary {bare_start * per:.1f} ms, resume {bare_resume * per:.1f} ms, "
            f"resume once more {again * per:.1f} ms"
        )
        print(
            f"harness overhead (start + first resume phases / bare): {chaos_phases / bare:.2f}x (goal <= 1.25x)"
        )
        print(
            f"whole cycle incl. checks, config query, idempotence rerun / bare: {whole / bare:.2f}x (goal <= 1.6x)"
        )
        print(
            f"whole cycle, warm starts / floor: {warm_whole / (bare + again):.2f}x (goal <= 1.1x; cold: "
            f"{whole / (bare + again):.2f}x)"
        )
        print(f"where a cycle's time goes ({len(crashes)} cases, {whole / len(crashes) * 1000:.0f} ms each):")
        for name, seconds in sorted(parts.items(), key=lambda kv: -kv[1]):
            print(f"  {name:<14} {seconds / len(crashes) * 1000:7.1f} ms  {seconds / whole:6.1%}")
        for name, summary in (("-j 1", serial), ("-j 2", parallel)):
            print(
                f"kill precision {name}: {summary['exact']}/{summary['reached']} exact ({summary['precision']:.0%})"
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
