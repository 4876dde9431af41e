"""``chaos sweep``: every durable boundary of every scenario, crashed, resumed and checked.

For each scenario one clean run records the full log; its committed
transactions, model requests and gated effects become the boundaries, one
crash case each. ``depth 2`` also crashes each case's recovery at each of the
recovery's own boundaries, while the budget lasts. Cases run in parallel in
isolated worlds; each finished verdict is appended to a journal at once, so an
interrupted sweep keeps what it did and ``--resume`` carries on from there.
"""

from __future__ import annotations

import hashlib
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from chaos.case.record import Record, slug
from chaos.case.run import Hook, run_case
from chaos.case.verdict import Verdict
from chaos.check.checks import reduced
from chaos.process import phase as phases
from chaos.process.phase import Phase
from chaos.process.watch import durable_boundaries
from chaos.report.outputs import case_view, read_journal, reported
from chaos.scenario.model import Boundary, Crash, Scenario
from chaos.scenario.target import Target
from chaos.triage.failure import failure_of, size


@dataclass(frozen=True)
class Case:
    scenario: Scenario
    target: Target
    crash: Crash | None
    then_crash: Crash | None = None
    as_written: bool = False  # the scenario's own crash, judged by its hand-written expectations

    @property
    def id(self) -> str:
        then = f" then {self.then_crash}" if self.then_crash else ""
        written = " (as written)" if self.as_written else ""
        return f"{self.scenario.name} @ {self.crash or 'no crash'}{then}{written}"

    def in_shard(self, shard: tuple[int, int]) -> bool:
        """Stable across machines and runs: the case id's hash, not its position, picks the shard."""
        index, count = shard
        return int(hashlib.sha256(self.id.encode()).hexdigest(), 16) % count == index - 1


def phase_boundaries(phase: Phase) -> list[Boundary]:
    """Every boundary one phase passed, counted within that phase (durable ones up to any corruption)."""
    committed = reduced(phase.log_after).repaired_length
    start = phase.committed_before
    boundaries = durable_boundaries(phase.log_after[start:committed], with_header=start == 0)
    requests = phase.requests[1] - phase.requests[0]
    boundaries += [Boundary("model-request", {}, n) for n in range(1, requests + 1)]
    boundaries += [Boundary("model-stream", {}, n) for n in range(1, phase.streams + 1)]
    seen: dict[str, int] = {}
    for effect in phase.effects:
        seen[effect] = seen.get(effect, 0) + 1
        for what in ("effect-running", "effect-done"):
            boundaries.append(Boundary(what, {"effect": effect}, seen[effect]))
    return boundaries


@dataclass
class Sweep:
    """One sweep's settings and what it has found so far."""

    results: Path
    target_env: dict[str, str]
    jobs: int = 1
    depth: int = 1
    budget: float | None = None
    shard: tuple[int, int] = (1, 1)
    keep_all: bool = False
    resume: bool = False
    timeout: float | None = None
    power_loss: bool = False  # every crash case is a power loss, not only a process death
    two_writers: bool = False  # every durable crash case pauses the writer while a second one resumes
    hooks: tuple[Hook, ...] = ()  # other judges of each case's evidence (--oracle)
    after: list[Callable[[Verdict], object]] = field(default_factory=list)  # e.g. mining, once judged
    verdicts: dict[str, dict[str, Any]] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)  # not run: the budget ran out
    started: float = field(default_factory=time.monotonic)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def journal(self) -> Path:
        return self.results / "sweep.jsonl"

    def over_budget(self) -> bool:
        return self.budget is not None and time.monotonic() - self.started > self.budget

    def folder(self, case: Case) -> Path:
        return self.results / "cases" / slug(case.id, 150)

    def load_journal(self) -> None:
        if self.resume and self.journal.exists():
            self.verdicts = {entry["case"]: entry for entry in read_journal(self.journal)}
        elif self.journal.exists():
            self.journal.unlink()

    def run_one(self, case: Case) -> dict[str, Any]:
        """Run a case, or recall it from the journal under ``--resume``; the entry names its children."""
        if case.id in self.verdicts:
            return self.verdicts[case.id]
        scenario = case.scenario.with_crash(case.crash, case.then_crash)
        folder = self.folder(case)
        verdict = run_case(scenario, case.target, self.target_env, folder, self.timeout, hooks=self.hooks)
        for after in self.after:
            after(verdict)
        children = _children(case, verdict, self.depth)
        entry = verdict.to_json() | {
            "case": case.id,
            "next": [str(b) for b in children],
            "reported": case.in_shard(self.shard),  # clean runs run in every shard, count in one
            "view": case_view(verdict),
            "failure": failure.to_json() if (failure := failure_of(verdict)) else None,
            "size": size(verdict),
        }
        with self._lock:
            self.verdicts[case.id] = entry
            with self.journal.open("ab") as journal:
                journal.write(orjson.dumps(entry) + b"\n")
        if verdict.ok and not self.keep_all:
            Record(folder).prune()
        return entry

    def reported(self) -> list[dict[str, Any]]:
        return reported(self.verdicts.values())

    def findings(self) -> list[dict[str, Any]]:
        return [v for v in self.reported() if not v["ok"]]


