"""Watching a growing session log until a durable boundary is committed.

The log is read as it grows and every complete line goes through the
incremental reducer, so the boundary is judged on committed facts only, never
on a torn tail.
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from chaos.contract import ContractError, Reducer
from chaos.contract.framing import committed_length, committed_lines, facts_of
from chaos.contract.kinds import kind_of
from chaos.scenario.model import Boundary


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
