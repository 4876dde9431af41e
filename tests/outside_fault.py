"""A fault written outside the package, through ``chaos.extend`` alone (issue 48): the store's next commit,
once the boundary is reached, is held ``SECONDS`` before it is made, and the agent goes on. A mechanism of
its own: its state is its injection's, and the engine only tells it of each commit's write."""

from __future__ import annotations

from chaos.extend import FAULTS, Fault, Injection, Landing, Stop

SECONDS = 0.4


class HeldCommit(Injection):
    def __init__(self) -> None:
        self.held: list[float] = []  # the delays it gave (one: the next commit only)

    def hold(self) -> float:
        if self.held:
            return 0.0
        self.held.append(SECONDS)
        return SECONDS

    def landing(self) -> Landing:
        return Landing()


class DelayedCommit(Fault):
    name = "delayed-commit"
    summary = "the store's next commit is held a moment before it is made; the agent goes on"
    places = "durable"
    on_stores = True
    crashes = False

    def __init__(self) -> None:
        self.injections: list[HeldCommit] = []  # (the test reads what each case's injection did)

    def stop(self, stop: Stop) -> Injection:
        stop.go_on()
        injection = HeldCommit()
        self.injections.append(injection)
        return injection


def register() -> DelayedCommit:
    fault = FAULTS.setdefault(DelayedCommit.name, DelayedCommit())
    assert isinstance(fault, DelayedCommit)
    return fault
