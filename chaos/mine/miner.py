"""Mining: every crash prefix not seen before becomes a fixture in the golden corpus's own layout.

Prefixes come from the case's evidence in memory; the corpus on disk is
``fixtures/`` (reducer fixtures and their manifest), ``planner-fixtures/``
and ``provenance/`` (signature, scenario, boundary, target, chaos version).
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from chaos.case.verdict import Verdict
from chaos.contract import Reducer, plan_recovery
from chaos.contract.schema import schema_valid
from chaos.mine.signature import normalize, signature
from chaos.process.phase import PhaseKind
from chaos.secrets import scrub, scrub_store
from chaos.version import __version__


@dataclass
class Miner:
    """Saves unseen crash prefixes under ``root`` (``fixtures/``, ``planner-fixtures/``, ``provenance/``)."""

    root: Path
    saved: list[str] = field(default_factory=list)
    known: set[str] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        for path in (self.root / "provenance").glob("*.json"):
            self.known.add(orjson.loads(path.read_bytes())["signature"])

    def mine(self, verdict: Verdict) -> list[str]:
        """Mine the crash prefixes of one finished case (its start's, and its crashed recovery's)."""
        evidence, scenario = verdict.evidence, verdict.scenario
        if not evidence.facts:
            return self._mine_store(verdict)
        prefixes = [(evidence.prefix, scenario.crash)]
        if scenario.then_crash is not None and evidence.recoveries and evidence.recoveries[0].landing.reached:
            prefixes.append((evidence.recoveries[0].kept.log_after, scenario.then_crash))
        names = []
        for log, crash in prefixes:
            if log:
                name = self.consider(
                    log, evidence.current, verdict, str(crash.boundary) if crash else "clean"
                )
                names += [name] if name else []
        return names

    def _mine_store(self, verdict: Verdict) -> list[str]:
        """A framework agent's crash prefixes: the store's files as each crash left them (the start's, and
        a recovery's crashed again), each with what its adapter reads of them."""
        spec, evidence, names = verdict.target.store_spec, verdict.evidence, []
        for phase in evidence.phases:
            if phase.crash is None or not phase.process.killed or phase.kept.view_after is None:
                continue
            view = phase.kept.view_after.normalized()
            sig = (
                "sha256:"
                + hashlib.sha256(orjson.dumps([spec.kind, view], option=orjson.OPT_SORT_KEYS)).hexdigest()
            )
            files = scrub_store(phase.kept.store_files)
            if files != phase.kept.store_files and not all(map(_text, phase.kept.store_files.values())):
                continue  # a secret inside a binary store: its fixture would no longer read as it was mined
            boundary = str(phase.crash.boundary)
            with self._lock:
                if sig in self.known:
                    continue
                self.known.add(sig)
                recovery = phase.kind is not PhaseKind.START
                name = _name(self.root, verdict.scenario.name, boundary, recovery)
                self._save_store(name, sig, spec.kind, files, view, verdict, boundary)
                self.saved.append(name)
            names.append(name)
        return names

    def _save_store(
        self,
        name: str,
        sig: str,
        kind: str,
        files: dict[str, bytes],
        view: dict[str, Any],
        verdict: Verdict,
        boundary: str,
    ) -> None:
        folder = self.root / "store-fixtures"
        for relative, data in files.items():
            path = folder / name / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        folder.mkdir(parents=True, exist_ok=True)
        _write_json(folder / f"{name}.expected.json", {"store": kind, "view": view})
        _add_to_manifest(
            folder / "manifest.json",
            {"name": name, "store": kind, "files": name, "expected": f"{name}.expected.json"},
        )
        self._provenance(name, sig, verdict, boundary)

    def _provenance(self, name: str, sig: str, verdict: Verdict, boundary: str) -> None:
        provenance = self.root / "provenance"
        provenance.mkdir(parents=True, exist_ok=True)
        _write_json(
            provenance / f"{name}.json",
            {
                "signature": sig,
                "scenario": verdict.scenario.name,
                "boundary": boundary,
                "target": verdict.target.name,
                "targetEnv": sorted(verdict.extra_env),
                "chaosVersion": __version__,
                "verdict": {"ok": verdict.ok, "failed": sorted({c.id for c in verdict.failed})},
            },
        )

    def consider(
        self, log: bytes, current: dict[str, Any] | None, verdict: Verdict, boundary: str
    ) -> str | None:
        """Save ``log`` if its signature is new; return the fixture name, or None."""
        sig = signature(log, current)
        with self._lock:
            if sig in self.known:
                return None
            self.known.add(sig)
            name = _name(self.root, verdict.scenario.name, boundary, verdict.scenario.then_crash is not None)
            self._save(name, sig, log, current, verdict, boundary)
            self.saved.append(name)
            return name

    def _save(
        self, name: str, sig: str, log: bytes, current: dict[str, Any] | None, verdict: Verdict, boundary: str
    ) -> None:
        fixtures, planner, provenance = (
            self.root / d for d in ("fixtures", "planner-fixtures", "provenance")
        )
        for folder in (fixtures, planner, provenance):
            folder.mkdir(parents=True, exist_ok=True)
        renamed, renaming = normalize(log)
        reducer = Reducer.of(renamed)
        (fixtures / f"{name}.jsonl").write_bytes(scrub(renamed))
        _write_json(fixtures / f"{name}.expected.json", reducer.result())
        _add_to_manifest(
            fixtures / "manifest.json",
            {
                "name": name,
                "file": f"{name}.jsonl",
                "expected": f"{name}.expected.json",
                "schemaValid": schema_valid(renamed),
            },
        )
        if current is not None and reducer.state is not None and reducer.error is None:
            stable = renaming.current(current)
            _write_json(planner / f"{name}.json", {"current": stable, "sessionFile": f"{name}.jsonl"})
            _write_json(planner / f"{name}.expected.json", plan_recovery(reducer.state, stable))
            _add_to_manifest(
                planner / "manifest.json",
                {"name": name, "input": f"{name}.json", "expected": f"{name}.expected.json"},
            )
        self._provenance(name, sig, verdict, boundary)


def _text(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def kebab(text: str) -> str:
    """A fixture or scenario name: lower case, every run of other characters one dash."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _name(root: Path, scenario: str, boundary: str, recovery: bool) -> str:
    base = kebab(f"{scenario}-{'recovery-' if recovery else ''}{boundary}")
    name, n = base, 1
    while (root / "provenance" / f"{name}.json").exists():
        n += 1
        name = f"{base}-{n}"
    return name


def _write_json(path: Path, value: Any) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_bytes(scrub(orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"))
    os.replace(tmp, path)


def _add_to_manifest(path: Path, entry: dict[str, Any]) -> None:
    manifest: dict[str, Any] = (
        orjson.loads(path.read_bytes()) if path.exists() else {"version": 1, "fixtures": []}
    )
    manifest["fixtures"] = [f for f in manifest["fixtures"] if f["name"] != entry["name"]] + [entry]
    manifest["fixtures"].sort(key=lambda f: f["name"])
    _write_json(path, manifest)
