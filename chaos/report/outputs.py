"""What a sweep leaves for people and CI: the summary JSON, a JUnit XML report and an HTML report.

All three are built from verdict entries only (the journal lines, each with
the case's rendered view), so ``chaos merge`` and ``chaos report`` can
rebuild them from the result folders of several CI shards, and the sweep
itself never reads a case folder back.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterable
from html import escape
from pathlib import Path
from typing import Any

import orjson

from chaos.case.verdict import Verdict
from chaos.check.checks import Check
from chaos.report.show import diff, diff_row, render, timeline
from chaos.report.text import printable
from chaos.triage.groups import Group, fixed, group


def summarize(
    entries: list[dict[str, Any]], skipped: list[str], seconds: float, baseline: dict[str, str] | None = None
) -> dict[str, Any]:
    """Counts, kill precision, the distinct failures (known ones marked, given a baseline) and every verdict."""
    crashed = [e for e in entries if e.get("crash") and "SIGSTOP" not in e["crash"]]
    reached = [e for e in crashed if e["phases"] and _start(e).get("reached")]
    exact = [e for e in reached if _start(e).get("exact")]
    paused = [e for e in entries if e.get("crash") and "SIGSTOP" in e["crash"] and _start(e).get("reached")]
    findings = [e for e in entries if not e["ok"]]
    groups = group(entries, baseline)
    return {
        "cases": len(entries),
        "findings": len(findings),
        "distinct": len(groups),
        "new": sum(1 for g in groups if not g.known),
        "groups": [g.to_json() for g in groups],
        "fixed": [{"key": k, "label": v} for k, v in fixed(groups, baseline).items()],
        "skipped": skipped,
        "crashes": len(crashed),
        "reached": len(reached),
        "exact": len(exact),
        "precision": round(len(exact) / len(reached), 4) if reached else None,
        "paused": len(paused),  # paused writers (SIGSTOP): timed by polling, not counted as kills
        "pausedExact": sum(1 for e in paused if _start(e).get("exact")),
        "seconds": round(seconds, 2),
        "failures": [
            {
                "case": e["case"],
                "group": (e.get("failure") or {}).get("key"),
                "failed": [c for c in e["checks"] if not c["ok"]],
                "reproduce": e["reproduce"],
                "folder": e["folder"],
            }
            for e in findings
        ],
        "verdicts": [
            {
                k: e.get(k)
                for k in (
                    "case",
                    "scenario",
                    "crash",
                    "thenCrash",
                    "ok",
                    "landed",
                    "exact",
                    "seconds",
                    "folder",
                )
            }
            for e in entries
        ],
    }


def _start(entry: dict[str, Any]) -> dict[str, Any]:
    return next((p for p in entry["phases"] if p["name"] == "start"), {})


def write_summary(path: Path, summary: dict[str, Any]) -> None:
    path.write_bytes(orjson.dumps(summary, option=orjson.OPT_INDENT_2) + b"\n")


def failure_message(entry: dict[str, Any], groups: dict[str, Group]) -> str:
    """A failing testcase's message: its distinct failure, that failure's smallest case, and its own check."""
    first = next(Check(**c) for c in entry["checks"] if not c["ok"])
    found = groups.get((entry.get("failure") or {}).get("key", ""))
    if found is None:
        return printable(f"{first.text()} | reproduce: {entry['reproduce']}")
    rep = found.representative
    same = "this case" if rep["case"] == entry["case"] else rep["case"]
    return printable(
        f"[{found.key}] {found.label} | smallest case: {same} | reproduce: {rep['reproduce']} | here: {first.text()}"
    )


def write_junit(
    path: Path,
    entries: list[dict[str, Any]],
    name: str = "chaos sweep",
    baseline: dict[str, str] | None = None,
) -> None:
    """One testcase per scenario x boundary; a finding is a failure naming its distinct failure, that
    failure's smallest case and reproduce command, and its own failing check."""
    groups = {g.key: g for g in group(entries, baseline)}
    suite = ET.Element(
        "testsuite",
        name=name,
        tests=str(len(entries)),
        failures=str(sum(1 for e in entries if not e["ok"])),
        errors="0",
        skipped="0",
        time=f"{sum(e.get('seconds', 0.0) for e in entries):.3f}",
    )
    for entry in sorted(entries, key=lambda e: e["case"]):
        case = ET.SubElement(
            suite,
            "testcase",
            classname=f"chaos.{entry['scenario']}",
            name=entry["case"].split(" @ ", 1)[-1],
            time=f"{entry.get('seconds', 0.0):.3f}",
        )
        if not entry["ok"]:
            found = groups.get((entry.get("failure") or {}).get("key", ""))
            kind = "chaos.known-failure" if found is not None and found.known else "chaos.finding"
            failure = ET.SubElement(case, "failure", message=failure_message(entry, groups), type=kind)
            lines = [f"{'ok ' if c['ok'] else 'FAIL'} {Check(**c).text()}" for c in entry["checks"]]
            lines += [f"results: {entry['folder']}", f"reproduce: {entry['reproduce']}"]
            failure.text = "\n".join(printable(line) for line in lines) + "\n"
    root = ET.Element("testsuites")
    root.append(suite)
    tree = ET.ElementTree(root)
    ET.indent(tree)
    tree.write(path, encoding="utf-8", xml_declaration=True)


