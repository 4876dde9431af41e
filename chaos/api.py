"""The public API: build a scenario in code, ``run`` it against a target, ``sweep`` a folder, ``explore``
with generated scenarios, ``merge`` sharded results, ``check_target`` a new target file.

The command line and the pytest plugin are thin layers over these. Unusable
input raises ``UsageError`` (a ``SpecError`` for a bad file, naming its line
and field), an interruption ``Interrupted``, a failure of chaos itself
``InternalError``; a case that needs what the target does not declare raises
``Skipped`` from ``run`` and is reported as skipped by ``sweep``. A finding is
never an exception: a verdict or a summary says so.
"""

from __future__ import annotations

import difflib
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from chaos.bundled import scenario_names, scenario_path, scenarios_folder
from chaos.case.record import outputs_writable, slug, writable
from chaos.case.result import CaseResult, read_journal, reported
from chaos.case.run import run_case
from chaos.case.space import CaseSpace
from chaos.case.verdict import Verdict
from chaos.cycle.configuration import target_current, tool_names
from chaos.cycle.drive import Pause
from chaos.doctor.diagnosis import Diagnosis, diagnose
from chaos.doctor.probes import PROBES
from chaos.errors import Interrupted, Skipped, SpecError, UsageError
from chaos.explore.exploration import Exploration, Found
from chaos.extend import AfterCase, Judge
from chaos.fault import FAULTS
from chaos.mine.corpus import FixtureVerdict, NotACorpus, check_corpus
from chaos.mine.from_log import Inferred, NotReplayable, scenario_from_log
from chaos.mine.miner import Miner
from chaos.mine.oracles import OtherOracle
from chaos.mine.recording import Recording, record_session
from chaos.process.phase import ABORT
from chaos.report.console import render
from chaos.report.publish import publish
from chaos.report.summary import Summary
from chaos.report.text import printable
from chaos.scenario.files import load_scenario, scenario_files
from chaos.scenario.model import Boundary, Scenario, Strike, WorkspaceFile, files_problem
from chaos.scenario.target import Target, fault_unavailable, find_target, load_target, store_mismatch
from chaos.sweep.boundaries import phase_boundaries
from chaos.sweep.recheck import Change
from chaos.sweep.recheck import recheck as recheck_cases
from chaos.sweep.runner import Sweep, sweep_all
from chaos.sweep.settings import Settings
from chaos.triage.failure import failure_of
from chaos.triage.groups import read_baseline
from chaos.world.recorder import Upstream

ScenarioRef = Scenario | str | Path
TargetRef = Target | str | Path


def scenario_file(ref: str | Path) -> Path:
    """A scenario file by path, or a bundled scenario by name (``section8-read-replay``)."""
    path = Path(ref)
    if path.exists() or path.suffix == ".toml" or "/" in str(ref):
        return path
    bundled = scenario_path(str(ref))
    if bundled is None:
        names = scenario_names()
        close = difflib.get_close_matches(str(ref), names, n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(close)}?" if close else f"; the bundled ones: {', '.join(names)}"
        raise SpecError(f"{ref}: no such scenario file, and no bundled scenario of that name{hint}")
    return bundled


def load(ref: ScenarioRef) -> Scenario:
    return ref if isinstance(ref, Scenario) else load_scenario(scenario_file(ref))


def load_all(refs: Sequence[ScenarioRef]) -> list[Scenario]:
    """Every scenario ``refs`` name (files, folders, bundled names or Scenario objects), in order."""
    loaded: list[Scenario] = []
    for ref in refs:
        if isinstance(ref, Scenario):
            loaded.append(ref)
            continue
        loaded += [load_scenario(p) for p in scenario_files([scenario_file(ref)])]
    if not loaded:
        raise UsageError(f"no scenario files in {' '.join(map(str, refs))}")
    return loaded


