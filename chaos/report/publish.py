"""Everything a sweep leaves for people and CI, written in one place: ``summary.json``, ``report.html``,
a JUnit file and a baseline. A sweep, ``chaos merge`` and ``chaos report`` all end here."""

from __future__ import annotations

from pathlib import Path

from chaos.case.result import CaseResult, journal_line
from chaos.report.html import write_html
from chaos.report.junit import write_junit
from chaos.report.summary import Summary, summarize, write_summary
from chaos.secrets import scrub_file
from chaos.triage.groups import Baseline, write_baseline


def publish(
    results: list[CaseResult],
    folder: Path,
    seconds: float,
    *,
    not_run: list[str] | None = None,
    baseline: Baseline | None = None,
    junit: Path | None = None,
    save_baseline: Path | None = None,
    journal: bool = False,
    interrupted: bool = False,
    starts: list[str] | None = None,
) -> Summary:
    """Summarise ``results`` and write the summary and the HTML report into ``folder`` (and the journal,
    when ``results`` were gathered from elsewhere), the JUnit file and the baseline where asked."""
    summary = summarize(results, not_run or [], seconds, baseline, interrupted, starts)
    folder.mkdir(parents=True, exist_ok=True)
    if journal:
        path = folder / "sweep.jsonl"
        path.write_bytes(b"".join(journal_line(r, path) for r in results))
    write_summary(folder / "summary.json", summary)
    write_html(folder / "report.html", summary)
    written = [folder / "sweep.jsonl", folder / "summary.json", folder / "report.html"]
    if junit is not None:
        write_junit(junit, summary)
        written.append(junit)
    if save_baseline is not None:
        covered = summary.coverage
        write_baseline(save_baseline, summary.groups, sorted(covered.rows), sorted(covered.cells))
        written.append(save_baseline)
    for path in written:  # what a check quoted of a log may hold a secret too (chaos.secrets)
        scrub_file(path)
    return summary
