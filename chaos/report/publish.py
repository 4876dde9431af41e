"""Everything a sweep leaves for people and CI, written in one place: ``summary.json``, ``report.html``,
a JUnit file and a baseline. A sweep, ``chaos merge`` and ``chaos report`` all end here."""

from __future__ import annotations

from pathlib import Path

import orjson

from chaos.case.result import CaseResult
from chaos.report.html import write_html
from chaos.report.junit import write_junit
from chaos.report.summary import Summary, summarize, write_summary
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
) -> Summary:
    """Summarise ``results`` and write the summary and the HTML report into ``folder`` (and the journal,
    when ``results`` were gathered from elsewhere), the JUnit file and the baseline where asked."""
    summary = summarize(results, not_run or [], seconds, baseline)
    folder.mkdir(parents=True, exist_ok=True)
    if journal:
        (folder / "sweep.jsonl").write_bytes(b"".join(orjson.dumps(r.to_json()) + b"\n" for r in results))
    write_summary(folder / "summary.json", summary)
    write_html(folder / "report.html", summary)
    if junit is not None:
        write_junit(junit, summary)
    if save_baseline is not None:
        write_baseline(save_baseline, summary.groups, sorted(summary.coverage.rows))
    return summary
