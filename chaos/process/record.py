"""A phase as it is kept: the record a case's ``verdict.json`` and a sweep's journal hold of each process
(``PhaseResult``). It is the parts' own records side by side (``chaos.process.phase``): what the process
did (``ProcessRecord``), where its fault landed (``Landed``, the same in a live phase and in its record),
what it left durable (``StoreRecord``) and what the world saw it do (``WorldRecord``); each part writes
its record and reads it back, and no field is declared twice."""

from __future__ import annotations

from dataclasses import MISSING, asdict, dataclass, field, fields
from typing import Any


@dataclass(kw_only=True)
class ProcessRecord:
    """The process, as the operating system saw it."""

    returncode: int | None
    outcome: str | None
    seconds: float
    timed_out: bool
    # what reaping its tree found (``chaos.process.reap.KillReport``)
    signalled: list[int]
    escaped_group: list[int]
    outlived: list[int]
    survivors: list[int]
    # (an older verdict.json lacks these)
    killed: bool = False  # chaos SIGKILLed it at its boundary (a crash, not an exit of its own)
    warm: bool = False  # started as a fork of a warm interpreter (chaos.process.warm), not by exec


@dataclass(kw_only=True)
class Landed:
    """Where the phase's fault landed, and what a second writer did: a live phase's part and its record
    alike."""

    reached: bool | None = None
    late_facts: int | None = None
    exact: bool | None = None
    mechanism: str | None = None  # how the stop was timed: ptrace, poll, wire, or world (a held request)
    torn: bool = False  # the crash left a torn tail (the next write cut short)
    failed_calls: int = 0  # the store's system calls a disk fault failed (or cut short)
    failed_at: float | None = None  # when the first of them was made (epoch seconds, as the ledger's)
    overtaken: bool | None = None  # overtaken: another commit came while the call was parked (False: none)
    # overtaken at a save: the save that began while one it must follow was held
    out_of_order: str | None = None
    continued: bool = False  # paused at the boundary, then let go on without a crash
    waited: bool = False  # a second writer that waited for the paused one (it was let go on meanwhile)
    wrote_early: bool = False  # a second writer that changed the log before it waited
    damaged: str | None = None  # what a fault did to the store at rest once the process was gone


@dataclass(kw_only=True)
class StoreRecord:
    """What the phase found and left durable, in sizes: the session log's committed bytes before and
    after (and as written before a power cut, and its durable length), a framework store's items."""

    log_before: int
    log_after: int
    written: int | None
    durable: int | None
    # (an older verdict.json lacks these)
    ledger_before: int = 0  # the effect ledger's lines when the phase began
    synced_at_ledger: list[int] | None = None  # the log's durable length at each ledger write
    store_before: int | None = None  # items the store's view held before and after
    store_after: int | None = None
    commits: int | None = None  # the store's commits the tracer saw complete (None: not traced)
    writes: int = 0  # a server store's statements that wrote inside a transaction still open (the relay)
    state: str | None = None  # a crashed phase: the digest of what the next one reads (chaos.process.state)


@dataclass(kw_only=True)
class WorldRecord:
    """What the world saw the phase do."""

    requests: int  # model requests received
    streams: int  # answers streamed
    effects: list[str]  # effects the ledger saw start
    strays: list[str]  # files written beside the workspace
    saves: list[str] = field(default_factory=list)  # the kinds of save its interpreter began, in order


@dataclass(kw_only=True)
class PhaseResult(ProcessRecord, Landed, StoreRecord, WorldRecord):
    """One process of the run, as recorded: its name, command and crash, and its parts' records."""

    name: str
    argv: list[str]
    crash: str | None

    def to_json(self) -> dict[str, Any]:
        return {camel(k): v for k, v in asdict(self).items()}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PhaseResult:
        return cls(
            **{
                f.name: data[camel(f.name)]
                if f.default is MISSING and f.default_factory is MISSING
                else data.get(
                    camel(f.name), f.default if f.default_factory is MISSING else f.default_factory()
                )
                for f in fields(cls)
            }
        )


def camel(name: str) -> str:
    """A field's name in the JSON files chaos writes (``timed_out`` -> ``timedOut``)."""
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)
