"""``chaos sweep``: every durable boundary of every scenario, crashed, resumed and checked.

For each scenario one clean run records the full log; its committed
transactions, model requests and gated effects become the boundaries, one
crash case each. ``depth 2`` also crashes each case's recovery at each of the
recovery's own boundaries, while the budget lasts. Cases run in parallel in
isolated worlds; each finished result is appended to a journal at once, so an
interrupted sweep keeps what it did and ``--resume`` carries on from there. A
case that needs what the target does not declare is journalled as skipped,
with the reason.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path

from chaos.case.definition import Case
from chaos.case.record import Record, slug
from chaos.case.result import CaseResult, append_journal, cut_torn_tail, read_journal, reported
from chaos.case.run import Judge, run_case
from chaos.case.starts import Starts
from chaos.case.verdict import Verdict
from chaos.cycle.evidence import Evidence
from chaos.cycle.share import Shares
from chaos.errors import Skipped
from chaos.process import phase as phases
from chaos.process.warm import WarmStarts
from chaos.report.html import view_of
from chaos.scenario.model import Scenario
from chaos.scenario.target import Target
from chaos.sweep.boundaries import cell_of, child_cases, children, spread
from chaos.sweep.identity import check_resume, identity, write_identity
from chaos.sweep.settings import Settings
from chaos.triage.coverage import rows_of
from chaos.triage.failure import failure_of, size


@dataclass
class Sweep:
    """One sweep: its settings, its other judges and what it does after each case, and what it has found so far."""

    settings: Settings
    judges: tuple[Judge, ...] = ()  # other judges of each case's evidence (--oracle)
    after: tuple[Callable[[Verdict], object], ...] = ()  # e.g. mining, once judged
    results: dict[str, CaseResult] = field(default_factory=dict)
    not_run: list[str] = field(default_factory=list)  # the budget ran out before these
    # each scenario's uninterrupted run, what a framework agent's crash cases are judged against
    cleans: dict[str, Evidence] = field(default_factory=dict)
    starts: Starts = field(default_factory=Starts)  # cold or warm, per target (chaos.case.starts)
    shares: Shares = field(default_factory=Shares)  # crash states and their recoveries (chaos.cycle.share)
    started: float = field(default_factory=time.monotonic)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def journal(self) -> Path:
        return self.settings.results / "sweep.jsonl"

    def over_budget(self) -> bool:
        budget = self.settings.space.budget
        return budget is not None and time.monotonic() - self.started > budget

    def folder(self, case: Case) -> Path:
        return self.settings.results / "cases" / slug(case.id, 150)

    def load_journal(self, parts: dict[str, str]) -> None:
        """Under ``--resume``, the verdicts of the interrupted sweep, if it ran with these settings
        (``chaos.sweep.identity``); otherwise a fresh journal."""
        if self.settings.resume and self.journal.exists():
            check_resume(self.settings.results, parts)
            cut_torn_tail(self.journal)  # a kill mid-append: the next verdict starts on a line of its own
            self.results = {result.case: result for result in read_journal(self.journal)}
        elif self.journal.exists():
            self.journal.unlink()
        write_identity(self.settings.results, parts)

    def judge(self, case: Case) -> CaseResult:
        """Run a case, or recall it from the journal under ``--resume``; the result names its children."""
        if case.id in self.results:
            return self.results[case.id]
        folder = self.folder(case)
        s = self.settings
        try:
            scenario = s.space.scenario(case.as_run)
            clean = self.cleans.get(case.scenario.name)
            warm = self.starts.of(case.target)

            def run(starts: WarmStarts | None, where: Path) -> Verdict:
                env, timeout = s.target_env, s.timeout
                return run_case(
                    scenario,
                    case.target,
                    env,
                    where,
                    timeout,
                    judges=self.judges,
                    clean=clean,
                    warm=starts,
                    share=self.shares,
                )

            verdict = run(warm, folder)
            if case.crash is None and not verdict.evidence.facts:
                self.cleans[case.scenario.name] = verdict.evidence
            if case.crash is None and warm is None:
                choice = self.starts.choose(
                    case.target, verdict, run, s.results / "starts" / slug(case.target.name, 80)
                )
                if choice is not None:
                    sys.stderr.write(f"\rchaos sweep: {choice}\n")
                if choice is not None and choice.warm:  # the saves its framework began, seen warm only
                    for phase, saves in zip(verdict.phases, choice.saves, strict=False):
                        phase.seen.saves = list(saves)
        except Skipped as why:
            result = CaseResult(
                case.id,
                case.scenario.name,
                case.target.name,
                False,  # not run is not ok: nothing was judged (``skipped`` says why)
                skipped=str(why),
                reported=case.in_shard(s.shard),
            )
        else:
            for after in self.after:
                after(verdict)
            failure = failure_of(verdict)
            result = verdict.result().with_(
                case=case.id,
                next=[str(crash) for crash in children(case, verdict, s.space)],
                cell=cell_of(case, verdict.evidence),
                reported=case.in_shard(s.shard),  # clean runs run in every shard, count in one
                view=view_of(verdict),
                failure=failure.record() if failure else None,
                size=size(verdict),
                rows=rows_of(verdict.evidence),
            )
            if verdict.ok and not s.keep_all:
                Record(folder).prune()
        with self._lock:
            self.results[case.id] = result
            append_journal(self.journal, result)
        return result

    def reported(self) -> list[CaseResult]:
        return reported(list(self.results.values()))

    def findings(self) -> list[CaseResult]:
        return [r for r in self.reported() if not r.ok and not r.skipped]


class Progress:
    """One line: cases done / total (``+`` while clean runs or recoveries may add more), findings,
    time left."""

    def __init__(self, sweep: Sweep) -> None:
        self.sweep = sweep
        self.tty = sys.stderr.isatty()
        self.last = 0.0
        self.announced = False

    def show(self, done: int, total: int, growing: bool, final: bool = False) -> None:
        now = time.monotonic()
        elapsed = now - self.sweep.started
        if not growing and not final and not self.announced and done:
            self.announced = True  # the clean runs are in: the whole count is known, and a first pace
            estimate = elapsed / done * total
            sys.stderr.write(
                ("\r\033[K" if self.tty else "")
                + f"chaos sweep: {total} case(s) in all; about {estimate:.0f}s at the pace of the first {done}\n"
            )
        if not final and not self.tty and now - self.last < 5:
            return
        self.last = now
        left = f", ~{elapsed / done * (total - done):.0f}s left" if done and not growing else ""
        more = "+" if growing and not final else ""
        skipped = sum(1 for r in self.sweep.results.values() if r.skipped)
        skip = f" ({skipped} skipped)" if skipped else ""
        text = f"chaos sweep: {done}/{total}{more} cases{skip}, {len(self.sweep.findings())} finding(s){left}"
        end = "\n" if final or not self.tty else ""
        sys.stderr.write(("\r\033[K" if self.tty else "") + text + end)
        sys.stderr.flush()


def sweep_all(sweep: Sweep, scenarios: list[Scenario], target_of: Callable[[Scenario], Target]) -> None:
    """Run every case of the shard: clean runs first, since they name the crash cases."""
    s = sweep.settings
    phases.ABORT.clear()  # an earlier interrupted sweep of this process does not stop this one
    s.results.mkdir(parents=True, exist_ok=True)
    sweep.load_journal(identity(s, scenarios, target_of))
    sweep.shares = Shares(s.crash_states)
    progress = Progress(sweep)
    pending: dict[Future[CaseResult], Case] = {}
    queue = [Case(scenario, target_of(scenario), None) for scenario in scenarios]
    written = [
        Case(sc, target_of(sc), sc.crash, sc.then_crash, True) for sc in scenarios if sc.crash is not None
    ]
    queue += [case for case in written if case.in_shard(s.shard)]
    total, done = len(queue), 0
    parents = {id(case) for case in queue if case.crash is None or s.space.depth >= 2}  # may add cases
    try:
        with ThreadPoolExecutor(max_workers=s.jobs, thread_name_prefix="chaos-case") as pool:
            try:
                while queue or pending:
                    while queue and len(pending) < s.jobs:
                        case = queue.pop(0)
                        if sweep.over_budget() and case.id not in sweep.results:
                            sweep.not_run.append(case.id)
                            parents.discard(id(case))
                            continue
                        pending[pool.submit(sweep.judge, case)] = case
                    if not pending:
                        continue
                    finished, _ = wait(pending, return_when=FIRST_COMPLETED)
                    for future in finished:
                        case = pending.pop(future)
                        result = future.result()
                        done += 1
                        parents.discard(id(case))
                        more = spread([c for crash in result.next for c in child_cases(case, crash, s)])
                        parents |= {
                            id(c)
                            for c in more
                            if c.then_crash is None and c.crash and s.space.deepens(c.crash, c.target)
                        }
                        queue += more
                        total += len(more)
                        progress.show(done, total, bool(parents))
            except BaseException:
                phases.ABORT.set()
                for future in pending:
                    future.cancel()
                sweep.not_run += [
                    case.id for case in [*pending.values(), *queue] if case.id not in sweep.results
                ]
                raise
            finally:
                sweep.starts.close()
                progress.show(done, total, False, final=True)
    finally:  # every case's thread has ended: what this sweep aborted stops nothing after it
        phases.ABORT.clear()
