"""``pytest --chaos scenarios/``: every scenario x boundary of a sweep as a pytest test item.

Like a sweep: one item for the clean run, one for the scenario's own crash
judged by its hand-written expectations (``as written``), and one per boundary
of the clean run with derived expectations.

So pytest's own machinery works on crash cases: ``-k`` selects boundaries,
``--lf`` reruns the last findings, pytest-xdist spreads them over workers and
``--junitxml`` reports them. Boundaries come from one clean run per scenario,
cached under the results folder by the scenario's, target's and environment's
content, so every xdist worker collects the same items without rerunning it.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from chaos import Boundary, Scenario, Skipped, Strike, Target, UsageError, api
from chaos.extend import FAULTS


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("chaos", "crash-injection cases from chaos scenarios")
    group.addoption(
        "--chaos", action="append", default=[], metavar="SCENARIO_OR_DIR", help="collect chaos cases"
    )
    group.addoption("--chaos-target", metavar="NAME", help="run every scenario against this target")
    group.addoption("--chaos-target-env", action="append", default=[], metavar="KEY=VALUE")
    group.addoption("--chaos-results", default="results/pytest", metavar="DIR")
    group.addoption(
        "--chaos-fault",
        action="append",
        default=[],
        choices=list(FAULTS),
        metavar="FAULT",
        help="at each boundary, an item per fault that lands there (repeatable; default kill)",
    )


def pytest_configure(config: pytest.Config) -> None:
    paths = config.getoption("chaos")
    if not paths:
        return
    if config.args_source == pytest.Config.ArgsSource.ARGS:
        config.args += paths
    else:
        config.args = list(paths)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    roots = [Path(p).resolve() for p in parent.config.getoption("chaos")]
    if file_path.suffix != ".toml" or not roots:
        return None
    resolved = file_path.resolve()
    if not any(resolved == root or root in resolved.parents for root in roots):
        return None
    return ChaosScenario.from_parent(parent, path=file_path)


def _env(config: pytest.Config) -> dict[str, str]:
    pairs = [item.partition("=") for item in config.getoption("chaos_target_env")]
    return {key: value for key, _, value in pairs}


class ChaosScenario(pytest.File):
    def _load(self) -> tuple[Scenario, Target]:
        try:
            scenario = api.load(self.path)
            target = api.target_of(self.config.getoption("chaos_target"), scenario)
        except UsageError as err:
            raise self.CollectError(str(err)) from None
        return scenario, target

    def collect(self) -> Iterator[pytest.Item]:
        scenario, target = self._load()
        yield ChaosCase.from_parent(self, name="no crash", crash=None)
        if scenario.crash is not None:
            yield ChaosCase.from_parent(self, name="as written", crash=scenario.crash, as_written=True)
        faults = tuple(self.config.getoption("chaos_fault") or ("kill",))
        for boundary in self._boundaries(scenario, target):
            for crash in api.crashes_at(boundary, faults):
                yield ChaosCase.from_parent(self, name=str(crash), crash=crash)

    def _boundaries(self, scenario: Scenario, target: Target) -> list[Boundary]:
        env = _env(self.config)
        key = hashlib.sha256(
            self.path.read_bytes() + target.path.read_bytes() + orjson.dumps(env, option=orjson.OPT_SORT_KEYS)
        ).hexdigest()[:16]
        results = Path(self.config.getoption("chaos_results"))
        cache = results / "boundaries" / f"{scenario.name}-{key}.json"
        if cache.exists():
            return [Boundary.parse(text) for text in orjson.loads(cache.read_bytes())]
        folder = results / "collect" / f"{scenario.name}-{key}"
        boundaries = api.boundaries(scenario, target, target_env=env, results=folder)  # none: all skipped
        cache.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(orjson.dumps([str(b) for b in boundaries]))
        os.replace(tmp, cache)
        return boundaries


class ChaosFinding(Exception):
    """A crash case whose checks did not all hold; the message names the failure key, the first failing
    check and the reproduce command (as ``chaos sweep --junit`` does), then chaos run's report."""


class ChaosCase(pytest.Item):
    def __init__(self, *, crash: Strike | None, as_written: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.crash, self.as_written = crash, as_written

    def runtest(self) -> None:
        assert isinstance(self.parent, ChaosScenario)
        scenario, target = self.parent._load()
        folder = api.case_folder(Path(self.config.getoption("chaos_results")), f"{scenario.name}-{self.name}")
        case = scenario if self.as_written else scenario.with_crash(self.crash)
        try:
            verdict = api.case(case, target, target_env=_env(self.config), results=folder)
        except Skipped as why:
            pytest.skip(str(why))
        if not verdict.ok:
            raise ChaosFinding(api.explain(verdict))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, ChaosFinding):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo, style))

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, f"chaos case {self.parent.name if self.parent else ''} @ {self.name}"
