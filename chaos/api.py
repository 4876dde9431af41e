"""The public API: build a scenario in code, ``run`` it against a target, ``sweep`` a folder.

The command line and the pytest plugin are thin layers over these two.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chaos.bundled import scenario_path, scenarios_folder
from chaos.case.run import run_case
from chaos.case.verdict import Verdict
from chaos.cycle.cycle import Pause
from chaos.doctor.doctor import PROBES, Diagnosis, diagnose
from chaos.errors import Interrupted, SpecError, UsageError
from chaos.mine.miner import Miner
from chaos.mine.oracles import OtherOracle
from chaos.report.outputs import summarize, write_html, write_junit, write_summary
from chaos.scenario.files import load_scenario, scenario_files
from chaos.scenario.model import Scenario
from chaos.scenario.target import Target, find_target, load_target
from chaos.sweep.sweep import Sweep, run_sweep
from chaos.triage.groups import group, read_baseline
from chaos.triage.groups import write_baseline as save_baseline

ScenarioRef = Scenario | str | Path
TargetRef = Target | str | Path


def scenario_file(ref: str | Path) -> Path:
    """A scenario file by path, or a bundled scenario by name (``section8-read-replay``)."""
    path = Path(ref)
    if path.exists() or path.suffix == ".toml" or "/" in str(ref):
        return path
    bundled = scenario_path(str(ref))
    if bundled is None:
        raise SpecError(f"{ref}: no such scenario file, and no bundled scenario of that name")
    return bundled


def load(ref: ScenarioRef) -> Scenario:
    return ref if isinstance(ref, Scenario) else load_scenario(scenario_file(ref))


def target_of(ref: TargetRef | None, scenario: Scenario) -> Target:
    """``--target`` (a Target, a name or a spec path), or the scenario's own target."""
    if isinstance(ref, Target):
        return ref
    name = str(ref) if ref is not None else scenario.target
    try:
        return load_target(find_target(name, scenario.path))
    except SpecError as err:
        where = "--target" if ref is not None else f"{scenario.path or 'the scenario'}: target"
        raise SpecError(f"{where}: {err}") from None


def run(
    scenario: ScenarioRef,
    target: TargetRef | None = None,
    *,
    target_env: dict[str, str] | None = None,
    results: Path | None = None,
    timeout: float | None = None,
    pause: Pause | None = None,
) -> Verdict:
    """One crash cycle of ``scenario`` against ``target`` (default: the scenario's own); its verdict.

    ``results`` is the case's folder (default ``results/runs/<scenario>-<boundary>-<time>``).
    Raises ``UsageError`` for unusable input, ``Interrupted`` when stopped, ``ChaosFault``
    when chaos itself fails; a finding is never an exception: ``verdict.ok`` is False.
    """
    loaded = load(scenario)
    return run_case(loaded, target_of(target, loaded), target_env or {}, results, timeout, pause)


@dataclass
class SweepResult:
    results: Path
    summary: dict[str, Any]  # counts, precision, "groups" (the distinct failures), "fixed", every verdict
    entries: list[dict[str, Any]]
    mined: list[str] = field(default_factory=list)
    interrupted: bool = False

    @property
    def ok(self) -> bool:
        """No failure but the known ones (all failures, without a baseline), and not interrupted."""
        return not self.summary["new"] and not self.interrupted


def check_target(ref: TargetRef, results: Path | None = None, timeout: float = 20.0) -> Diagnosis:
    """Run ``ref`` on the doctor's two small worlds: is it usable by ``sweep``, and if not, why."""
    target = target_of(ref, PROBES[0])
    folder = results or Path("results") / "target-check" / f"{target.name}-{time.strftime('%Y%m%d-%H%M%S')}"
    return diagnose(target, folder, timeout)


def default_scenarios() -> list[Path]:
    """``./scenarios`` when there is one, else the bundled scenarios."""
    local = Path("scenarios")
    return [local if local.is_dir() else scenarios_folder()]


def sweep(
    scenarios: Sequence[ScenarioRef] = (),
    target: TargetRef | None = None,
    *,
    results: Path = Path("results/sweep"),
    jobs: int = 1,
    depth: int = 1,
    budget: float | None = None,
    shard: tuple[int, int] = (1, 1),
    target_env: dict[str, str] | None = None,
    keep_all: bool = False,
    resume: bool = False,
    timeout: float | None = None,
    mine: Path | None = None,
    oracles: Sequence[str] = (),
    junit: Path | None = None,
    baseline: Path | None = None,
    write_baseline: Path | None = None,
    power_loss: bool = False,
    two_writers: bool = False,
) -> SweepResult:
    """Crash every scenario (files, folders, bundled names or Scenario objects) at every boundary.

    Writes ``summary.json``, ``sweep.jsonl``, ``report.html`` (and ``junit`` when given) under
    ``results``; raises ``UsageError`` when no case could run at all. ``power_loss``: every crash
    case is a power loss (the log cut back to what the agent synced); ``two_writers``: every durable
    crash case pauses the writer (SIGSTOP) while a second process resumes. ``baseline``: failures
    listed there (by key) are known and do not make the sweep fail; ``write_baseline``: write this
    sweep's failures as a baseline.
    """
    known = read_baseline(baseline) if baseline is not None else None
    loaded: list[Scenario] = []
    refs = list(scenarios) or default_scenarios()
    for ref in refs:
        if isinstance(ref, Scenario):
            loaded.append(ref)
            continue
        path = scenario_file(ref)
        loaded += [load_scenario(p) for p in scenario_files([path])]
    if not loaded:
        raise UsageError(f"no scenario files in {' '.join(map(str, refs))}")
    targets = {id(s): target_of(target, s) for s in loaded}
    run = Sweep(results, dict(target_env or {}), jobs, depth, budget, shard, keep_all, resume, timeout)
    run.power_loss, run.two_writers = power_loss, two_writers
    run.hooks = tuple(OtherOracle(command) for command in oracles)
    miner = Miner(mine) if mine is not None else None
    if miner is not None:
        run.after.append(miner.mine)
    interrupted = False
    try:
        run_sweep(run, loaded, lambda s: targets[id(s)])
    except (KeyboardInterrupt, Interrupted):
        interrupted = True
    entries = run.reported()
    summary = summarize(entries, run.skipped, time.monotonic() - run.started, known)
    write_summary(results / "summary.json", summary)
    if junit is not None:
        write_junit(junit, entries, baseline=known)
    write_html(results / "report.html", entries, baseline=known)
    if write_baseline is not None:
        save_baseline(write_baseline, group(entries))
    if not run.verdicts and not interrupted:
        raise UsageError(
            f"no case ran (budget {budget:g}s); give a budget that leaves time for at least one case"
            if budget is not None
            else "no case ran"
        )
    return SweepResult(results, summary, entries, miner.saved if miner else [], interrupted)
