"""``terminate``: a supervisor stops the agent at the boundary (a rolling restart, a scale-in, ``systemctl
stop``): SIGTERM to every process of its tree, the world going on meanwhile, then SIGKILL once the grace
period is over. The agent runs its own code on the signal (Python's default ends the process at once; a
framework or the agent may install a handler and shut down): whatever it makes durable then is its own,
and its resume must recover the run as after a crash. A stop by the supervisor is not the user's abort:
the run must not end aborted or failed for it."""

from __future__ import annotations

import time

from chaos.fault.base import Fault, Injection, Stop

GRACE = 3.0  # seconds between SIGTERM and SIGKILL (Kubernetes gives 30 by default; systemd 90)


class Terminating(Injection):
    """SIGTERM was sent: SIGKILL to the tree if it is still there once the grace period is over."""

    def __init__(self) -> None:
        self.since = time.monotonic()

    def tick(self, stop: Stop) -> None:
        if not stop.killed and time.monotonic() - self.since >= GRACE:
            stop.kill()


class Terminate(Fault):
    name = "terminate"
    summary = "SIGTERM to the agent's tree, as a supervisor stops it, then SIGKILL after a grace period"
    places = "anywhere"
    on_stores = True
    matrix = "between-calls"
    crashes = False  # the process runs on, its own code, until it ends or the grace period does
    enables = ("outcome",)

    def stop(self, stop: Stop) -> Injection:
        stop.terminate()
        stop.let_go()  # nothing holds the world's answer or effect for a supervisor's stop
        return Terminating()
