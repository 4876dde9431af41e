"""Crash states, not crash points: each crash state's recovery run once, and judged for every case that
left that state.

ALICE and CrashMonkey bound their work by the distinct states a crash can leave. Two cases whose crashed
starts left the same state (``chaos.process.state``: the log, every other file of the workspace, the
effects the world ran and the model's asks per step, up to the names each run chose) feed their resumes
the same inputs, and a resume is a deterministic function of its inputs. The first case to reach a state
(its representative) runs the recovery; a later one keeps its own start, its own crash and every check of
its own, and takes the representative's recovery with the representative's names made its own: its
session's ids (matched by the order they first appear in the two crash prefixes) and its sandbox's
paths. Where renaming cannot make that recovery this case's (a recovery that rewrote the prefix, crash
prefixes of other lengths, a world that holds more than the state said), the case runs its own.

Shared only where everything a recovery meets is in the state: a session log's agent whose tools run in
its own processes (no MCP server with a state of its own, no approval signed with a world's own key).
``verify`` runs every case in full as well, and the case compares its own verdict with the shared one
(``chaos sweep --crash-states verify``): a difference is chaos's own fault.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import orjson

from chaos.ledger import entries as read_ledger
from chaos.process.phase import Kept, Phase, PhaseKind
from chaos.process.state import UUID
from chaos.world.world import World

MODES = ("shared", "every", "verify")  # ``--crash-states``: share recoveries, run every one, or both


@dataclass(frozen=True)
class Recovery:
    """Everything a representative's recovery made, from the end of its crashed start on."""

    case: str  # the representative, as its verdict names it
    prefix: bytes  # its crash prefix
    places: tuple[bytes, ...]  # its workspace and its sandbox, as its bytes name them
    phases: tuple[Phase, ...]  # every phase after its start
    ledger: tuple[dict[str, Any], ...]  # the ledger's lines from its first resume on
    requests: tuple[dict[str, Any], ...]  # the model's requests from its first resume on
    ledger_from: int  # the ledger's lines when its first resume began
    requests_from: int  # the model's requests when its first resume began
    attempts: dict[str, int]  # the model's asks per step when its run ended

    def renamed(self, prefix: bytes, places: tuple[bytes, ...]) -> Recovery | None:
        """This recovery as the case whose crash prefix is ``prefix`` (in a sandbox at ``places``) would have
        made it, or None where renaming cannot (the two prefixes differ in length or in ids)."""
        ours, theirs = _ids(self.prefix), _ids(prefix)
        if len(prefix) != len(self.prefix) or len(ours) != len(theirs):
            return None
        names = dict(zip(ours, theirs, strict=True))
        pairs = [(old, new) for old, new in zip(self.places, places, strict=True) if old and old != new]

        def rename(data: bytes) -> bytes:
            for old, new in pairs:
                data = data.replace(old, new)
            return UUID.sub(lambda m: names.get(m.group(0).lower(), m.group(0)), data)

        phases = []
        for phase in self.phases:
            kept = _kept(phase.kept, self.prefix, prefix, rename)
            if kept is None:
                return None
            phases.append(_phase(phase, kept, lambda text: rename(text.encode()).decode()))
        return replace(
            self,
            prefix=prefix,
            places=places,
            phases=tuple(phases),
            ledger=tuple(orjson.loads(rename(orjson.dumps(e))) for e in self.ledger),
            requests=tuple(orjson.loads(rename(orjson.dumps(r))) for r in self.requests),
        )


def _ids(log: bytes) -> list[bytes]:
    """The UUIDs of ``log``, each once, in the order they first appear (as ``canonical_log`` numbers them)."""
    seen: dict[bytes, None] = {}
    for match in UUID.finditer(log):
        seen.setdefault(match.group(0).lower(), None)
    return list(seen)


def _kept(kept: Kept, was: bytes, prefix: bytes, rename: Callable[[bytes], bytes]) -> Kept | None:
    """A later phase's logs with the representative's crash prefix ``was`` replaced by ``prefix`` and what
    the phase appended renamed; None where a log does not begin with that prefix (it was rewritten)."""
    logs: list[bytes | None] = []
    for log in (kept.log_before, kept.log_after, kept.log_written):
        if log is None:
            logs.append(None)
            continue
        if not log.startswith(was):
            return None
        logs.append(prefix + rename(log[len(was) :]))
    before, after, written = logs
    assert before is not None and after is not None
    return replace(kept, log_before=before, log_after=after, log_written=written)


def _phase(phase: Phase, kept: Kept, rename: Callable[[str], str]) -> Phase:
    """A later phase of the representative's, as this case's: its command line, its logs and the paths
    it wrote beside the workspace renamed."""
    landing = replace(phase.landing, damaged=rename(phase.landing.damaged) if phase.landing.damaged else None)
    return replace(
        phase,
        argv=[rename(part) for part in phase.argv],
        process=replace(phase.process, frozen=None),
        landing=landing,
        kept=kept,
        seen=replace(phase.seen, strays=[rename(path) for path in phase.seen.strays]),
    )