def _children(case: Case, verdict: Verdict, depth: int) -> list[Boundary]:
    """The boundaries to crash at next: a clean run's, or (depth 2) a crash case's first resume's."""
    if case.as_written:
        return []
    evidence = verdict.evidence
    if case.crash is None:
        return phase_boundaries(evidence.start)
    if depth >= 2 and case.then_crash is None and evidence.recoveries:
        return phase_boundaries(evidence.recoveries[0])
    return []


def _child(case: Case, boundary: str, sweep: Sweep) -> Case:
    at = Boundary.parse(boundary)
    signal = "SIGSTOP" if sweep.two_writers and not at.in_flight else "SIGKILL"
    crash = Crash(at, signal, power_loss=sweep.power_loss and signal == "SIGKILL")
    if case.crash is None:
        return Case(case.scenario, case.target, crash)
    return Case(case.scenario, case.target, case.crash, crash)


class Progress:
    """One line: cases done / total, findings so far, estimated time left."""

    def __init__(self, sweep: Sweep) -> None:
        self.sweep = sweep
        self.tty = sys.stderr.isatty()
        self.last = 0.0

    def show(self, done: int, total: int, final: bool = False) -> None:
        now = time.monotonic()
        if not final and not self.tty and now - self.last < 5:
            return
        self.last = now
        elapsed = now - self.sweep.started
        left = elapsed / done * (total - done) if done else 0.0
        text = (
            f"chaos sweep: {done}/{total} cases, {len(self.sweep.findings())} finding(s), ~{left:.0f}s left"
        )
        end = "\n" if final or not self.tty else ""
        sys.stderr.write(("\r" if self.tty else "") + text + end)
        sys.stderr.flush()


def run_sweep(sweep: Sweep, scenarios: list[Scenario], target_of: Callable[[Scenario], Target]) -> None:
    """Run every case of the shard: clean runs first, since they name the crash cases."""
    sweep.results.mkdir(parents=True, exist_ok=True)
    sweep.load_journal()
    progress = Progress(sweep)
    pending: dict[Future[dict[str, Any]], Case] = {}
    queue = [Case(scenario, target_of(scenario), None) for scenario in scenarios]
    written = [Case(s, target_of(s), s.crash, s.then_crash, True) for s in scenarios if s.crash is not None]
    queue += [case for case in written if case.in_shard(sweep.shard)]
    total, done = len(queue), 0
    with ThreadPoolExecutor(max_workers=sweep.jobs, thread_name_prefix="chaos-case") as pool:
        try:
            while queue or pending:
                while queue and len(pending) < sweep.jobs:
                    case = queue.pop(0)
                    if sweep.over_budget() and case.id not in sweep.verdicts:
                        sweep.skipped.append(case.id)
                        continue
                    pending[pool.submit(sweep.run_one, case)] = case
                if not pending:
                    continue
                finished, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in finished:
                    case = pending.pop(future)
                    entry = future.result()
                    done += 1
                    more = [_child(case, boundary, sweep) for boundary in entry.get("next", [])]
                    more = [c for c in more if c.in_shard(sweep.shard)]
                    queue += more
                    total += len(more)
                    progress.show(done, total)
        except BaseException:
            phases.ABORT.set()
            for future in pending:
                future.cancel()
            raise
        finally:
            progress.show(done, total, final=True)
