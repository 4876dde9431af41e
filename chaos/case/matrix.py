"""The default sweep's fault matrix: every fault the target can take, at every kind of moment it applies to.

One fault per scenario (its own, as written) leaves bugs that only another fault at another moment shows
to a single case of hundreds, or to none. The matrix lands each fault where its kind of trouble happens
(each fault says where itself: ``Fault.matrix``): kill at every boundary, a power cut at every durable
one; a full disk, a failing fsync and a short write at the first write of each kind (header, run start,
attempt, answer, intent, result, terminal); an abort between two tool calls; each network fault at the
first request of each kind (a first attempt, a compaction). A second crash in recovery (depth 2)
lands a power cut at the first write of each kind the recovery made, the disk faults at its first
write (its plan's own: a retried attempt, a synthetic result, a replay, a finish), and each network fault
at its retried attempt's request (a run never retries a request itself: the contract makes a failed one
a ``stepFailed``, so a retry is recovery's), after a kill at the first boundary of each kind of the run
(each fault's ``in_recovery``).

A cell of the matrix is a fault at a kind of moment (``cell``); the summary prints the cells covered and a
baseline keeps them, so a night that covers less says so. Pure: boundaries and request kinds in, crashes out.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from typing import Any

from chaos.contract.kinds import kind_of
from chaos.fault import IN_FLIGHT, Fault
from chaos.scenario.model import Boundary, Strike

RECOVERY = " in recovery"  # a cell's suffix for a second crash in recovery
# an answer's calls are planned; a call's result is in (in a session log, or in a framework's store)
BETWEEN_CALLS = ("entry:toolUse", "entry:tool", "call-durable", "output-durable")
# a store's commit named by what it made durable (``chaos.sweep.boundaries.store_moments``): a kind of
# write of its own, and between two calls, but the same crash as one of the phase's ``commit#n``
STORE_MOMENTS = ("call-durable", "output-durable")


def request_kinds(
    requests: Sequence[dict[str, Any]], start: int, end: int, retried: Collection[str] = ()
) -> list[str]:
    """The kind of each model request ``requests[start:end]`` (one phase's): a compaction, a retry (an
    earlier request, in any phase, carried the same conversation, or it belongs to an attempt in
    ``retried``: a crash-unknown attempt's attempt 2, whose first may never have been sent) or a first
    attempt."""
    seen = {r["stepKey"] for r in requests[:start]}
    kinds = []
    for request in requests[start:end]:
        if request.get("compaction"):
            kinds.append("compaction request")
        elif request["stepKey"] in seen or request.get("attempt") in retried:
            kinds.append("retry request")
        else:
            kinds.append("first request")
        seen.add(request["stepKey"])
    return kinds


def retried_attempts(facts: Iterable[dict[str, Any]]) -> frozenset[str]:
    """The attempts among a log's ``facts`` that retry a crash-unknown one (``stepAttempt`` attempt 2)."""
    return frozenset(
        body["attemptId"]
        for kind, body in map(kind_of, facts)
        if kind == "stepAttempt" and body["attempt"] == 2
    )


def moment(boundary: Boundary, request_kind: str | None = None) -> str:
    """A boundary's kind of moment: the fact's kind, or a model request's kind."""
    if boundary.what == "model-request" and request_kind:
        return request_kind
    return boundary.what


def cell(fault: str, kind: str, recovery: bool) -> str:
    """A cell of the matrix, as the summary and a baseline name it."""
    return f"{fault} at {kind}" + (RECOVERY if recovery else "")


def _first_of_each(kinds: list[str], chosen: Iterable[int]) -> list[int]:
    firsts: dict[str, int] = {}
    for i in chosen:
        firsts.setdefault(kinds[i], i)
    return sorted(firsts.values())


def place(fault: Fault, boundaries: list[Boundary], kinds: list[str], recovery: bool) -> list[Boundary]:
    """Where the matrix lands ``fault`` among one phase's ``boundaries`` (``kinds[i]`` is the kind of
    moment of ``boundaries[i]``): the fault's own placement, in a first run or in a recovery."""
    where = fault.in_recovery if recovery else fault.matrix
    fits = [i for i, b in enumerate(boundaries) if fault.applies_to(b.what) is None]
    durable = [i for i in fits if boundaries[i].what not in IN_FLIGHT]
    if where in ("every", "durable"):  # (every commit is one already: none named by what it made durable)
        chosen = [
            i for i in (fits if where == "every" else durable) if boundaries[i].what not in STORE_MOMENTS
        ]
    elif where == "each-write":
        chosen = _first_of_each(kinds, durable)
    elif where == "first-write":
        chosen = durable[:1]
    elif where == "between-calls":
        chosen = [i for i in durable if boundaries[i].what in BETWEEN_CALLS]
    elif where == "each-request":
        chosen = _first_of_each(kinds, [i for i in fits if boundaries[i].what == "model-request"])
    elif where == "retry-request":
        chosen = [i for i in fits if kinds[i] == "retry request"][:1]
    else:
        chosen = []
    return [boundaries[i] for i in chosen]


def matrix_crashes(
    faults: Iterable[Fault], boundaries: list[Boundary], kinds: list[str], recovery: bool
) -> list[Strike]:
    """The matrix's crashes for one phase, boundary by boundary in the phase's order."""
    placed: dict[int, list[str]] = {id(b): [] for b in boundaries}
    for fault in faults:
        for boundary in place(fault, boundaries, kinds, recovery):
            placed[id(boundary)].append(fault.name)
    return [Strike(b, name) for b in boundaries for name in placed[id(b)]]


def deepens(crash: Strike, store: bool = False) -> bool:
    """The matrix crashes this case's recovery again: a kill at the first boundary of its kind (each kind
    of moment of the run once, not every boundary: depth 2 everywhere is ``--depth 2``). On a store,
    whose model attempts leave nothing durable (a session log's ``stepAttempt`` does), a kill at the
    first model request too: its recovery retries that step, and only that retry is crashed again
    (``retried_step``)."""
    if crash.fault_name != "kill" or crash.boundary.nth != 1:
        return False
    return crash.boundary.what not in IN_FLIGHT or (store and retried_step(crash))


def retried_step(crash: Strike) -> bool:
    """A kill while a model request was in flight: the recovery's crashes land at its retried request."""
    return crash.boundary.what == "model-request"
