"""One case end to end: scenario -> cycle -> checks -> other judges -> verdict, recorded once."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from chaos.case.record import Record, default_folder
from chaos.case.verdict import Verdict
from chaos.check import CATALOG, Check, check_all
from chaos.cycle.configuration import tool_names
from chaos.cycle.drive import Pause, drive_cycle, said_last
from chaos.cycle.evidence import Evidence, timed
from chaos.cycle.share import Shares
from chaos.errors import InternalError, Skipped, UsageError
from chaos.ledger import LedgerError
from chaos.process.phase import Phase
from chaos.process.warm import WarmStarts
from chaos.scenario.model import Scenario
from chaos.scenario.target import Target, store_mismatch, unmet
from chaos.store import store_named
from chaos.world.protocols import PROTOCOLS

# Another judge of the same evidence (``--oracle``): its checks join the verdict before it is saved.
Judge = Callable[[Evidence, Path], list[Check]]


def run_case(
    scenario: Scenario,
    target: Target,
    extra_env: dict[str, str] | None = None,
    folder: Path | None = None,
    timeout: float | None = None,
    pause: Pause | None = None,
    judges: tuple[Judge, ...] = (),
    clean: Evidence | None = None,
    warm: WarmStarts | None = None,
    share: Shares | None = None,
) -> Verdict:
    """Run one crash cycle and record it; the verdict says whether every check held.

    A framework agent's store is judged against the uninterrupted run of the same scenario: ``clean``
    (a sweep's clean run), else run here, into the case's ``clean`` folder. ``share``: a sweep's crash
    states (``chaos.cycle.share``): the case may take the recovery of a case that left its state first.
    Raises ``Skipped`` (before anything runs) when the scenario needs what the target does not declare."""
    unmet_need = store_mismatch(scenario, target) or unmet(
        scenario, target, lambda: tool_names(target, dict(extra_env or {}))
    )
    if unmet_need is not None:
        raise Skipped(unmet_need)
    if timeout is not None:
        scenario = replace(scenario, timeout=timeout)  # the scenario as used says so, for reproduce
    folder = folder or default_folder(scenario)
    record = Record(folder)
    record.clear()  # a reused folder: no earlier run's phase files stay beside this one's
    began = time.monotonic()
    try:
        evidence = drive_cycle(
            scenario, target, dict(extra_env or {}), folder, record.keep, pause, warm, share
        )
    except LedgerError as err:  # the agent wrote the ledger itself: what it holds cannot be trusted
        raise UsageError(f"{scenario.path or scenario.name}: {target.name}: {err}") from None
    unrun = could_not_run(evidence, folder)
    if unrun is not None:  # a setup to mend, not a finding against the agent
        raise UsageError(f"{scenario.path or scenario.name}: {unrun}")
    if not evidence.facts:
        blind = next(
            (
                v.blind
                for p in evidence.phases
                for v in (p.kept.view_before, p.kept.view_after)
                if v and v.blind
            ),
            None,
        )
        if blind is not None:  # what chaos cannot read gets no verdict
            raise UsageError(f"{scenario.path or scenario.name}: {target.name}'s store: {blind}")
        if clean is None:  # (a sweep's clean run was judged usable when it ran, here)
            there = folder if scenario.crash is None else folder / "clean"
            clean = (
                evidence if scenario.crash is None else clean_run(scenario, target, extra_env, there, warm)
            )
            unended = ended_undeclared(clean, there)
            if unended is not None:
                raise UsageError(f"{scenario.path or scenario.name}: {unended}")
        evidence.clean = clean
        idle = exercised_nothing(scenario, evidence.clean) or commits_unseen(evidence.clean)
        if idle is not None:
            raise UsageError(f"{scenario.path or scenario.name}: {idle}")
    with timed(evidence.timings, "record"):
        record.write_evidence(scenario, evidence)
    with timed(evidence.timings, "checks"):
        checks = check_all(evidence)
        for judge in judges:
            checks += judge(evidence, folder)
        if evidence.twin is not None:
            _agrees(scenario, evidence.twin, checks)
    verdict = Verdict(scenario, evidence, checks, folder, time.monotonic() - began)
    with timed(evidence.timings, "record"):
        record.write_verdict(verdict.result().to_json())
    return verdict


def _agrees(scenario: Scenario, twin: Evidence, checks: list[Check]) -> None:
    """Under ``--crash-states verify``: the case judged on the recovery it would have taken from the case
    that left its crash state first must be judged as on its own recovery, check by check."""
    shared = {(c.id, c.ok) for c in check_all(twin)}
    own = {(c.id, c.ok) for c in checks if c.id in CATALOG}
    if shared != own:
        differ = sorted({check for check, _ in shared ^ own})
        raise InternalError(
            f"{scenario.path or scenario.name} @ {scenario.crash}: judged on the recovery of "
            f"{twin.shared_from}, which left the same crash state, it is judged otherwise than on its own "
            f"({', '.join(differ)}): chaos shares recoveries it must not (run with --crash-states every, and "
            "report this)"
        )


def could_not_run(evidence: Evidence, folder: Path) -> str | None:
    """Why the agent could not run, or None: its first process ended by itself with a status the target's
    ``[exit]`` does not name (a traceback's 1, an import that failed), before the crash was reached (or in
    the uninterrupted run). Every check would report a symptom of that; the cause is a setup to mend."""
    start = evidence.start
    if (
        start.process.killed
        or start.process.timed_out
        or start.process.outcome is not None
        or start.landing.reached
        or start.process.frozen
    ):
        return None
    said = said_last(folder / f"{start.name}.stderr", 3)
    return (
        f"{evidence.target.name}'s {start.name} exited {start.process.returncode}, which its [exit] does not name, "
        "before any crash: it could not run (mend the setup, as chaos target check says)"
        + (f"; it said: {said}" if said else "")
    )


def ended_undeclared(clean: Evidence, folder: Path) -> str | None:
    """Why a framework agent's uninterrupted run cannot be what its crashed runs are judged against, or
    None: it ended with an exit status the target's ``[exit]`` does not name (a driver that refused its
    setup, exit 2; an agent that could not start). Every crashed run of it would differ from it for a
    reason that is no recovery's."""
    start = clean.start
    if start.process.killed or start.process.timed_out or start.process.outcome is not None:
        return None
    said = said_last(folder / f"{start.name}.stderr", 3)
    return (
        f"a crash is judged against the uninterrupted run, and its {start.name} exited {start.process.returncode}, "
        f"which [exit] of {clean.target.name} does not name (mend the setup, as chaos target check says, or "
        "name that status in [exit])" + (f"; it said: {said}" if said else "")
    )


