"""The ``Fault`` interface: one kind of trouble a case inflicts at its boundary (after etcd's failpoints).

A fault is policy; the engine offers the mechanisms through the small protocols below, so a fault module
says *what* happens and *when*, never *how* a process is stopped or a syscall is failed:

- where it applies (``applies_to``): durable boundaries (a committed fact), in-flight ones (a model
  request or an effect the world holds), or only model requests;
- what the target must declare (``needs``: an abort on a signal), and whether it needs the tracer
  (``traced``: to see syncs, or to fail a system call);
- what it does at the boundary (``stop``): kill the tree, deliver the abort signal, freeze the writer
  for a second one, let the next write through half-way, or let the process go on while the world
  misbehaves;
- what it arms before the phase (``arm``: the model server's misbehaviour, a system call to fail);
- what it does to the log once the process is gone (``keeps``: what a power cut keeps);
- which checks it makes meaningful (``enables``), each with a fail-table row that shows it catching;
- where the default sweep's fault matrix lands it (``matrix``, ``in_recovery``).

``Crash(boundary, fault)`` names a fault by its registry name, which is also its spelling on the command
line (``--fault NAME``) and in a scenario file (``fault = "NAME"``).
"""

from __future__ import annotations

import errno
from dataclasses import dataclass
from typing import ClassVar, Literal, Protocol

# Where the fault matrix lands a fault among one phase's boundaries (``chaos.case.matrix.place``)
Placement = Literal[
    "every", "durable", "each-write", "first-write", "between-calls", "each-request", "retry-request"
]
IN_FLIGHT = ("model-request", "model-stream", "effect-running", "effect-done")


class Stop(Protocol):
    """What a fault may do to the target at its boundary (the stop policy carries it out)."""

    def kill(self) -> None:
        """SIGKILL the whole tree now: a crash."""

    def abort(self) -> None:
        """Deliver the target's abort signal to it (it handles it itself)."""

    def freeze(self) -> None:
        """SIGSTOP the whole tree and hand it on: a second writer resumes meanwhile."""

    def tear(self) -> None:
        """Let the next write to the log through half-way, then kill: a torn tail the agent wrote."""

    def abort_then_kill(self) -> None:
        """Deliver the abort signal, then kill at the next fact the agent commits."""

    def go_on(self) -> None:
        """No stop: the fault is the world's (the model server's answer, a failing disk)."""

    def restart_tools(self) -> None:
        """No stop: the world's MCP server restarts, losing the call it holds; the process goes on."""

    def spoil_answer(self, how: str) -> None:
        """No stop: the world's MCP server spoils the answer of the call it holds (``error``, ``cut``,
        ``session-lost``); the process goes on."""

    def restart_database(self) -> None:
        """No stop: the world's database server crashes (the commit it holds is made, its answer lost) and
        restarts; the process goes on."""

    def kill_at_next_commit(self, wait: float) -> None:
        """Keep the held call parked at its gate while the rest of the process goes on, and SIGKILL the
        tree at the store's next commit; after ``wait`` seconds with none, SIGKILL it anyway (the order
        was not reached)."""


@dataclass(frozen=True)
class Misbehaviour:
    """How the model server answers the held request instead (the world carries it out as told): what it
    sends after a 200 (nothing, a body that is not JSON, half the answer, the whole, the whole twice), at
    what pace, and how the connection ends."""

    name: str  # the fault's name: what the request log records
    sends: Literal["nothing", "not-json", "half", "whole", "twice"]
    ends: Literal["open", "close", "reset"] = "open"  # left open, closed, or reset (RST)
    seconds_per_byte: float = 0.0  # a trickle: one byte at a time


@dataclass(frozen=True)
class FailingCalls:
    """Which of the log's system calls the tracer fails from the boundary on, and how: with ``error``
    (an errno), or cut short to half (``error`` None); every such call or only the first (``once``).
    An fsync that fails may drop the dirty pages (``drops_unsynced``): nothing unsynced counts after."""

    calls: frozenset[Literal["write", "writev", "sync"]]
    error: int | None
    once: bool = False
    drops_unsynced: bool = False


