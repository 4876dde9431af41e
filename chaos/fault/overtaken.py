"""``overtaken``: one call's output made durable after another's, in an agent that runs the calls of an
answer at once (a framework's parallel tool calls). At the end of the call's effect (``effect-done``,
its tool not yet returned) its thread is parked at the world's gate while the rest of the process goes
on; the tree is killed at the first commit the store makes after that (another call's output, or
whatever the framework writes next): the crash prefix holds the later call's work and not the parked
one's, an order the unhindered run does not take. Where nothing commits while the call is parked (the
calls of an answer are written together, as one task) and the process goes on to further work (an
effect of another name begins: another call's tool returned, and the step after it begun), the parked
call is let go: it returns last, and the tree is killed at the next commit, which writes them together
in that order (Temporal's local activities, recorded as markers when their workflow task completes: a
new worker must replay the order the task recorded). Where neither comes, the order cannot be reached:
the process is killed at the wait's end, as ``kill`` would, and the phase says the order was not
reached.

The same policy holds a save as the framework begins it (a ``save`` boundary: a checkpointer's write run
by a background thread, where the store's adapter names one, ``chaos.store.Save``): the thread waits in
the agent's interpreter before the save takes any lock, and every save that begins after it waits
behind it. Where a save the framework promises to begin only after the held one is done (about the
same record: LangGraph's next checkpoint after a task's writes) begins meanwhile, the order is broken: the
tree is killed there, that save not made, and the landing says which (``saved-in-order`` judges it);
where none begins within 5 s the order is unreachable. A save no other is promised to follow is killed
at once, held: there is no order to explore. Parallel work that takes its place as it begins
(``Save.passes``: Pydantic AI's tool call, whose DBOS step is numbered as it starts) is held alone, the
rest going on, and killed at the store's next commit, as a parked call is; the recovery then begins it
first, so the numbers fall in the other order (a recovered step is handed its number's output).

Sweeping it (``--fault overtaken``) explores, for each call of a parallel answer, the order in which it
finishes last, and for each save, the saves that can overtake it; the summary counts the orders it
reached."""

from __future__ import annotations

import time

from chaos.fault.base import EffectLine, Fault, Injection, Landing, Stop
from chaos.store.base import Save

WAIT = 3.0  # seconds the parked call waits for another commit before the order is called unreachable
SAVE_WAIT = 5.0  # seconds a held save waits for a save promised to follow it (a loaded machine is slow)


def went_on(lines: list[EffectLine], held: tuple[str, int], since: float) -> bool:
    """Since ``since``, the process went on to further work: an effect of another name than the one
    ``held`` (its name and occurrence) began, for another call than the held one (or for none)."""
    effect, occurrence = held
    starts = [line for line in lines if line.effect == effect and line.phase == "start"]
    if len(starts) < occurrence:
        return False
    parked = starts[occurrence - 1].call
    return any(
        line.phase == "start" and line.time > since and line.effect != effect and line.call != parked
        for line in lines
    )


class Parked(Injection):
    """The call stays parked at its gate; the tree is killed once another commit came meanwhile. Where
    none came and another call went on past its effect, the call is let go (it returns last) and the tree
    killed at the next commit; where neither came, once the wait is over (the order not reached)."""

    def __init__(
        self, count: int, until: float, held: tuple[str, int] | None = None, since: float = 0.0
    ) -> None:
        self.count, self.until = count, until  # commits made when the call parked; the wait's end
        self.parked, self.since = held, since  # the parked effect (its name, its occurrence); when it parked
        self.let_go = False
        self.overtaken: bool | None = None

    def _look(self, stop: Stop) -> None:
        if stop.killed:
            return
        if stop.commits_made() > self.count:
            self.overtaken = True
            stop.kill()
        elif (
            not self.let_go
            and self.parked is not None
            and went_on(stop.effect_lines(), self.parked, self.since)
        ):
            self.let_go = True
            self.until = time.monotonic() + WAIT
            stop.let_go()
        elif time.monotonic() > self.until:
            self.overtaken = False
            stop.kill()

    def committed(self, stop: Stop) -> None:
        self._look(stop)

    def tick(self, stop: Stop) -> None:
        self._look(stop)

    def landing(self) -> Landing:
        return Landing(overtaken=self.overtaken)


class HeldCall(Parked):
    """Parallel work held as it began, before it took its place in the store (``Save.passes``: a DBOS step
    numbered as it starts), the rest going on: killed at the store's next commit, as a parked call is; where
    that came (the order reached), the recovery begins the held work first, so that it takes the place the
    other's durable output holds."""

    def _look(self, stop: Stop) -> None:
        reached = self.overtaken
        super()._look(stop)
        if self.overtaken and not reached:
            stop.begin_first_in_recovery()


class HeldSave(Parked):
    """A save held as it began (every later save waits behind it in the interpreter): the tree is killed once a
    save promised to follow it (about the same record) begins, or once the wait is over with none (at once
    where no save is promised to follow its kind: there is no order to explore). A commit meanwhile is a
    save that began before it, finishing: not the order explored."""

    def __init__(self, until: float, held: tuple[str, int], saves: tuple[Save, ...]) -> None:
        super().__init__(0, until)
        self.held = held
        self.follows = {save.kind: save for save in saves if held[0] in save.after}
        self.out_of_order: str | None = None

    def _look(self, stop: Stop) -> None:
        if stop.killed:
            return
        if not self.follows or time.monotonic() > self.until:
            self.overtaken = False
            stop.kill()
            return
        begun = stop.saves_begun()
        at = next((i for i, (kind, n, _) in enumerate(begun) if (kind, n) == self.held), None)
        if at is None or not begun[at][2]:  # (a save about no record this names precedes none)
            return
        key = begun[at][2]
        for kind, n, other in begun[at + 1 :]:
            if kind in self.follows and other == key:
                kind_held, n_held = self.held
                self.out_of_order = (
                    f"{kind}#{n} began while {kind_held}#{n_held}, about the same record, was held "
                    f"({self.follows[kind].promise})"
                )
                self.overtaken = True
                stop.kill()
                return

    def landing(self) -> Landing:
        return Landing(overtaken=self.overtaken, out_of_order=self.out_of_order)


class Overtaken(Fault):
    name = "overtaken"
    summary = (
        "park a call's thread at its effect's end, kill at the next commit (another call's output first)"
    )
    places = "in-flight"
    on_stores = True
    enables = ("effects-as-declared", "store-consistent", "saved-in-order")

    def applies_to(self, what: str) -> str | None:
        if what not in ("effect-done", "save"):
            return f"overtaken parks a call at its effect's end (effect-done) or a save as it begins, not at {what}"
        return None

    def unavailable_on_log(self) -> str | None:
        return (
            "the overtaken fault orders the commits of a framework's store whose calls run at once; a "
            "session-log agent runs its calls one by one"
        )

    def stop(self, stop: Stop) -> Injection:
        # counted from the moment the call parked (the phase loop saw it later)
        held = stop.held_save()
        if held is not None and any(s.kind == held[0] and s.passes for s in stop.declared_saves):
            return HeldCall(stop.commits_made(by=stop.held_since()), time.monotonic() + WAIT)
        if held is not None:
            return HeldSave(time.monotonic() + SAVE_WAIT, held, stop.declared_saves)
        since = stop.held_since()
        return Parked(stop.commits_made(by=since), time.monotonic() + WAIT, stop.held_effect(), since)
