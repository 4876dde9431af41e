"""``chaos explore``: Hypothesis generates worlds and crash plans, runs real crash cycles, shrinks failures.

A generated scenario is an ordinary ``Scenario`` (model script, workspace,
crash, optional crash during recovery, torn tail, SIGINT, configuration
change) whose expectations are derived from the oracle, so nobody writes its
expected outcome. Every example is a real cycle (real processes, real kills,
the same checks as ``chaos run``). Each failing check is its own exception
type, so Hypothesis shrinks a failure to the smallest scenario that fails *the
same check*; that scenario is written as a TOML file ``chaos run`` loads.
"""

from __future__ import annotations

import re
import shutil
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import orjson
from hypothesis import HealthCheck, Phase, given, reject, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st
from hypothesis.database import DirectoryBasedExampleDatabase
from hypothesis.errors import Unsatisfiable

from chaos.cycle import Verdict, run_case
from chaos.mine import Miner, kebab
from chaos.resume import target_current
from chaos.scenario import Configuration, Crash, Expect, Scenario, load_scenario, write_scenario
from chaos.target import Target
from chaos.watch import Boundary
from chaos.world import Turn, WorkspaceFile

DEPLOY = WorkspaceFile('#!/bin/bash\n$CHAOS_EFFECT deploy "$@"\n', executable=True)
FILES = {"README.md": WorkspaceFile("hello\n"), "deploy.sh": DEPLOY}
# Arguments that make sense in FILES for the reference agent's tools; other tools get {}.
ARGUMENTS = {
    "read": {"path": "README.md"},
    "bash": {"command": "./deploy.sh prod"},
    "write": {"path": "notes.txt", "content": "noted"},
    "edit": {"path": "README.md", "old": "hello", "new": "hi"},
}
# Kinds a crash aims at, weighted toward where recovery decides most (open attempts, pending tools).
DURABLE = (
    ("stepAttempt",) * 3 + ("toolStarted",) * 2 + ("entry:toolUse", "entry:tool", "entry:stop", "stepFailed")
)


def tool_names(target: Target, extra_env: dict[str, str]) -> list[str]:
    """The target's declared tools, as its configuration says (the strategies call only these)."""
    if target.configuration_command is None:
        return [t.name for t in target.tools]
    return [t["name"] for t in target_current(target, extra_env)["tools"]]


def _calls(tools: list[str]) -> st.SearchStrategy[dict[str, Any]]:
    known = [{"name": name, "arguments": ARGUMENTS.get(name, {})} for name in tools]
    odd = [{"name": "teleport", "arguments": {"to": "mars"}}, {"name": tools[0], "arguments": "{not json"}]
    return st.sampled_from(known + odd)


def _turn(tools: list[str]) -> st.SearchStrategy[Turn]:
    calls = st.builds(
        lambda c, finish: Turn(tool_calls=c, finish=finish),
        st.lists(_calls(tools), min_size=1, max_size=2),
        st.sampled_from([None, None, None, "length"]),
    )
    return st.one_of(
        calls,
        st.builds(lambda: Turn(text="All done.")),
        st.builds(lambda e: Turn(error=e), st.sampled_from([429, 500])),
        st.builds(lambda c: Turn(tool_calls=c.tool_calls, delay=0.05), calls),
    )


def _boundary() -> st.SearchStrategy[Boundary]:
    return st.one_of(
        st.builds(lambda n: Boundary("any", {}, n), st.integers(1, 14)),
        st.builds(lambda w, n: Boundary(w, {}, n), st.sampled_from(DURABLE), st.integers(1, 2)),
        st.builds(lambda n: Boundary("model-request", {}, n), st.integers(1, 3)),
        st.builds(
            lambda w: Boundary(w, {"effect": "deploy"}, 1), st.sampled_from(["effect-running", "effect-done"])
        ),
    )


def _crash() -> st.SearchStrategy[Crash]:
    return st.builds(
        lambda b, signal, torn: Crash(b, signal, torn and signal == "SIGKILL" and not b.in_flight),
        _boundary(),
        st.sampled_from(["SIGKILL"] * 5 + ["SIGINT"]),
        st.booleans(),
    )


CHANGES = [
    Configuration(),
    Configuration(model="scripted/another-model"),
    Configuration(environment_identity="another-machine"),
    Configuration(tools={"read": {"replay": "never"}}),
    Configuration(tools={"read": {"description": "Read a file (new wording)."}}),
]


def _then(crash: Crash) -> st.SearchStrategy[Crash | None]:
    """A second crash during recovery: none, the same kind again (a crash loop), or an early fact."""
    return st.one_of(
        st.none(),
        st.just(Crash(Boundary(crash.boundary.what, {}, 1))) if not crash.boundary.in_flight else st.none(),
        st.just(Crash(Boundary("stepAttempt", {}, 1))),
        st.builds(lambda n: Crash(Boundary("any", {}, n)), st.integers(1, 3)),
    )


