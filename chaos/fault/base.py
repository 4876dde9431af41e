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
- what it arms before the phase (``arm``: the model server's misbehaviour);
- what it keeps and does after the boundary (the ``Injection`` its ``stop`` returns: its own state, and
  hooks for each trap, commit and tick, a commit it holds, and its landing record);
- what it does to the log once the process is gone (``cuts_to_synced``: what a power cut keeps), and to
  the store at rest before the resume reads it (``at_rest``: bytes lost or changed);
- which checks it makes meaningful (``enables``), each with a fail-table row that shows it catching;
- where the default sweep's fault matrix lands it (``matrix``, ``in_recovery``).

``Strike(boundary, fault)`` names a fault by its registry name, which is also its spelling on the command
line (``--fault NAME``) and in a scenario file (``fault = "NAME"``).
"""

from __future__ import annotations

import errno
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar, Literal, NamedTuple, Protocol

from chaos.fault.damage import Damage
from chaos.store.base import Save

# Where the fault matrix lands a fault among one phase's boundaries (``chaos.case.matrix.place``)
Placement = Literal[
    "every", "durable", "each-write", "first-write", "between-calls", "each-request", "retry-request"
]
# Boundaries the world holds exactly: a model request the server keeps in flight, an effect held at its
# ledger gate while running, or done with its result not yet durable, a save held as the framework begins it.
IN_FLIGHT = ("model-request", "model-stream", "effect-running", "effect-done", "save")


# What a trap is, as a fault's injection sees it: the call the traced process stopped at
TrapKind = Literal["write", "writev", "sync-entry", "sync", "after", "exit", "other"]


class EffectLine(NamedTuple):
    """A line of the effect ledger, as a fault reads it: which effect, for which call, its start or its end
    (``done``), and when (epoch seconds, the agent's clock)."""

    effect: str
    call: str
    phase: str
    time: float


@dataclass(frozen=True)
class Trap:
    """A system call the tracer stopped a process of the target at (``pid``), by its kind."""

    pid: int
    kind: TrapKind


class Stop(Protocol):
    """The mechanisms the engine offers a fault at its boundary and after it: what it may do to the target,
    to the world, and to the trapped system call, and what it may read of the phase. A fault keeps no
    state here: what it must remember is its ``Injection``'s."""

    @property
    def killed(self) -> bool:
        """The tree got SIGKILL (by this fault or the phase's end)."""

    @property
    def exact(self) -> bool:
        """The target is traced: it is stopped at each trap, so a fault acts at an exact system call."""

    def kill(self) -> None:
        """SIGKILL the whole tree now: a crash."""

    def abort(self) -> None:
        """Deliver the target's abort signal to it (it handles it itself)."""

    def freeze(self) -> None:
        """SIGSTOP the whole tree and hand it on: a second writer resumes meanwhile."""

    def terminate(self) -> None:
        """SIGTERM to every process of the tree (a supervisor's stop); it runs its own code on it."""

    def go_on(self) -> None:
        """No stop: the fault is the world's (the model server's answer, a failing disk)."""

    def land(self) -> None:
        """The fault lands now, past its boundary: the facts committed meanwhile are its own (counted)."""

    @property
    def world(self) -> WorldServers:
        """The world's servers, as a fault may fail them."""

    def let_go(self) -> None:
        """The world lets the boundary it holds go on (the held request answered, the gate opened)."""

    def stores(self, path: str) -> bool:
        """``path`` is one of the files the agent makes durable: its session log, or its store's (a
        database, its WAL or rollback journal, a file of lines)."""

    def watch_facts(self) -> FactWatch | None:
        """A watch of the facts the agent commits to its log from now on (None for a framework's store:
        its commits are told to the injection, ``Injection.committed``)."""

    def commits_made(self, by: float | None = None) -> int:
        """The store's commits completed in the phase (by the moment ``by``, epoch seconds)."""

    def held_since(self) -> float:
        """When the world began to hold the boundary (a call parked at its gate; epoch seconds)."""

    def trapped_file(self, trap: Trap) -> tuple[str, int]:
        """The file the trapped call names (its path) and the byte count it asks for."""

    def fail(self, trap: Trap, error: int) -> None:
        """The trapped call is not made: it returns ``-error`` to the target."""

    def shorten(self, trap: Trap, count: int) -> None:
        """The trapped write asks for ``count`` bytes only: it comes back short."""

    def drop_unsynced(self) -> None:
        """The kernel dropped the store's dirty pages: nothing unsynced counts from here."""

    def held_save(self) -> tuple[str, int] | None:
        """The save held as it began, its kind and number, where the boundary is one (None otherwise)."""

    def held_effect(self) -> tuple[str, int] | None:
        """The effect held at its end (``effect-done``), its name and its occurrence in the ledger (the n-th
        start line of its name), where the boundary is one (None otherwise)."""

    def effect_lines(self) -> list[EffectLine]:
        """The effect ledger's lines so far, in order (none where it holds a line chaos cannot read: the
        checks say so)."""

    def saves_begun(self) -> list[tuple[str, int, str]]:
        """The saves the target's interpreter began in the phase, in order: kind, number, key."""

    def begin_first_in_recovery(self) -> None:
        """The save held here begins before the rest of its kind when the run is recovered (parallel work
        that takes its place in the store as it begins, ``Save.passes``: the other order)."""

    @property
    def declared_saves(self) -> tuple[Save, ...]:
        """Where the target's store adapter says the framework begins its saves (``chaos.store.Save``)."""


class WorldServers(Protocol):
    """The world's servers as a fault may fail them while they serve the case: each handle is None where
    the world runs no such server (the fault then says why it cannot land)."""

    @property
    def restart_tools(self) -> Callable[[], None] | None:
        """The MCP server (over HTTP) restarts, losing the call it holds and every session."""

    @property
    def spoil_tool_answer(self) -> Callable[[str], None] | None:
        """The MCP server answers the call it holds badly once it has run (``error``, ``cut``,
        ``session-lost``)."""

    def restart_server(self, server: str) -> Callable[[], None] | None:
        """The server the store lives on crashes (the commit it holds is made, its answer lost) and restarts
        on the same data, where it is ``server`` ("postgres", "temporal": ``chaos.store.Store.server``)."""

    @property
    def cut_database_connections(self) -> Callable[[], None] | None:
        """Every connection to the database server is cut (the commit it holds is made, its answer lost);
        the server lives."""


class FactWatch(Protocol):
    def poll(self) -> bool:
        """A fact was committed since the watch began."""


@dataclass
class Landing:
    """What a fault's injection says of how it landed, for the verdict and the report."""

    torn: bool = False  # a write to the log was cut short before the kill
    overtaken: bool | None = None  # another commit came while a call was parked (None: not asked)
    out_of_order: str | None = None  # a save began while one it must follow was held: which, and the promise
    failed_calls: int = 0  # system calls failed (or cut short)
    failed_at: float | None = None  # when the first was made (epoch seconds)


class Injection:
    """A fault in force in one phase, from its boundary on: it keeps its own state, reacts to what the
    phase does next (a trap of the traced target, a commit of the store, a tick of the phase loop, a
    commit's write the tracer may hold), and says how it landed. A fault's ``stop`` returns one when it
    does more than act once at its boundary; each hook's default does nothing."""

    def at_trap(self, stop: Stop, trap: Trap) -> bool:
        """A trap after the boundary (and the one that reached it): whether to stop the call again when it
        returns (``after``)."""
        return False

    def committed(self, stop: Stop) -> None:
        """The store just made a commit (the tracer's or the relay's thread)."""

    def tick(self, stop: Stop) -> None:
        """A tick of the phase loop (every few milliseconds)."""

    def hold(self) -> float:
        """Seconds the store's next commit is held before it is made (its writer stopped at the commit's
        write, or its answer at the relay), on top of a slow disk's."""
        return 0.0

    def landing(self) -> Landing:
        return Landing()


class After(Injection):
    """Once ``seconds`` have passed since the boundary, ``then`` acts, once (at a tick of the phase loop):
    the world lets its hold go, or the tree is killed at the end of a grace period."""

    def __init__(self, seconds: float, then: Callable[[Stop], None]) -> None:
        self.until, self.then, self.done = time.monotonic() + seconds, then, False

    def tick(self, stop: Stop) -> None:
        if not self.done and time.monotonic() >= self.until:
            self.done = True
            self.then(stop)


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


class Failing(Injection):
    """A disk fault in force: from the boundary on, the system calls on the store's files (a session log,
    a database and its WAL or journal) fail as ``how`` says (the trap that reached the boundary is the
    first); the agent sees the error."""

    def __init__(self, how: FailingCalls) -> None:
        self.how, self.failed = how, 0
        self.failed_at: float | None = None

    def at_trap(self, stop: Stop, trap: Trap) -> bool:
        how = self.how
        kind = {"write": "write", "writev": "writev", "sync-entry": "sync"}.get(trap.kind)
        if kind is None or kind not in how.calls or not stop.stores(stop.trapped_file(trap)[0]):
            return False
        if how.once and self.failed:
            return False
        if how.error is not None:
            stop.fail(trap, how.error)
            if how.drops_unsynced:
                stop.drop_unsynced()  # the kernel may drop the dirty pages: nothing more counts
        else:
            count = stop.trapped_file(trap)[1]
            if count < 2:
                return False
            stop.shorten(trap, count // 2)
        self.failed += 1
        if self.failed_at is None:
            self.failed_at = time.time()
        return False

    def landing(self) -> Landing:
        return Landing(failed_calls=self.failed, failed_at=self.failed_at)


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
        if what == "save":
            return f"{self.name} does not land where a save begins (overtaken holds a save)"
        if what == "write" and not self.mid_transaction:
            return (
                f"{self.name} does not land inside an open transaction (a crash there leaves the state of the "
                "commit before it); postgres-crash and connection-lost do: the transaction is lost"
            )
        in_flight = what in IN_FLIGHT
        if self.places == "durable" and in_flight:
            return f"{self.name} lands at a durable boundary (a committed fact), not at {what}"
        if self.places == "in-flight" and not in_flight:
            return f"{self.name} lands at an in-flight boundary ({', '.join(IN_FLIGHT)}), not at {what}"
        if self.places == "model-request" and what != "model-request":
            return f"{self.name} lands at a model-request boundary, not at {what}"
        return None

    # lands inside a transaction a server store has open (``write``: the server loses it, uncommitted)
    mid_transaction: ClassVar[bool] = False
    on_stores: ClassVar[bool] = False  # lands on a framework agent's store too (``chaos.store``)
    on_server_stores: ClassVar[bool] = True  # ... and on one on a database server (it fails no call here)

    def unavailable_on_store(self, commit: str = "sqlite", server: str | None = None) -> str | None:
        """Why this fault cannot land on a framework agent judged on its store, or None when it can (each
        fault says so itself: a fault that needs a session log's facts cannot; one that fails the agent's
        system calls on its store's files needs them on this machine). ``commit``: how the store commits
        (``chaos.store.Store.commit``; "wire" for a store on a server), ``server``: the server it lives on
        (``chaos.store.Store.server``: "postgres", "temporal"; None: files here)."""
        if not self.on_stores:
            return (
                f"the {self.name} fault needs a session log (its facts and its lines), and a framework's store "
                "has none"
            )
        if commit == "wire" and not self.on_server_stores:
            return (
                f"the {self.name} fault fails the agent's own system calls on its store's files, and a store "
                "on a database server has none on this machine (its disk is the server's; postgres-crash "
                "crashes the server)"
            )
        return None

    def unavailable_on_log(self) -> str | None:
        """Why this fault cannot land on an agent judged on its session log (no store), or None when it can
        (a fault of a database server's has no server to crash there)."""
        return None

    def arm(self, arming: Arming) -> None:
        """Before the phase: nothing, for a fault that only stops the target."""

    def at_rest(self, files: dict[str, bytes], renamed_last: str | None = None) -> Damage | None:
        """Once the crashed process is gone and its crash prefix is saved: what the disk does to the
        store's files (path -> bytes, as the crash kept them; ``renamed_last``: in a store of files
        written whole, the one a rename made last, which their bytes cannot tell) before the resume reads
        them (None: nothing; ``chaos.fault.damage``)."""
        return None

    def stop(self, stop: Stop) -> Injection | None:
        """At the boundary: act through ``stop``'s mechanisms; return the injection that carries the fault
        on from here (None: nothing more to do)."""
        raise NotImplementedError

    def __str__(self) -> str:
        return self.name
