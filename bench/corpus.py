"""The corpus of public bugs: each one caught as exactly one failure on the release it was reported
against, and clean on the release that fixed it, the same in every run.

Run: python bench/corpus.py [--runs 5] [--envs DIR] [NAME ...]

Each entry is a folder of ``bench/corpus`` (``bug.toml``: the issue, the framework's package and the
project's extra its app needs, its affected and fixed releases (no fixed one for a bug still open
upstream), the target, the scenario, where it crashes and with which fault (and where its recovery
crashes, with which: a bug of recovering), and its one distinct failure, the check that fails first (a
hung recovery also fails the checks of a run that never ended); the target file and any app beside it). Each release runs in a virtual environment of its own
(``DIR/PACKAGE-VERSION[-EXTRA]``, made once with this checkout installed editable and the release pinned,
then reused): the case is run ``--runs`` times on each, side by side in one run, and the table
says what each run found. Exit 0 when every entry is caught on its affected release, as exactly its one
failure, and clean on its fixed one, in every run; 1 otherwise. It installs releases from the package
index, so it runs outside ``.ci/run``; CI runs each entry's case with what the project installs
(``.ci/constraints.txt``: clean on a fixed release, the one failure on the affected release of an open
bug; ``tests/test_corpus.py``).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO / "bench" / "corpus"
KEYS = (
    "issue",
    "title",
    "package",
    "extra",
    "affected",
    "fixed",
    "target",
    "scenario",
    "crash",
    "fault",
    "then_crash",
    "then_fault",
    "failure",
)
# a bug still open upstream has no fixed release; the project's extra its app needs beside the package;
# a crash of the recovery, and its fault, where the bug is one of recovering
OPTIONAL = {"fixed": "", "extra": "", "then_crash": "", "then_fault": ""}


@dataclass(frozen=True)
class Bug:
    """One public bug: where it lives, the releases it is pinned to, and the case that shows it."""

    name: str
    folder: Path
    issue: str
    title: str
    package: str
    extra: str  # the project's extra installed with it ("": none)
    affected: str
    fixed: str  # "" while the bug is open upstream
    target: str
    scenario: str
    crash: str
    fault: str
    then_crash: str  # "" where the recovery is not crashed
    then_fault: str
    failure: str  # the one distinct failure: the case's first failing check (its failure key)

    @classmethod
    def load(cls, folder: Path) -> Bug:
        data = OPTIONAL | tomllib.loads((folder / "bug.toml").read_text())
        missing = [key for key in KEYS if not isinstance(data.get(key), str)]
        unknown = sorted(set(data) - set(KEYS))
        if missing or unknown:
            raise SystemExit(f"{folder / 'bug.toml'}: missing {missing}, unknown {unknown}")
        return cls(folder.name, folder, **{key: data[key] for key in KEYS})

    def argv(self, python: Path, results: Path) -> list[str]:
        """The case, as ``chaos run`` runs it."""
        return [
            str(python),
            "-m",
            "chaos",
            "run",
            self.scenario,
            "--target",
            str(self.folder / self.target),
            "--kill-at",
            self.crash,
            "--fault",
            self.fault,
            *(
                ["--then-kill-at", self.then_crash, "--then-fault", self.then_fault]
                if self.then_crash
                else []
            ),
            "--results",
            str(results),
        ]


def environment(envs: Path, package: str, version: str, extra: str = "") -> Path:
    """The Python of a virtual environment with this checkout (and its ``extra``) and ``package==version``
    (made once)."""
    folder = envs / (f"{package}-{version}" + (f"-{extra}" if extra else ""))  # (one checkout, one extra)
    python = folder / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True)
        project = f"{REPO}[{extra}]" if extra else str(REPO)
        subprocess.run(
            [str(python), "-m", "pip", "install", "--quiet", "-e", project, f"{package}=={version}"],
            check=True,
        )
    return python


def failed_checks(python: Path, bug: Bug) -> tuple[int, list[str]]:
    """One run of the bug's case: chaos's exit status and the checks that failed, in the order they are
    reported (causes first: the first is the case's failure key, its one distinct failure)."""
    with tempfile.TemporaryDirectory(prefix="chaos-corpus-") as tmp:
        results = Path(tmp) / "case"
        done = subprocess.run(bug.argv(python, results), capture_output=True, text=True, timeout=900)
        verdict = results / "verdict.json"
        if not verdict.exists():
            return done.returncode, [f"no verdict: {done.stderr.strip()[-200:]}"]
        checks = json.loads(verdict.read_text())["checks"]
        failed = [c["id"] for c in checks if c.get("judged", True) and not c["ok"]]
        return done.returncode, list(dict.fromkeys(failed))


def _found(failed: list[str]) -> str:
    """What one run found: its failure, and the checks its consequences failed too."""
    if not failed:
        return "clean"
    return failed[0] + (f" (its consequences: {', '.join(failed[1:])})" if failed[1:] else "")


def main(argv: list[str]) -> int:
    options = argparse.ArgumentParser(prog="python bench/corpus.py", description=__doc__.split("\n\n")[0])
    options.add_argument("names", nargs="*", help="entries of bench/corpus (default: all)")
    options.add_argument("--runs", type=int, default=5, help="runs of each case on each release")
    options.add_argument("--envs", type=Path, default=Path.home() / ".cache" / "chaos-corpus")
    args = options.parse_args(argv)
    folders = sorted(p.parent for p in CORPUS.glob("*/bug.toml"))
    bugs = [Bug.load(f) for f in folders if not args.names or f.name in args.names]
    print("| bug | release | runs | as expected | what the runs found |")
    print("|---|---|---|---|---|")
    everything = True
    for bug in bugs:
        releases = [("affected", bug.affected, [bug.failure])]
        releases += [("fixed", bug.fixed, [])] if bug.fixed else []
        for release, version, expected in releases:
            python = environment(args.envs, bug.package, version, bug.extra)
            found = [failed_checks(python, bug) for _ in range(args.runs)]
            right = sum(
                1 for code, failed in found if failed[:1] == expected and code == (1 if expected else 0)
            )
            seen = sorted({_found(failed) for _, failed in found})
            everything &= right == args.runs
            print(
                f"| {bug.name} ({bug.issue}) | {bug.package} {version} ({release}) | {args.runs} | "
                f"{right}/{args.runs} | {'; '.join(seen)} |"
            )
    return 0 if everything else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
