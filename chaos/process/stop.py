"""The stop policy of one phase: when the boundary is reached, and how the target is stopped.

A ``Trigger`` arms one boundary in the world before the phase starts: a
durable boundary is judged on the committed log with the target stopped at
its next write (see ``chaos.process.ptrace``); an in-flight boundary is one the
world holds exactly (the model server keeps a request, or a streamed answer
after its first events; a ledger gate keeps an effect). A ``Stopper`` then
decides, at every trap (``at_trap``, durable boundaries) or tick of the phase
loop (``tick``, world-held ones), and carries the stop out through one path,
``fire``, which asks the case's fault (``chaos.fault``) what to do and offers
it the mechanisms: kill the whole tree, deliver the target's abort signal,
freeze the tree for a second writer, tear the next write, abort then kill at
the next fact, or let the process go on while the world misbehaves (a model
server's answer; the log's writes or syncs failing from here, through the
tracer); optionally after a person decided at a pause.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from chaos.errors import UsageError
from chaos.fault import FAULTS
from chaos.fault.base import EffectLine, Injection, Landing, Trap, TrapKind
from chaos.ledger import LedgerError
from chaos.ledger import entries as read_ledger
from chaos.process import ptrace
from chaos.process.commits import Commits, reached
from chaos.process.durability import Model
from chaos.process.tree import TracedProcess
from chaos.process.watch import Watch
from chaos.scenario.model import Boundary, Strike
from chaos.store import Save, View
from chaos.world.world import World

Decide = Callable[[], str]  # asks a person at a pause: "kill", "continue" or "quit"
# the tracer's tags as a fault's injection sees them (``chaos.fault.Trap``)
KINDS: dict[int, TrapKind] = {
    ptrace.WRITE: "write",
    ptrace.WRITEV: "writev",
    ptrace.SYNC_ENTRY: "sync-entry",
    ptrace.SYNC: "sync",
    ptrace.RANGE: "sync",
    ptrace.ALL: "sync",
    ptrace.AFTER: "after",
    ptrace.EXIT: "exit",
}


@dataclass
class Trigger:
    world: World
    crash: Strike
    watch: Watch | None = None  # durable boundaries
    request: int | None = None  # the held model request's number
    stream: int | None = None  # the held streamed answer's number
    gate: str | None = None  # the ledger gate, e.g. deploy.during#2

    @classmethod
    def arm(cls, world: World, crash: Strike) -> Trigger:
        """Prepare the world so the boundary's ``nth`` occurrence *in this phase* is caught."""
        boundary = crash.boundary
        if boundary.what == "model-request":
            number = len(world.server.requests) + boundary.nth
            world.server.hold_request(number)
            return cls(world, crash, request=number)
        if boundary.what == "model-stream":
            number = world.server.streams + boundary.nth
            world.server.hold_stream(number, int(boundary.where.get("chunks", 1)))
            return cls(world, crash, stream=number)
        if boundary.what == "save":  # counted by the phase's own interpreter, from 1
            return cls(world, crash, gate=f"save.{boundary.where['kind']}#{boundary.nth}")
        if boundary.in_flight:
            effect = boundary.where["effect"]
            done = sum(
                1 for e in read_ledger(world.box.ledger) if e["effect"] == effect and e["phase"] == "start"
            )
            moment = "during" if boundary.what == "effect-running" else "after"
            return cls(world, crash, gate=f"{effect}.{moment}#{done + boundary.nth}")
        watch = Watch(world.log_glob, boundary)
        watch.skip_existing()
        return cls(world, crash, watch=watch)

    @property
    def durable(self) -> bool:
        return self.watch is not None

    @property
    def saving(self) -> bool:
        """The boundary is a save the framework begins (held in its interpreter, ``chaos.store.Save``)."""
        return self.crash.boundary.what == "save"

    def gates(self) -> list[str]:
        return [self.gate] if self.gate else []

    def reached(self) -> bool:
        if self.watch is not None:
            return self.watch.poll()
        if self.request is not None:
            return len(self.world.server.requests) >= self.request
        if self.stream is not None:
            return self.world.server.stream_held(self.stream)
        assert self.gate is not None
        return self.world.box.waiting(self.gate)

    def held(self) -> bool:
        """For an in-flight boundary: the world still holds it (no answer sent, the gate still shut)."""
        if self.request is not None:
            server = self.world.server
            return server.misbehaved(self.request) or server.still_held(self.request)
        if self.stream is not None:
            return self.world.server.stream_held(self.stream)
        return (
            self.gate is not None
            and self.world.box.waiting(self.gate)
            and not self.world.box.released(self.gate)
        )

    def late_facts(self) -> int:
        """Committed facts after the boundary when the target stopped (0: an exact kill)."""
        if self.watch is None:
            return 0
        self.watch.poll()
        return self.watch.after

    def disarm(self) -> None:
        """Let held requests and gates go, so nothing of this phase blocks the next."""
        self.world.server.release_requests()
        if self.gate:
            self.world.box.release(self.gate)


