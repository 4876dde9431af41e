"""The end of a sweep: counts, kill precision, the distinct failures, what was skipped and why.

Built from case results only (journal lines), so ``chaos merge`` and ``chaos
report`` rebuild it from the result folders of several CI shards. Written as
``summary.json`` (with a ``format``) and printed as a few lines a person reads.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from chaos.case.result import CaseResult
from chaos.contract.planner import ROWS
from chaos.report.text import printable
from chaos.scenario.model import Strike
from chaos.triage.coverage import Coverage, coverage_of
from chaos.triage.groups import Baseline, Group, fixed, group

FORMAT = 2  # of summary.json


@dataclass
class Summary:
    results: list[CaseResult]  # every case the run counts, skipped ones included
    groups: list[Group]
    fixed: dict[str, str]  # known failures (baseline key -> label) that no case showed
    seconds: float
    not_run: list[str] = field(default_factory=list)  # the budget ran out before these
    coverage: Coverage = field(default_factory=Coverage)
    lost: list[str] = field(
        default_factory=list
    )  # decision-tree rows the baseline's night faced, not this one
    interrupted: bool = False  # chaos was interrupted: ``not_run`` holds the cases it had not finished
    # how each target's processes started, and why; what a sweep that verified its crash states found
    starts: list[str] = field(default_factory=list)

    @property
    def ran(self) -> list[CaseResult]:
        return [r for r in self.results if not r.skipped]

    @property
    def skipped(self) -> list[CaseResult]:
        return [r for r in self.results if r.skipped]

    @property
    def findings(self) -> list[CaseResult]:
        return [r for r in self.ran if not r.ok]

    @property
    def new(self) -> int:
        return sum(1 for g in self.groups if not g.known)

    @property
    def ok(self) -> bool:
        """No failure but known ones, and no coverage lost against the baseline."""
        return not self.new and not self.lost

    def _started(self, paused: bool) -> list[CaseResult]:
        return [r for r in self.ran if r.crash and r.paused == paused and r.start and r.start.reached]

    @property
    def reached(self) -> int:
        return len(self._started(paused=False))

    @property
    def exact(self) -> int:
        return sum(1 for r in self._started(paused=False) if r.start and r.start.exact)

    @property
    def shared(self) -> int:
        """Cases that took the recovery of a case that left the same crash state first (``chaos.cycle.share``)."""
        return sum(1 for r in self.ran if r.shared_with)

    @property
    def orders(self) -> tuple[int, int]:
        """The overtaken fault's cases: the calls parked or saves held, and those overtaken meanwhile."""
        kinds = self.order_kinds.values()
        return sum(row["held"] for row in kinds), sum(row["overtaken"] for row in kinds)

    @property
    def order_kinds(self) -> dict[str, dict[str, int]]:
        """The overtaken fault's cases by where they held (an effect's end, or a save by its kind): how many
        held, how many overtaken, and how many of those broke the order their framework promises."""
        out: dict[str, dict[str, int]] = {}
        for r in self._started(paused=False):
            if r.start is None or r.start.overtaken is None or r.crash is None:
                continue
            boundary = Strike.parse(r.crash).boundary
            where = f"save[kind={boundary.where['kind']}]" if boundary.what == "save" else boundary.what
            row = out.setdefault(where, {"held": 0, "overtaken": 0, "broken": 0})
            row["held"] += 1
            row["overtaken"] += bool(r.start.overtaken)
            row["broken"] += bool(r.start.out_of_order)
        return out

    @property
    def paused(self) -> int:
        return len(self._started(paused=True))

    @property
    def paused_exact(self) -> int:
        return sum(1 for r in self._started(paused=True) if r.start and r.start.exact)

    def to_json(self) -> dict[str, Any]:
        crashes = [r for r in self.ran if r.crash and not r.paused]
        return {
            "format": FORMAT,
            "cases": len(self.ran),
            "findings": len(self.findings),
            "distinct": len(self.groups),
            "new": self.new,
            "groups": [g.to_json() for g in self.groups],
            "fixed": [{"key": k, "label": v} for k, v in self.fixed.items()],
            "skipped": [{"case": r.case, "reason": r.skipped} for r in self.skipped],
            "notRun": self.not_run,
            "interrupted": self.interrupted,
            "starts": self.starts,
            "crashes": len(crashes),
            "reached": self.reached,
            "exact": self.exact,
            "precision": round(self.exact / self.reached, 4) if self.reached else None,
            "paused": self.paused,  # paused writers (SIGSTOP): timed by polling, not counted as kills
            "pausedExact": self.paused_exact,
            "sharedRecoveries": self.shared,
            "orders": dict(zip(("parked", "overtaken"), self.orders, strict=True)),
            "orderKinds": self.order_kinds,
            "seconds": round(self.seconds, 2),
            "coverage": self.coverage.to_json() | {"lost": self.lost},
            "failures": [
                {
                    "case": r.case,
                    "group": r.failure.key if r.failure else None,
                    "failed": [c.to_json() for c in r.failed],
                    "reproduce": r.reproduce,
                    "folder": r.folder,
                }
                for r in self.findings
            ],
            "verdicts": [
                {
                    "case": r.case,
                    "scenario": r.scenario,
                    "crash": r.crash,
                    "thenCrash": r.then_crash,
                    "ok": r.ok,
                    "landed": r.landed,
                    "exact": r.exact,
                    "seconds": r.seconds,
                    "folder": r.folder,
                }
                for r in self.ran
            ],
        }