def reported(entries: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The verdicts a shard counts: a clean run is repeated in every shard, and counts in one."""
    return [e for e in entries if e.get("reported", True)]


def read_journal(path: Path) -> list[dict[str, Any]]:
    entries = []
    for line in path.read_bytes().splitlines():
        try:
            entries.append(orjson.loads(line))
        except orjson.JSONDecodeError:
            continue  # a line cut short when the sweep was killed
    return entries


CSS = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em; color: #222; }
table.matrix { border-collapse: collapse; margin: 1em 0; }
table.matrix th, table.matrix td { border: 1px solid #ccc; padding: 2px 4px; }
table.matrix thead th { writing-mode: vertical-rl; transform: rotate(180deg); font-weight: normal; font-size: 12px; }
td.cell { width: 18px; height: 18px; text-align: center; }
td.cell a { display: block; color: inherit; text-decoration: none; }
td.pass { background: #bfe5bf; } td.fail { background: #f4a3a3; font-weight: bold; } td.empty { background: #f6f6f6; }
section.case { border-top: 1px solid #ddd; margin-top: 1.5em; }
section.fail h2 { color: #b00; }
pre { background: #f7f7f7; padding: .5em; overflow-x: auto; font-size: 12px; }
section.group { border-left: 4px solid #b00; padding-left: .8em; margin: 1em 0; }
section.group.known { border-color: #c90; } span.status { font-size: 12px; color: #666; }
li.ok { color: #276627; } li.fail { color: #b00; font-weight: bold; }
.kill { color: #b00; font-weight: bold; }
"""


def case_view(verdict: Verdict) -> dict[str, Any]:
    """What the HTML report shows of a case: the crash prefix's timeline with the kill point, and
    what recovery appended (rendered from the evidence in memory, kept in the journal)."""
    evidence = verdict.evidence
    tl = timeline(evidence.prefix, evidence.current)
    last = tl.rows[-1].line if tl.rows else None
    view: dict[str, Any] = {"timeline": render(tl, mark=last if verdict.scenario.crash else None)}
    if evidence.resumes:
        view["appended"] = [printable(diff_row("+", r)) for r in diff(evidence.prefix, evidence.final).added]
    return view


def _html(text: str) -> str:
    return escape(printable(text))


def _case_html(index: int, entry: dict[str, Any]) -> str:
    parts = [
        f'<section class="case {"ok" if entry["ok"] else "fail"}" id="case-{index}">',
        f"<h2>{_html(entry['case'])}</h2>",
        f"<p>crash: {_html(str(entry.get('crash') or 'none'))}; landed: {_html(str(entry.get('landed')))}</p>",
    ]
    view = entry.get("view") or {}
    if "timeline" in view:
        text = "\n".join(_html(line) for line in view["timeline"].split("\n"))
        text = text.replace("── kill landed here ──", '<span class="kill">── kill landed here ──</span>')
        parts += ["<h3>crash prefix</h3>", f'<pre class="timeline">{text}</pre>']
        if "appended" in view:
            rows = "\n".join(_html(row) for row in view["appended"])
            parts += ["<h3>appended by recovery</h3>", f'<pre class="appended">{rows or "nothing"}</pre>']
    items = [
        f'<li class="{"ok" if c["ok"] else "fail"}">{"✓" if c["ok"] else "✗"} {_html(Check(**c).text())}</li>'
        for c in sorted(entry["checks"], key=lambda c: c["ok"])  # failures first
    ]
    parts += [
        f'<ul class="checks">{"".join(items)}</ul>',
        f"<p>reproduce: <code>{_html(entry['reproduce'])}</code></p>",
    ]
    return "\n".join(parts) + "</section>"


def _column(entry: dict[str, Any]) -> str:
    return str(entry["case"]).split(" @ ", 1)[-1]


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
            f'<a href="#case-{index[rep["case"]]}">{_html(rep["case"])}</a></p>',
            f"<p>reproduce: <code>{_html(rep['reproduce'])}</code></p>",
        ]
        others = [f'<a href="#case-{index[m["case"]]}">{_html(m["case"])}</a>' for m in found.members[1:]]
        if others:
            parts.append(
                f"<details><summary>same failure, {len(others)} more case(s)</summary>{'<br>'.join(others)}</details>"
            )
        parts.append("</section>")
    return "\n".join(parts)


