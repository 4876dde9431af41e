"""What a sweep leaves for people and CI: the summary JSON and a JUnit XML report.

Both are built from verdict entries only (the journal lines), so ``chaos
merge`` can rebuild them from the result folders of several CI shards.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import orjson


def summarize(entries: list[dict[str, Any]], skipped: list[str], seconds: float) -> dict[str, Any]:
    crashed = [e for e in entries if e.get("crash")]
    reached = [e for e in crashed if e["phases"] and _start(e).get("reached")]
    exact = [e for e in reached if _start(e).get("exact")]
    findings = [e for e in entries if not e["ok"]]
    return {
        "cases": len(entries),
        "findings": len(findings),
        "skipped": skipped,
        "crashes": len(crashed),
        "reached": len(reached),
        "exact": len(exact),
        "precision": round(len(exact) / len(reached), 4) if reached else None,
        "seconds": round(seconds, 2),
        "failures": [
            {
                "case": e["case"],
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


def failure_message(entry: dict[str, Any]) -> str:
    failed = [c for c in entry["checks"] if not c["ok"]]
    first = failed[0]
    return (
        f"{first['name']}: expected {first['expected']}, got {first['got']} | reproduce: {entry['reproduce']}"
    )


def write_junit(path: Path, entries: list[dict[str, Any]], name: str = "chaos sweep") -> None:
    """One testcase per scenario x boundary; a finding is a failure naming its check and reproduce command."""
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
            failure = ET.SubElement(case, "failure", message=failure_message(entry), type="chaos.finding")
            failure.text = (
                "\n".join(
                    f"{'ok ' if c['ok'] else 'FAIL'} {c['name']}"
                    + ("" if c["ok"] else f": expected {c['expected']}, got {c['got']}")
                    for c in entry["checks"]
                )
                + f"\nresults: {entry['folder']}\nreproduce: {entry['reproduce']}\n"
            )
    tree = ET.ElementTree(ET.Element("testsuites"))
    tree.getroot().append(suite)
    ET.indent(tree)
    tree.write(path, encoding="utf-8", xml_declaration=True)


def read_journal(path: Path) -> list[dict[str, Any]]:
    entries = []
    for line in path.read_bytes().splitlines():
        try:
            entries.append(orjson.loads(line))
        except orjson.JSONDecodeError:
            continue  # a line cut short when the sweep was killed
    return entries
