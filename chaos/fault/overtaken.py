"""``overtaken``: one call's output made durable after another's, in an agent that runs the calls of an
answer at once (a framework's parallel tool calls). At the end of the call's effect (``effect-done``,
its tool not yet returned) its thread is parked at the world's gate while the rest of the process goes
on; the tree is killed at the first commit the store makes after that (another call's output, or
whatever the framework writes next): the crash prefix holds the later call's work and not the parked
one's, an order the unhindered run does not take. Where nothing commits while the call is parked (the
calls of an answer are written together, as one task), the order cannot be reached: the process is
killed at the wait's end, as ``kill`` would, and the phase says the order was not reached.

Sweeping it (``--fault overtaken``) explores, for each call of a parallel answer, the order in which it
finishes last; the summary counts the orders it reached."""

from __future__ import annotations

import time

from chaos.fault.base import Fault, Injection, Landing, Stop

WAIT = 3.0  # seconds the parked call waits for another commit before the order is called unreachable


class Parked(Injection):
    """The call stays parked at its gate; the tree is killed once another commit came meanwhile, or once
    the wait is over with none (the order not reached)."""

    def __init__(self, count: int, until: float) -> None:
        self.count, self.until = count, until  # commits made when the call parked; the wait's end
        self.overtaken: bool | None = None

    def _look(self, stop: Stop) -> None:
        if stop.killed:
            return
        if stop.commits_made() > self.count:
            self.overtaken = True
            stop.kill()
        elif time.monotonic() > self.until:
            self.overtaken = False
            stop.kill()

    def committed(self, stop: Stop) -> None:
        self._look(stop)

    def tick(self, stop: Stop) -> None:
        self._look(stop)

    def landing(self) -> Landing:
        return Landing(overtaken=self.overtaken)


class Overtaken(Fault):
    name = "overtaken"
    summary = (
        "park a call's thread at its effect's end, kill at the next commit (another call's output first)"
    )
    places = "in-flight"
    on_stores = True
    enables = ("effects-as-declared", "store-consistent")

    def applies_to(self, what: str) -> str | None:
        if what != "effect-done":
            return f"overtaken parks a call at its effect's end (effect-done), not at {what}"
        return None

    def unavailable_on_log(self) -> str | None:
        return (
            "the overtaken fault orders the commits of a framework's store whose calls run at once; a "
            "session-log agent runs its calls one by one"
        )

    def stop(self, stop: Stop) -> Injection:
        # counted from the moment the call parked (the phase loop saw it later)
        return Parked(stop.commits_made(by=stop.held_since()), time.monotonic() + WAIT)
