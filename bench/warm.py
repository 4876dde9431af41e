"""Warm starts against cold, side by side in one run: where a sweep's time goes, and what warm saves.

Run: python bench/warm.py [--quick] [--only heavy|framework]. Two sweeps, each
twice in a row, cold (a copy of the target file saying ``warm = false``) and
then warm (the default):

- ``heavy``: the bundled scenarios (``--fault kill``) against ``bench/heavy``,
  the reference agent behind the imports of the ``anthropic`` and ``openai``
  SDKs: what an agent on a real SDK pays in every process (goal: warm at least
  3x faster);
- ``framework``: the bundled LangGraph target over its bundled framework
  scenarios (goal: at least 2x faster);
- ``lazy``: not cold against warm, but an agent on an SDK against the lean
  one, both warm: ``bench/heavy/lazy.py`` imports the SDKs inside its model
  call and ends with ``os._exit`` (what a warm start learned at a clean exit
  missed), beside the bundled reference agent, over ``full-workflow``,
  ``pending-deploy-interrupted`` and ``section8-read-replay`` under the default
  fault matrix (goal: at most 2x the lean agent's time).

Per sweep it prints the seconds, cases per second and, per case on average:
the agent's processes (their own work with their start-up), chaos's own part
(the rest of the case: world, checks, records), and start-up saved (the
processes' time cold minus warm); then the ratio, and whether every case got
the same verdict and the failures the same groups (they must). ``--quick``
runs a quarter of the heavy sweep's cases (``--shard 1/4``).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from chaos.cli import main as chaos

REPO = Path(__file__).resolve().parent.parent
HEAVY = REPO / "bench" / "heavy" / "heavy.toml"
LAZY = REPO / "bench" / "heavy" / "lazy.toml"
LEAN = REPO / "targets" / "reference.toml"
LAZY_SCENARIOS = ("full-workflow", "pending-deploy-interrupted", "section8-read-replay")
FRAMEWORK = REPO / "targets" / "langgraph.toml"
GOALS = {"heavy": 3.0, "framework": 2.0, "lazy": 2.0}


def cold_copy(target: Path) -> Path:
    """The same target file, saying ``warm = false``, beside it (its ``{target_dir}`` is the same)."""
    text = target.read_text()
    copy = target.with_name(f".{target.stem}-cold.toml")
    copy.write_text("warm = false\n" + text)
    return copy


def sweep(target: Path, args: list[str], results: Path) -> dict:
    started = time.perf_counter()
    chaos(["sweep", *args, "--target", str(target), "-j", "2", "--results", str(results), "--mine", "none"])
    seconds = time.perf_counter() - started
    cases = [json.loads(line) for line in (results / "sweep.jsonl").read_text().splitlines()]
    summary = json.loads((results / "summary.json").read_text())
    ran = [c for c in cases if not c.get("skipped")]
    processes = sum(p["seconds"] for c in ran for p in c["phases"])
    return {
        "seconds": seconds,
        "cases": len(ran),
        "processes": processes / max(1, len(ran)),
        "chaos": sum(c["seconds"] for c in ran) / max(1, len(ran)) - processes / max(1, len(ran)),
        "verdicts": {c["case"]: c["ok"] for c in ran},
        "groups": sorted(g["key"] for g in summary["groups"]),
        "starts": summary.get("starts", []),
        "warm_phases": sum(1 for c in ran for p in c["phases"] if p.get("warm")),
        "phases": sum(len(c["phases"]) for c in ran),
    }


def compare(name: str, target: Path, args: list[str], out: Path) -> bool:
    copy = cold_copy(target)
    try:
        cold = sweep(copy, args, out / f"{name}-cold")
    finally:
        copy.unlink()
    warm = sweep(target, args, out / f"{name}-warm")
    ratio = cold["seconds"] / warm["seconds"]
    same = cold["verdicts"] == warm["verdicts"] and cold["groups"] == warm["groups"]
    print(f"\n{name}: {cold['cases']} case(s), {' / '.join(warm['starts'])}")
    for label, run in (("cold", cold), ("warm", warm)):
        print(
            f"  {label}: {run['seconds']:7.1f} s, {run['cases'] / run['seconds']:5.2f} cases/s; per case: "
            f"processes {run['processes']:.2f} s, chaos {run['chaos']:.2f} s "
            f"({run['warm_phases']}/{run['phases']} phases warm)"
        )
    print(f"  start-up saved per case: {cold['processes'] - warm['processes']:.2f} s")
    print(f"  warm is {ratio:.2f}x faster (goal: at least {GOALS[name]:g}x)")
    print(
        f"  identical verdicts: {same} ({len(cold['groups'])} failure group(s) cold, {len(warm['groups'])} warm)"
    )
    return ratio >= GOALS[name] and same


def against_lean(out: Path) -> bool:
    """The lazy SDK agent and the lean reference agent, both warm, over the same scenarios in one run."""
    paths = [str(REPO / "scenarios" / f"{name}.toml") for name in LAZY_SCENARIOS]
    lean = sweep(LEAN, paths, out / "lean")
    lazy = sweep(LAZY, paths, out / "lazy")
    ratio = lazy["seconds"] / lean["seconds"]
    print(f"\nlazy: {lazy['cases']} case(s), {' / '.join(lazy['starts'])}")
    for label, run in (("lean", lean), ("lazy", lazy)):
        print(
            f"  {label}: {run['seconds']:7.1f} s, {run['cases'] / run['seconds']:5.2f} cases/s; per case: "
            f"processes {run['processes']:.2f} s ({run['warm_phases']}/{run['phases']} phases warm)"
        )
    print(f"  the lazy SDK agent takes {ratio:.2f}x the lean agent's time (goal: at most {GOALS['lazy']:g}x)")
    same = lean["verdicts"] == lazy["verdicts"] and lean["groups"] == lazy["groups"]
    print(f"  identical verdicts: {same}")
    return ratio <= GOALS["lazy"] and same


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a quarter of the heavy sweep")
    parser.add_argument("--only", choices=sorted(GOALS))
    args = parser.parse_args()
    shard = ["--shard", "1/4"] if args.quick else []
    runs = {
        "heavy": (HEAVY, [str(REPO / "scenarios"), "--fault", "kill", *shard]),
        "framework": (FRAMEWORK, []),
    }
    with tempfile.TemporaryDirectory(prefix="chaos-bench-warm-") as out:
        met = [
            compare(name, target, sweep_args, Path(out))
            for name, (target, sweep_args) in runs.items()
            if args.only in (None, name)
        ]
        if args.only in (None, "lazy"):
            met.append(against_lean(Path(out)))
    return 0 if all(met) else 1


if __name__ == "__main__":
    sys.exit(main())
