"""How fast chaos explore finds each reference bug, and how small the shrunk scenario gets.

Run: python bench/explore.py [--seeds 1 2 3] [--budget 180] [--shrink-budget 60]. For each bug
switch and seed, a fresh exploration (no remembered failures) runs until the first failure and
shrinks it. Prints, per bug: seconds and crash cycles to the first failure, the size of the
shrunk scenario (turns + tool calls + crashes + configuration change) and the failing check.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
from pathlib import Path

from chaos.bundled.targets.reference.agent import BUGS

from chaos.explore.exploration import Exploration
from chaos.explore.strategies import size, tool_names
from chaos.mine.miner import Miner
from chaos.scenario.target import load_target

REPO = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--budget", type=float, default=180.0)
    parser.add_argument("--shrink-budget", type=float, default=60.0)
    args = parser.parse_args()
    target = load_target(REPO / "targets" / "reference.toml")
    tools = tool_names(target, {})
    print(f"{'bug':<24} {'found':>5} {'s to 1st':>9} {'cycles':>7} {'size':>5}  check")
    for bug in BUGS:
        times, cycles, sizes, checks = [], [], [], set()
        for seed in args.seeds:
            work = Path(tempfile.mkdtemp(prefix="chaos-explore-bench-"))
            try:
                run = Exploration(
                    target, {"TINY_REFERENCE_BUG": bug}, work, args.budget, seed, 10_000, args.shrink_budget
                )
                run.run(tools)
                if run.failure is None:
                    continue
                run.save(Miner(work / "fixtures"))
                scenario, verdict = run.failure
                assert run.first_failure is not None and run.cycles_to_failure is not None
                times.append(run.first_failure)
                cycles.append(run.cycles_to_failure)
                sizes.append(size(scenario))
                checks |= {c.name for c in verdict.checks if not c.ok}
            finally:
                shutil.rmtree(work, ignore_errors=True)
        if not times:
            print(f"{bug:<24} {0:>2}/{len(args.seeds)}  not found within {args.budget:.0f}s")
            continue
        print(
            f"{bug:<24} {len(times):>2}/{len(args.seeds)} {statistics.median(times):>8.1f}s "
            f"{statistics.median(cycles):>7.0f} {statistics.median(sizes):>5.0f}  {'; '.join(sorted(checks))[:90]}"
        )
    print("(medians over the seeds that found the bug)")


if __name__ == "__main__":
    main()
