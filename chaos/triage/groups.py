"""Distinct failures: failing cases grouped by failure key, each group with its smallest case, and a
baseline of known failures so a nightly run tells old failures from new ones.

Everything here reads journal entries (a verdict's JSON plus its ``failure`` and ``size``), so a
sweep, ``chaos merge`` of several shards and ``chaos report`` group the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from chaos.errors import UsageError


@dataclass
class Group:
    key: str
    label: str
    check: str
    members: list[dict[str, Any]] = field(default_factory=list)  # smallest first
    known: bool = False  # listed in the baseline

    @property
    def representative(self) -> dict[str, Any]:
        return self.members[0]

    def to_json(self) -> dict[str, Any]:
        rep = self.representative
        return {
            "key": self.key,
            "label": self.label,
            "check": self.check,
            "known": self.known,
            "count": len(self.members),
            "representative": {"case": rep["case"], "reproduce": rep["reproduce"], "folder": rep["folder"]},
            "members": [m["case"] for m in self.members],
        }


def group(entries: list[dict[str, Any]], baseline: dict[str, str] | None = None) -> list[Group]:
    """The failing entries grouped by failure key, most cases first; each group's members smallest first."""
    groups: dict[str, Group] = {}
    for entry in entries:
        failure = entry.get("failure")
        if entry["ok"] or not failure:
            continue
        found = groups.setdefault(failure["key"], Group(failure["key"], failure["label"], failure["check"]))
        found.members.append(entry)
    for found in groups.values():
        found.members.sort(key=lambda e: e.get("size") or [0, 0, 0, e["case"]])
        found.known = baseline is not None and found.key in baseline
    return sorted(groups.values(), key=lambda g: (-len(g.members), g.key))


def fixed(groups: list[Group], baseline: dict[str, str] | None) -> dict[str, str]:
    """Known failures (in the baseline) that no case of this run showed."""
    seen = {g.key for g in groups}
    return {key: label for key, label in (baseline or {}).items() if key not in seen}


def read_baseline(path: Path) -> dict[str, str]:
    """A baseline: ``{"version": 1, "failures": [{"key": "F-...", "label": "..."}]}`` (key -> label)."""
    try:
        data = orjson.loads(path.read_bytes())
        return {str(f["key"]): str(f.get("label", "")) for f in data["failures"]}
    except (OSError, orjson.JSONDecodeError, KeyError, TypeError) as err:
        raise UsageError(
            f"{path}: not a baseline ({err}); write one with chaos sweep --write-baseline FILE"
        ) from None


def write_baseline(path: Path, groups: list[Group]) -> None:
    failures = [{"key": g.key, "label": g.label, "cases": len(g.members)} for g in groups]
    path.write_bytes(orjson.dumps({"version": 1, "failures": failures}, option=orjson.OPT_INDENT_2) + b"\n")
