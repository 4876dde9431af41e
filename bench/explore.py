"""How fast chaos explore finds each reference bug, and whether it keeps its budget on a correct agent.

Run: python bench/explore.py [--seeds 1 2 3] [--budget 180] [--shrink-budget 60] [--bugs NAME ...]
For each bug switch and seed, a fresh exploration (no remembered failures) runs until its budget
and shrinks what it found. Prints, per bug: seconds and crash cycles to the first failure, the
size of the shrunk scenario (turns + tool calls + crashes + configuration change), the failing
checks and how many distinct failures were reported.

python bench/explore.py --clean [--budgets 20 45 90] [--seeds 1 2 3 4 5]: the correct agent,
every budget and seed: each exploration must exit 0 (nothing found, no crash of chaos), and its
time over the budget is printed (it may overrun by one crash cycle).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from chaos.bundled.targets.reference.agent import BUGS

from chaos.api import EXPLORED
from chaos.case.space import CaseSpace
from chaos.cli import main as chaos
from chaos.cycle.configuration import tool_names
from chaos.explore.exploration import Exploration
from chaos.explore.strategies import size
from chaos.mine.miner import Miner
from chaos.scenario import load_target

REPO = Path(__file__).resolve().parent.parent
# Switches only a crash mode that explore leaves off by default can show: the bench turns it on for them.
NEEDS_POWER_LOSS = {"no-fsync"}
NEEDS_TWO_WRITERS = {"no-session-lock"}


def bugs(args: argparse.Namespace) -> None:
    target = load_target(REPO / "targets" / "reference.toml")
    tools = tool_names(target, {})
    print(f"{'bug':<24} {'found':>5} {'s to 1st':>9} {'cycles':>7} {'size':>5} {'kinds':>5}  check")
    for bug in args.bugs or BUGS:
        times, cycles, sizes, kinds, checks = [], [], [], [], set()
        for seed in args.seeds:
            work = Path(tempfile.mkdtemp(prefix="chaos-explore-bench-"))
            try:
                env = {"TINY_REFERENCE_BUG": bug}
                faults = (*EXPLORED, *(["power-loss"] if bug in NEEDS_POWER_LOSS else []))
                faults += ("paused-writer",) if bug in NEEDS_TWO_WRITERS else ()
                run = Exploration(
                    target,
                    env,
                    work,
                    CaseSpace(faults=faults, budget=args.budget),
                    seed=seed,
                    max_examples=10_000,
                    shrink_budget=args.shrink_budget,
                    max_failures=1,
                )
                run.explore(tools)
                if not run.found:
                    continue
                found = run.save(Miner(work / "fixtures"))
                first = min(found, key=lambda f: f.seconds)
                times.append(first.seconds)
                cycles.append(first.cycles)
                sizes.append(size(first.scenario))
                kinds.append(len(found))
                checks |= {f.check_text().split(":")[0] for f in found}
            finally:
                shutil.rmtree(work, ignore_errors=True)
        if not times:
            print(f"{bug:<24} {0:>2}/{len(args.seeds)}  not found within {args.budget:.0f}s")
            continue
        print(
            f"{bug:<24} {len(times):>2}/{len(args.seeds)} {statistics.median(times):>8.1f}s "
            f"{statistics.median(cycles):>7.0f} {statistics.median(sizes):>5.0f} {max(kinds):>5}  "
            f"{'; '.join(sorted(checks))[:90]}"
        )
    print("(medians over the seeds that found the bug; kinds: distinct failures in one run, at most)")


def clean(args: argparse.Namespace) -> None:
    print(f"{'budget':>6} {'seed':>4} {'exit':>4} {'seconds':>8} {'over':>6}")
    worst = 0.0
    for budget in args.budgets:
        for seed in args.seeds:
            work = Path(tempfile.mkdtemp(prefix="chaos-explore-clean-"))
            try:
                began = time.monotonic()
                code = chaos(
                    ["explore", "--budget", str(budget), "--seed", str(seed), "--results", str(work)]
                )
                spent = time.monotonic() - began
            finally:
                shutil.rmtree(work, ignore_errors=True)
            worst = max(worst, spent - budget)
            print(f"{budget:>6g} {seed:>4} {code:>4} {spent:>8.1f} {spent - budget:>+6.1f}", flush=True)
    print(f"worst overrun: {worst:.1f}s")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=None)
    parser.add_argument("--budget", type=float, default=180.0)
    parser.add_argument("--shrink-budget", type=float, default=60.0)
    parser.add_argument("--bugs", nargs="+", help="only these switches (default: all)")
    parser.add_argument(
        "--clean", action="store_true", help="the correct agent: every budget and seed exits 0"
    )
    parser.add_argument("--budgets", type=float, nargs="+", default=[20.0, 45.0, 90.0])
    args = parser.parse_args()
    if args.clean:
        args.seeds = args.seeds or [1, 2, 3, 4, 5]
        clean(args)
    else:
        args.seeds = args.seeds or [1, 2, 3]
        bugs(args)


if __name__ == "__main__":
    main()
