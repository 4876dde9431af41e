"""``mcp-restart``: the world's MCP server restarts while it holds a call (the server's own trouble, not
the agent's). Held at ``effect-done``, the call's effect has completed at the server and its answer is
not yet sent: the server dies then, its answer and every session with it, and a new server takes the
same address. The agent goes on. It cannot know whether the call ran; a ``never`` tool must not be called
again for it (``never-once`` counts the server's executions), and it must not record a success the server
never gave (``mcp-answer``). Only where the world serves the target's tools over HTTP (``mcp = "http"``):
a stdio server is the agent's own child."""

from __future__ import annotations

from chaos.fault.base import Fault, Stop

EFFECT_BOUNDARIES = ("effect-running", "effect-done")


class McpRestart(Fault):
    name = "mcp-restart"
    summary = "the MCP server restarts while it holds a call: the answer and the session are lost, the agent goes on"
    places = "in-flight"
    needs = ("mcp-server",)
    crashes = False
    enables = ("never-once", "mcp-answer", "effect-count")

    def applies_to(self, what: str) -> str | None:
        if what not in EFFECT_BOUNDARIES:
            return f"{self.name} lands while the MCP server holds a call ({', '.join(EFFECT_BOUNDARIES)}), not at {what}"
        return None

    def stop(self, stop: Stop) -> None:
        stop.restart_tools()
