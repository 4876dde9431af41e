"""``postgres-crash``: the world's PostgreSQL server crashes at a commit of the agent's store.

The server is killed whole (postmaster and every backend, SIGKILL) the moment
it committed, its answer not yet sent, and a new server recovers the same data
(PostgreSQL's own crash recovery: what it committed stays) on the same socket.
Every connection through the relay is cut. The server's durability is trusted;
what is judged is the agent's: it goes on (it is not killed), meets a lost
connection with a commit it cannot know the fate of, and must end, or be
resumed, with the store as its promise says (effects, outputs, the answer).
Lands in the first run and in a recovery (a failover while the framework
recovers the runs a crash left pending: dbos-transact-py#716), only on a store
on the world's server (``[store] kind`` of a server store, ``chaos.store.postgres``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from chaos.errors import UsageError
from chaos.fault.base import Fault, Stop, WorldServers
from chaos.store import known, store_named


class ServerStoreFault(Fault):
    """A fault of the server a store lives on: at a commit the server made, its answer held at the world's
    relay; the agent goes on, and meets a lost connection with a commit it cannot know the fate of. Lands
    only on a store on the world's server of its kind (``server``), in the first run and in a recovery."""

    server: ClassVar[str] = "postgres"  # the server it lands on (``chaos.store.Store.server``)
    server_name: ClassVar[str] = "PostgreSQL"

    places = "durable"
    on_stores = True
    mid_transaction = True  # at a write inside an open transaction: that transaction is lost, uncommitted
    crashes = False
    enables = ("inputs-once", "effects-as-declared")
    matrix = "each-write"  # at the first commit of each kind a phase makes (a commit, a call made durable)
    in_recovery = "each-write"  # and so in a recovery: a failover while the framework recovers its runs

    def server_fault(self, world: WorldServers) -> Callable[[], None] | None:
        """The world's handle that does this to its database server (None: the world runs none)."""
        raise NotImplementedError

    def stop(self, stop: Stop) -> None:
        act = self.server_fault(stop.world)
        if act is None:
            raise UsageError(
                f"{self.name}: this world runs no {self.server_name} server (the target's store is not on one)"
            )
        act()

    def unavailable_on_store(self, commit: str = "sqlite", server: str | None = None) -> str | None:
        return None if commit == "wire" and server == self.server else self.unavailable_on_log()

    def unavailable_on_log(self) -> str | None:
        return (
            f"the {self.name} fault needs a store on the world's {self.server_name} server "
            f"([store] kind = {server_store_kinds(self.server)})"
        )


def server_store_kinds(server: str = "postgres") -> str:
    """The registered stores that live on the world's ``server``, as a user names them."""
    return ", ".join(k for k in known() if store_named(k).server == server)


class ServerCrash(ServerStoreFault):
    """The server crashes at the commit and a new one recovers the same data (``WorldServers.restart_server``)."""

    def server_fault(self, world: WorldServers) -> Callable[[], None] | None:
        return world.restart_server(self.server)


class PostgresCrash(ServerCrash):
    name = "postgres-crash"
    summary = (
        "the world's PostgreSQL server crashes at a commit (its answer lost) and restarts; the agent goes on"
    )
