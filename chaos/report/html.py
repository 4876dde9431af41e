"""The HTML report: one self-contained file (no network, no CDN) a person opens after a nightly run.

The distinct failures first, then a scenario x boundary matrix coloured by
verdict (each failing cell numbered by its failure, skipped cells grey with
their reason), then every case: the crash prefix's timeline with the kill
point, what recovery appended, the checks, the reproduce command. Every text
taken from a log or a scenario is escaped.
"""

from __future__ import annotations

from html import escape
from pathlib import Path

from chaos.case.result import CaseResult, CaseView
from chaos.case.verdict import Verdict
from chaos.contract.planner import ROWS
from chaos.report.show import diff, diff_row, render, timeline
from chaos.report.summary import Summary
from chaos.report.text import printable
from chaos.store import View
from chaos.triage.groups import Group

CSS = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em; color: #222; }
table.matrix { border-collapse: collapse; margin: 1em 0; }
table.matrix th, table.matrix td { border: 1px solid #ccc; padding: 2px 4px; }
table.matrix thead th { writing-mode: vertical-rl; transform: rotate(180deg); font-weight: normal; font-size: 12px; }
td.cell { width: 18px; height: 18px; text-align: center; }
td.cell a { display: block; color: inherit; text-decoration: none; }
td.pass { background: #bfe5bf; } td.fail { background: #f4a3a3; font-weight: bold; } td.empty { background: #f6f6f6; }
td.skip { background: #ddd; color: #666; }
section.case { border-top: 1px solid #ddd; margin-top: 1.5em; }
section.fail h2 { color: #b00; }
pre { background: #f7f7f7; padding: .5em; overflow-x: auto; font-size: 12px; }
section.group { border-left: 4px solid #b00; padding-left: .8em; margin: 1em 0; }
section.group.known { border-color: #c90; } span.status { font-size: 12px; color: #666; }
li.ok { color: #276627; } li.fail { color: #b00; font-weight: bold; } li.unjudged { color: #777; }
.kill { color: #b00; font-weight: bold; }
tr.missing td { color: #b00; } p.lost { color: #b00; font-weight: bold; }
"""
KILL = "── kill landed here ──"


def view_of(verdict: Verdict) -> CaseView:
    """What the report shows of a case: the crash prefix's timeline with the kill point, and what
    recovery appended (rendered from the evidence in memory, kept in the journal)."""
    evidence = verdict.evidence
    if not evidence.facts:  # a framework's store: what its adapter reads of the crash copy, and at the end
        held = (evidence.start.kept.view_after or View()).lines()
        text = "\n".join([*held, *([KILL] if verdict.scenario.crash else [])])
        kept = set(held)
        added = [f"+ {line}" for line in evidence.view.lines() if line not in kept]
        return CaseView(text, added if evidence.resumes else None)
    tl = timeline(evidence.prefix, evidence.current)
    last = tl.rows[-1].line if tl.rows else None
    text = render(tl, mark=last if verdict.scenario.crash else None)
    if not evidence.resumes:
        return CaseView(text)
    return CaseView(text, [printable(diff_row("+", r)) for r in diff(evidence.prefix, evidence.final).added])


def _html(text: str) -> str:
    return escape(printable(text))


def _case_html(index: int, result: CaseResult) -> str:
    state = "skip" if result.skipped else "ok" if result.ok else "fail"
    parts = [
        f'<section class="case {state}" id="case-{index}">',
        f"<h2>{_html(result.case)}</h2>",
    ]
    if result.skipped:
        return "\n".join([*parts, f"<p>skipped: {_html(result.skipped)}</p>"]) + "</section>"
    parts.append(f"<p>crash: {_html(result.crash or 'none')}; landed: {_html(result.landed)}</p>")
    if result.view is not None:
        text = "\n".join(_html(line) for line in result.view.timeline.split("\n"))
        text = text.replace(KILL, f'<span class="kill">{KILL}</span>')
        parts += ["<h3>crash prefix</h3>", f'<pre class="timeline">{text}</pre>']
        if result.view.appended is not None:
            rows = "\n".join(_html(row) for row in result.view.appended)
            parts += ["<h3>appended by recovery</h3>", f'<pre class="appended">{rows or "nothing"}</pre>']
    items = [
        f'<li class="{"unjudged" if c.unjudged else "ok" if c.ok else "fail"}">{c.mark} {_html(c.text())}</li>'
        for c in sorted(result.checks, key=lambda c: c.ok)  # failures first
    ]
    parts += [
        f'<ul class="checks">{"".join(items)}</ul>',
        f"<p>reproduce: <code>{_html(result.reproduce)}</code></p>",
    ]
    return "\n".join(parts) + "</section>"


def _groups_html(groups: list[Group], index: dict[str, int]) -> str:
    if not groups:
        return ""
    parts = [f"<h2>{len(groups)} distinct failure(s)</h2>"]
    for number, found in enumerate(groups, 1):
        rep = found.representative
        status = "known" if found.known else "new"
        parts += [
            f'<section class="group {status}" id="group-{number}" data-key="{_html(found.key)}">',
            f"<h3>{number}. [{_html(found.key)}] {_html(found.label)} <span class='status'>{status}</span></h3>",
            f"<p>{len(found.members)} case(s); smallest: "
            f'<a href="#case-{index[rep.case]}">{_html(rep.case)}</a></p>',
            f"<p>reproduce: <code>{_html(rep.reproduce)}</code></p>",
        ]
        others = [f'<a href="#case-{index[m.case]}">{_html(m.case)}</a>' for m in found.members[1:]]
        if others:
            parts.append(
                f"<details><summary>same failure, {len(others)} more case(s)</summary>{'<br>'.join(others)}</details>"
            )
        parts.append("</section>")
    return "\n".join(parts)


def _cell(result: CaseResult, index: int, numbers: dict[str, int]) -> str:
    if result.skipped:
        return (
            f'<td class="cell skip" title="{_html(result.skipped)}"><a href="#case-{index}">&ndash;</a></td>'
        )
    verdict = "pass" if result.ok else "fail"
    tip = _html(f"{result.case}: " + ("ok" if result.ok else "; ".join(c.name for c in result.failed)))
    number = numbers.get(result.failure.key if result.failure else "")
    mark = "✓" if result.ok else (str(number) if number else "✗")
    data = f' data-group="{number}"' if number else ""
    return f'<td class="cell {verdict}"{data} title="{tip}"><a href="#case-{index}">{mark}</a></td>'


def _coverage_html(summary: Summary) -> str:
    coverage = summary.coverage
    rows = "".join(
        f'<tr class="{"covered" if coverage.rows.get(row) else "missing"}"><td>{_html(row)}</td>'
        f"<td>{coverage.rows.get(row, 0)}</td><td>{_html(what)}</td></tr>"
        for row, what in ROWS.items()
    )
    faults = "; ".join(
        f"{_html(name)}: " + ", ".join(f"{_html(kind)} {n}" for kind, n in sorted(kinds.items()))
        for name, kinds in sorted(coverage.faults.items())
    )
    lost = (
        f"<p class='lost'>coverage lost against the baseline: {_html(', '.join(summary.lost))}</p>"
        if summary.lost
        else ""
    )
    unreached = (
        f"<p>declared crashes never reached: {_html(', '.join(coverage.unreached))}</p>"
        if coverage.unreached
        else ""
    )
    return (
        f"<h2>coverage</h2>{lost}<p>faults landed: {faults or 'none'}</p>{unreached}"
        f"<details><summary>decision tree: {len(coverage.rows)}/{len(ROWS)} rows faced (by a recovery, or by an agent finishing its own abort)</summary>"
        f"<table class='coverage'><tr><th>row</th><th>cases</th><th>when</th></tr>{rows}</table></details>"
    )


def write_html(path: Path, summary: Summary, title: str = "chaos sweep") -> None:
    """A self-contained report of ``summary``: distinct failures, the matrix, then every case."""
    results = sorted(summary.results, key=lambda r: (r.scenario, r.case))
    groups = summary.groups
    numbers = {g.key: n for n, g in enumerate(groups, 1)}
    columns = list(dict.fromkeys(r.column for r in results))
    index = {r.case: i for i, r in enumerate(results)}
    by_cell = {(r.scenario, r.column): r for r in results}
    head = "".join(f"<th>{_html(c)}</th>" for c in columns)
    rows = []
    for scenario in sorted({r.scenario for r in results}):
        cells = [
            _cell(cell, index[cell.case], numbers)
            if (cell := by_cell.get((scenario, col)))
            else '<td class="empty"></td>'
            for col in columns
        ]
        rows.append(f"<tr><th>{_html(scenario)}</th>{''.join(cells)}</tr>")
    body = "\n".join(_case_html(index[r.case], r) for r in results)
    skipped = f", {len(summary.skipped)} skipped" if summary.skipped else ""
    if summary.interrupted:
        skipped += f"; interrupted: {len(summary.not_run)} case(s) not run"
    path.write_text(
        f"<!doctype html><html><head><meta charset='utf-8'><title>{escape(title)}</title>"
        f"<style>{CSS}</style></head><body><h1>{_html(title)}</h1>"
        f"<p class='summary'>{len(summary.ran)} case(s), {len(summary.findings)} finding(s), "
        f"{len(groups)} distinct failure(s){skipped}</p>"
        f"{_groups_html(groups, index)}{_coverage_html(summary)}"
        f"<table class='matrix'><thead><tr><th>scenario</th>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
        f"{body}</body></html>\n",
        encoding="utf-8",
    )
