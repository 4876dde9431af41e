"""Detection power: each reference bug switch, swept over every shipped scenario, and what catches it.

Run: python bench/detection.py [--bugs NAME ...] [--scenarios DIR] [-j 2]
For each switch, one ``chaos sweep`` of the scenarios with the switch on (and once with none, the
correct agent, which must find nothing). Prints per switch: failing cases of all, distinct failures
(groups), and the first failing check of each group, so a check's detection power is read off one run
and a switch caught by the wrong check, or by none, shows.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from chaos.bundled.targets.reference.agent import BUGS

from chaos.cli import main as chaos

REPO = Path(__file__).resolve().parent.parent


def sweep(scenarios: Path, bug: str, jobs: int, work: Path) -> tuple[dict[str, Any], float]:
    argv = ["sweep", str(scenarios), "-j", str(jobs), "--mine", "none", "--results", str(work)]
    began = time.monotonic()
    chaos([*argv, *(["--target-env", f"TINY_REFERENCE_BUG={bug}"] if bug else [])])
    summary = json.loads((work / "summary.json").read_text())
    shutil.rmtree(work, ignore_errors=True)
    return summary, time.monotonic() - began


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--bugs", nargs="+", default=list(BUGS))
    parser.add_argument("--scenarios", type=Path, default=REPO / "scenarios")
    parser.add_argument("-j", "--jobs", type=int, default=2)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="chaos-detection-"))
    print(f"{'switch':<24} {'failing':>12} {'groups':>6} {'secs':>5}  first failing check of each group")
    for bug in ["", *args.bugs]:
        summary, seconds = sweep(args.scenarios, bug, args.jobs, work / "r")
        groups = summary["groups"]
        checks = sorted({str(g["label"]).split(":")[0] for g in groups})
        failing = f"{summary['findings']}/{summary['cases']}"
        print(
            f"{bug or '(none)':<24} {failing:>12} {len(groups):>6} {seconds:>5.0f}  {', '.join(checks) or '-'}",
            flush=True,
        )
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
