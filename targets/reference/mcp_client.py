"""The reference agent's tools on an MCP server, through the official SDK's client.

``TINY_MCP_URL`` names a Streamable HTTP server; ``TINY_MCP_COMMAND`` (a JSON list) a server to start and
talk to over stdio. The agent then lists its tools there (``tools/list``) and runs each call there
(``tools/call``): the effect happens in the server's process, and the agent learns of it only from the
answer. Which of those tools may be replayed is the host's word (``TINY_MCP_SAFE``, a comma-separated
list of tool names), never the server's: its hints (``readOnlyHint``, ``idempotentHint``) are text from
another process (SESSION-CONTRACT: an MCP tool is ``never`` unless trusted host metadata says otherwise).

The SDK is asynchronous and the agent is not: one event loop runs in a thread of its own, holding one
connection for the agent's whole life, and each call waits for its answer on the agent's thread (where
an abort, SIGINT, interrupts the wait; the call itself goes on at the server).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import json
import threading
from collections.abc import Coroutine
from typing import Any

CLOSE_WAIT = 5.0  # seconds to close the connection (a stdio server is stopped then) at exit


# What a call's failure was: which call a bug switch makes again (each a classic mistake)
AGAIN = {"lost": ("mcp-call-again", "mcp-cut-call-again"), "error": ("mcp-error-call-again",)}


def _failure(err: Exception) -> str:
    """``refused``: the server no longer knows the session (HTTP 404 to a request naming it), so it read
    nothing, and a new session is needed; ``lost``: the answer never came (the stream cut, the connection
    gone, no answer in time: the client's own errors); ``error``: the server answered with a JSON-RPC error."""
    from mcp import MCPError
    from mcp.types import CONNECTION_CLOSED, INVALID_REQUEST, REQUEST_TIMEOUT

    if not isinstance(err, MCPError) or err.code in (CONNECTION_CLOSED, REQUEST_TIMEOUT):
        return "lost"
    if err.code == INVALID_REQUEST and "session" in err.message.lower():
        return "refused"
    return "error"


class McpTools:
    def __init__(
        self, server: str | list[str], timeout: float, bugs: frozenset[str] = frozenset(), mode: str = "auto"
    ) -> None:
        from mcp import StdioServerParameters

        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, name="mcp", daemon=True).start()
        self.where: Any = (
            server if isinstance(server, str) else StdioServerParameters(command=server[0], args=server[1:])
        )
        self.timeout, self.bugs, self.mode = timeout, bugs, mode
        self._connect()
        atexit.register(self.close)

    def _connect(self) -> None:
        from mcp import Client

        self.client = Client(self.where, mode=self.mode, read_timeout_seconds=self.timeout)
        self._wait(self.client.__aenter__())
        self.lost = False

    @classmethod
    def from_env(
        cls, env: dict[str, str], timeout: float, bugs: frozenset[str] = frozenset()
    ) -> McpTools | None:
        """The server the environment names, connected; None when the agent's tools are its own. ``bugs``:
        the agent's bug switches (mcp-call-again, mcp-cut-call-again, mcp-error-call-again: a call whose
        answer was lost, cut or an error is made once more). ``TINY_MCP_MODE``: the protocol's era, the
        SDK's ``mode`` ("auto": the 2026 protocol where the server speaks it; "legacy": the initialize
        handshake, and a session)."""
        mode = env.get("TINY_MCP_MODE") or "auto"
        if env.get("TINY_MCP_URL"):
            return cls(env["TINY_MCP_URL"], timeout, bugs, mode)
        if env.get("TINY_MCP_COMMAND"):
            command = json.loads(env["TINY_MCP_COMMAND"])
            if not (isinstance(command, list) and command and all(isinstance(p, str) for p in command)):
                raise ValueError("TINY_MCP_COMMAND: must be a JSON list of strings, the server's argv")
            return cls(command, timeout, bugs, mode)
        return None

    def _wait(self, work: Coroutine[Any, Any, Any], timeout: float | None = None) -> Any:
        return asyncio.run_coroutine_threadsafe(work, self.loop).result(timeout)

    def listing(self) -> list[dict[str, Any]]:
        """The server's tools: name, description, parameters (its input schema) and its hints."""
        result = self._wait(self.client.list_tools())
        return [
            {
                "name": tool.name,
                "description": tool.description or "",
                "parameters": tool.input_schema,
                "hints": tool.annotations.model_dump(exclude_none=True) if tool.annotations else {},
            }
            for tool in result.tools
        ]

    def call(self, name: str, arguments: dict[str, Any], again: bool = False) -> tuple[str, bool]:
        """Run the tool at the server: the text it answered, and whether it succeeded.

        - A request the server refused unread (its session gone: 404) is sent again on a new session: it
          never ran.
        - An answer lost on the way (the stream cut, the connection or the session gone, no answer in
          time) is an error result: the call may have run there, and is not made again (the next call
          reconnects).
        - A JSON-RPC error is the server's answer: an error result, and the call may have run too."""
        if self.lost:
            self._reconnect()
        try:
            result = self._wait(self.client.call_tool(name, arguments))
        except Exception as err:
            how = _failure(err)
            self.lost = how != "error"  # the next call reconnects
            if how == "refused" and not again:  # it never ran: sent again, on a new session
                return self.call(name, arguments, again=True)
            bug = next((b for b in AGAIN.get(how, ()) if b in self.bugs), None)
            if bug is not None and not again:  # the bug: as if the call had not run
                self.lost = bug == "mcp-call-again"  # that one reconnects first; the others do not
                return self.call(name, arguments, again=True)
            said = "was an error" if how == "error" else "was lost"
            return (
                f"the MCP server's answer {said} ({type(err).__name__}: {err}); the call may have run",
                False,
            )
        text = "".join(getattr(part, "text", "") for part in result.content)
        return text, not result.is_error

    def _reconnect(self) -> None:
        with contextlib.suppress(Exception):
            self._wait(self.client.__aexit__(None, None, None), CLOSE_WAIT)
        self._connect()

    def close(self) -> None:
        # the process is ending: a connection that will not close is let go
        with contextlib.suppress(Exception):
            self._wait(self.client.__aexit__(None, None, None), CLOSE_WAIT)
        self.loop.call_soon_threadsafe(self.loop.stop)