class Stopper:
    """Decides at each trap or tick whether the boundary is reached, and carries out the case's fault
    there (one path: ``fire``). It is the fault's ``Stop``: the mechanisms a fault may ask for; what the
    fault keeps from then on is its ``Injection``'s (``chaos.fault``), told of each trap, commit and tick."""

    def __init__(
        self,
        world: World,
        trigger: Trigger | None,
        crash: Strike | None,
        abort_signal: int,
        pause: Decide | None,
        model: Model,
        base: View | None = None,
    ) -> None:
        self.trigger, self.pause = trigger, pause
        self.model = model  # the store's durability model: every trap goes to it first
        # A framework's store: its commits seen at the traps, the boundary among them (a commit, a call or
        # output made durable), the store the phase started from, and the store after each commit.
        self.commits = model if isinstance(model, Commits) else None
        commits = self.commits
        boundary = crash.boundary if crash is not None else None
        self.at_commit = (
            boundary if commits is not None and boundary is not None and boundary.in_store else None
        )
        self.base = base or View()
        self.world = world  # its servers, as a fault may fail them (``chaos.fault.WorldServers``)
        self.views: list[View] = []  # the store after each commit (for a call- or output-durable boundary)
        self.begun_at_stop = 0
        self.fault = crash.fault if crash is not None else FAULTS["kill"]
        self.abort_signal = abort_signal
        self.proc: TracedProcess | None = None
        self.stopped = False  # the boundary was reached and the fault carried out
        self.killed = False  # the tree got SIGKILL: a crash
        self.frozen = False  # the tree was frozen for a second writer
        self.injection: Injection | None = None  # the fault in force from its boundary on (its own state)
        self.held_at_stop: bool | None = None  # in-flight: the world still held the boundary at the stop
        self.late: int | None = None  # durable: facts committed past the boundary when the fault landed
        self.choice = ""  # at a pause: kill / continue / quit
        self._lock = threading.Lock()
        self._wire = threading.Lock()  # one commit on the wire at a time (the relay serves each connection)
        self._asking = threading.Event()  # the tracer thread waits at the boundary for a person
        self._answered = threading.Event()

    def attach(self, proc: TracedProcess) -> None:
        self.proc = proc

    @property
    def continued(self) -> bool:
        return self.choice == "continue"

    # -- the mechanisms a fault asks for (chaos.fault.Stop) --------------------------------------------
    def kill(self) -> None:
        assert self.proc is not None
        self.killed = True
        self.proc.kill()

    def abort(self) -> None:
        assert self.proc is not None
        self.proc.signal(self.abort_signal)

    def terminate(self) -> None:
        assert self.proc is not None
        self.proc.signal_group(signal.SIGTERM)

    def freeze(self) -> None:
        assert self.proc is not None
        self.frozen = True
        self.proc.signal_group(signal.SIGSTOP)  # the whole tree frozen, as a paused machine

    def go_on(self) -> None:
        """The process goes on: the world's fault (armed before the phase) does the rest."""

    def let_go(self) -> None:
        if self.trigger is not None:
            self.trigger.disarm()

    @property
    def exact(self) -> bool:
        return self.proc is not None and self.proc.exact

    def land(self) -> None:
        if self.trigger is not None:
            self.late = self.trigger.late_facts()

    def stores(self, path: str) -> bool:
        return self.model.holds(path)

    def watch_facts(self) -> Watch | None:
        if self.commits is not None:
            return None
        assert self.trigger is not None and self.trigger.watch is not None
        watch = Watch(self.trigger.watch.log_glob, Boundary("any"))
        watch.skip_existing()
        return watch

    def commits_made(self, by: float | None = None) -> int:
        if self.commits is None:
            raise UsageError(f"{self.fault}: the target keeps no store whose commits chaos sees ([store])")
        return self.commits.count if by is None else self.commits.made_by(by)

    def held_since(self) -> float:
        assert self.trigger is not None and self.trigger.gate is not None
        return self.trigger.world.box.waited_since(self.trigger.gate)

    def held_save(self) -> tuple[str, int] | None:
        if self.trigger is None or not self.trigger.saving:
            return None
        boundary = self.trigger.crash.boundary
        return str(boundary.where["kind"]), boundary.nth

    def held_effect(self) -> tuple[str, int] | None:
        gate = self.trigger.gate if self.trigger is not None else None
        if gate is None or self.trigger is None or self.trigger.crash.boundary.what != "effect-done":
            return None
        name, _, occurrence = gate.rpartition("#")
        return name.rpartition(".")[0], int(occurrence)

    def effect_lines(self) -> list[EffectLine]:
        try:
            lines = read_ledger(self.world.box.ledger)
        except LedgerError:
            return []
        return [
            EffectLine(str(e["effect"]), str(e.get("callId", "")), str(e["phase"]), float(e.get("time") or 0))
            for e in lines
            if isinstance(e.get("time", 0), (int, float))
        ]

    def saves_begun(self) -> list[tuple[str, int, str]]:
        return self.world.box.saves()

    def begin_first_in_recovery(self) -> None:
        held = self.held_save()
        assert held is not None
        key = next((key for kind, n, key in self.saves_begun() if (kind, n) == held), "")
        if key:
            self.world.box.begin_first(held[0], key)

    @property
    def declared_saves(self) -> tuple[Save, ...]:
        return self.world.store.saves

    def trapped_file(self, trap: Trap) -> tuple[str, int]:
        return ptrace.written_file(trap.pid)

    def fail(self, trap: Trap, error: int) -> None:
        ptrace.fail_call(trap.pid, error)

    def shorten(self, trap: Trap, count: int) -> None:
        ptrace.shorten_write(trap.pid, count)

    def drop_unsynced(self) -> None:
        self.model.drop_unsynced()

    def landing(self) -> Landing:
        return self.injection.landing() if self.injection is not None else Landing()

    def hold(self, pid: int) -> float:
        """How long the tracer keeps ``pid`` stopped at this trap: a store's commit's write, on a slow disk
        or held by the fault in force."""
        if self.commits is None or not self.commits.committing(pid):
            return 0.0
        return self.commits.delay + (self.injection.hold() if self.injection is not None else 0.0)

    @property
    def late_commits(self) -> int:
        """Commit frames begun after a store's commit boundary was reached: 0 is an exact kill."""
        assert self.commits is not None
        return self.commits.begun - self.begun_at_stop if self.stopped else 0

    # -- durable boundaries: called by the tracer with the trapping process stopped ---------------
    def at_trap(self, pid: int, tag: int) -> bool:
        """One path for every store: its durability model sees the trap first (a log's syncs, a store's
        commits and syncs), then the fault in force, if the boundary was reached; else the boundary is
        judged (a log's facts here; a store's commits as its model completes them)."""
        asked = self._observe(pid, tag)
        if self.stopped and self.injection is not None:
            return self.injection.at_trap(self, Trap(pid, KINDS.get(tag, "other"))) or asked
        if self.commits is not None or tag == ptrace.SYNC_ENTRY:
            return asked  # a sync is judged when it returns, once the bytes are durable
        return self._judge(pid, tag) or asked

    def _observe(self, pid: int, tag: int) -> bool:
        """The store's durability model at a trap: whether to stop the call again when it returns."""
        asked, committed = self.model.observe(pid, tag)
        if committed:
            self._committed()
        return asked

    def _committed(self) -> None:
        """A commit was just made (the ``commits.count``-th): is it the boundary?"""
        assert self.commits is not None
        if self.injection is not None:
            self.injection.committed(self)
        boundary = self.at_commit
        if boundary is None or self.stopped or boundary.what == "write":
            return
        if boundary.what != "commit":
            self.views.append(self.commits.view())
        if reached(boundary, self.commits.count, self.views, self.base):
            self.begun_at_stop = self.commits.begun
            self.fire()

    def at_wire_commit(self) -> bool:
        """The world's relay holds a server store's answer to a commit (the relay's thread; the agent waits
        for it): judged as any commit, and on a slow disk held its time. Whether the answer may go on (no:
        the agent was killed here, and never learns of its commit)."""
        assert self.commits is not None
        with self._wire:
            self.commits.over_wire()
            time.sleep(self.commits.delay + (self.injection.hold() if self.injection is not None else 0.0))
            self._committed()
            return not self.killed

    def at_wire_write(self) -> bool:
        """The world's relay holds the answer to a statement that wrote inside a transaction still open (a
        server store; not committed): the boundary where it is the one a ``write`` boundary names. Whether
        the answer may go on."""
        assert self.commits is not None
        with self._wire:
            self.commits.write_over_wire()
            boundary = self.at_commit
            if boundary is not None and boundary.what == "write" and boundary.nth == self.commits.writes:
                self.fire()
            return not self.killed

    def settle(self) -> None:
        """Wait out a commit the relay is deciding: a server crash restarts the server under it, and the
        agent, its connection cut, may be gone before the new server answers. The store is read after
        that, never while its server is down."""
        with self._wire:
            pass

    def _judge(self, pid: int, tag: int) -> bool:
        if self.stopped or self.continued or self.trigger is None or not self.trigger.durable:
            return False
        if not self.trigger.reached():
            return False
        if self.pause is not None:
            self._hold_for_decision()
            if self.choice != "kill":
                if self.choice == "quit":
                    self.kill()
                    self.stopped = True
                return False
        self.fire()
        if self.injection is not None:  # the call that trapped is the first the fault in force meets
            return self.injection.at_trap(self, Trap(pid, KINDS.get(tag, "other")))
        return False

    def _hold_for_decision(self) -> None:
        """Freeze the target at the boundary until a person decides. Traced, it is already stopped at
        the trap; polled, it gets SIGSTOP (and SIGCONT if it may go on)."""
        assert self.proc is not None
        if not self.proc.exact:
            self.proc.signal_group(signal.SIGSTOP)
        self._asking.set()
        self._answered.wait()
        if not self.proc.exact and self.continued:
            self.proc.signal_group(signal.SIGCONT)

    # -- the phase loop: world-held boundaries and decisions ---------------------------------------
    def tick(self) -> None:
        if self._asking.is_set() and not self._answered.is_set():
            assert self.pause is not None
            self.choice = self.pause()
            self._answered.set()
            return
        if self.injection is not None:
            self.injection.tick(self)
            return
        trigger = self.trigger
        if self.stopped or self.continued or trigger is None or trigger.durable or not trigger.reached():
            return
        choice = self.pause() if self.pause is not None else "kill"  # the world holds the target meanwhile
        self.choice = choice
        if choice == "continue":
            trigger.disarm()
            return
        self.fire()

    # -- the one stop path ---------------------------------------------------------------------------
    def fire(self) -> None:
        with self._lock:
            if self.stopped or self.proc is None:
                return
            if self.trigger is not None and not self.trigger.durable:
                self.held_at_stop = self.trigger.held()
            elif self.trigger is not None:
                self.late = self.trigger.late_facts()
            self.stopped = True
            self.injection = self.fault.stop(self)

    def acted(self) -> None:
        """Wait until a fault carried out at this moment (in the tracer's or the watcher's thread) has acted:
        ``stopped`` is set as it starts, and the tree is frozen or killed by the time it returns."""
        with self._lock:
            pass

    def release(self) -> None:
        """Unblock a tracer thread waiting for a decision (chaos is stopping)."""
        with contextlib.suppress(Exception):
            self._answered.set()
