"""The JUnit XML report: one testcase per scenario x boundary, for CI systems that show test results."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from chaos.case.result import CaseResult
from chaos.check.base import Check
from chaos.report.summary import Summary
from chaos.report.text import printable
from chaos.triage.groups import Group


def failure_message(result: CaseResult, groups: dict[str, Group]) -> str:
    """A failing testcase's message: its distinct failure, that failure's smallest case and reproduce
    command, and its own failing check."""
    first = result.failed[0]
    found = groups.get(result.failure.key if result.failure else "")
    if found is None:
        return printable(f"{first.text()} | reproduce: {result.reproduce}")
    rep = found.representative
    same = "this case" if rep.case == result.case else rep.case
    return printable(
        f"[{found.key}] {found.label} | smallest case: {same} | reproduce: {rep.reproduce} | here: {first.text()}"
    )


def _mark(check: Check) -> str:
    return "skip" if check.unjudged else "ok  " if check.ok else "FAIL"


def write_junit(path: Path, summary: Summary, name: str = "chaos sweep") -> None:
    """One testcase per scenario x boundary; a finding is a failure naming its distinct failure, that
    failure's smallest case and reproduce command, and its own failing check; a case the target cannot
    run is skipped, with why."""
    groups = {g.key: g for g in summary.groups}
    results = summary.results
    suite = ET.Element(
        "testsuite",
        name=name,
        tests=str(len(results)),
        failures=str(len(summary.findings)),
        errors="0",
        skipped=str(len(summary.skipped)),
        time=f"{sum(r.seconds for r in results):.3f}",
    )
    properties = ET.SubElement(suite, "properties")
    coverage = summary.coverage
    for key, value in (
        ("coverage.rows", f"{len(coverage.rows)}/{len(coverage.rows) + len(coverage.missing)}"),
        ("coverage.missing", ",".join(coverage.missing)),
        ("coverage.lost", ",".join(summary.lost)),
        ("coverage.unreached", str(len(coverage.unreached))),
        *(
            (f"coverage.fault.{name}", str(sum(kinds.values())))
            for name, kinds in sorted(coverage.faults.items())
        ),
    ):
        ET.SubElement(properties, "property", name=key, value=value)
    for result in sorted(results, key=lambda r: r.case):
        case = ET.SubElement(
            suite,
            "testcase",
            classname=f"chaos.{result.scenario}",
            name=result.column,
            time=f"{result.seconds:.3f}",
        )
        if result.skipped:
            ET.SubElement(case, "skipped", message=printable(result.skipped))
        elif not result.ok:
            found = groups.get(result.failure.key if result.failure else "")
            kind = "chaos.known-failure" if found is not None and found.known else "chaos.finding"
            failure = ET.SubElement(case, "failure", message=failure_message(result, groups), type=kind)
            lines = [f"{_mark(c)} {c.text()}" for c in result.checks]
            lines += [f"results: {result.folder}", f"reproduce: {result.reproduce}"]
            failure.text = "\n".join(printable(line) for line in lines) + "\n"
    write_suite(path, suite)


def write_suite(path: Path, suite: ET.Element) -> None:
    """One ``testsuite`` as a JUnit file, indented."""
    root = ET.Element("testsuites")
    root.append(suite)
    tree = ET.ElementTree(root)
    ET.indent(tree)
    tree.write(path, encoding="utf-8", xml_declaration=True)
