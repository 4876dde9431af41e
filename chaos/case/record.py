"""The results folder of one case: the record a person reads, every file written once.

Each phase's log is saved the moment its process is gone (the crash prefix
before anything touches it); the rest (the scenario and target as used, the
oracle's reductions and plans, the model server's requests, the ledger, the
verdict and the reproduce command) when the verdict is in. No stage of chaos
reads these files back while it runs: they are for people, for ``--oracle`` commands, and for
``chaos recheck``, which judges a stored case again from them alone (``chaos.case.reread``).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import time
from pathlib import Path
from typing import Any

import orjson

from chaos.case.result import portable
from chaos.contract import Reducer, plan_recovery
from chaos.cycle.evidence import Evidence
from chaos.errors import InternalError, UsageError
from chaos.process.phase import Phase, PhaseKind
from chaos.scenario.files import scenario_toml
from chaos.scenario.model import Scenario
from chaos.scenario.target import Target
from chaos.secrets import scrub, scrub_file, scrub_store
from chaos.world.sandbox import disk_full

RESULTS = Path("results/runs")
# What a passing case of a sweep keeps: its report line, and the evidence ``chaos recheck`` judges again
# (every log, the requests, the ledger); the processes' output and the oracle's files go.
KEEP = (
    "verdict.json",
    "reproduce",
    "scenario.toml",
    "target.toml",
    "current.json",
    "requests.json",
    "ledger.json",
)


def slug(text: str, limit: int = 80) -> str:
    """A file name for a case or boundary: letters, digits and ``.=-`` kept, every other run ``_``."""
    return re.sub(r"[^A-Za-z0-9.=-]+", "_", text).strip("_")[:limit]


def default_folder(scenario: Scenario) -> Path:
    crash = str(scenario.crash.boundary) if scenario.crash else "clean"
    stamp = time.strftime("%Y%m%d-%H%M%S") + f"-{time.time_ns() % 1_000_000_000:09d}"
    return RESULTS / f"{slug(scenario.name)}-{slug(crash)}-{stamp}"


def reproduce_command(folder: Path, target: Target, extra_env: dict[str, str]) -> str:
    """Reruns exactly a recorded case: the scenario as used (``folder/scenario.toml``: crash, signal,
    torn tail, timeout), its target and environment; from any directory. A ``--target-env`` value is a
    secret: the command names the variable (``--target-env KEY="$KEY"``), the shell that runs it gives
    the value."""
    argv = ["chaos", "run", str(folder.resolve() / "scenario.toml"), "--target", target.reference]
    names = [f'--target-env {shlex.quote(key)}="${key}"' for key in extra_env]
    return " ".join([shlex.join(argv), *names])


def env_names(extra_env: dict[str, str]) -> dict[str, str]:
    """What is written of ``--target-env``: each variable by name, its value never."""
    return {key: f"${{{key}}}" for key in extra_env}


def writable(path: Path, option: str, folder: bool = True) -> None:
    """Refuse an output path before any case runs, not after the whole sweep: a file where a folder
    must be, a folder where a file must be, a read-only place (exit 2), a full disk (exit 3)."""
    if folder and path.exists() and not path.is_dir():
        raise UsageError(f"{option} {path}: is a file; name a folder (it is made if missing)")
    if not folder and path.is_dir():
        raise UsageError(f"{option} {path}: is a folder; name a file")
    there = path if folder else path.parent
    while not there.exists() and there != there.parent:
        there = there.parent
    if not there.is_dir():
        raise UsageError(f"{option} {path}: {there} is a file, not a folder")
    try:
        read_only = bool(os.statvfs(there).f_flag & os.ST_RDONLY)
    except OSError:
        read_only = False
    if read_only or not os.access(there, os.W_OK | os.X_OK):
        raise UsageError(f"{option} {path}: {there} is read-only; name a place chaos may write")
    full = disk_full(there)
    if full:
        raise InternalError(f"{option} {path}: {full}; free space there, or write elsewhere")


def outputs_writable(
    results: Path, mine: Path | None, junit: Path | None = None, write_baseline: Path | None = None
) -> None:
    """Every place a sweep will write, checked with ``writable`` before it says where it writes."""
    writable(results, "--results")
    for path, option in ((junit, "--junit"), (write_baseline, "--write-baseline")):
        if path is not None:
            writable(path, option, folder=False)
    if mine is not None:
        writable(mine, "--mine")


def write(path: Path, data: bytes) -> None:
    """Every file of a case's record is written here: scrubbed of secrets (``chaos.secrets``)."""
    path.write_bytes(scrub(data))


