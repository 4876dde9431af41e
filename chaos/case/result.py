"""A case's result as data: what a sweep journals, and what the summary, groups and reports read.

A ``Verdict`` holds the evidence in memory; a ``CaseResult`` is what is kept of
it (typed, and JSON only where it is written to or read from a file: the
journal ``sweep.jsonl``, each case's ``verdict.json``). A sweep adds its
triage (failure key and size), the case's view for the HTML report, and the
boundaries it leads to. Journals carry a ``format``: one written by an
older chaos is refused with what to do, never misread.
"""

from __future__ import annotations

import os
import shlex
import sys
from dataclasses import MISSING, asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import orjson

from chaos.check.base import Check
from chaos.errors import UsageError
from chaos.process.record import PhaseResult, camel
from chaos.secrets import scrub

FORMAT = 2  # of a journal line and verdict.json; 1 had no format field (chaos 0.2)


@dataclass(frozen=True)
class FailureRecord:
    """A failing case's failure key (``chaos.triage``): what makes two failing cases the same failure."""

    key: str
    check: str
    label: str


@dataclass(frozen=True)
class CaseView:
    """What the HTML report shows of a case: the crash prefix's timeline, and what recovery appended."""

    timeline: str
    appended: list[str] | None = None


@dataclass(frozen=True)
class CaseResult:
    case: str
    scenario: str
    target: str
    ok: bool
    checks: list[Check] = field(default_factory=list)
    phases: list[PhaseResult] = field(default_factory=list)
    scenario_file: str | None = None
    crash: str | None = None
    then_crash: str | None = None
    fault: str | None = None  # the crash's fault (chaos.fault)
    paused: bool = False  # the fault pauses the writer while another resumes (not a kill)
    persistence: str = "posix"  # what a power cut keeps of a new file's directory entry
    target_env: dict[str, str] = field(default_factory=dict)
    landed: str = ""
    exact: bool | None = None
    seconds: float = 0.0
    timings: dict[str, float] = field(default_factory=dict)
    # the case folder of the case that left the same crash state first, whose recovery this one took
    # instead of running its own (``chaos.cycle.share``; its reproduce line runs its own)
    shared_with: str = ""
    reproduce: str = ""
    folder: str = ""
    chaos_version: str = ""
    # what a sweep adds: its triage, the report's view, the boundaries the case leads to, its shard
    failure: FailureRecord | None = None
    size: list[Any] = field(default_factory=list)
    rows: list[str] = field(default_factory=list)  # the decision-tree rows its recovery faced
    cell: str = ""  # the fault matrix's cell it covers: a fault at a kind of moment (chaos.case.matrix)
    view: CaseView | None = None
    next: list[str] = field(default_factory=list)
    reported: bool = True  # a clean run runs in every shard and counts in one
    skipped: str = ""  # not run, and why (a capability the target lacks)

    @property
    def start(self) -> PhaseResult | None:
        return next((p for p in self.phases if p.name == "start"), None)

    @property
    def failed(self) -> list[Check]:
        return [c for c in self.checks if not c.ok]

    @property
    def column(self) -> str:
        """The boundary part of the case's name (the report's matrix column)."""
        return self.case.split(" @ ", 1)[-1]

    def with_(self, **changes: Any) -> CaseResult:
        return replace(self, **changes)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"format": FORMAT}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "checks":
                value = [c.to_json() for c in value]
            elif f.name == "phases":
                value = [p.to_json() for p in value]
            elif f.name in ("failure", "view") and value is not None:
                value = asdict(value)
            out[camel(f.name)] = value
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any], where: str = "") -> CaseResult:
        if data.get("format") != FORMAT:
            raise UsageError(
                f"{where or 'a case result'}: written by chaos {data.get('chaosVersion', 'before 0.3')} in another "
                f"format ({data.get('format', 1)}, this chaos reads {FORMAT}); run the sweep again with this chaos"
            )
        values: dict[str, Any] = {}
        for f in fields(cls):
            value = data.get(camel(f.name), _default(f))
            if f.name == "checks":
                value = [Check.from_json(c) for c in value]
            elif f.name == "phases":
                value = [PhaseResult.from_json(p) for p in value]
            elif f.name == "failure" and value is not None:
                value = FailureRecord(**value)
            elif f.name == "view" and value is not None:
                value = CaseView(**value)
            values[f.name] = value
        return cls(**values)


def _default(f: Any) -> Any:
    """A field's default, for a key an older line of this format leaves out (None for a required one)."""
    if f.default_factory is not MISSING:
        return f.default_factory()
    return None if f.default is MISSING else f.default


INTERPRETER = "{python}"  # what a recorded command line says for chaos's own interpreter (a host path)


def portable(data: dict[str, Any], base: Path) -> dict[str, Any]:
    """A result's JSON as a file under ``base`` keeps it, naming no path of the host: its folder and the
    scenario its reproduce line runs relative to ``base`` (results moved or copied as a whole point at
    their own cases, never at the folder they were copied from), the scenario's source by its name, and
    chaos's interpreter in a phase's command line as ``{python}``."""
    out = dict(data)
    if out["folder"]:
        folder = Path(out["folder"]).resolve()
        where = os.path.relpath(folder, base.resolve())
        out["folder"] = where
        scenario = str(folder / "scenario.toml")
        out["reproduce"] = out["reproduce"].replace(
            shlex.quote(scenario), shlex.quote(os.path.join(where, "scenario.toml"))
        )
    if out.get("scenarioFile"):
        out["scenarioFile"] = Path(out["scenarioFile"]).name
    own = {sys.executable, os.path.realpath(sys.executable)}
    out["phases"] = [
        {**phase, "argv": [INTERPRETER if part in own else part for part in phase.get("argv") or []]}
        for phase in out.get("phases") or []
    ]
    return out


def journal_line(result: CaseResult, journal: Path) -> bytes:
    """A result as its journal keeps it (``portable`` from the journal's folder)."""
    return scrub(orjson.dumps(portable(result.to_json(), journal.parent))) + b"\n"


def read_journal(path: Path) -> list[CaseResult]:
    """A sweep's journal, one case result a line (a line cut short by a killed sweep is dropped); each
    case's folder found from the journal's own place."""
    out = []
    for number, line in enumerate(path.read_bytes().splitlines(), 1):
        try:
            data = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if not isinstance(data, dict):
            raise UsageError(
                f"{path}: line {number}: a case result is a JSON object, not {type(data).__name__}"
            )
        result = CaseResult.from_json(data, f"{path}: line {number}")
        if result.folder and not Path(result.folder).is_absolute():
            result = result.with_(folder=os.path.normpath(path.parent / result.folder))
        out.append(result)
    return out


def cut_torn_tail(path: Path) -> None:
    """Cut a journal back to its last whole line (a sweep killed mid-append left the rest)."""
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        with path.open("r+b") as journal:
            journal.truncate(data.rfind(b"\n") + 1)


def append_journal(path: Path, result: CaseResult) -> None:
    with path.open("ab") as journal:
        journal.write(journal_line(result, path))


def reported(results: list[CaseResult]) -> list[CaseResult]:
    """The results a shard counts: a clean run is repeated in every shard, and counts in one."""
    return [r for r in results if r.reported]
