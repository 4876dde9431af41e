"""``connection-lost``: the agent's connections to the world's database server are cut at a commit.

The server made the commit and lives on; its answer is lost with the connection (a network blip, a
proxy or a pooler restarting, an idle timeout at the wrong moment). Unlike ``postgres-crash`` nothing
restarts: a new connection finds the server up at once. The agent goes on and must end, or be resumed,
with the store as its promise says: a driver that takes the lost answer for a failed commit and starts
the run again sends its prompt twice."""

from __future__ import annotations

from collections.abc import Callable

from chaos.fault.base import WorldServers
from chaos.fault.postgres import ServerStoreFault


class ConnectionLost(ServerStoreFault):
    name = "connection-lost"
    summary = (
        "the agent's connections to the database are cut at a commit (its answer lost); the server lives"
    )

    def server_fault(self, world: WorldServers) -> Callable[[], None] | None:
        return world.cut_database_connections
