"""The crashes a sweep runs next: at the boundaries a clean run passed, and (depth 2, or the fault
matrix's cells) at those a recovery passed."""

from __future__ import annotations

from chaos.case.definition import Case
from chaos.case.matrix import cell, moment, request_kinds, retried_attempts, retried_step
from chaos.case.space import CaseSpace
from chaos.case.verdict import Verdict
from chaos.contract.reading import facts, reduced
from chaos.cycle.evidence import Evidence
from chaos.process.commits import newly_durable
from chaos.process.phase import Phase
from chaos.process.watch import durable_boundaries
from chaos.scenario.model import Boundary, Strike
from chaos.store import View
from chaos.sweep.settings import Settings


def phase_boundaries(phase: Phase) -> list[Boundary]:
    """Every boundary one phase passed, counted within that phase: the durable ones (facts of a session log
    up to any corruption, or each commit of a framework's store the tracer saw), then the in-flight ones
    (and each save its framework began)."""
    if phase.kept.view_after is not None:
        boundaries = [Boundary("commit", nth=k) for k in range(1, (phase.kept.commits or 0) + 1)]
        boundaries += [Boundary("write", nth=k) for k in range(1, phase.kept.writes + 1)]  # (on a server)
    else:
        committed = reduced(phase.kept.log_after).repaired_length
        start = phase.kept.committed_before
        boundaries = durable_boundaries(phase.kept.log_after[start:committed], with_header=start == 0)
    requests = phase.seen.requests[1] - phase.seen.requests[0]
    boundaries += [Boundary("model-request", {}, n) for n in range(1, requests + 1)]
    boundaries += [Boundary("model-stream", {}, n) for n in range(1, phase.seen.streams + 1)]
    saves: dict[str, int] = {}
    for kind in phase.seen.saves:  # (seen where the phase started warm: chaos's bootstrap counts them)
        saves[kind] = saves.get(kind, 0) + 1
        boundaries.append(Boundary("save", {"kind": kind}, saves[kind]))
    seen: dict[str, int] = {}
    for effect in phase.seen.effects:
        seen[effect] = seen.get(effect, 0) + 1
        for what in ("effect-running", "effect-done"):
            boundaries.append(Boundary(what, {"effect": effect}, seen[effect]))
    return boundaries


def store_moments(phase: Phase) -> list[Boundary]:
    """A store's commits named by what they made durable: each tool call and each output the phase added
    (``call-durable#k``, ``output-durable#k``), as a session log's ``toolUse`` and ``tool`` entries are:
    the matrix's kinds of write, and its moments between two calls. Each is also one of the phase's
    ``commit#n``, so a fault placed at every commit does not land there again."""
    after, before = phase.kept.view_after, phase.kept.view_before or View()
    if after is None:
        return []
    return [
        Boundary(what, {}, k)
        for what in ("call-durable", "output-durable")
        for k in range(1, newly_durable(Boundary(what), after, before) + 1)
    ]


def _kinds(evidence: Evidence, phase: Phase, boundaries: list[Boundary]) -> list[str]:
    """Each boundary's kind of moment (a model request's: first, retry or compaction)."""
    requests = request_kinds(
        evidence.requests, *phase.seen.requests, retried_attempts(facts(phase.kept.log_after))
    )
    return [
        moment(b, requests[b.nth - 1] if b.what == "model-request" and b.nth <= len(requests) else None)
        for b in boundaries
    ]


def _crashes(space: CaseSpace, case: Case, evidence: Evidence, phase: Phase, recovery: bool) -> list[Strike]:
    boundaries = phase_boundaries(phase) + (store_moments(phase) if space.matrix else [])
    return space.crashes(case.target, boundaries, _kinds(evidence, phase, boundaries), recovery)


def children(case: Case, verdict: Verdict, space: CaseSpace) -> list[Strike]:
    """The crashes to run next: at a clean run's boundaries, or at a crash case's first resume's (depth
    2, or the matrix's second crash in recovery)."""
    if case.as_written:
        return []
    evidence = verdict.evidence
    if case.crash is None:
        return _crashes(space, case, evidence, evidence.start, recovery=False)
    if case.then_crash is None and evidence.recoveries and space.deepens(case.crash, case.target):
        crashes = _crashes(space, case, evidence, evidence.recoveries[0], recovery=True)
        if space.matrix and retried_step(case.crash):
            return [c for c in crashes if c.boundary.what == "model-request"]
        return crashes
    return []


def cell_of(case: Case, evidence: Evidence) -> str:
    """The matrix cell a crash case covers (a fault at a kind of moment, first run or recovery); "" for a
    clean run."""
    crash = case.then_crash or case.crash
    if crash is None:
        return ""
    crashed = [p for p in evidence.phases if p.crash is not None]
    kind = crash.boundary.what
    if crashed and kind == "model-request":
        kind = _kinds(evidence, crashed[-1], [crash.boundary])[0]
    return cell(crash.fault_name, kind, case.then_crash is not None)


def child_cases(case: Case, crash: str, settings: Settings) -> list[Case]:
    """The case ``crash`` (as ``children`` named it) leads to from ``case``: a crash of the scenario as
    written, or (from a crash case) a second crash in its recovery. Outside the shard: none."""
    found = Strike.parse(crash)
    child = (
        Case(case.scenario, case.target, found)
        if case.crash is None
        else Case(case.scenario, case.target, case.crash, found)
    )
    return [child] if child.in_shard(settings.shard) else []


def spread(cases: list[Case]) -> list[Case]:
    """``cases`` by fault, in the order each fault first appears (each fault's cases in their own order).
    The faults at one boundary are the cases likeliest to leave one crash state; run apart, a later one
    finds the first one's recovery done and takes it (``chaos.cycle.share``) instead of waiting for it
    beside a worker left idle."""
    rank: dict[str, int] = {}
    for case in cases:
        rank.setdefault(_fault(case), len(rank))
    return sorted(cases, key=lambda case: rank[_fault(case)])


def _fault(case: Case) -> str:
    """The fault of the case's last crash (its second one, in a recovery, where it has one)."""
    strike = case.then_crash or case.crash
    return strike.fault_name if strike is not None else ""