def dump(path: Path, value: Any) -> None:
    write(path, orjson.dumps(value, option=orjson.OPT_INDENT_2) + b"\n")


def log_file(phase: Phase) -> str:
    return "prefix.jsonl" if phase.kind is PhaseKind.START else f"{phase.name}.jsonl"


# What chaos writes in a case's folder besides ``KEEP``: a reused folder is cleared of these (and of
# nothing else: a person's own files stay), so no earlier run's phase is taken for this one's.
WRITTEN = ("*.jsonl", "*.stdout", "*.stderr", "*.reduce.json", "*.plan.json")


class Record:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)

    def clear(self) -> None:
        """Remove what an earlier case left in this folder (``KEEP`` and ``WRITTEN``)."""
        for path in self.folder.iterdir():
            if path.is_file() and (path.name in KEEP or any(path.match(p) for p in WRITTEN)):
                path.unlink()

    def keep(self, phase: Phase) -> None:
        """Save a phase's log (or a framework's store files) at once (a crash prefix before anything else
        touches it), and scrub the outputs its process wrote (``chaos.secrets``)."""
        if phase.kept.view_after is not None:
            self._keep_store(phase)
        else:
            write(self.folder / log_file(phase), phase.kept.log_after)
        for stream in ("stdout", "stderr"):
            scrub_file(self.folder / f"{phase.name}.{stream}")

    def _keep_store(self, phase: Phase) -> None:
        """A framework's store as a crash left it, file by file: ``prefix/`` for the start, and
        ``resume-N-prefix/`` for a recovery crashed again (bytes as they were, but for a secret's value)."""
        if phase.kind is PhaseKind.START or phase.process.killed:
            where = self.folder / ("prefix" if phase.kind is PhaseKind.START else f"{phase.name}-prefix")
            for name, data in scrub_store(phase.kept.store_files).items():  # (``chaos.secrets``)
                (where / name).parent.mkdir(parents=True, exist_ok=True)
                (where / name).write_bytes(data)

    def _oracle(self, name: str, log: bytes, current: dict[str, Any] | None) -> None:
        reducer = Reducer.of(log)
        dump(self.folder / f"{name}.reduce.json", reducer.result())
        if current is not None and reducer.state is not None and reducer.error is None:
            dump(self.folder / f"{name}.plan.json", plan_recovery(reducer.state, current))

    def write_evidence(self, scenario: Scenario, evidence: Evidence) -> None:
        write(self.folder / "scenario.toml", scenario_toml(scenario).encode())
        write(self.folder / "target.toml", evidence.target.path.read_bytes())
        if evidence.current is not None:
            dump(self.folder / "current.json", evidence.current)
        dump(self.folder / "requests.json", evidence.requests)
        dump(self.folder / "ledger.json", evidence.ledger)
        if not evidence.facts:
            return  # the store's files are its record (``_keep_store``): there is no log to reduce
        self._oracle("prefix", evidence.prefix, evidence.current)
        if evidence.resumes:
            write(self.folder / "final.jsonl", evidence.final)
            self._oracle("final", evidence.final, evidence.current)
        previous = b""
        for phase in evidence.phases:  # what a phase started from, where it is not the log before it left
            stem = log_file(phase).removesuffix(".jsonl")
            if phase.kept.log_before != previous:
                write(self.folder / f"{stem}.before.jsonl", phase.kept.log_before)
            if phase.kept.log_written is not None:
                write(self.folder / f"{stem}.written.jsonl", phase.kept.log_written)
            previous = phase.kept.log_after

    def write_verdict(self, verdict: dict[str, Any]) -> None:
        """The verdict and its reproduce line (run from the case's folder), naming no host path."""
        kept = portable(verdict, self.folder)
        dump(self.folder / "verdict.json", kept)
        write(self.folder / "reproduce", (kept["reproduce"] + "\n").encode())

    def prune(self) -> None:
        """A passing case of a sweep keeps only what its report line needs (unless --keep-all)."""
        for path in self.folder.iterdir():
            if path.name not in KEEP and path.suffix != ".jsonl":
                shutil.rmtree(path) if path.is_dir() else path.unlink()
