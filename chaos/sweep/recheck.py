"""``chaos recheck``: stored cases judged again by the current oracle and checks, without running an agent.

A checker fixed, an oracle changed, a contract amended: last night's results
can be judged again from the evidence they kept, and what changed said (a
finding now fixed, a pass that now fails, a failure that is now another).
Each case is re-judged from its folder (``chaos.case.reread``); its triage,
view and coverage are derived again as a sweep derives them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from chaos.case.reread import evidence_of
from chaos.case.result import CaseResult, read_journal
from chaos.case.verdict import Verdict
from chaos.check import check_all
from chaos.errors import UsageError
from chaos.report.html import view_of
from chaos.triage.coverage import rows_of
from chaos.triage.failure import failure_of, size


@dataclass
class Change:
    case: str
    before: str  # "ok", or the failure's label (and key)
    after: str

    def text(self) -> str:
        return f"{self.case}: {self.before} -> {self.after}"


@dataclass
class Rechecked:
    results: list[CaseResult] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # cases whose evidence was not kept, and why
    judged: int = 0  # cases judged again


def _said(result: CaseResult) -> str:
    if result.ok:
        return "ok"
    if result.failure is None:
        return "failed"
    return f"[{result.failure.key}] {result.failure.label}"


def stored_cases(paths: list[Path]) -> list[CaseResult]:
    """The case results under ``paths``: a sweep's or a merge's journal, or a single run's verdict."""
    found: dict[str, CaseResult] = {}
    for path in paths:
        if (path / "sweep.jsonl").is_file():
            found |= {r.case: r for r in read_journal(path / "sweep.jsonl")}
        elif (path / "verdict.json").is_file():
            _, stored = evidence_of(path)
            found[stored.case] = stored.with_(folder=str(path))
        else:
            raise UsageError(f"{path}: neither a sweep's results (sweep.jsonl) nor a run's (verdict.json)")
    return list(found.values())


def recheck(paths: list[Path]) -> Rechecked:
    out = Rechecked()
    for stored in stored_cases(paths):
        if stored.skipped:
            out.results.append(stored)
            continue
        try:
            evidence, _ = evidence_of(Path(stored.folder))
        except UsageError as err:
            out.missing.append(str(err))
            out.results.append(stored)
            continue
        checks = check_all(evidence) + [c for c in stored.checks if c.id == "oracle-agrees"]
        verdict = Verdict(evidence.scenario, evidence, checks, Path(stored.folder), stored.seconds)
        failure = failure_of(verdict)
        again = verdict.result().with_(
            case=stored.case,
            next=stored.next,
            reported=stored.reported,
            view=view_of(verdict),
            failure=failure.record() if failure else None,
            size=size(verdict),
            rows=rows_of(evidence),
            reproduce=stored.reproduce,
        )
        out.results.append(again)
        out.judged += 1
        if _said(again) != _said(stored):
            out.changes.append(Change(stored.case, _said(stored), _said(again)))
    return out
