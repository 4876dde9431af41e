"""``chaos explore``: Hypothesis generates worlds and crash plans, runs real crash cycles, shrinks failures.

Every example is a real cycle (real processes, real kills, the same checks as
``chaos run``). Each distinct failure has its own exception type, so
Hypothesis keeps exploring after the first one and shrinks each to the
smallest scenario that fails *the same way*; each is written as a TOML file
``chaos run`` loads.

The budget is kept without ever giving one example two answers (Hypothesis
replays examples, and calls an example that changes its answer flaky): every
distinct scenario runs at most once and its answer is remembered. The clock
only decides whether a *new* example runs. Before the budget ends, all do.
After it, with nothing found, ``BudgetSpent`` stops Hypothesis outright (it is
not an ``Exception``, so Hypothesis does not take it for a test outcome).
With failures found, new examples keep running for the shrink budget, then
are answered as passing, which lets Hypothesis finish at once with the
smallest failures it has. So a run ends within budget + one crash cycle +
shrink budget, plus one confirming rerun per distinct failure it saves.
"""

from __future__ import annotations

import re
import shutil
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis.database import DirectoryBasedExampleDatabase

from chaos.case.run import run_case
from chaos.case.verdict import Verdict
from chaos.explore.strategies import scenarios, size
from chaos.mine.miner import Miner, kebab
from chaos.scenario.files import load_scenario, write_scenario
from chaos.scenario.model import Scenario
from chaos.scenario.target import Target


class BudgetSpent(BaseException):
    """Generation time is over and nothing failed: stop Hypothesis (not an outcome of the example)."""


class Finding(AssertionError):
    """A generated scenario failed; each failure key gets its own subclass."""


def failure_key(verdict: Verdict) -> str:
    """What makes two failures the same one: the first failing check."""
    return verdict.failed[0].id


@dataclass
class Found:
    """One distinct failure: the smallest scenario seen failing that way, and its verdict."""

    key: str
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
    budget: float = 60.0
    seed: int | None = None
    max_examples: int = 200
    shrink_budget: float = 60.0
    cycles: int = 0
    found: dict[str, Found] = field(default_factory=dict)
    started: float = field(default_factory=time.monotonic)
    _types: dict[str, type[Finding]] = field(default_factory=dict)
    # repr(scenario) -> its answer: None (passed), or the failure key, its error and the verdict
    _answers: dict[str, tuple[str, Finding, Verdict] | None] = field(default_factory=dict)

    def _elapsed(self) -> float:
        return time.monotonic() - self.started

    def _error(self, key: str, verdict: Verdict) -> Finding:
        if key not in self._types:
            self._types[key] = type("Finding_" + re.sub(r"\W+", "_", key), (Finding,), {})
        return self._types[key](verdict.failed[0].text())

    def _record(self, key: str, scenario: Scenario, verdict: Verdict) -> None:
        best = self.found.get(key)
        if best is None:
            self.found[key] = Found(key, scenario, verdict, self._elapsed(), self.cycles)
        elif size(scenario) <= size(best.scenario):
            best.scenario, best.verdict = scenario, verdict

    def _cycle(self, scenario: Scenario) -> None:
        known = repr(scenario)
        if known in self._answers:  # Hypothesis replays examples: the same answer, always
            answer = self._answers[known]
            if answer is None:
                return
            key, error, verdict = answer
            self._record(key, scenario, verdict)
            raise error
        elapsed = self._elapsed()
        if elapsed > self.budget and not self.found:
            raise BudgetSpent()
        if elapsed > self.budget + self.shrink_budget:
            self._answers[known] = None  # shrinking has had its time: nothing new runs
            return
        verdict = run_case(
            scenario, self.target, self.target_env, self.results / "cases" / f"{self.cycles:05d}"
        )
        self.cycles += 1
        if verdict.ok:
            shutil.rmtree(verdict.folder, ignore_errors=True)
            self._answers[known] = None
            return
        key = failure_key(verdict)
        self._record(key, scenario, verdict)
        error = self._error(key, verdict)
        self._answers[known] = (key, error, verdict)
        raise error

    def retry_past_failures(self) -> None:
        """Rerun the scenarios earlier explorations wrote (``found-*.toml``) before generating anything.

        Hypothesis's own database does the same for unseeded runs; these files
        also cover seeded ones, and they are what a person commits or files.
        """
        for path in sorted(self.results.glob("found-*.toml")):
            scenario = load_scenario(path)
            verdict = run_case(
                scenario, self.target, self.target_env, self.results / "cases" / f"past-{path.stem}"
            )
            self.cycles += 1
            if verdict.ok:
                shutil.rmtree(verdict.folder, ignore_errors=True)
                continue
            key = failure_key(verdict)
            if key not in self.found:
                self.found[key] = Found(key, scenario, verdict, self._elapsed(), self.cycles, saved=path)

    def run(self, tools: list[str]) -> None:
        self.retry_past_failures()
        test = given(scenarios(self.target, tools))(self._cycle)
        test = settings(
            max_examples=self.max_examples,
            deadline=None,
            database=DirectoryBasedExampleDatabase(str(self.results / "hypothesis")),
            suppress_health_check=list(HealthCheck),
            report_multiple_bugs=True,
            phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink],
            print_blob=False,
        )(test)
        if self.seed is not None:
            test = hypothesis_seed(self.seed)(test)
        try:
            test()
        except BudgetSpent:
            pass  # the budget ran out with nothing found
        except Exception as err:  # our findings, alone or grouped; anything else is chaos's own fault
            if not _only_findings(err):
                raise

    def save(self, miner: Miner) -> list[Found]:
        """Write each distinct failure's smallest scenario, rerun it into its own folder, mine its prefix."""
        for found in self.found.values():
            if found.saved is not None:
                continue  # a past failure that still fails: it is written already
            stem = "found-" + kebab(found.key)[:60]
            path = self.results / f"{stem}.toml"
            scenario = replace(found.scenario, path=path, name=stem)
            write_scenario(scenario, path)
            run_folder = self.results / stem
            shutil.rmtree(run_folder, ignore_errors=True)
            rerun = run_case(scenario, self.target, self.target_env, run_folder)
            miner.mine(rerun)
            found.scenario, found.verdict, found.saved = scenario, rerun, path
        return list(self.found.values())


def _only_findings(err: BaseException) -> bool:
    if isinstance(err, BaseExceptionGroup):
        return all(_only_findings(e) for e in err.exceptions)
    return isinstance(err, Finding)
