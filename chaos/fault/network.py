"""What providers and networks do to an answer (after Jepsen's and Toxiproxy's network faults), at a
model request: the world's server answers that request this way, and the agent goes on. The contract's
answer to each is a ``stepFailed`` or a crash-unknown attempt: never a third request, never a corrupt
log, never a duplicated assistant message. One class per fault; each is one registry line."""

from __future__ import annotations

from typing import ClassVar

from chaos.fault.base import Arming, Fault, Stop


class Network(Fault):
    places = "model-request"
    on_stores = True
    crashes = False
    enables: ClassVar[tuple[str, ...]] = ("requests-attempted", "third-attempt", "final-reduces")

    def arm(self, arming: Arming) -> None:
        arming.misbehave(self.name)

    def stop(self, stop: Stop) -> None:
        stop.go_on()


class Reset(Network):
    name = "reset"
    summary = "the connection is reset in the middle of the answer"


class CutStream(Network):
    name = "cut-stream"
    summary = "the answer ends without its final event (a stream cut short, a body shorter than declared)"


class Duplicate(Network):
    name = "duplicate"
    summary = "the answer arrives twice (two documents in one body; a stream sent again after its end)"


class Hang(Network):
    name = "hang"
    summary = "no answer at all, past the agent's own timeout"
    enables = ("timeout", "requests-attempted")
    withholds = True


class InvalidJson(Network):
    name = "invalid-json"
    summary = "a 200 whose body is not JSON"


class Trickle(Network):
    name = "trickle"
    summary = "the answer one byte a second, past the agent's own deadline"
    enables = ("timeout", "requests-attempted")
    withholds = True