def target_of(ref: TargetRef | None, scenario: Scenario | None = None, option: str = "--target") -> Target:
    """A target (a Target, a name or a spec path), or the scenario's own; errors name ``option``."""
    if isinstance(ref, Target):
        return ref
    name = str(ref) if ref is not None else scenario.target if scenario is not None else "reference"
    try:
        return load_target(find_target(name, scenario.path if scenario else None))
    except SpecError as err:
        where = option if ref is not None else f"{scenario.path if scenario else 'the scenario'}: target"
        raise SpecError(f"{where}: {err}") from None


def run(
    scenario: ScenarioRef,
    target: TargetRef | None = None,
    *,
    target_env: dict[str, str] | None = None,
    results: Path | None = None,
    timeout: float | None = None,
    pause: Pause | None = None,
    judges: Sequence[Judge] = (),
) -> Verdict:
    """One crash cycle of ``scenario`` against ``target`` (default: the scenario's own); its verdict.

    ``results`` is the case's folder (default ``results/runs/<scenario>-<boundary>-<time>``);
    ``pause`` and ``judges`` are extension points (``chaos.extend``).
    Raises ``Skipped`` when the scenario needs what the target does not declare, ``UsageError``
    when its script shows its crash can never be reached.
    """
    loaded = load(scenario)
    chosen = target_of(target, loaded)
    mismatch = store_mismatch(loaded, chosen, paused=pause is not None)
    if mismatch is not None:
        raise UsageError(f"{loaded.path or loaded.name}: {mismatch}")
    never = loaded.unreachable(own_effects=chosen.tools_in_code) if loaded.expect.must_reach else None
    if never is not None:
        raise UsageError(f"{loaded.path or loaded.name}: {never}; choose a boundary its script reaches")
    if results is not None:
        writable(results, "--results")
    ABORT.clear()  # an earlier interrupted run or sweep of this process does not stop this one
    return run_case(loaded, chosen, target_env or {}, results, timeout, pause, tuple(judges))


def case(
    scenario: ScenarioRef,
    target: TargetRef | None = None,
    *,
    target_env: dict[str, str] | None = None,
    results: Path | None = None,
) -> Verdict:
    """One case as a sweep runs it (the pytest plugin's items): ``run`` without its refusals, raising
    ``Skipped`` when the scenario's crash cannot land on the target or needs what it does not declare."""
    loaded = load(scenario)
    chosen = target_of(target, loaded)
    return run_case(loaded, chosen, target_env or {}, results)


def boundaries(
    scenario: ScenarioRef,
    target: TargetRef | None = None,
    *,
    target_env: dict[str, str] | None = None,
    results: Path | None = None,
) -> list[Boundary]:
    """Every boundary the scenario's uninterrupted run passes, what a sweep crashes at (its run is kept
    under ``results``); none when the target cannot run it (each case of it is skipped, with why)."""
    try:
        clean = case(load(scenario).with_crash(None), target, target_env=target_env, results=results)
    except Skipped:
        return []
    return phase_boundaries(clean.evidence.start)


def crashes_at(boundary: Boundary, faults: Sequence[str] = ("kill",)) -> list[Strike]:
    """A crash by each of ``faults`` that lands at ``boundary``."""
    return CaseSpace(faults=tuple(faults)).crashes_at(boundary)


def explain(verdict: Verdict) -> str:
    """A verdict in words, escaped: for a failing case its failure key and reproduce command first (a
    JUnit message keeps only its first lines), its failure and first failing check; then what ``chaos run``
    prints (every check, the reproduce command)."""
    found = failure_of(verdict)
    if found is None:
        return render(verdict)
    head = [
        f"[{found.key}] reproduce: {verdict.reproduce()}",
        found.label,
        f"here: {verdict.failed[0].text()}",
    ]
    return "\n".join(printable(line) for line in head) + "\n" + render(verdict)


def case_folder(results: Path, name: str) -> Path:
    """Where a named case of a run outside ``sweep`` keeps its record under ``results``."""
    return results / "cases" / slug(name, 150)


@dataclass
class SweepResult:
    results: Path
    summary: Summary
    mined: list[str] = field(default_factory=list)
    interrupted: bool = False

    @property
    def ok(self) -> bool:
        """No failure but the known ones (all failures, without a baseline), no decision-tree row a
        baseline's night faced left unfaced, and not interrupted."""
        return self.summary.ok and not self.interrupted