def summarize(
    results: list[CaseResult],
    not_run: list[str],
    seconds: float,
    baseline: Baseline | None = None,
    interrupted: bool = False,
    starts: list[str] | None = None,
) -> Summary:
    known = baseline.failures if baseline is not None else None
    groups = group(results, known)
    coverage = coverage_of(results)
    lost = coverage.lost(baseline.rows or [], baseline.cells) if baseline is not None else []
    found = fixed(groups, known)
    return Summary(results, groups, found, seconds, not_run, coverage, lost, interrupted, starts or [])


def write_summary(path: Path, summary: Summary) -> None:
    path.write_bytes(orjson.dumps(summary.to_json(), option=orjson.OPT_INDENT_2) + b"\n")


def render_summary(summary: Summary, mined: list[str] | None = None, mine: Path | None = None) -> str:
    """The end of a sweep: counts, then each distinct failure once, with its smallest case."""
    groups, findings, cases = summary.groups, len(summary.findings), len(summary.ran)
    marked = any(g.known for g in groups) or bool(summary.fixed)
    lines = [
        f"chaos sweep: {cases} case(s)"
        + (f" run and {len(summary.skipped)} skipped" if summary.skipped else "")
        + f", {findings} finding(s) in {summary.seconds:.1f}s",
        f"  {len(groups)} distinct failure(s) in {findings} failing case(s) of {cases}"
        + (f" ({summary.new} new)" if marked else ""),
        f"  kill precision: {summary.exact}/{summary.reached} crashes landed exactly at their boundary",
    ]
    parked, overtaken = summary.orders
    if parked:
        lines.append(
            f"  orders: {overtaken}/{parked} parked calls or held saves overtaken ("
            + ", ".join(
                f"{where} {row['overtaken']}/{row['held']}"
                + (f" ({row['broken']} breaking the order its framework promises)" if row["broken"] else "")
                for where, row in sorted(summary.order_kinds.items())
            )
            + "; overtaken: another commit made, or a save it must precede begun, while it was held; the rest: "
            "nothing else meanwhile, that order unreachable)"
        )
    if summary.paused:
        lines.append(
            f"  paused writers: {summary.paused_exact}/{summary.paused} paused exactly at their boundary "
            "(timed by polling)"
        )
    if summary.shared:
        lines.append(
            f"  crash states: {summary.shared} case(s) left the state an earlier case had left, and took its "
            "recovery (--crash-states every: each runs its own)"
        )
    lines += [f"  {line}" for line in summary.starts]
    if summary.not_run:
        why = "chaos was interrupted" if summary.interrupted else "the budget ran out"
        lines.append(f"  {len(summary.not_run)} case(s) not run: {why}")
    reasons: dict[str, int] = {}
    for result in summary.skipped:
        reasons[result.skipped] = reasons.get(result.skipped, 0) + 1
    for reason, count in sorted(reasons.items()):
        lines.append(f"  skipped {count} case(s): {reason}")
    covered = summary.coverage
    if any(r.start is None or r.start.store_after is None for r in summary.ran):  # a session log was judged
        lines.append(
            f"  decision tree: {len(covered.rows)}/{len(ROWS)} rows faced (by a recovery, or by an agent finishing its own abort)"
            + (f"; never: {', '.join(covered.missing)}" if covered.missing else "")
        )
    if summary.lost:
        lines.append(f"  ✗ coverage lost against the baseline: {', '.join(summary.lost)}")
    if covered.unreached:
        lines.append(
            f"  {len(covered.unreached)} declared crash(es) never reached: {', '.join(covered.unreached[:5])}"
        )
    faults = ", ".join(f"{name} {sum(kinds.values())}" for name, kinds in sorted(covered.faults.items()))
    if faults:
        lines.append(f"  faults landed: {faults}")
    if covered.cells:
        lines.append(f"  fault matrix: {len(covered.cells)} cell(s) covered (a fault at a kind of moment)")
        for fault, (first, again) in covered.matrix().items():
            where = ", ".join(first) + (f"; in recovery: {', '.join(again)}" if again else "")
            lines.append(f"    {fault}: {where}")
    if mined is not None:
        where = f" into {mine} (--mine none: off)" if mine is not None else ""
        lines.append(
            f"  mined {len(mined)} new fixture(s){where}" + (f": {', '.join(mined)}" if mined else "")
        )
    for number, found in enumerate(groups, 1):
        rep = found.representative
        mark = "known" if found.known else "✗ new" if marked else "✗"
        lines.append(f"  {mark} {number}. [{found.key}] {found.label}")
        lines.append(f"      smallest case: {rep.case}: {rep.failed[0].text()}")
        lines.append(f"      reproduce: {rep.reproduce}")
        if len(found.members) > 1:
            lines.append(f"      same failure, {len(found.members) - 1} more case(s)")
    for key, label in summary.fixed.items():
        lines.append(f"  fixed: [{key}] {label} (known, and no case failed this way)")
    return "\n".join(printable(line) for line in lines)