def exercised_nothing(scenario: Scenario, clean: Evidence) -> str | None:
    """Why a framework agent's case tests nothing, or None: its script calls tools, and its uninterrupted
    run ran no effect (the agent has none of those tools, or its tools report nothing to the ledger), so
    no crash can fall between a call and its effect. A case that exercised nothing is not a pass."""
    scripted = sorted({c["name"] for turn in scenario.turns for c in turn.tool_calls})
    if not scripted or clean.effects():
        return None
    said = next((o.text for o in clean.view.outputs), None)
    offered = sorted({str(t["name"]) for t in _offered(clean)})
    return (
        f"the script calls {', '.join(scripted)}, and the uninterrupted run against {clean.target.name} ran no "
        "effect"
        + (f"; the agent offered the model {', '.join(offered) or 'no tool'}" if clean.requests else "")
        + (f" (the agent answered: {said[:200]!r})" if said else "")
        + ": the agent has no such tool, or its tools report no effect to chaos (chaos.ledger.effect(NAME, ..., "
        "call_id=...)); script the agent's own tools, or add that line to them"
    )


def commits_unseen(clean: Evidence) -> str | None:
    """Why no crash of a framework agent's case can land at a commit of its store, or None: its
    uninterrupted run left its store holding something, and the tracer, following every process, saw
    none of its commits (a SQLite database in a journal mode other than the one its adapter's commits are
    seen in, a ``[store] path`` naming another file). Every case would crash in flight only, and judge a
    store whose commits it never saw: not a pass."""
    phases = clean.phases
    seen = [p.kept.commits for p in phases]
    if None in seen or sum(c or 0 for c in seen) > 0:
        return None  # (None: untraced, the tracer unavailable; it says so where a commit is asked for)
    held = next((p.kept.view_after for p in reversed(phases) if p.kept.view_after and _grew(p)), None)
    spec = clean.target.store_spec
    if held is None:
        return (
            f"the uninterrupted run against {clean.target.name} left nothing chaos reads at [store] path = "
            f"{spec.path!r} (kind {spec.kind}), and no commit of it was seen: point [store] path at the file "
            "the agent writes (relative to the workspace)"
        )
    commit = store_named(spec.kind).commit
    how = {
        "sqlite": "as a SQLite database's WAL commit frames or the end of its rollback journal (journal_mode "
        "WAL, DELETE, TRUNCATE or PERSIST); in MEMORY or OFF mode no file shows a commit",
        "line": "as a write that ends a line of its file",
        "wire": "as the server's answer to a commit, on the world's relay",
    }.get(commit, f"as {commit}")
    return (
        f"the uninterrupted run against {clean.target.name} left {held.items} item(s) in its {spec.kind} "
        f"store at {spec.path!r}, and chaos saw none of its commits; it sees them {how}: put the store in "
        "that mode, or no crash can land at a commit and the case would judge a store it never saw commit"
    )


def _grew(phase: Phase) -> bool:
    """The phase left its store holding what it did not find there (a seeded store is no commit)."""
    before, after = phase.kept.view_before, phase.kept.view_after
    return after is not None and after.items > (before.items if before is not None else 0)


def _offered(clean: Evidence) -> list[dict[str, Any]]:
    """The tool definitions the agent's model requests declared, in any protocol."""
    return [
        tool
        for request in clean.requests
        if request.get("protocol") in PROTOCOLS
        for tool in PROTOCOLS[request["protocol"]].tools(request["body"])
    ]


def clean_run(
    scenario: Scenario,
    target: Target,
    extra_env: dict[str, str] | None,
    folder: Path,
    warm: WarmStarts | None = None,
) -> Evidence:
    """The scenario run without a crash: what a framework agent's resumed run must end like."""
    folder.mkdir(parents=True, exist_ok=True)
    return drive_cycle(scenario.with_crash(None), target, dict(extra_env or {}), folder, warm=warm)