def write_html(
    path: Path,
    entries: list[dict[str, Any]],
    title: str = "chaos sweep",
    baseline: dict[str, str] | None = None,
) -> None:
    """A self-contained report: the distinct failures, a scenario x boundary matrix coloured by verdict
    (each failing cell numbered by its failure), then every case."""
    entries = sorted(entries, key=lambda e: (e["scenario"], e["case"]))
    groups = group(entries, baseline)
    numbers = {g.key: n for n, g in enumerate(groups, 1)}
    columns: list[str] = []
    for entry in entries:
        if _column(entry) not in columns:
            columns.append(_column(entry))
    index = {id(e): i for i, e in enumerate(entries)}
    by_cell = {(e["scenario"], _column(e)): e for e in entries}
    scenarios = sorted({e["scenario"] for e in entries})
    findings = sum(1 for e in entries if not e["ok"])
    head = "".join(f"<th>{_html(c)}</th>" for c in columns)
    rows = []
    for scenario in scenarios:
        cells = []
        for col in columns:
            cell = by_cell.get((scenario, col))
            if cell is None:
                cells.append('<td class="empty"></td>')
                continue
            verdict = "pass" if cell["ok"] else "fail"
            failed = [c["name"] for c in cell["checks"] if not c["ok"]]
            tip = _html(f"{cell['case']}: " + ("ok" if cell["ok"] else "; ".join(failed)))
            number = numbers.get((cell.get("failure") or {}).get("key", ""))
            mark = "✓" if cell["ok"] else (str(number) if number else "✗")
            data = f' data-group="{number}"' if number else ""
            cells.append(
                f'<td class="cell {verdict}"{data} title="{tip}"><a href="#case-{index[id(cell)]}">{mark}</a></td>'
            )
        rows.append(f"<tr><th>{_html(scenario)}</th>{''.join(cells)}</tr>")
    body = "\n".join(_case_html(index[id(e)], e) for e in entries)
    path.write_text(
        f"<!doctype html><html><head><meta charset='utf-8'><title>{escape(title)}</title>"
        f"<style>{CSS}</style></head><body><h1>{_html(title)}</h1>"
        f"<p class='summary'>{len(entries)} case(s), {findings} finding(s), {len(groups)} distinct failure(s)</p>"
        f"{_groups_html(groups, {e['case']: index[id(e)] for e in entries})}"
        f"<table class='matrix'><thead><tr><th>scenario</th>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
        f"{body}</body></html>\n",
        encoding="utf-8",
    )
