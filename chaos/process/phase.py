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
from chaos.process.record import PhaseResult
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
class Phase:
    """What one process of the run did; ``crash`` is the requested boundary, if any."""

    kind: PhaseKind
    argv: list[str]
    crash: Strike | None = None
    index: int = 0  # resumes count from 1
    returncode: int | None = None
    outcome: str | None = None
    seconds: float = 0.0
    timed_out: bool = False
    reached: bool | None = None
    late_facts: int | None = None
    exact: bool | None = None
    torn: bool = False  # the crash left a torn tail (the next write cut short)
    failed_calls: int = 0  # the log's system calls a disk fault failed (or cut short)
    failed_at: float | None = None  # when the first of them was made (epoch seconds, as the ledger's times)
    warm: bool = False  # started as a fork of a warm interpreter (chaos.process.warm), not by exec
    cold_because: str | None = None  # it was to start warm, and started cold: why
    continued: bool = False  # paused at the boundary, then let go on without a crash
    waited: bool = False  # a second writer that waited for the paused one (it was let go on meanwhile)
    wrote_early: bool = False  # a second writer that changed the log before it waited
    killed: bool = False  # chaos SIGKILLed it at its boundary (a crash, not an exit of its own)
    overtaken: bool | None = None  # overtaken: another commit came while the call was parked (False: none)
    mechanism: str | None = None  # how the stop was timed: ptrace, poll, or world (a held request or gate)
    reaped: KillReport = field(default_factory=KillReport)  # what reaping its tree found
    log_before: bytes = b""  # the log when the phase started
    log_after: bytes = b""  # the log the moment the process was gone
    requests: tuple[int, int] = (0, 0)  # the model server's requests [from, to) received during the phase
    streams: int = 0  # answers the model server streamed during the phase
    effects: list[str] = field(default_factory=list)  # effects the ledger saw start during the phase
    strays: list[str] = field(default_factory=list)  # written beside the workspace during the phase
    # Durability, where the tracer saw the syncs (None where it did not): the log's durable length when
    # the phase ended (or was cut), the log as written before a power-loss cut, and the durable length
    # at each write to the effect ledger during the phase (the ledger's lines from ``ledger_before`` on).
    durable: int | None = None
    log_written: bytes | None = None
    lost_entry: str | None = None  # a power cut took the whole log: this entry on its path was not durable
    synced_at_ledger: list[int] | None = None
    ledger_before: int = 0
    frozen: TracedProcess | None = field(default=None, repr=False)  # paused (SIGSTOP), not yet let go on
    # A framework's store (a target with a ``[store]``, ``chaos.store``) instead of a session log: its
    # files the moment the process was gone, what they made durable before and after, the commits the
    # tracer saw complete, and the tool calls durable at each write to the effect ledger.
    store_files: dict[str, bytes] = field(default_factory=dict)
    view_before: View | None = None
    view_after: View | None = None
    commits: int | None = None
    calls_at_ledger: list[list[str]] | None = None

    @property
    def name(self) -> str:
        return self.kind.named(self.index)

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

    @property
    def wrote(self) -> bool:
        """The phase changed the log at all: appended, or rewrote bytes in place."""
        return self.wrote_early or self.log_after != self.log_before

    def finishes(self) -> list[dict[str, Any]]:
        """The ``operationFinished`` records this phase appended."""
        return appended_finishes(self.log_before, self.log_after)

    def result(self) -> PhaseResult:
        """What is kept of this phase once its process is gone."""
        return PhaseResult(
            name=self.name,
            crash=str(self.crash) if self.crash else None,
            seconds=round(self.seconds, 3),
            signalled=self.reaped.signalled,
            escaped_group=self.reaped.escaped_group,
            outlived=self.reaped.outlived,
            survivors=self.reaped.survivors,
            log_before=self.committed_before,
            log_after=len(self.log_after),
            requests=self.requests[1] - self.requests[0],
            written=None if self.log_written is None else len(self.log_written),
            store_before=None if self.view_before is None else self.view_before.items,
            store_after=None if self.view_after is None else self.view_after.items,
            **{name: getattr(self, name) for name in KEPT if name != "seconds"},
        )


# The facts a phase's record keeps as the phase has them: the fields both declare, by the same name and
# type (``chaos recheck`` sets them back from a stored record). No list is kept by hand: a field added to
# both is recorded, and one the record keeps in its own form (a count of bytes for the log) is not.
_TYPES = {f.name: f.type for f in fields(Phase)}
KEPT = tuple(f.name for f in fields(PhaseResult) if _TYPES.get(f.name) == f.type)
