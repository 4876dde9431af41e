"""``chaos explore``: Hypothesis generates worlds and crash plans, runs real crash cycles, shrinks failures.

Every example is a real cycle (real processes, real kills, the same checks as
``chaos run``). Each distinct failure has its own exception type, so
Hypothesis keeps exploring after the first one and shrinks each to the
smallest scenario that fails *the same way*; each is written as a TOML file
``chaos run`` loads.

Exploration goes on after the first failure: it runs in rounds, each one
Hypothesis run that counts the failures of earlier rounds as passes, so each
round looks for a new failure and shrinks it on its own, until the budget ends.

The budget is kept without ever giving one example two answers within a round
(Hypothesis replays examples, and calls an example that changes its answer
flaky): every distinct scenario runs at most once and its verdict is
remembered. The clock only decides whether a *new* example runs. Before the
budget ends, all do. After it, with nothing new found in the round,
``BudgetSpent`` stops Hypothesis outright (it is not an ``Exception``, so
Hypothesis does not take it for a test outcome). With a new failure found, new
examples keep running for the shrink budget, then are answered as passing,
which lets Hypothesis finish at once with the smallest failure it has. So a
run ends within budget + one crash cycle + shrink budget, plus one confirming
rerun per distinct failure it saves.
"""

from __future__ import annotations

import re
import shutil
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis.database import DirectoryBasedExampleDatabase
from hypothesis.reporting import with_reporter

from chaos.case.run import run_case
from chaos.case.space import CaseSpace
from chaos.case.starts import Starts
from chaos.case.verdict import Verdict
from chaos.errors import Skipped
from chaos.explore.strategies import scenarios, size
from chaos.mine.miner import Miner, kebab
from chaos.process.warm import WarmStarts
from chaos.scenario.files import load_scenario, write_scenario
from chaos.scenario.model import Scenario
from chaos.scenario.target import Target
from chaos.triage.failure import failure_of


class BudgetSpent(BaseException):
    """Generation time is over and nothing failed: stop Hypothesis (not an outcome of the example)."""


class Finding(AssertionError):
    """A generated scenario failed; each failure key gets its own subclass."""


@dataclass
class Found:
    """One distinct failure: the smallest scenario seen failing that way, and its verdict."""

    key: str  # the failure key (``chaos.triage``): each distinct failure is shrunk on its own
    label: str
    scenario: Scenario
    verdict: Verdict
    seconds: float  # from the start of the exploration to the first cycle failing this way
    cycles: int  # crash cycles run until then
    saved: Path | None = None

    def check_text(self) -> str:
        failed = self.verdict.failed
        return failed[0].text() if failed else "(the rerun passed: the failure is flaky)"


