"""What a person reads of a framework sweep: a console summary and one report per distinct failure.

Every text that comes from the agent's store or ledger (call ids, answers,
effect details) goes through ``printable`` first."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from chaos.case.record import slug
from chaos.case.store import StoreCase
from chaos.report.junit import write_suite
from chaos.report.text import printable
from chaos.triage.store import StoreGroup


def precision(cases: list[StoreCase]) -> tuple[int, int]:
    """(exact kills, kills that landed): a kill is exact when no commit began after it (or, in flight,
    the world still held the boundary)."""
    landed = [c for c in cases if c.reached]
    return sum(1 for c in landed if c.exact), len(landed)


def render_store_summary(cases: list[StoreCase], groups: list[StoreGroup], results: Path | None) -> str:
    exact, landed = precision(cases)
    failing = sum(1 for c in cases if not c.ok)
    lines = [
        f"chaos: {len(cases)} case(s), {failing} failing, {len(groups)} distinct failure(s); "
        f"exact kills {exact}/{landed}"
    ]
    for case in cases:
        mark = "ok  " if case.ok else "FAIL"
        where = "" if case.reached or case.scenario.crash is None else " (boundary not reached)"
        lines.append(printable(f"  {mark} {case.target.name} {case.scenario.name} @ {case.boundary}{where}"))
    for n, found in enumerate(groups, 1):
        lines.append(printable(f"failure {n}: {found.cause} [{found.check}] in {len(found.cases)} case(s)"))
        for problem in found.examples[:3]:
            lines.append(printable(f"    {problem.text}"))
        lines.append(printable(f"    reproduce: {found.first.reproduce()}"))
        if results is not None:
            lines.append(printable(f"    report: {report_path(results, n, found)}"))
    return "\n".join(lines)


def report_path(results: Path, n: int, found: StoreGroup) -> Path:
    return results / "failures" / f"{n:02d}-{slug(found.cause.lower(), 60)}.md"


def group_report(found: StoreGroup) -> str:
    """A failure's report, named by its cause: what was promised, where it broke, how to rerun it."""
    first = found.first
    spec = first.evidence.spec
    lines = [
        f"# {found.cause}",
        "",
        f"- check: `{found.check}`",
        f"- target: `{first.target.name}` (store `{spec.kind}`, declared `{spec.semantics}`)",
        f"- scenario: `{first.scenario.name}`",
        f"- cases: {len(found.cases)}, at "
        + ", ".join(f"`{c.scenario.name} @ {c.boundary}`" for c in found.cases),
        "",
        "## The first case",
        "",
        *[f"- {p.text}" for p in found.examples],
        "",
        f"Crash prefix (the store as the crash left it): `{first.folder / 'prefix'}`",
        "",
        "Phases:",
        "",
        *[
            f"- {p.name}: exit {p.returncode}, {'killed, ' if p.killed else ''}"
            f"{p.requests[1] - p.requests[0]} model request(s), store {p.before.items} -> {p.after.items} items"
            for p in first.evidence.phases
        ],
        "",
        "Effects (the ledger):",
        "",
        *[
            f"- {e['phase']} {e['effect']} {' '.join(map(str, e.get('detail', [])))} (call {e.get('callId', '?')})"
            for e in first.evidence.ledger
        ],
        "",
        "Reproduce:",
        "",
        f"    {first.reproduce()}",
        "",
    ]
    return "\n".join(printable(line) for line in lines)


def write_store_junit(path: Path, cases: list[StoreCase], groups: list[StoreGroup], seconds: float) -> None:
    """One testcase per scenario x boundary; a failing case's failure names its first distinct failure
    and that failure's reproduce command, and lists every check of the case."""
    failing = [c for c in cases if not c.ok]
    suite = ET.Element(
        "testsuite",
        name="chaos sweep (store)",
        tests=str(len(cases)),
        failures=str(len(failing)),
        errors="0",
        skipped="0",
        time=f"{seconds:.3f}",
    )
    exact, landed = precision(cases)
    properties = ET.SubElement(suite, "properties")
    ET.SubElement(properties, "property", name="kills.exact", value=f"{exact}/{landed}")
    for case in cases:
        element = ET.SubElement(
            suite, "testcase", classname=f"chaos.{case.scenario.name}", name=printable(case.boundary)
        )
        if case.ok:
            continue
        check, problem = case.failures()[0]
        found = next(g for g in groups if g.check == check and g.cause == problem.key)
        message = f"[{check}] {problem.key} | reproduce: {found.first.reproduce()} | here: {problem.text}"
        failure = ET.SubElement(element, "failure", message=printable(message), type="chaos.finding")
        lines = [
            f"{'ok  ' if j.ok else 'skip' if j.not_judged else 'FAIL'} {j.id}: {j.title}"
            + "".join(f" | {p.key}: {p.text}" for p in j.problems)
            for j in case.judged
        ]
        lines += [f"results: {case.folder}", f"reproduce: {case.reproduce()}"]
        failure.text = "\n".join(printable(line) for line in lines) + "\n"
    write_suite(path, suite)
