"""One phase of a target: one process of the run (the clean setup run of a compaction scenario, the
start, each resume, a paused writer let go on, the idempotence rerun), as data: what it did, the log
(or a framework's store) it found and left, and where its crash landed. Running one is
``chaos.process.run`` (one runner for every target); what is kept of it is ``chaos.process.record``.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field, fields
from enum import Enum
from typing import Any

from chaos.contract.framing import committed_length
from chaos.contract.reading import appended_finishes
from chaos.process.reap import KillReport
from chaos.process.record import Landed, PhaseResult, ProcessRecord, StoreRecord, WorldRecord
from chaos.process.tree import TracedProcess
from chaos.scenario.model import Strike
from chaos.store import View

ABORT = threading.Event()  # set when chaos itself is interrupted: every phase stops and kills its target


class PhaseKind(Enum):
    SETUP = "setup"  # a compaction scenario's clean run before the crashed compaction
    START = "start"  # the run that is crashed
    RESUME = "resume"  # a recovery (numbered: a recovery may itself be crashed)
    CONTINUED = "start-continued"  # a writer paused at its boundary (SIGSTOP), let go on after a resume
    AGAIN = "resume-again"  # the finished session resumed once more: must append nothing

    def named(self, index: int) -> str:
        """A phase's name in files and reports: ``resume-N`` for the N-th resume, else its kind."""
        return f"resume-{index}" if self is PhaseKind.RESUME else self.value


@dataclass
class Ran:
    """The phase's process, as the operating system saw it (and the tree handed on, paused)."""

    returncode: int | None = None
    outcome: str | None = None
    seconds: float = 0.0
    timed_out: bool = False
    killed: bool = False  # chaos SIGKILLed it at its boundary (a crash, not an exit of its own)
    warm: bool = False  # started as a fork of a warm interpreter (chaos.process.warm), not by exec
    cold_because: str | None = None  # it was to start warm, and started cold: why
    reaped: KillReport = field(default_factory=KillReport)  # what reaping its tree found
    frozen: TracedProcess | None = field(default=None, repr=False)  # paused (SIGSTOP), not yet let go on

    def record(self) -> ProcessRecord:
        return ProcessRecord(
            returncode=self.returncode,
            outcome=self.outcome,
            seconds=round(self.seconds, 3),
            timed_out=self.timed_out,
            killed=self.killed,
            warm=self.warm,
            signalled=self.reaped.signalled,
            escaped_group=self.reaped.escaped_group,
            outlived=self.reaped.outlived,
            survivors=self.reaped.survivors,
        )

    @classmethod
    def restore(cls, record: ProcessRecord) -> Ran:
        reaped = KillReport(record.signalled, record.escaped_group, record.survivors, record.outlived)
        return cls(
            record.returncode,
            record.outcome,
            record.seconds,
            record.timed_out,
            record.killed,
            record.warm,
            reaped=reaped,
        )