@dataclass
class Exploration:
    target: Target
    target_env: dict[str, str]
    results: Path
    space: CaseSpace  # the faults to draw from, the budget (seconds), the persistence model
    seed: int | None = None
    max_examples: int = 200
    shrink_budget: float = 60.0
    max_failures: int | None = None  # stop once this many distinct failures are found (and shrunk)
    cycles: int = 0
    found: dict[str, Found] = field(default_factory=dict)
    started: float = field(default_factory=time.monotonic)
    rounds: int = 0
    _types: dict[str, type[Finding]] = field(default_factory=dict)
    # repr(scenario) -> its verdict when it failed, None when it passed: every scenario runs once
    _verdicts: dict[str, Verdict | None] = field(default_factory=dict)
    _unrun: set[str] = field(default_factory=set)  # first met after the shrink deadline: passes, always
    _known: set[str] = field(default_factory=set)  # failure keys of earlier rounds: passes in this round
    _new: bool = False  # this round found a failure of its own
    starts: Starts = field(default_factory=Starts)  # cold or warm (chaos.case.starts); close when done

    def run(self, scenario: Scenario, folder: Path) -> Verdict:
        """One crash cycle, its processes started warm once a cold and a warm run agreed (the first cycle
        decides, chaos.case.starts)."""
        warm = self.starts.of(self.target)

        def cycle(starts: WarmStarts | None, where: Path) -> Verdict:
            return run_case(scenario, self.target, self.target_env, where, warm=starts)

        verdict = cycle(warm, folder)
        if warm is None:
            self.starts.choose(self.target, verdict, cycle, self.results / "starts")
        return verdict

    @property
    def budget(self) -> float:
        return self.space.budget if self.space.budget is not None else 60.0

    def _elapsed(self) -> float:
        return time.monotonic() - self.started

    def _enough(self) -> bool:
        """As many distinct failures are found as ``max_failures`` asks for."""
        return self.max_failures is not None and len(self.found) >= self.max_failures

    def _error(self, key: str, verdict: Verdict) -> Finding:
        if key not in self._types:
            self._types[key] = type("Finding_" + re.sub(r"\W+", "_", key), (Finding,), {})
        return self._types[key](verdict.failed[0].text())

    def _record(self, key: str, scenario: Scenario, verdict: Verdict) -> None:
        best = self.found.get(key)
        if best is None:
            label = failure.label if (failure := failure_of(verdict)) else key
            self.found[key] = Found(key, label, scenario, verdict, self._elapsed(), self.cycles)
        elif size(scenario) <= size(best.scenario):
            best.scenario, best.verdict = scenario, verdict

    def _cycle(self, scenario: Scenario) -> None:
        known = repr(scenario)
        if known in self._unrun:
            return
        if known not in self._verdicts:
            elapsed = self._elapsed()
            if elapsed > self.budget and not self._new:
                raise BudgetSpent()
            if elapsed > self.budget + self.shrink_budget:
                self._unrun.add(known)  # shrinking has had its time: nothing new runs
                return
            folder = self.results / "cases" / f"{self.cycles:05d}"
            try:
                verdict = self.run(self.space.scenario(scenario), folder)
            except Skipped:  # needs what the target does not declare: nothing to find here
                self._verdicts[known] = None
                return
            self.cycles += 1
            if verdict.ok:
                shutil.rmtree(folder, ignore_errors=True)
            self._verdicts[known] = None if verdict.ok else verdict
        failed = self._verdicts[known]
        if failed is None:
            return
        key = _key(failed)
        if key in self._known:
            return  # found in an earlier round: this round looks for others
        if key not in self.found and self._enough():
            return  # as many distinct failures as asked for: others wait for a later exploration
        self._new = True
        self._record(key, scenario, failed)
        raise self._error(key, failed)

    def retry_past_failures(self) -> None:
        """Rerun the scenarios earlier explorations wrote (``found-*.toml``) before generating anything.

        Hypothesis's own database does the same for unseeded runs; these files
        also cover seeded ones, and they are what a person commits or files.
        """
        for path in sorted(self.results.glob("found-*.toml")):
            scenario = load_scenario(path)
            try:
                verdict = self.run(scenario, self.results / "cases" / f"past-{path.stem}")
            except Skipped:
                continue  # a past failure of a target that could do more than this one
            self.cycles += 1
            if verdict.ok:
                shutil.rmtree(verdict.folder, ignore_errors=True)
                continue
            key = _key(verdict)
            if key not in self.found:
                label = failure.label if (failure := failure_of(verdict)) else key
                self.found[key] = Found(
                    key, label, scenario, verdict, self._elapsed(), self.cycles, saved=path
                )

    def explore(self, tools: list[str]) -> None:
        """Explore in rounds until the budget ends: each round is one Hypothesis run that counts the
        failures of earlier rounds as passes, so it looks for new ones and shrinks each on its own."""
        self.retry_past_failures()
        while self._elapsed() < self.budget and self.cycles < self.max_examples:
            if self._enough():
                return
            self._known, self._new = set(self.found), False
            if not self._round(tools):
                return
            self.rounds += 1

    def _round(self, tools: list[str]) -> bool:
        """One Hypothesis run; False when the budget ended it."""
        test = given(scenarios(self.target, tools, self.space.faults))(self._cycle)
        test = settings(
            max_examples=max(1, self.max_examples - self.cycles),
            deadline=None,
            database=DirectoryBasedExampleDatabase(str(self.results / "hypothesis")),
            suppress_health_check=list(HealthCheck),
            report_multiple_bugs=True,
            phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink],
            print_blob=False,
            verbosity=Verbosity.quiet,
        )(test)
        if self.seed is not None:  # the first round is exactly --seed's; later ones derive from it
            test = hypothesis_seed(self.seed if not self.rounds else self.seed * 1000 + self.rounds)(test)
        try:
            with with_reporter(_silent):  # the engine's own notes ("add @seed(...)") are not chaos's output
                test()
        except BudgetSpent:
            return False  # the budget ran out with nothing new found
        except Exception as err:  # our findings, alone or grouped; anything else is chaos's own fault
            if not _only_findings(err):
                raise
        return self._elapsed() < self.budget

    def save(self, miner: Miner) -> list[Found]:
        """Write each distinct failure's smallest scenario, rerun it into its own folder, mine its prefix."""
        for found in self.found.values():
            if found.saved is not None:
                continue  # a past failure that still fails: it is written already
            stem = "found-" + kebab(f"{found.label.split(':')[0]}-{found.key}")[:60]
            path = self.results / f"{stem}.toml"
            scenario = replace(found.scenario, path=path, name=stem)
            write_scenario(scenario, path)
            run_folder = self.results / stem
            shutil.rmtree(run_folder, ignore_errors=True)
            rerun = self.run(scenario, run_folder)
            miner.mine(rerun)
            found.scenario, found.verdict, found.saved = scenario, rerun, path
        return list(self.found.values())


def _silent(value: object) -> None:
    """Hypothesis's reporter, muted: chaos says what it found, its seed and its scenario, in its words."""


def _key(verdict: Verdict) -> str:
    failure = failure_of(verdict)
    assert failure is not None
    return failure.key


def _only_findings(err: BaseException) -> bool:
    if isinstance(err, BaseExceptionGroup):
        return all(_only_findings(e) for e in err.exceptions)
    return isinstance(err, Finding)
