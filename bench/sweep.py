"""Sweep cost: crash cycles per second, harness overhead against the bare agent, precision, -j 2 speedup.

Run: python bench/sweep.py [--quick] [SCENARIO ...]. Sweeps the shipped
scenarios against the reference agent with -j 1 and then -j 2 (side by side,
one run), and for every crash case of the -j 1 sweep times the same agent
processes without chaos: a plain child from start until its log first holds
the boundary (polled every 0.5 ms, then killed and reaped), plus a plain resume
of the kept crash prefix to its end. Prints:

- cycles/s at -j 1 and -j 2, and the speedup;
- harness overhead = chaos's start + first-resume phase time / the bare time
  of the same processes (goal: at most 1.25), and the whole cycle (with the
  idempotence rerun, the configuration query and the checks) / bare;
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
from pathlib import Path

from chaos.resume import resume_configuration, session_id

from chaos.cli import main as chaos
from chaos.process.watch import Watch
from chaos.report.outputs import read_journal
from chaos.scenario import load_scenario
from chaos.scenario.model import Boundary
from chaos.scenario.target import find_target, load_target
from chaos.world.world import build_world

REPO = Path(__file__).resolve().parent.parent

QUICK = ["section8-read-replay", "pending-deploy-interrupted", "full-workflow", "open-attempt-retry"]


def sweep(paths: list[str], jobs: int, results: Path) -> tuple[float, dict]:
    started = time.perf_counter()
    chaos(["sweep", *paths, "-j", str(jobs), "--results", str(results), "--mine", "none", "--keep-all"])
    seconds = time.perf_counter() - started
    return seconds, json.loads((results / "summary.json").read_text())


def bare_cost(entry: dict) -> float:
    """The same agent processes as the case's start and first resume, timed as plain children."""
    scenario = load_scenario(Path(entry["scenarioFile"]))
    target = load_target(find_target(scenario.target))
    boundary = Boundary.parse(entry["crash"])
    world = build_world(scenario, target, {})
    try:
        if boundary.in_flight:
            return float("nan")  # the world holds these; no bare equivalent
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
        prefix = (Path(entry["folder"]) / "prefix.jsonl").read_bytes()
        assert watch.path is not None
        watch.path.write_bytes(prefix)
        config = resume_configuration(world)
        argv = world.argv(target.resume, config, session_id=session_id(prefix))
        began = time.perf_counter()
        subprocess.run(argv, cwd=world.cwd, env=world.env(config, []), capture_output=True, check=False)
        return to_boundary + time.perf_counter() - began
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
        crashes = [e for e in entries if e["crash"] and not Boundary.parse(e["crash"]).in_flight]
        chaos_phases = bare = whole = 0.0
        for entry in crashes:
            cost = bare_cost(entry)
            phases = {p["name"]: p["seconds"] for p in entry["phases"]}
            chaos_phases += phases["start"] + phases.get("resume-1", 0.0)
            whole += entry["seconds"]
            bare += cost
        cycles = serial["crashes"]
        print(f"scenarios: {len(paths)}, cases: {serial['cases']} ({cycles} crash cycles)")
        print(f"-j 1: {serial_s:.1f}s, {cycles / serial_s:.2f} crash cycles/s")
        print(f"-j 2: {parallel_s:.1f}s, {parallel['crashes'] / parallel_s:.2f} crash cycles/s")
        print(f"speedup -j 2 / -j 1: {serial_s / parallel_s:.2f}x")
        print(f"bare agent cost of {len(crashes)} durable-boundary cycles: {bare:.2f}s")
        print(
            f"harness overhead (start + first resume phases / bare): {chaos_phases / bare:.2f}x (goal <= 1.25x)"
        )
        print(f"whole cycle incl. checks, config query, idempotence rerun / bare: {whole / bare:.2f}x")
        for name, summary in (("-j 1", serial), ("-j 2", parallel)):
            print(
                f"kill precision {name}: {summary['exact']}/{summary['reached']} exact ({summary['precision']:.0%})"
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
