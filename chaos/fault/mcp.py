"""MCP faults: the world's MCP server fails while it holds a call (the server's own trouble, not the
agent's), the ways real servers fail. Held at ``effect-done``, the call's effect has completed at the
server and its answer is not yet sent; at ``effect-running`` it is still running. Then:

- ``mcp-restart``: the server dies, its answer and every session with it, and a new server takes the
  same address;
- ``mcp-session-lost``: the server forgets the session: the connection closes with no answer, and a
  request naming the session is answered 404 (a new ``Mcp-Session-Id`` is required);
- ``mcp-cut-answer``: the answer's stream stops half-way and the connection closes;
- ``mcp-error``: the answer is a JSON-RPC error (the handler failed after the work was done).

The agent goes on. It cannot know whether the call ran: a ``never`` tool must not be called again for it
(``never-once`` counts the server's executions), and it must not record a success the server never gave
(``mcp-answer``). All but ``mcp-error`` need the server the world runs over HTTP (``mcp = "http"``): a
stdio server is the agent's own child, with no sessions and no connection to cut.
"""

from __future__ import annotations

from typing import ClassVar

from chaos.errors import UsageError
from chaos.fault.base import Fault, Stop

EFFECT_BOUNDARIES = ("effect-running", "effect-done")


class McpFault(Fault):
    places = "in-flight"
    on_stores = True  # the server's trouble: a framework agent with MCP tools meets it too
    matrix = "every"  # at every effect the server holds, for a target whose tools are on it
    needs: ClassVar[tuple[str, ...]] = ("mcp-server",)
    crashes = False
    enables = ("never-once", "mcp-answer", "effect-count")

    def applies_to(self, what: str) -> str | None:
        if what not in EFFECT_BOUNDARIES:
            return f"{self.name} lands while the MCP server holds a call ({', '.join(EFFECT_BOUNDARIES)}), not at {what}"
        return None


class McpRestart(McpFault):
    name = "mcp-restart"
    summary = "the MCP server restarts while it holds a call: the answer and the session are lost, the agent goes on"

    def stop(self, stop: Stop) -> None:
        restart = stop.world.restart_tools
        if restart is None:
            raise UsageError('mcp-restart: this world serves no MCP server over HTTP (mcp = "http")')
        restart()


class McpSpoil(McpFault):
    """The server answers the held call badly, once it has run (``chaos.world.mcp_server``'s spoils)."""

    spoil: ClassVar[str]

    def stop(self, stop: Stop) -> None:
        spoil = stop.world.spoil_tool_answer
        if spoil is None:
            raise UsageError(f"{self.name}: this world serves no tools over MCP (the target declares no mcp)")
        spoil(self.spoil)
        stop.let_go()


class McpSessionLost(McpSpoil):
    name = "mcp-session-lost"
    summary = "the MCP server forgets the session holding a call: no answer, and the session answers 404"
    spoil = "session-lost"


class McpCutAnswer(McpSpoil):
    name = "mcp-cut-answer"
    summary = "the MCP server's answer to a call stops half-way and the connection closes"
    spoil = "cut"


class McpError(McpSpoil):
    name = "mcp-error"
    summary = "the MCP server answers a call it ran with a JSON-RPC error"
    spoil = "error"
    needs = ("mcp-tools",)
