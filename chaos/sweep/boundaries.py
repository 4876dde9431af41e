"""The boundaries a sweep crashes at: every one a clean run passed, and (depth 2) every one a recovery passed."""

from __future__ import annotations

from chaos.case.definition import Case
from chaos.case.verdict import Verdict
from chaos.contract.reading import reduced
from chaos.process.phase import Phase
from chaos.process.watch import durable_boundaries
from chaos.scenario.model import Boundary
from chaos.sweep.settings import Settings


def phase_boundaries(phase: Phase) -> list[Boundary]:
    """Every boundary one phase passed, counted within that phase: the durable ones (facts of a session log
    up to any corruption, or each commit of a framework's store the tracer saw), then the in-flight ones."""
    if phase.view_after is not None:
        boundaries = [Boundary("commit", nth=k) for k in range(1, (phase.commits or 0) + 1)]
    else:
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


def children(case: Case, verdict: Verdict, depth: int) -> list[Boundary]:
    """The boundaries to crash at next: a clean run's, or (depth 2) a crash case's first resume's."""
    if case.as_written:
        return []
    evidence = verdict.evidence
    if case.crash is None:
        return phase_boundaries(evidence.start)
    if depth >= 2 and case.then_crash is None and evidence.recoveries:
        return phase_boundaries(evidence.recoveries[0])
    return []


def child_cases(case: Case, boundary: str, settings: Settings) -> list[Case]:
    """The cases at ``boundary`` of ``case``'s clean run (or, depth 2, of its first recovery): one per
    fault of the space that can land there, on the scenario as written (power cuts during recovery too)."""
    crashes = settings.space.crashes_at(Boundary.parse(boundary))
    if case.crash is None:
        return [Case(case.scenario, case.target, crash) for crash in crashes]
    return [Case(case.scenario, case.target, case.crash, crash) for crash in crashes]
