"""Crash-prefix signatures and normalized fixtures: what recovery depends on, and nothing else.

A prefix's *signature* keeps what recovery depends on (the sequence of fact
kinds and record types with attempt numbers, stop reasons, replay policies,
synthetic reasons, abort and compaction state, a torn tail, the reducer's
verdict and the plan it leads to) and ignores ids, timestamps, paths and
texts, so two crashes that recovery cannot tell apart share one. Mining saves
one fixture per signature; grouping names failures by it.

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
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from chaos.contract import ContractError, Reducer, plan_recovery
from chaos.contract.facts import source_digest
from chaos.contract.framing import committed_facts, committed_length, facts_of
from chaos.contract.kinds import kind_of

UUID = re.compile(rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
STAMP = re.compile(rb'"(timestamp|createdAt)":(\d+)')
BASE_TIME = 1_700_000_000_000


def fact_shape(fact: dict[str, Any]) -> list[Any]:
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


def plan_shape(plan: dict[str, Any] | None) -> list[Any] | None:
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


def action_shape(fact: dict[str, Any]) -> list[Any]:
    """What an appended fact did, without where it was (a call's index, how many calls an answer had)."""
    shape = fact_shape(fact)
    if shape[0] == "toolStarted":
        return [shape[0], shape[2]]  # its replay policy
    if shape[0].startswith("entry:"):
        return [shape[0], shape[2], shape[3]]  # a result's type and reason
    return shape


def signature(log: bytes, current: dict[str, Any] | None) -> str:
    """What recovery depends on in ``log``, hashed; equal for crashes recovery cannot tell apart."""
    reducer = Reducer.of(log)
    result = reducer.result()
    error = result.get("error")
    plan = plan_recovery(reducer.state, current) if current and result["ok"] and reducer.state else None
    shape = [
        [fact_shape(f) for f in committed_facts(log, reducer.line)],
        len(log) > committed_length(log),  # a torn tail
        error["code"] if error else None,
        plan_shape(plan),
    ]
    return hashlib.sha256(orjson.dumps(shape)).hexdigest()[:20]


def host_values() -> list[tuple[str, bytes]]:
    """The host's own paths chaos hands the agent (its ``PATH``, the interpreter, the user's home), each
    with the name a fixture shows instead, longest first."""
    values = {os.environ.get("PATH", ""): b"$PATH", sys.executable: b"python", str(Path.home()): b"~"}
    return sorted(((v, n) for v, n in values.items() if len(v) > 1), key=lambda pair: -len(pair[0]))


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
        for value, name in host_values():  # what the agent was given of the host (a tool printed it)
            data = data.replace(orjson.dumps(value)[1:-1], name)
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
