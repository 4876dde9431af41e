"""A stored case read back into the evidence it was judged on, so that it can be judged again without
running anything (``chaos recheck``).

A case's folder holds what its checks read: the scenario and target as used,
each phase as recorded (``verdict.json``), each phase's log (and, where it
differs, the log it started from or wrote before a power cut), the model
server's requests, the effect ledger and the current configuration. Folders
written before chaos kept all of it (a pruned passing case of an older sweep)
are refused with what is missing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from chaos.case.record import log_file
from chaos.case.result import CaseResult
from chaos.cycle.evidence import Evidence
from chaos.errors import SpecError, UsageError
from chaos.process.phase import Phase, PhaseKind
from chaos.process.record import PhaseResult
from chaos.scenario.files import load_scenario
from chaos.scenario.target import load_target

KINDS = {kind.value: kind for kind in PhaseKind}


def _kind(name: str) -> tuple[PhaseKind, int]:
    if name.startswith("resume-") and name.removeprefix("resume-").isdigit():
        return PhaseKind.RESUME, int(name.removeprefix("resume-"))
    return KINDS[name], 0


def _read(folder: Path, name: str) -> bytes:
    path = folder / name
    if not path.is_file():
        raise UsageError(
            f"{folder}: no {name}; the case was stored without the evidence recheck needs (a passing case "
            "pruned by an older chaos): run it again, or sweep with --keep-all"
        )
    return path.read_bytes()


def _phase(folder: Path, recorded: PhaseResult, previous: bytes, first_request: int) -> Phase:
    kind, index = _kind(recorded.name)
    stem = log_file(Phase(kind, recorded.argv, None, index)).removesuffix(".jsonl")
    before, written = folder / f"{stem}.before.jsonl", folder / f"{stem}.written.jsonl"
    logs = (
        before.read_bytes() if before.is_file() else previous,
        _read(folder, f"{stem}.jsonl"),
        written.read_bytes() if written.is_file() else None,
    )
    return Phase.restore(recorded, kind, index, logs, first_request)


def _json(folder: Path, name: str) -> Any:
    try:
        return json.loads(_read(folder, name))
    except ValueError as err:  # cut short, or not JSON: named, never a traceback
        line = f"line {err.lineno}: " if isinstance(err, json.JSONDecodeError) else ""
        raise UsageError(
            f"{folder / name}: {line}not the JSON chaos wrote ({err}); run the case again"
        ) from None


def evidence_of(folder: Path) -> tuple[Evidence, CaseResult]:
    """The evidence a stored case was judged on, and its stored result."""
    data = _json(folder, "verdict.json")
    try:
        stored = CaseResult.from_json(data, str(folder / "verdict.json"))
    except (TypeError, KeyError, AttributeError) as err:
        raise UsageError(
            f"{folder / 'verdict.json'}: not a verdict chaos wrote ({err!r}); run the case again"
        ) from None
    try:
        scenario = load_scenario(folder / "scenario.toml")
        target = load_target(folder / "target.toml")
    except SpecError as err:
        raise UsageError(f"{folder}: {err}") from None
    if not target.facts:
        raise UsageError(
            f"{folder}: a case of a target judged on its {target.store_spec.kind} store, whose copies per phase a "
            "case does not keep: it can be judged again only by running it again"
        )
    phases, previous, requests = [], b"", 0
    for recorded in stored.phases:
        phase = _phase(folder, recorded, previous, requests)
        phases.append(phase)
        previous, requests = phase.kept.log_after, phase.seen.requests[1]
    start = next((p for p in phases if p.kind is PhaseKind.START), None)
    if start is not None and start.landing.continued:
        scenario = scenario.with_crash(None)  # a writer let go on: no crash to judge (as the cycle had it)
    current = _json(folder, "current.json") if (folder / "current.json").is_file() else None
    logged_requests = _json(folder, "requests.json")
    per_step: dict[str, int] = {}
    for request in logged_requests:
        per_step[request["stepKey"]] = per_step.get(request["stepKey"], 0) + 1
    evidence = Evidence(
        scenario,
        target,
        dict(stored.target_env),
        phases,
        current,
        _json(folder, "ledger.json"),
        logged_requests,
        per_step,
    )
    return evidence, stored
