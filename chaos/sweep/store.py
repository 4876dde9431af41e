"""Sweeping a framework agent: every commit of its store and every in-flight moment, each crashed once.

The scenario is first run uninterrupted (itself a case, judged like the rest:
an effect before its call is durable needs no crash to show). Its start phase
gives the boundaries: each commit the tracer saw (``commit#k``), each model
request (held), each effect held running and held done with its output not yet
durable. Each becomes one case in its own world; failures are grouped by cause
(``chaos.triage.store``), each group written as a report under
``failures/`` with the command that reproduces it.
"""

from __future__ import annotations

import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from chaos.case.record import dump, slug, write
from chaos.case.store import StoreCase, run_store_case
from chaos.cycle.store import StoreEvidence
from chaos.fault import FAULTS
from chaos.report.store import group_report, precision, report_path
from chaos.scenario.model import Boundary, Crash, Scenario
from chaos.scenario.target import Target
from chaos.triage.store import StoreGroup, group


def boundaries_of(clean: StoreEvidence) -> list[Boundary]:
    """Every boundary the uninterrupted run's start phase passed, in the order it passed them."""
    start = clean.phases[0]
    found = [Boundary("commit", nth=k) for k in range(1, (start.commits or 0) + 1)]
    found += [Boundary("model-request", nth=n) for n in range(1, start.requests[1] - start.requests[0] + 1)]
    seen: Counter[str] = Counter()
    for entry in clean.ledger[start.ledger_before :]:
        if entry["phase"] == "start":
            name = str(entry["effect"])
            seen[name] += 1
            found += [
                Boundary(what, {"effect": name}, seen[name]) for what in ("effect-running", "effect-done")
            ]
    return found


@dataclass
class StoreSweep:
    results: Path
    cases: list[StoreCase]
    groups: list[StoreGroup]
    seconds: float

    @property
    def ok(self) -> bool:
        return not self.groups

    def to_json(self) -> dict[str, Any]:
        exact, landed = precision(self.cases)
        return {
            "cases": len(self.cases),
            "failing": sum(1 for c in self.cases if not c.ok),
            "distinctFailures": len(self.groups),
            "exactKills": exact,
            "kills": landed,
            "seconds": round(self.seconds, 1),
            "failures": [
                {
                    "check": g.check,
                    "cause": g.cause,
                    "cases": [f"{c.scenario.name} @ {c.boundary}" for c in g.cases],
                    "reproduce": g.first.reproduce(),
                }
                for g in self.groups
            ],
            "results": [c.to_json() | {"folder": str(c.folder)} for c in self.cases],
        }


def store_sweep(
    scenarios: list[Scenario],
    target: Target,
    results: Path,
    jobs: int = 1,
    extra_env: dict[str, str] | None = None,
    timeout: float | None = None,
    faults: tuple[str, ...] = ("kill",),
) -> StoreSweep:
    began = time.monotonic()
    env = dict(extra_env or {})
    cases: list[StoreCase] = []
    planned: list[tuple[Scenario, StoreEvidence, Path]] = []
    for scenario in scenarios:
        scenario = replace(scenario, timeout=timeout) if timeout is not None else scenario
        folder = results / slug(scenario.name)
        clean = run_store_case(scenario.with_crash(None), target, None, folder / "uninterrupted", env)
        cases.append(clean)
        for boundary in boundaries_of(clean.evidence):
            for fault in faults:
                if FAULTS[fault].applies_to(boundary.what) is None:
                    crash = Crash(boundary, fault=fault)
                    planned.append((scenario.with_crash(crash), clean.evidence, folder / slug(str(crash))))

    def one(plan: tuple[Scenario, StoreEvidence, Path]) -> StoreCase:
        scenario, clean, folder = plan
        return run_store_case(scenario, target, clean, folder, env)

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        cases += list(pool.map(one, planned))
    done = StoreSweep(results, cases, group(cases), time.monotonic() - began)
    write_sweep(done)
    return done


def write_sweep(done: StoreSweep) -> None:
    done.results.mkdir(parents=True, exist_ok=True)
    dump(done.results / "summary.json", done.to_json())
    for n, found in enumerate(done.groups, 1):
        path = report_path(done.results, n, found)
        path.parent.mkdir(parents=True, exist_ok=True)
        write(path, group_report(found).encode())
