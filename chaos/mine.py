"""Mining: every crash prefix not seen before becomes a fixture in the golden corpus's own layout.

A prefix's *signature* keeps what recovery depends on (the sequence of fact
kinds and record types with attempt numbers, stop reasons, replay policies,
synthetic reasons, abort and compaction state, a torn tail, the reducer's
verdict and the plan it leads to) and ignores ids, timestamps, paths and
texts, so two crashes that recovery cannot tell apart are mined once.

Saved fixtures are *normalized*: ids become ``018f0000-0000-7000-8000-N``,
timestamps a fixed sequence, the workspace path ``/workspace`` and the
environment identity ``fixture``; every ``sourceDigest`` is recomputed, so
the fixture reduces to the same state modulo that renaming, diffs cleanly and
leaks no host path.
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

from chaos import __version__
from chaos.contract import ContractError, Reducer, plan_recovery
from chaos.contract.facts import source_digest
from chaos.contract.framing import committed_facts, committed_length, facts_of
from chaos.cycle import Verdict
from chaos.watch import kind_of

UUID = re.compile(rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
STAMP = re.compile(rb'"(timestamp|createdAt)":(\d+)')
BASE_TIME = 1_700_000_000_000


def _fact_shape(fact: dict[str, Any]) -> list[Any]:
    name, body = kind_of(fact)
    shape: list[Any] = [name]
    if name == "stepAttempt":
        shape += [body["attempt"], body["stepKind"]]
    elif name == "toolStarted":
        shape += [body["toolIndex"], body["replay"]]
    elif name.startswith("entry:"):
        message = body.get("message", {})
        result = body.get("result", {})
        shape += [len(message.get("tool_calls") or []), result.get("type"), result.get("reason")]
    elif name in ("abortRequested", "operationFinished", "stepFailed"):
        shape += [
            body.get("phase"),
            body.get("outcome"),
            body.get("completion"),
            body.get("error", {}).get("code"),
        ]
    return shape


def _plan_shape(plan: dict[str, Any] | None) -> list[Any] | None:
    if plan is None:
        return None
    reasons = [r["reason"] for r in plan.get("results", [])]
    return [
        plan["type"],
        plan.get("mode"),
        plan.get("reason"),
        plan.get("attempt"),
        plan.get("outcome"),
        reasons,
    ]


def signature(log: bytes, current: dict[str, Any] | None) -> str:
    """What recovery depends on in ``log``, hashed; equal for crashes recovery cannot tell apart."""
    reducer = Reducer.of(log)
    result = reducer.result()
    error = result.get("error")
    plan = plan_recovery(reducer.state, current) if current and result["ok"] and reducer.state else None
    shape = [
        [_fact_shape(f) for f in committed_facts(log, reducer.line)],
        len(log) > committed_length(log),  # a torn tail
        error["code"] if error else None,
        _plan_shape(plan),
    ]
    return hashlib.sha256(orjson.dumps(shape)).hexdigest()[:20]


@dataclass
class Renaming:
    """The stable names of one log: ids by first appearance, timestamps in order, paths and identity."""

    header: dict[str, Any]
    ids: dict[bytes, bytes] = field(default_factory=dict)
    stamps: int = 0

    def _id(self, match: re.Match[bytes]) -> bytes:
        old = match.group(0)
        if old not in self.ids:
            self.ids[old] = b"018f0000-0000-7000-8000-%012x" % (len(self.ids) + 1)
        return self.ids[old]

    def _stamp(self, match: re.Match[bytes]) -> bytes:
        self.stamps += 1
        return b'"%s":%d' % (match.group(1), BASE_TIME + 1000 * self.stamps)

    def apply(self, data: bytes) -> bytes:
        cwd = self.header.get("cwd", "")
        identity = self.header.get("environmentIdentity", "")
        if cwd:
            data = data.replace(orjson.dumps(cwd)[1:-1], b"/workspace")
            data = data.replace(orjson.dumps(str(Path(cwd).parent))[1:-1], b"/sandbox")
        if identity:
            data = data.replace(
                b'"environmentIdentity":' + orjson.dumps(identity), b'"environmentIdentity":"fixture"'
            )
        return STAMP.sub(self._stamp, UUID.sub(self._id, data))

    def current(self, current: dict[str, Any]) -> dict[str, Any]:
        same = current["environmentIdentity"] == self.header.get("environmentIdentity")
        return {**current, "environmentIdentity": "fixture" if same else "fixture-changed"}


def normalize(log: bytes) -> tuple[bytes, Renaming]:
    """Rename ``log`` to stable values and recompute the compaction digests that cover renamed ids."""
    first = log[: log.find(b"\n")] if b"\n" in log else log
    renaming = Renaming(orjson.loads(first))
    renamed = renaming.apply(log)
    lines = renamed.split(b"\n")
    reducer = Reducer()
    for index, line in enumerate(lines[:-1]):
        if index and b'"compactionStarted"' in line and reducer.state is not None:
            facts = facts_of(orjson.loads(line))
            for fact in facts:
                if fact.get("record", {}).get("type") == "compactionStarted":
                    fact["record"]["sourceDigest"] = source_digest(reducer.state)
            lines[index] = orjson.dumps(facts if len(facts) > 1 else facts[0])
        try:
            reducer.append_line(lines[index])
        except ContractError:
            break  # a corrupt log keeps its corruption; nothing after it is judged
    return b"\n".join(lines), renaming


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

    def mine(self, case: Any, verdict: Verdict) -> None:
        """A sweep hook: mine the crash prefixes of one finished case."""
        current_path = verdict.folder / "current.json"
        current = orjson.loads(current_path.read_bytes()) if current_path.exists() else None
        prefixes = [("prefix.jsonl", verdict.scenario.crash)]
        if verdict.scenario.then_crash is not None:
            prefixes.append(("resume-1.jsonl", verdict.scenario.then_crash))
        for file, crash in prefixes:
            path = verdict.folder / file
            if path.exists() and path.stat().st_size:
                self.consider(path.read_bytes(), current, verdict, str(crash.boundary) if crash else "clean")

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
        (fixtures / f"{name}.jsonl").write_bytes(renamed)
        _write_json(fixtures / f"{name}.expected.json", reducer.result())
        _add_to_manifest(
            fixtures / "manifest.json",
            {"name": name, "file": f"{name}.jsonl", "expected": f"{name}.expected.json", "schemaValid": True},
        )
        if current is not None and reducer.state is not None and reducer.error is None:
            stable = renaming.current(current)
            _write_json(planner / f"{name}.json", {"current": stable, "sessionFile": f"{name}.jsonl"})
            _write_json(planner / f"{name}.expected.json", plan_recovery(reducer.state, stable))
            _add_to_manifest(
                planner / "manifest.json",
                {"name": name, "input": f"{name}.json", "expected": f"{name}.expected.json"},
            )
        _write_json(
            provenance / f"{name}.json",
            {
                "signature": sig,
                "scenario": verdict.scenario.name,
                "boundary": boundary,
                "target": verdict.target.name,
                "targetEnv": verdict.extra_env,
                "chaosVersion": __version__,
            },
        )


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
    tmp.write_bytes(orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n")
    os.replace(tmp, path)


def _add_to_manifest(path: Path, entry: dict[str, Any]) -> None:
    manifest = orjson.loads(path.read_bytes()) if path.exists() else {"version": 1, "fixtures": []}
    manifest["fixtures"] = [f for f in manifest["fixtures"] if f["name"] != entry["name"]] + [entry]
    manifest["fixtures"].sort(key=lambda f: f["name"])
    _write_json(path, manifest)
