"""``torn``: let the agent's next write to the log through half-way, then SIGKILL: a real torn tail the
agent wrote itself, which a resume must truncate before appending (section 2)."""

from __future__ import annotations

from chaos.fault.base import Fault, Injection, Landing, Stop, Trap


class Tearing(Injection):
    """The next write to the log goes through half-done, then the kill: a real torn tail."""

    def __init__(self) -> None:
        self.torn = False

    def at_trap(self, stop: Stop, trap: Trap) -> bool:
        if stop.killed:
            return False
        if trap.kind == "after":
            self.torn = True
            stop.kill()
        elif trap.kind == "write":
            path, count = stop.trapped_file(trap)
            if stop.stores(path) and count > 1:
                stop.shorten(trap, count // 2)
                return True  # stopped again when it returns: then the kill
        elif trap.kind == "exit":
            stop.kill()  # the target is ending with no later write to tear
        return False

    def landing(self) -> Landing:
        return Landing(torn=self.torn)


class Torn(Fault):
    name = "torn"
    summary = "the next write to the log goes through half-way, then SIGKILL (a torn tail)"
    traced = True
    enables = ("final-reduces",)

    def stop(self, stop: Stop) -> Injection | None:
        if not stop.exact:  # polled: no write can be cut, so the kill is the fault
            stop.kill()
            return None
        return Tearing()