def check_target(ref: TargetRef, results: Path | None = None, timeout: float = 20.0) -> Diagnosis:
    """Run ``ref`` on the doctor's small worlds: is it usable by ``sweep``, and if not, why."""
    target = target_of(ref, PROBES[0], option="TARGET")
    folder = results or Path("results") / "target-check" / f"{target.name}-{time.strftime('%Y%m%d-%H%M%S')}"
    return diagnose(target, folder, timeout)


def current(ref: TargetRef, target_env: dict[str, str] | None = None) -> dict[str, Any]:
    """The planner's current configuration of a target, as its configuration command prints it."""
    return target_current(target_of(ref), target_env or {})


WORKSPACE_SKIP = (".tiny-agent", ".git", "__pycache__", "node_modules")
WORKSPACE_LIMIT = 256 * 1024  # bytes: a larger file is left out of a scenario written from a log


def workspace_files(folder: Path) -> dict[str, WorkspaceFile]:
    """The text files of a workspace as a scenario holds them (agent state, VCS folders, binaries and
    files over 256 KiB left out)."""
    if not folder.is_dir():
        raise UsageError(f"--workspace {folder}: not a folder")
    out = {}
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder)
        if any(part in WORKSPACE_SKIP for part in relative.parts) or not path.is_file() or path.is_symlink():
            continue
        if path.stat().st_size > WORKSPACE_LIMIT:
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        out[relative.as_posix()] = WorkspaceFile(text, executable=bool(path.stat().st_mode & 0o111))
    problem = files_problem(list(out))
    if problem:
        raise UsageError(f"--workspace {folder}: {problem}")
    return out


def from_log(
    log: Path, target: TargetRef | None = None, workspace: Path | None = None, name: str | None = None
) -> Inferred:
    """A scenario that replays the session log ``log`` (its last operation, crashed where the log ends),
    with what was inferred and what could not be; ``target``'s declarations are compared with the
    log's, ``workspace`` (a folder) gives the files as they are."""
    try:
        data = log.read_bytes()
    except OSError as err:
        raise UsageError(f"{log}: cannot read: {err.strerror}") from None
    chosen = target_of(target)
    files = workspace_files(workspace) if workspace is not None else None
    try:
        inferred = scenario_from_log(data, name or f"from-{log.stem}", current(chosen), files)
    except NotReplayable as err:
        raise UsageError(f"{log}: {err}") from None
    return replace(inferred, scenario=replace(inferred.scenario, target=chosen.name))


def record(
    prompt: str,
    upstream: str,
    target: TargetRef | None = None,
    *,
    target_env: dict[str, str] | None = None,
    workspace: Path | None = None,
    name: str = "recorded",
    results: Path | None = None,
    timeout: float = 300.0,
) -> Recording:
    """Run ``target`` once on ``prompt`` against a real provider (``upstream``, its base URL such as
    ``https://api.openai.com/v1``) through a recording proxy; the scenario replays its answers offline.
    Credentials (from ``target_env``) pass through to the provider and are never written."""
    if not upstream.startswith(("http://", "https://")):
        raise UsageError(
            f"--upstream {upstream!r}: give the provider's base URL, e.g. https://api.openai.com/v1"
        )
    folder = results or Path("results") / "record" / f"{name}-{time.strftime('%Y%m%d-%H%M%S')}"
    files = workspace_files(workspace) if workspace is not None else {}
    return record_session(
        prompt, target_of(target), target_env or {}, Upstream(upstream), files, folder, name, timeout
    )


@dataclass
class RecheckResult(SweepResult):
    changes: list[Change] = field(default_factory=list)  # cases whose verdict is not what it was
    missing: list[str] = field(default_factory=list)  # cases whose evidence was not kept (kept as stored)
    judged: int = 0  # cases judged again (none, with some kept as stored: nothing was checked)


