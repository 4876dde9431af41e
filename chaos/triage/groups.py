"""Distinct failures: failing cases grouped by failure key, each group with its smallest case, and a
baseline of known failures so a nightly run tells old failures from new ones.

Everything here reads case results (a verdict's record plus its failure key and size), so a sweep,
``chaos merge`` of several shards and ``chaos report`` group the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from chaos.case.result import CaseResult
from chaos.errors import UsageError

BASELINE_FORMAT = 2


@dataclass
class Group:
    key: str
    label: str
    check: str
    members: list[CaseResult] = field(default_factory=list)  # smallest first
    known: bool = False  # listed in the baseline

    @property
    def representative(self) -> CaseResult:
        return self.members[0]

    def to_json(self) -> dict[str, Any]:
        rep = self.representative
        return {
            "key": self.key,
            "label": self.label,
            "check": self.check,
            "known": self.known,
            "count": len(self.members),
            "representative": {"case": rep.case, "reproduce": rep.reproduce, "folder": rep.folder},
            "members": [m.case for m in self.members],
        }


def group(results: list[CaseResult], baseline: dict[str, str] | None = None) -> list[Group]:
    """The failing results grouped by failure key, most cases first; each group's members smallest first."""
    groups: dict[str, Group] = {}
    for result in results:
        failure = result.failure
        if result.ok or failure is None:
            continue
        found = groups.setdefault(failure.key, Group(failure.key, failure.label, failure.check))
        found.members.append(result)
    for found in groups.values():
        found.members.sort(key=lambda r: r.size or [0, 0, 0, r.case])
        found.known = baseline is not None and found.key in baseline
    return sorted(groups.values(), key=lambda g: (-len(g.members), g.key))


def fixed(groups: list[Group], baseline: dict[str, str] | None) -> dict[str, str]:
    """Known failures (in the baseline) that no case of this run showed."""
    seen = {g.key for g in groups}
    return {key: label for key, label in (baseline or {}).items() if key not in seen}


@dataclass(frozen=True)
class Baseline:
    """Known failures (key -> label), and the decision-tree rows a good night faced (None: not recorded)."""

    failures: dict[str, str]
    rows: list[str] | None = None
    cells: list[str] | None = None  # the fault matrix's cells it covered (None: not recorded)


def read_baseline(path: Path) -> Baseline:
    """A baseline: ``{"version": 2, "failures": [{"key": "F-...", "label": "..."}], "rows": [...]}``; a
    version 1 baseline (failures only) is read too."""
    try:
        data = orjson.loads(path.read_bytes())
        version = data.get("version")
        failures = {str(f["key"]): str(f.get("label", "")) for f in data["failures"]}
        rows = [str(r) for r in data["rows"]] if "rows" in data else None
        cells = [str(c) for c in data["cells"]] if "cells" in data else None
    except (OSError, orjson.JSONDecodeError, KeyError, TypeError, AttributeError) as err:
        raise UsageError(
            f"{path}: not a baseline ({err}); write one with chaos sweep --write-baseline FILE"
        ) from None
    if version not in (1, BASELINE_FORMAT):
        raise UsageError(
            f"{path}: a baseline of format {version}, this chaos reads formats 1 and {BASELINE_FORMAT}; "
            "write it again with chaos sweep --write-baseline FILE"
        )
    return Baseline(failures, rows, cells)


def write_baseline(path: Path, groups: list[Group], rows: list[str], cells: list[str]) -> None:
    failures = [{"key": g.key, "label": g.label, "cases": len(g.members)} for g in groups]
    document = {"version": BASELINE_FORMAT, "failures": failures, "rows": rows, "cells": cells}
    path.write_bytes(orjson.dumps(document, option=orjson.OPT_INDENT_2) + b"\n")
