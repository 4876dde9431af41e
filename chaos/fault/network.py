"""What providers and networks do to an answer (after Jepsen's and Toxiproxy's network faults), at a
model request: the world's server answers that request this way, and the agent goes on. The contract's
answer to each is a ``stepFailed`` or a crash-unknown attempt: never a third request, never a corrupt
log, never a duplicated assistant message. One class per fault; each is one registry line."""

from __future__ import annotations

from typing import ClassVar

from chaos.fault.base import Arming, Fault, Misbehaviour, Stop


class Network(Fault):
    misbehaviour: ClassVar[Misbehaviour]  # how the server answers the request instead
    places = "model-request"
    on_stores = True
    matrix = "each-request"
    in_recovery = "retry-request"
    crashes = False
    enables: ClassVar[tuple[str, ...]] = ("requests-attempted", "third-attempt", "final-reduces")

    def arm(self, arming: Arming) -> None:
        arming.misbehave(self.misbehaviour)

    def stop(self, stop: Stop) -> None:
        stop.go_on()


class Reset(Network):
    name = "reset"
    summary = "the connection is reset in the middle of the answer"
    misbehaviour = Misbehaviour("reset", "half", ends="reset")


class CutStream(Network):
    name = "cut-stream"
    summary = "the answer ends without its final event (a stream cut short, a body shorter than declared)"
    misbehaviour = Misbehaviour("cut-stream", "half", ends="close")


class Duplicate(Network):
    name = "duplicate"
    summary = "the answer arrives twice (two documents in one body; a stream sent again after its end)"
    misbehaviour = Misbehaviour("duplicate", "twice")


class Hang(Network):
    name = "hang"
    summary = "no answer at all, past the agent's own timeout"
    misbehaviour = Misbehaviour("hang", "nothing")
    enables = ("timeout", "requests-attempted")
    withholds = True


class InvalidJson(Network):
    name = "invalid-json"
    summary = "a 200 whose body is not JSON"
    misbehaviour = Misbehaviour("invalid-json", "not-json")


class Trickle(Network):
    name = "trickle"
    summary = "the answer one byte a second, past the agent's own deadline"
    misbehaviour = Misbehaviour("trickle", "whole", seconds_per_byte=1.0)
    enables = ("timeout", "requests-attempted")
    withholds = True
