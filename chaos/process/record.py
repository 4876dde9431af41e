"""A phase as it is kept: the record a case's ``verdict.json`` and a sweep's journal hold of each process
(``PhaseResult``). A field it shares with ``chaos.process.phase.Phase`` by name and type is kept as the
phase has it (``chaos recheck`` sets it back); the others are the record's own form of a fact."""

from __future__ import annotations

from dataclasses import MISSING, asdict, dataclass, fields
from typing import Any


@dataclass(frozen=True)
class PhaseResult:
    """One process of the run, as recorded."""

    name: str
    argv: list[str]
    crash: str | None
    returncode: int | None
    outcome: str | None
    seconds: float
    timed_out: bool
    reached: bool | None
    late_facts: int | None
    exact: bool | None
    mechanism: str | None
    torn: bool
    failed_calls: int
    continued: bool
    waited: bool
    signalled: list[int]
    escaped_group: list[int]
    outlived: list[int]
    survivors: list[int]
    log_before: int
    log_after: int
    requests: int
    streams: int
    effects: list[str]
    strays: list[str]
    durable: int | None
    written: int | None
    # what judging the phase again needs (chaos recheck); an older verdict.json lacks them
    killed: bool = False
    wrote_early: bool = False
    ledger_before: int = 0
    synced_at_ledger: list[int] | None = None
    # a framework's store (a target with a ``[store]``): items its view held before and after, and the
    # commits the tracer saw complete (None: no store, or not traced)
    store_before: int | None = None
    store_after: int | None = None
    commits: int | None = None
    failed_at: float | None = None  # when the first of its failed calls was made (epoch seconds)
    warm: bool = False  # started as a fork of a warm interpreter (chaos.process.warm), not by exec
    overtaken: bool | None = None  # the overtaken fault: another commit came while the call was parked

    def to_json(self) -> dict[str, Any]:
        return {camel(k): v for k, v in asdict(self).items()}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PhaseResult:
        return cls(
            **{
                f.name: data[camel(f.name)] if f.default is MISSING else data.get(camel(f.name), f.default)
                for f in fields(cls)
            }
        )


def camel(name: str) -> str:
    """A field's name in the JSON files chaos writes (``timed_out`` -> ``timedOut``)."""
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)
