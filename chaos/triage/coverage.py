"""What a night tested: the rows of the contract's decision tree its recoveries faced, which faults landed
at which kinds of boundary, and which boundaries a scenario declares that no run reached.

A nightly run that passes while testing less than it used to fails silently; coverage makes that as
visible as a new failure (a baseline keeps the rows, and a later run that no longer reaches one says so).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from chaos.case.matrix import RECOVERY
from chaos.case.result import CaseResult
from chaos.contract.planner import ROWS
from chaos.contract.reading import decision
from chaos.cycle.evidence import Evidence
from chaos.process.phase import Phase
from chaos.scenario.model import Strike


def _aborts(phase: Phase) -> list[bytes]:
    """The log as it stood at each abort a phase made durable itself: the agent then faced the abort's
    row of the tree in that process (it finished the abort without a resume)."""
    out, end = [], len(phase.kept.log_before)
    for line in phase.kept.log_after[end:].splitlines(keepends=True):
        end += len(line)
        if b'"abortRequested"' in line and line.endswith(b"\n"):
            out.append(phase.kept.log_after[:end])
    return out


def rows_of(ev: Evidence) -> list[str]:
    """The decision-tree rows the oracle took for the crash prefix, for each log a resume started from,
    and for each abort a phase made durable and finished itself: what the agent faced in this case."""
    logs = [ev.prefix] + [before for _, before, _ in ev.transitions()]
    logs += [log for phase in ev.phases for log in _aborts(phase)]
    rows = []
    for log in logs:
        made = decision(log, ev.current)
        if made is not None:
            rows.append(made.row)
    return list(dict.fromkeys(rows))


@dataclass
class Coverage:
    rows: dict[str, int] = field(default_factory=dict)  # row -> cases that faced it
    faults: dict[str, dict[str, int]] = field(default_factory=dict)  # fault -> boundary kind -> cases
    cells: dict[str, int] = field(default_factory=dict)  # the fault matrix's cells covered -> cases
    unreached: list[str] = field(default_factory=list)  # cases whose declared crash no run reached

    @property
    def missing(self) -> list[str]:
        return [row for row in ROWS if row not in self.rows]

    def lost(self, rows: list[str], cells: list[str] | None = None) -> list[str]:
        """Rows a baseline run faced, and cells of the fault matrix it covered, that this one did not."""
        return [row for row in rows if row not in self.rows] + [c for c in cells or () if c not in self.cells]

    def matrix(self) -> dict[str, tuple[list[str], list[str]]]:
        """The cells covered, by fault: the kinds of moment it landed at in a first run, and in a recovery."""
        out: dict[str, tuple[list[str], list[str]]] = {}
        for found in sorted(self.cells):
            fault, _, kind = found.partition(" at ")
            first, again = out.setdefault(fault, ([], []))
            if kind.endswith(RECOVERY):
                again.append(kind.removesuffix(RECOVERY))
            else:
                first.append(kind)
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "rows": {row: self.rows.get(row, 0) for row in ROWS},
            "missing": self.missing,
            "faults": self.faults,
            "cells": self.cells,
            "unreached": self.unreached,
        }


def coverage_of(results: list[CaseResult]) -> Coverage:
    found = Coverage()
    for result in results:
        if result.skipped:
            continue
        for row in result.rows:
            found.rows[row] = found.rows.get(row, 0) + 1
        start = result.start
        if result.crash is None or start is None:
            continue
        if not start.reached:
            found.unreached.append(result.case)
            continue
        if result.cell:
            found.cells[result.cell] = found.cells.get(result.cell, 0) + 1
        for crash in (Strike.parse(c) for c in (result.crash, result.then_crash) if c):
            by_kind = found.faults.setdefault(crash.fault_name, {})
            by_kind[crash.boundary.what] = by_kind.get(crash.boundary.what, 0) + 1
    return found