def places_of(world: World) -> tuple[bytes, ...]:
    """How a world's bytes name its sandbox: its workspace, then its root."""
    return (str(world.box.workspace).encode(), str(world.box.root).encode())


@dataclass
class _Slot:
    done: threading.Event = field(default_factory=threading.Event)
    recovery: Recovery | None = None  # None once done: it made nothing another case can take


@dataclass
class Shares:
    """A sweep's crash states and the recovery each one's representative ran (``MODES``)."""

    mode: str = "shared"
    wait: float = 300.0  # seconds a case waits for a representative still recovering
    compared: int = 0  # (verify) cases judged on both recoveries, their own and the one they would take
    _slots: dict[tuple[str, ...], _Slot] = field(default_factory=dict)
    _claims: dict[int, _Slot] = field(default_factory=dict)  # a running representative's world -> its slot
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def said(self) -> list[str]:
        """What a sweep's summary says of its crash states where it verified them."""
        if self.mode != "verify":
            return []
        return [
            f"crash states verified: {self.compared} case(s) judged on their own recovery and on the one "
            "an earlier case with the same crash state ran, alike"
        ]

    @staticmethod
    def key(world: World, start: Phase) -> tuple[str, ...] | None:
        """The crash state ``start`` left, as a case of this world's scenario and target; None where a
        recovery meets more than the state holds, or nothing was crashed."""
        target, scenario = world.target, world.scenario
        if (
            not target.facts
            or target.mcp is not None
            or target.approve is not None
            or start.kind is not PhaseKind.START
            or start.kept.state is None
            or start.process.frozen is not None
        ):
            return None
        then = str(scenario.then_crash) if scenario.then_crash else ""
        return (target.name, scenario.name, str(scenario.change), then, start.kept.state)

    def take(self, world: World, start: Phase) -> Recovery | None:
        """The recovery of ``start``'s crash state as this world's, where another case ran it; None where
        this case is to run its own (the first to reach the state claims it: ``offer`` then keeps it).
        Under ``verify`` always None: the case runs in full, and ``compare`` says what it would have taken."""
        key = self.key(world, start)
        if key is None or self.mode == "every":
            return None
        with self._lock:
            slot = self._slots.get(key)
            if slot is None:
                self._slots[key] = self._claims[id(world)] = _Slot()
                return None
        if self.mode == "verify":
            return None
        slot.done.wait(self.wait)
        return self._as(world, start, slot)

    def compare(self, world: World, start: Phase) -> Recovery | None:
        """Under ``verify``: what this case would have taken, where a representative other than itself
        had finished its recovery; otherwise None."""
        key = self.key(world, start)
        slot = self._slots.get(key) if key is not None and self.mode == "verify" else None
        if slot is None or self._claims.get(id(world)) is slot or not slot.done.is_set():
            return None
        recovery = self._as(world, start, slot)
        if recovery is not None:
            with self._lock:
                self.compared += 1
        return recovery

    @staticmethod
    def _as(world: World, start: Phase, slot: _Slot) -> Recovery | None:
        """The slot's recovery renamed for ``world``, where its world holds what the representative's did
        when its recovery began (the same ledger lines, the same requests)."""
        recovery = slot.recovery
        if recovery is None or not slot.done.is_set():
            return None
        lines = len(read_ledger(world.box.ledger, world.approval_key))
        if lines != recovery.ledger_from or len(world.server.requests) != recovery.requests_from:
            return None
        return recovery.renamed(start.kept.log_after, places_of(world))

    def offer(
        self,
        world: World,
        case: str,
        phases: list[Phase],
        ledger: list[dict[str, Any]],
        requests: list[dict[str, Any]],
        attempts: dict[str, int],
    ) -> None:
        """The recovery a representative ran, kept for the cases that reach its state after it (a run
        whose recovery timed out is not: a timeout is no function of the state alone)."""
        slot = self._claims.get(id(world))
        start = next((p for p in phases if p.kind is PhaseKind.START), None)
        if slot is None or start is None:
            return
        later = tuple(phases[phases.index(start) + 1 :])
        if later and not any(p.process.timed_out for p in later):
            first = later[0]
            slot.recovery = Recovery(
                case,
                start.kept.log_after,
                places_of(world),
                later,
                tuple(ledger[first.kept.ledger_before :]),
                tuple(requests[first.seen.requests[0] :]),
                first.kept.ledger_before,
                first.seen.requests[0],
                dict(attempts),
            )
        slot.done.set()

    def release(self, world: World) -> None:
        """Whatever ended this world's case, the cases waiting on a state it claimed wait no longer."""
        with self._lock:
            slot = self._claims.pop(id(world), None)
        if slot is not None:
            slot.done.set()