def recheck(paths: Sequence[Path], out: Path | None = None, *, junit: Path | None = None) -> RecheckResult:
    """Judge stored results (a run's folder, a sweep's, a merge's) again with this chaos's oracle and
    checks, running nothing; write the summary and report under ``out`` and say what changed."""
    folder = out or Path("results") / "recheck" / time.strftime("%Y%m%d-%H%M%S")
    done = recheck_cases([Path(p) for p in paths])
    summary = publish(done.results, folder, 0.0, junit=junit, journal=True)
    return RecheckResult(folder, summary, changes=done.changes, missing=done.missing, judged=done.judged)


def check_fixtures(corpus: Path) -> list[FixtureVerdict]:
    """Every fixture of a corpus in the golden layout re-reduced and re-planned against its expectation."""
    try:
        return check_corpus(corpus)
    except NotACorpus as err:
        raise UsageError(str(err)) from None


def default_scenarios(target: TargetRef | None = None) -> list[Path]:
    """``./scenarios`` when there is one, else the bundled scenarios (the framework ones for a target
    judged on its store)."""
    local = Path("scenarios")
    own = target_of(target).default_scenarios if target is not None else None
    return [own or (local if local.is_dir() else scenarios_folder())]


def _settings(settings: Settings | None, options: dict[str, Any]) -> Settings:
    """One ``Settings`` value from keyword options: the case space's fields (faults, depth, budget,
    oracles, persistence) and the sweep's own (results, target_env, jobs, shard, ...)."""
    space_keys = {f.name for f in fields(CaseSpace)}
    try:
        chosen: dict[str, Any] = {k: v for k, v in options.items() if k in space_keys}
        chosen.update({k: tuple(chosen[k]) for k in ("faults", "oracles") if k in chosen})
        space = CaseSpace(**chosen)
        own = {k: v for k, v in options.items() if k not in space_keys}
        return replace(settings, **own) if settings else Settings(space=space, **own)
    except (TypeError, ValueError) as err:
        raise UsageError(f"sweep: {err}") from None


def sweep(
    scenarios: Sequence[ScenarioRef] = (),
    target: TargetRef | None = None,
    *,
    settings: Settings | None = None,
    mine: Path | None = None,
    junit: Path | None = None,
    baseline: Path | None = None,
    write_baseline: Path | None = None,
    judges: Sequence[Judge] = (),
    after: Sequence[AfterCase] = (),
    **options: Any,
) -> SweepResult:
    """Strike every scenario (files, folders, bundled names or Scenario objects) at every boundary.

    How it runs is one ``Settings`` value (``settings``, or as keyword ``options`` its fields and
    those of its ``CaseSpace``: ``faults`` (each applicable one at every boundary is a case; default
    ``("kill",)``), ``depth``, ``budget``, ``oracles``, ``persistence``, ``results``, ``jobs``,
    ``shard``, ``target_env``, ``keep_all``, ``resume``, ``timeout``). Writes ``summary.json``,
    ``sweep.jsonl`` and ``report.html`` (and ``junit``) under ``results``; ``mine`` saves new crash
    prefixes as fixtures; ``baseline`` marks known failures, which do not fail the sweep;
    ``write_baseline`` writes this sweep's failures as one; ``judges`` and ``after`` are extension
    points (``chaos.extend``). Raises ``UsageError`` when no case could run at all.
    """
    settings = _settings(settings, options)
    outputs_writable(settings.results, mine, junit, write_baseline)
    known = read_baseline(baseline) if baseline is not None else None
    loaded = load_all(list(scenarios) or default_scenarios(target))
    targets = {id(s): target_of(target, s) for s in loaded}
    for chosen in {t.path: t for t in targets.values()}.values():
        for name in settings.space.faults:
            unavailable = fault_unavailable(chosen, FAULTS[name])
            if unavailable is not None:
                raise UsageError(f"--fault {name}: {unavailable}")
    miner = Miner(mine) if mine is not None else None
    others: tuple[Judge, ...] = (*(OtherOracle(c) for c in settings.space.oracles), *judges)
    run = Sweep(settings, others, (*after, *((miner.mine,) if miner else ())))
    interrupted = False
    try:
        sweep_all(run, loaded, lambda s: targets[id(s)])
    except (KeyboardInterrupt, Interrupted):
        interrupted = True
    summary = publish(
        run.reported(),
        settings.results,
        time.monotonic() - run.started,
        not_run=run.not_run,
        baseline=known,
        junit=junit,
        save_baseline=write_baseline,
        interrupted=interrupted,
        starts=[str(choice) for choice in run.starts.choices.values()] + run.shares.said(),
    )
    if not run.results and not interrupted:
        budget = settings.space.budget
        raise UsageError(
            f"no case ran (budget {budget:g}s); give a budget that leaves time for at least one case"
            if budget is not None
            else "no case ran"
        )
    return SweepResult(settings.results, summary, miner.saved if miner else [], interrupted)


