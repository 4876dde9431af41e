"""What a scenario written from a log can still catch: each idle log of a mined corpus, turned into a scenario
(``chaos scenario from-log``), swept with each bug switch, against a sweep of the scenario that wrote the log.

Run: python bench/from_log.py [--corpus results/fixtures] [--bugs NAME ...] [--workspace]
For every fixture that ends idle with an operation, and every switch: a sweep of the original scenario
(named by the fixture's provenance) and a sweep of the replay, side by side. Prints, per switch, in how
many of the logs the original catches it and in how many the replay does, and where the replay misses
what the original catches. ``--workspace`` gives each replay its original scenario's files, as
``--workspace`` gives a real incident's workspace (without it, a replayed ``bash`` has no script to run).
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from pathlib import Path

from chaos.cli import main as chaos
from chaos.contract import reduce
from chaos.mine.from_log import scenario_from_log
from chaos.scenario import load_scenario
from chaos.scenario.files import write_scenario

REPO = Path(__file__).resolve().parent.parent
BUGS = [
    "stale-assistant-calls",
    "replay-never-tools",
    "intent-after-effect",
    "skip-finish-on-resume",
    "unbounded-retry",
    "old-gate-order",
    "double-usage",
    "truncated-as-normal",
    "finish-other-error",
    "give-up-on-replay",
    "results-reordered",
    "hide-synthetic-results",
]


def _caught(scenario: Path, bug: str, work: Path) -> bool:
    argv = ["sweep", str(scenario), "-j", "2", "--mine", "none", "--results", str(work)]
    code = chaos([*argv, "--target-env", f"TINY_REFERENCE_BUG={bug}"])
    shutil.rmtree(work, ignore_errors=True)
    return code == 1


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--corpus", type=Path, default=REPO / "results" / "fixtures")
    parser.add_argument("--bugs", nargs="+", default=BUGS)
    parser.add_argument("--workspace", action="store_true", help="give each replay its scenario's files")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="chaos-from-log-bench-"))
    pairs = []
    for log in sorted((args.corpus / "fixtures").glob("*.jsonl")):
        reduced = reduce(log.read_bytes())
        if (
            not reduced["ok"]
            or reduced["state"]["operation"]["kind"] != "idle"
            or b"runStarted" not in log.read_bytes()
        ):
            continue
        provenance = json.loads((args.corpus / "provenance" / f"{log.stem}.json").read_text())
        original = REPO / "scenarios" / f"{provenance['scenario']}.toml"
        files = load_scenario(original).files if args.workspace else None
        replay = work / f"{log.stem}.toml"
        write_scenario(
            scenario_from_log(log.read_bytes(), f"replay-{log.stem}", workspace=files).scenario, replay
        )
        pairs.append((log.stem, original, replay))
    print(f"{len(pairs)} idle logs; {'with' if args.workspace else 'without'} their workspaces", flush=True)
    print(f"{'switch':<24} {'original':>8} {'replay':>7}  missed by the replay")
    for bug in args.bugs:
        by_original = {name for name, original, _ in pairs if _caught(original, bug, work / "o")}
        by_replay = {name for name, _, replay in pairs if _caught(replay, bug, work / "r")}
        missed = sorted(by_original - by_replay)
        print(f"{bug:<24} {len(by_original):>8} {len(by_replay):>7}  {', '.join(missed) or '-'}", flush=True)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