ENOSPC, EIO = errno.ENOSPC, errno.EIO


class Arming(Protocol):
    """What a fault may arm in the world before the phase."""

    def misbehave(self, how: Misbehaviour) -> None:
        """The model server answers the held request ``how`` instead."""

    def fail_syscalls(self, how: FailingCalls) -> None:
        """The tracer fails the log's system calls ``how`` from the boundary on."""


class Fault:
    name: ClassVar[str]  # the registry key; --fault NAME; fault = "NAME"
    summary: ClassVar[str]  # one line: what it models
    places: ClassVar[str] = "durable"  # durable | in-flight | model-request | anywhere
    needs: ClassVar[tuple[str, ...]] = ()  # capabilities the target must declare
    traced: ClassVar[bool] = False  # needs the tracer (it sees syncs, or fails system calls)
    enables: ClassVar[tuple[str, ...]] = ()  # checks this fault makes meaningful
    crashes: ClassVar[bool] = True  # the process is gone at the boundary, and a resume recovers
    cuts_to_synced: ClassVar[bool] = False  # once the process is gone, the log keeps only synced bytes
    hands_on: ClassVar[bool] = False  # the frozen writer is handed on, to be let go on after a second
    lands_after: ClassVar[int] = 0  # facts the agent commits past the boundary before the fault lands
    withholds: ClassVar[bool] = False  # keeps an answer from arriving in time: the agent's deadline ends it
    # Where the default sweep's fault matrix lands it (``chaos.case.matrix``): at every boundary it applies
    # to ("every"), at every durable one ("durable"), at the first boundary of each kind of write
    # ("each-write"), between two tool calls ("between-calls"), at the first model request of each kind
    # ("each-request"), or nowhere (None: a scenario that names it runs it as written). ``in_recovery``:
    # where it lands in a recovery (a second crash, depth 2): "each-write", "first-write" (the recovery's
    # first write, its plan's own), "retry-request" (the recovery's retried attempt's request: a run never
    # retries a request itself, the contract makes a failed one a ``stepFailed``) or None.
    matrix: ClassVar[Placement | None] = None
    in_recovery: ClassVar[Placement | None] = None

    def applies_to(self, what: str) -> str | None:
        """Why this fault cannot land at a boundary of kind ``what``, or None when it can."""
        in_flight = what in IN_FLIGHT
        if self.places == "durable" and in_flight:
            return f"{self.name} lands at a durable boundary (a committed fact), not at {what}"
        if self.places == "in-flight" and not in_flight:
            return f"{self.name} lands at an in-flight boundary ({', '.join(IN_FLIGHT)}), not at {what}"
        if self.places == "model-request" and what != "model-request":
            return f"{self.name} lands at a model-request boundary, not at {what}"
        return None

    on_stores: ClassVar[bool] = False  # lands on a framework agent's store too (``chaos.store``)

    def unavailable_on_store(self, commit: str = "sqlite-wal") -> str | None:
        """Why this fault cannot land on a framework agent judged on its store, or None when it can (each
        fault says so itself: a fault that needs a session log's facts, or its writes, cannot). ``commit``:
        how the store commits (``chaos.store.Store.commit``; "wire" for a store on a database server)."""
        if self.on_stores:
            return None
        return (
            f"the {self.name} fault needs a session log (its facts, or the writes the tracer fails), and a "
            "framework's store has none yet"
        )

    def unavailable_on_log(self) -> str | None:
        """Why this fault cannot land on an agent judged on its session log (no store), or None when it can
        (a fault of a database server's has no server to crash there)."""
        return None

    def arm(self, arming: Arming) -> None:
        """Before the phase: nothing, for a fault that only stops the target."""

    def stop(self, stop: Stop) -> None:
        raise NotImplementedError

    def __str__(self) -> str:
        return self.name