@dataclass
class Kept:
    """What the phase found and left durable: the session log before and after (and as written before a
    power cut took what was not synced), or a framework's store files and what its adapter reads of them;
    and what was durable at each write to the effect ledger."""

    log_before: bytes = b""  # the log when the phase started
    log_after: bytes = b""  # the log the moment the process was gone
    # Durability, where the tracer saw the syncs (None where it did not): the log's durable length when
    # the phase ended (or was cut), the log as written before a power-loss cut, and the durable length
    # at each write to the effect ledger during the phase (the ledger's lines from ``ledger_before`` on).
    durable: int | None = None
    log_written: bytes | None = None
    lost_entry: str | None = None  # a power cut took the whole log: this entry on its path was not durable
    synced_at_ledger: list[int] | None = None
    ledger_before: int = 0
    # A framework's store: its files the moment the process was gone, what they made durable before and
    # after, the commits the tracer saw complete, and the tool calls durable at each write to the ledger.
    store_files: dict[str, bytes] = field(default_factory=dict)
    view_before: View | None = None
    view_after: View | None = None
    commits: int | None = None
    writes: int = 0  # a server store's statements that wrote inside a transaction still open (the relay)
    calls_at_ledger: list[list[str]] | None = None
    calls_cut: frozenset[str] = frozenset()  # tool calls the store held as written that a power cut took
    renamed_last: str | None = None  # a store of files written whole: the one a rename made last (newest)
    # A crashed phase: the digest of everything the next phase can read (``chaos.process.state``)
    state: str | None = None

    @property
    def written(self) -> bytes:
        """The log as the process wrote it: before a power cut took what it had not synced, if one did."""
        return self.log_written if self.log_written is not None else self.log_after

    @property
    def cut(self) -> bool:
        """A power cut took bytes this process wrote (it had not synced them)."""
        return self.log_written is not None and len(self.log_written) > len(self.log_after)

    @property
    def committed_before(self) -> int:
        return committed_length(self.log_before)

    @property
    def appended(self) -> int:
        """Bytes the phase added after the committed log it started from. A torn tail it found and left
        untouched is not its own: the contract truncates it only when a session is opened for writing,
        and a phase that stops need not."""
        return 0 if self.log_after == self.log_before else len(self.log_after) - self.committed_before

    def finishes(self) -> list[dict[str, Any]]:
        """The ``operationFinished`` records this phase appended."""
        return appended_finishes(self.log_before, self.log_after)

    def record(self) -> StoreRecord:
        return StoreRecord(
            log_before=self.committed_before,
            log_after=len(self.log_after),
            written=None if self.log_written is None else len(self.log_written),
            durable=self.durable,
            ledger_before=self.ledger_before,
            synced_at_ledger=self.synced_at_ledger,
            store_before=None if self.view_before is None else self.view_before.items,
            store_after=None if self.view_after is None else self.view_after.items,
            commits=self.commits,
            writes=self.writes,
            state=self.state,
        )

    @classmethod
    def restore(cls, record: StoreRecord, before: bytes, after: bytes, written: bytes | None) -> Kept:
        """A session log's phase from its record and the log's bytes a case keeps."""
        return cls(
            before,
            after,
            record.durable,
            written,
            synced_at_ledger=record.synced_at_ledger,
            ledger_before=record.ledger_before,
            commits=record.commits,
            writes=record.writes,
            state=record.state,
        )


@dataclass
class Seen:
    """What the world saw the phase do."""

    requests: tuple[int, int] = (0, 0)  # the model server's requests [from, to) received during the phase
    streams: int = 0  # answers the model server streamed during the phase
    effects: list[str] = field(default_factory=list)  # effects the ledger saw start during the phase
    strays: list[str] = field(default_factory=list)  # written beside the workspace during the phase
    # the kinds of save its interpreter began (``chaos.store.Save``)
    saves: list[str] = field(default_factory=list)

    def record(self) -> WorldRecord:
        return WorldRecord(
            requests=self.requests[1] - self.requests[0],
            streams=self.streams,
            effects=self.effects,
            strays=self.strays,
            saves=self.saves,
        )

    @classmethod
    def restore(cls, record: WorldRecord, first_request: int) -> Seen:
        requests = (first_request, first_request + record.requests)
        return cls(requests, record.streams, record.effects, record.strays, record.saves)


@dataclass
class Phase:
    """One process of the run, made of parts that record themselves: the process (``process``), where its
    fault landed (``landing``), what it found and left durable (``kept``) and what the world saw it do
    (``seen``); ``crash`` is the requested boundary, if any."""

    kind: PhaseKind
    argv: list[str]
    crash: Strike | None = None
    index: int = 0  # resumes count from 1
    process: Ran = field(default_factory=Ran)
    landing: Landed = field(default_factory=Landed)
    kept: Kept = field(default_factory=Kept)
    seen: Seen = field(default_factory=Seen)

    @property
    def name(self) -> str:
        return self.kind.named(self.index)

    @property
    def wrote(self) -> bool:
        """The phase changed the log at all: appended, or rewrote bytes in place."""
        return self.landing.wrote_early or self.kept.log_after != self.kept.log_before

    def result(self) -> PhaseResult:
        """What is kept of this phase once its process is gone: its parts' records."""
        parts = (self.process.record(), self.landing, self.kept.record(), self.seen.record())
        return PhaseResult(
            name=self.name,
            argv=self.argv,
            crash=str(self.crash) if self.crash else None,
            **{k: v for part in parts for k, v in vars(part).items()},
        )

    @classmethod
    def restore(
        cls,
        recorded: PhaseResult,
        kind: PhaseKind,
        index: int,
        logs: tuple[bytes, bytes, bytes | None],
        first: int,
    ) -> Phase:
        """A phase from its record (``chaos recheck``): each part reads its own record back; a session
        log's bytes (before, after, as written) come from the case's files."""
        landing = Landed(**{f.name: getattr(recorded, f.name) for f in fields(Landed)})
        return cls(
            kind,
            recorded.argv,
            Strike.parse(recorded.crash) if recorded.crash else None,
            index,
            Ran.restore(recorded),
            landing,
            Kept.restore(recorded, *logs),
            Seen.restore(recorded, first),
        )
