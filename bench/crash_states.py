"""Crash states, not crash points: how many of a sweep's cases left the same state as another case.

Run: python bench/crash_states.py RESULTS [RESULTS ...], each the results folder of a sweep run by this
chaos (its ``sweep.jsonl``). Each crashed phase records the digest of everything its resume can read
(``chaos.process.state``: the log with the agent's own ids, clocks and sandbox paths renamed, or the
store as its adapter reads it, every other file of the workspace, the effects the world's ledger holds
and the model's asks per step). Two cases of one scenario whose
crashed starts left the same digest, and whose recoveries are crashed alike (``then``), feed their
resumes the same inputs: ALICE and CrashMonkey run such a recovery once. Prints, per sweep: the cases
run, the distinct crash states, the cases that share theirs with another, and the resumes a sweep that
ran each state's recovery once would not start; then the largest groups.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path


def groups(results: Path) -> tuple[int, dict[tuple[str, str, str], list[str]], int]:
    """The cases run, their crash states (scenario, then, digest) -> case ids, and those with none."""
    ran, by_state, unknown = 0, defaultdict(list), 0
    for line in (results / "sweep.jsonl").read_text().splitlines():
        case = json.loads(line)
        if case.get("skipped") or not case.get("phases"):
            continue
        ran += 1
        state = case["phases"][0].get("state")
        if state is None:
            unknown += 1  # not crashed, not reached, a paused writer, a store on a server
            continue
        by_state[(case["scenario"], case.get("thenCrash") or "", state)].append(case["case"])
    return ran, by_state, unknown


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="+", type=Path)
    parser.add_argument("--largest", type=int, default=5, help="groups to list per sweep")
    args = parser.parse_args()
    for results in args.results:
        if not (results / "sweep.jsonl").is_file():
            print(
                f"{results}: no sweep.jsonl here; name a sweep's results folder (its --results)",
                file=sys.stderr,
            )
            return 2
        ran, by_state, unknown = groups(results)
        shared = sum(len(cases) for cases in by_state.values() if len(cases) > 1)
        saved = sum(len(cases) - 1 for cases in by_state.values())
        print(
            f"{results}: {ran} case(s) run; {len(by_state)} distinct crash state(s) among the {ran - unknown} "
            f"with one; {shared} case(s) ({shared / max(1, ran):.0%}) share theirs with another; "
            f"{saved} recoveries ({saved / max(1, ran):.0%} of the cases) would not run"
        )
        for (scenario, then, _), cases in sorted(by_state.items(), key=lambda kv: -len(kv[1]))[
            : args.largest
        ]:
            if len(cases) > 1:
                print(f"  {len(cases)} x {scenario}{' then ' + then if then else ''}: {', '.join(cases[:4])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
