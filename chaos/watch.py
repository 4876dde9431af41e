"""Watching a growing session log until a durable boundary is committed.

The log is read as it grows and every complete line goes through the
incremental reducer, so the boundary is judged on committed facts only, never
on a torn tail. A ``Boundary`` names a fact kind or record type, optional field
filters and the n-th occurrence.
"""

from __future__ import annotations

import glob
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from chaos.contract import ContractError, Reducer
from chaos.contract.framing import committed_length, committed_lines, facts_of

RECORDS = (
    "runStarted",
    "stepAttempt",
    "stepFailed",
    "toolStarted",
    "compactionStarted",
    "abortRequested",
    "operationFinished",
)
ENTRIES = ("entry:user", "entry:stop", "entry:toolUse", "entry:length", "entry:tool", "entry:compaction")
# Boundaries the world holds exactly: a model request the server keeps in flight, an
# effect held at its ledger gate while running, or done with its result not yet durable.
IN_FLIGHT = ("model-request", "effect-running", "effect-done")
KINDS = ("header", "any", *RECORDS, *ENTRIES, "usage", *IN_FLIGHT)
_SYNTAX = re.compile(r"^(?P<what>[A-Za-z:-]+)(?P<filters>(\[[^\]=]+=[^\]]*\])*)(#(?P<nth>\d+))?$")


def kind_of(fact: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """A fact's boundary kind and the body its field filters read."""
    if fact["kind"] == "record":
        return fact["record"]["type"], fact["record"]
    if fact["kind"] == "entry":
        body = fact["entry"]
        message = body.get("message", {})
        return "entry:" + (body.get("stopReason") or message.get("role") or body["type"]), body
    return fact["kind"], fact  # usage, or the header


def durable_boundaries(appended: bytes, with_header: bool) -> list[Boundary]:
    """One boundary per committed transaction of ``appended`` (named by its first fact), in order.

    Counting is per phase, as ``Watch`` counts, so ``appended`` is what one
    phase wrote; ``with_header`` when that phase created the log.
    """
    seen: dict[str, int] = {}
    out = [Boundary("header")] if with_header else []
    lines = committed_lines(appended)
    for line in lines[1:] if with_header else lines:
        facts = facts_of(orjson.loads(line))
        for fact in facts:
            name = kind_of(fact)[0]
            seen[name] = seen.get(name, 0) + 1
            if fact is facts[0]:
                out.append(Boundary(name, {}, seen[name]))
    return out


def _value(text: str) -> Any:
    return int(text) if text.isdigit() else text


@dataclass(frozen=True)
class Boundary:
    """A point in a run to crash at: the ``nth`` fact of kind ``what`` whose fields match ``where``.

    ``what`` is a record type (``toolStarted``), an entry (``entry:<stopReason>``,
    ``entry:user``, ``entry:tool`` for a tool result, ``entry:compaction``), ``usage``,
    ``header`` (the log exists, no transaction yet), ``any`` (the n-th fact, whatever it is),
    or an in-flight boundary (``model-request``, ``effect-running[effect=deploy]``).
    Written as text: ``toolStarted[toolName=bash]#2``.
    """

    what: str
    where: dict[str, Any] = field(default_factory=dict)  # e.g. {"toolName": "read"}
    nth: int = 1

    def __post_init__(self) -> None:
        if self.what not in KINDS:
            raise ValueError(f"{self.what!r} is not a boundary; use one of: {', '.join(KINDS)}")
        if self.nth < 1:
            raise ValueError(f"occurrence must be 1 or more, got {self.nth}")
        if self.what.startswith("effect-") and set(self.where) != {"effect"}:
            raise ValueError(
                f"{self.what} needs exactly the filter [effect=NAME], e.g. {self.what}[effect=deploy]"
            )

    @classmethod
    def parse(cls, text: str, nth: int | None = None) -> Boundary:
        """Read ``what[key=value]...#n``; an explicit ``nth`` wins over ``#n``."""
        match = _SYNTAX.match(text.strip())
        if not match:
            raise ValueError(
                f"{text!r} is not a boundary; write it as kind[field=value]#n, e.g. toolStarted[toolName=bash]#2"
            )
        where = {
            key.strip(): _value(value.strip())
            for key, value in re.findall(r"\[([^\]=]+)=([^\]]*)\]", match.group("filters"))
        }
        count = nth if nth is not None else int(match.group("nth") or 1)
        return cls(match.group("what"), where, count)

    @property
    def in_flight(self) -> bool:
        return self.what in IN_FLIGHT

    def matches(self, fact: dict[str, Any]) -> bool:
        name, body = kind_of(fact)
        if self.what == "any":
            return name != "header" and all(body.get(k) == v for k, v in self.where.items())
        return name == self.what and all(body.get(k) == v for k, v in self.where.items())

    def __str__(self) -> str:
        filters = "".join(f"[{k}={v}]" for k, v in self.where.items())
        return f"{self.what}{filters}#{self.nth}"


@dataclass
class Watch:
    """Follows one log file (found by glob) and counts boundary matches in committed lines.

    Counting stops at the first line the reducer rejects (kept in ``error``): a fact
    after corruption is not a durable boundary. ``after`` counts the committed
    facts of the transactions after the one holding the n-th match: 0 means the
    target stopped exactly there (a transaction is atomic, so its other facts
    land with it).
    """

    log_glob: str
    boundary: Boundary
    reducer: Reducer = field(default_factory=Reducer)
    seen: int = 0
    after: int = 0
    offset: int = 0
    path: Path | None = None
    pending: bytes = b""
    error: ContractError | None = None

    def _read(self) -> bytes:
        if self.path is None:
            found = sorted(glob.glob(self.log_glob))
            if not found:
                return b""
            self.path = Path(found[0])
        try:
            if os.stat(self.path).st_size == self.offset:
                return b""  # nothing appended since the last look (the common case at a trap)
        except FileNotFoundError:
            return b""
        with self.path.open("rb") as handle:
            handle.seek(self.offset)
            data = handle.read()
        self.offset += len(data)
        text = self.pending + data
        cut = committed_length(text)
        self.pending = text[cut:]
        return text[:cut]

    def skip_existing(self) -> None:
        """Judge what is already committed without counting it, and forget any torn tail.

        A resume phase counts its own occurrences, and it truncates a torn
        tail before appending, so reading resumes at the committed length.
        """
        committed = self._read()
        try:
            for line in committed.split(b"\n")[:-1]:
                self.reducer.append_line(line)
        except ContractError as err:
            self.error = err
        self.offset -= len(self.pending)
        self.pending = b""

    def poll(self) -> bool:
        """Read what was appended; True once the n-th matching fact is committed."""
        for line in self._read().split(b"\n")[:-1]:
            if self.error is not None:
                break
            try:
                self.reducer.append_line(line)
            except ContractError as err:
                self.error = err
                break
            facts = facts_of(orjson.loads(line))
            if self.seen >= self.boundary.nth:
                self.after += len(facts)
                continue
            self.seen += sum(1 for fact in facts if self.boundary.matches(fact))
        return self.seen >= self.boundary.nth
