"""``terminate``: a supervisor stops the agent at the boundary (a rolling restart, a scale-in, ``systemctl
stop``): SIGTERM to every process of its tree, the world going on meanwhile, then SIGKILL once the grace
period is over. The agent runs its own code on the signal (Python's default ends the process at once; a
framework or the agent may install a handler and shut down): whatever it makes durable then is its own,
and its resume must recover the run as after a crash. A stop by the supervisor is not the user's abort:
the run must not end aborted or failed for it."""

from __future__ import annotations

from chaos.fault.base import After, Fault, Injection, Stop

GRACE = 3.0  # seconds between SIGTERM and SIGKILL (Kubernetes gives 30 by default; systemd 90)


def _kill(stop: Stop) -> None:
    if not stop.killed:
        stop.kill()


class Terminate(Fault):
    name = "terminate"
    summary = "SIGTERM to the agent's tree, as a supervisor stops it, then SIGKILL after a grace period"
    places = "anywhere"
    on_stores = True
    matrix = "between-calls"
    in_recovery = "retry-request"  # a step's retry: the recovery retries the attempt a crash left unknown
    crashes = False  # the process runs on, its own code, until it ends or the grace period does
    enables = ("outcome",)

    def stop(self, stop: Stop) -> Injection:
        stop.terminate()
        stop.let_go()  # nothing holds the world's answer or effect for a supervisor's stop
        return After(GRACE, _kill)  # SIGKILL to the tree if it is still there