def _journal(folder: Path) -> list[CaseResult]:
    journal = folder / "sweep.jsonl"
    if not journal.exists():
        raise UsageError(f"{folder}: no sweep.jsonl here; give a --results folder of chaos sweep")
    return reported(read_journal(journal))


def merge(
    folders: Sequence[Path], out: Path, *, junit: Path | None = None, baseline: Path | None = None
) -> SweepResult:
    """Join the result folders of sharded sweeps into one: journal, summary, HTML report, JUnit."""
    results = {r.case: r for folder in folders for r in _journal(Path(folder))}
    values = list(results.values())
    known = read_baseline(baseline) if baseline is not None else None
    summary = publish(values, out, sum(r.seconds for r in values), baseline=known, junit=junit, journal=True)
    return SweepResult(out, summary)


def report(folder: Path, out: Path | None = None, *, baseline: Path | None = None) -> SweepResult:
    """Write a sweep's HTML report again (``out``, default ``folder/report.html``), from its journal."""
    from chaos.report.html import write_html
    from chaos.report.summary import summarize

    results = _journal(Path(folder))
    known = read_baseline(baseline) if baseline is not None else None
    summary = summarize(results, [], sum(r.seconds for r in results), known)
    write_html(out or Path(folder) / "report.html", summary)
    return SweepResult(Path(folder), summary)


@dataclass
class ExploreResult:
    found: list[Found]  # each distinct failure, shrunk, its scenario saved
    cycles: int  # crash cycles run
    seconds: float

    @property
    def ok(self) -> bool:
        return not self.found


EXPLORED = ("kill", "abort", "torn")  # what explore generates unless told: crashes, aborts, torn tails


def explore(
    target: TargetRef = "reference",
    *,
    target_env: dict[str, str] | None = None,
    results: Path = Path("results/explore"),
    budget: float = 120.0,
    faults: Sequence[str] = EXPLORED,
    persistence: str | None = None,
    seed: int | None = None,
    max_examples: int = 500,
    max_failures: int | None = None,
    shrink_budget: float | None = None,
) -> ExploreResult:
    """Generate worlds and crash plans with Hypothesis for ``budget`` seconds, drawing each crash's fault
    from ``faults`` (those the target can take); shrink each distinct failure to the smallest scenario
    that fails the same way and save it under ``results``. Raises ``UsageError`` when the budget ran
    no crash cycle."""
    found_target = target_of(target, option="--target")
    env = dict(target_env or {})
    try:
        space = CaseSpace(faults=tuple(faults), budget=budget, persistence=persistence)
    except ValueError as err:
        raise UsageError(f"explore: {err}") from None
    exploration = Exploration(
        found_target,
        env,
        results,
        space,
        seed=seed,
        max_examples=max_examples,
        shrink_budget=shrink_budget if shrink_budget is not None else min(budget, 60.0),
        max_failures=max_failures,
    )
    try:
        exploration.explore(tool_names(found_target, env))
        spent = time.monotonic() - exploration.started
        if not exploration.found:
            if exploration.cycles == 0:
                raise UsageError(f"--budget {budget:g}: no crash cycle ran; give a longer budget")
            return ExploreResult([], exploration.cycles, spent)
        found = exploration.save(Miner(results / "fixtures"))
    finally:
        exploration.starts.close()
    return ExploreResult(found, exploration.cycles, time.monotonic() - exploration.started)