def scenarios(target: Target, tools: list[str]) -> st.SearchStrategy[Scenario]:
    """Generated scenarios for ``target``: a script ending in a plain answer, one or two crashes, a change."""

    @st.composite
    def build(draw: st.DrawFn) -> Scenario:
        turns = draw(st.lists(_turn(tools), min_size=1, max_size=3))
        crash = draw(_crash())
        return Scenario(
            path=Path("generated.toml"),
            name="generated",
            description="generated by chaos explore",
            target=target.name,
            prompt="Work on the repository.",
            files=FILES,
            turns=[*turns, Turn(text="Finished.")],
            crash=crash,
            then_crash=draw(_then(crash)),
            start=Configuration(),
            change=draw(st.sampled_from(CHANGES)),
            expect=Expect(derived=True, must_reach=False),
        )

    return build()


def size(scenario: Scenario) -> int:
    """How big a scenario is, to report shrinking: turns, tool calls, crashes and changes."""
    calls = sum(len(t.tool_calls) for t in scenario.turns)
    crashes = (scenario.crash is not None) + (scenario.then_crash is not None)
    return len(scenario.turns) + calls + crashes + int(scenario.change.changes_anything)


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
    first_failure: float | None = None  # seconds until the first failing cycle
    cycles_to_failure: int | None = None
    failure: tuple[Scenario, Verdict] | None = None
    started: float = field(default_factory=time.monotonic)
    _errors: dict[str, type[AssertionError]] = field(default_factory=dict)
    _seen: dict[str, tuple[AssertionError, tuple[Scenario, Verdict]]] = field(default_factory=dict)

    def _finding(self, check: str) -> type[AssertionError]:
        """One exception type per failing check: Hypothesis keeps shrinking to that same check."""
        if check not in self._errors:
            name = "Finding_" + re.sub(r"\W+", "_", check)
            self._errors[check] = type(name, (AssertionError,), {})
        return self._errors[check]

    def _cycle(self, scenario: Scenario) -> None:
        elapsed = time.monotonic() - self.started
        key = repr(scenario)
        if key in self._seen:  # Hypothesis replays the minimal example: answer as before
            error, self.failure = self._seen[key]
            raise error
        if self.failure is None and elapsed > self.budget:
            reject()  # the budget is spent: generate nothing more
        if self.first_failure is not None and elapsed > self.first_failure + self.shrink_budget:
            return  # shrinking has had its time: the smallest failure so far stands
        folder = self.results / "cases" / f"{self.cycles:05d}"
        verdict = run_case(scenario, self.target, self.target_env, folder)
        self.cycles += 1
        failed = [c for c in verdict.checks if not c.ok]
        if not failed:
            shutil.rmtree(folder, ignore_errors=True)
            return
        if self.first_failure is None:
            self.first_failure, self.cycles_to_failure = time.monotonic() - self.started, self.cycles
        self.failure = (scenario, verdict)
        error = self._finding(failed[0].name)(failed[0].text())
        self._seen[key] = (error, self.failure)
        raise error

    def retry_past_failures(self) -> bool:
        """Rerun the scenarios earlier explorations wrote (``found-*.toml``) before generating anything.

        Hypothesis's own database does the same for unseeded runs; these files
        also cover seeded ones, and they are what a person commits or files.
        """
        for path in sorted(self.results.glob("found-*.toml")):
            scenario = load_scenario(path)
            folder = self.results / "cases" / f"past-{path.stem}"
            verdict = run_case(scenario, self.target, self.target_env, folder)
            self.cycles += 1
            if not verdict.ok:
                self.first_failure, self.cycles_to_failure = time.monotonic() - self.started, self.cycles
                self.failure = (scenario, verdict)
                return True
            shutil.rmtree(folder, ignore_errors=True)
        return False

    def run(self, tools: list[str]) -> None:
        if self.retry_past_failures():
            return
        test = given(scenarios(self.target, tools))(self._cycle)
        test = settings(
            max_examples=self.max_examples,
            deadline=None,
            database=DirectoryBasedExampleDatabase(str(self.results / "hypothesis")),
            suppress_health_check=list(HealthCheck),
            report_multiple_bugs=False,
            phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink],
            print_blob=False,
        )(test)
        if self.seed is not None:
            test = hypothesis_seed(self.seed)(test)
        try:
            test()
        except Unsatisfiable:
            pass  # the budget ran out before max_examples: nothing found
        except Exception:
            if self.failure is None:
                raise

    def save(self, miner: Miner) -> Path:
        """Write the minimal failing scenario, rerun it into its own folder, mine its prefix."""
        assert self.failure is not None
        scenario, verdict = self.failure
        if scenario.path.name.startswith("found-") and scenario.path.parent == self.results:
            return scenario.path  # a past failure that still fails: it is written already
        check = next(c for c in verdict.checks if not c.ok).name
        stem = "found-" + kebab(check)[:60]
        path = self.results / f"{stem}.toml"
        write_scenario(scenario, path)
        run_folder = self.results / stem
        shutil.rmtree(run_folder, ignore_errors=True)
        rerun = run_case(_at(scenario, path), self.target, self.target_env, run_folder)
        prefix = run_folder / "prefix.jsonl"
        current = run_folder / "current.json"
        if prefix.exists() and current.exists():
            miner.consider(
                prefix.read_bytes(), orjson.loads(current.read_bytes()), rerun, str(scenario.crash)
            )
        self.failure = (_at(scenario, path), rerun)
        return path


def _at(scenario: Scenario, path: Path) -> Scenario:
    return replace(scenario, path=path, name=path.stem)
