"""Watching a growing session log until a durable boundary is committed.

The log is read as it grows and every complete line goes through the
incremental reducer, so the boundary is judged on committed facts only, never
on a torn tail. A ``Boundary`` names a fact kind or record type, optional field
filters and the n-th occurrence.
"""

from __future__ import annotations

import glob
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from chaos.contract import ContractError, Reducer


@dataclass(frozen=True)
class Boundary:
    """``what`` is a record type (``toolStarted``), ``entry:<stopReason>``, ``entry:tool`` or ``usage``."""

    what: str
    where: dict[str, Any] = field(default_factory=dict)  # e.g. {"toolName": "read"}
    nth: int = 1

    def matches(self, fact: dict[str, Any]) -> bool:
        if fact["kind"] == "record":
            body = fact["record"]
            name = body["type"]
        elif fact["kind"] == "entry":
            body = fact["entry"]
            message = body.get("message", {})
            name = "entry:" + (body.get("stopReason") or message.get("role") or body["type"])
        else:
            body, name = fact, "usage"
        return name == self.what and all(body.get(k) == v for k, v in self.where.items())

    def __str__(self) -> str:
        filters = "".join(f"[{k}={v}]" for k, v in self.where.items())
        return f"{self.what}{filters}#{self.nth}"


@dataclass
class Watch:
    """Follows one log file (found by glob) and counts boundary matches in committed lines.

    Counting stops at the first line the reducer rejects (kept in ``error``): a fact
    after corruption is not a durable boundary.
    """

    log_glob: str
    boundary: Boundary
    reducer: Reducer = field(default_factory=Reducer)
    seen: int = 0
    offset: int = 0
    path: Path | None = None
    pending: bytes = b""
    error: ContractError | None = None

    def poll(self) -> bool:
        """Read what was appended; True once the n-th matching fact is committed."""
        if self.path is None:
            found = sorted(glob.glob(self.log_glob))
            if not found:
                return False
            self.path = Path(found[0])
        with self.path.open("rb") as handle:
            handle.seek(self.offset)
            data = handle.read()
        self.offset += len(data)
        text = self.pending + data
        cut = text.rfind(b"\n") + 1
        self.pending = text[cut:]
        for line in text[:cut].splitlines():
            if self.error is not None:
                break
            try:
                self.reducer.append_line(line)
            except ContractError as err:
                self.error = err
                break
            value = orjson.loads(line)
            for fact in value if isinstance(value, list) else [value]:
                if isinstance(fact, dict) and "seq" in fact and self.boundary.matches(fact):
                    self.seen += 1
        return self.seen >= self.boundary.nth

    def overshoot(self, prefix: bytes) -> int:
        """How many committed facts of ``prefix`` follow the n-th boundary match (0: an exact kill)."""
        seen, after = 0, 0
        for line in prefix[: prefix.rfind(b"\n") + 1].splitlines()[1:]:
            value = orjson.loads(line)
            for fact in value if isinstance(value, list) else [value]:
                if seen >= self.boundary.nth:
                    after += 1
                elif self.boundary.matches(fact):
                    seen += 1
        return after

    def wait(self, alive: Any, timeout: float, interval: float = 0.002) -> bool:
        """Poll until the boundary, the process ends (``alive()`` false) or the timeout."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.poll():
                return True
            if not alive():
                return self.poll()
            time.sleep(interval)
        return False
