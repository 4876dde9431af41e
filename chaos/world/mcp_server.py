"""The world's MCP server: the workspace tools (read, write, edit, bash) served over the Model Context
Protocol by the official SDK, over Streamable HTTP or stdio.

An agent whose tools live on an MCP server calls them in another process: the agent can die while the
server goes on and completes the effect. This program is that server. It runs apart from the agent:

- ``--http-fd FD``: the world binds a socket on 127.0.0.1 and passes it; the server lives as long as the
  case (every phase of it meets the same server, as a real agent meets a long-lived one), and ends when
  its standard input (a pipe from chaos) closes. chaos gives the agent ``{mcp_url}``.
- ``--stdio``: the agent starts it as a child (``{mcp_command}``) and talks over its stdin/stdout; it
  dies with the agent's tree.

Every ``tools/call`` is written to the effect ledger twice: ``call`` (the arguments, and the intents the
session log held durable at that moment, as ``$CHAOS_EFFECT`` records them) and ``answer`` (the text
returned, and whether it was an error). The scenario's own effects (``$CHAOS_EFFECT deploy`` inside a
script the ``bash`` tool runs) and their gates work as they do in-process: a gate holds the call at the
server. The gates of the phase now running are read from the gate directory's ``active`` file at each
call (the phase changes; a long-lived server does not).

It is run by chaos (``python -m chaos.world.mcp_server``), never imported by it: it imports the SDK.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
from mcp import types
from mcp.server.lowlevel import Server

# the workspace tools are the bundled agents' own (mapped into chaos.bundled when installed; mypy checks
# them as targets.reference)
from chaos.bundled.targets.reference.tools import (  # type: ignore[import-not-found]
    DEFINITIONS,
    ToolFailure,
    run_tool,
)
from chaos.ledger import record
from chaos.world.ledger import intents

ACTIVE = "active"  # the gate directory's file naming the gates of the phase now running
# What the server says of its tools. Hints are the server's word, not the host's: an agent that makes a
# tool safe to replay because of them trusts what it must not (the contract: only host metadata can).
HINTS = {
    "read": types.ToolAnnotations(read_only_hint=True),
    "write": types.ToolAnnotations(idempotent_hint=True),
    "edit": types.ToolAnnotations(destructive_hint=True),
    "bash": types.ToolAnnotations(destructive_hint=True, open_world_hint=True),
}
BASH_TIMEOUT = 30.0


class Tools:
    """The tools of one workspace, each call recorded in the ledger."""

    def __init__(self, workspace: Path, ledger: str, gate_dir: str, log_glob: str) -> None:
        self.workspace, self.ledger, self.gate_dir, self.log_glob = workspace, ledger, gate_dir, log_glob
        self.calls, self.lock = 0, threading.Lock()  # calls run in worker threads, numbered in arrival order
        os.environ.update(
            CHAOS_LEDGER=ledger,
            CHAOS_GATE_DIR=gate_dir,
            CHAOS_LOG_GLOB=log_glob,
            CHAOS_EFFECT=f"{sys.executable} -m chaos.world.ledger",
        )

    def listing(self) -> list[types.Tool]:
        return [
            types.Tool(
                name=name,
                description=spec["description"],
                input_schema=spec["parameters"],
                annotations=HINTS.get(name),
            )
            for name, spec in DEFINITIONS.items()
        ]

    def call(self, name: str, arguments: dict[str, Any]) -> tuple[str, bool]:
        """Run one call in a worker thread; what it returns is what the agent is sent."""
        with contextlib.suppress(OSError):
            os.environ["CHAOS_GATES"] = (Path(self.gate_dir) / ACTIVE).read_text().strip()
        with self.lock:
            self.calls += 1
            number = self.calls
        entry = {"effect": f"mcp:{name}", "arguments": arguments, "pid": os.getpid(), "call": number}
        record(self.ledger, {**entry, "phase": "call", "time": time.time(), **intents(self.log_glob)})
        try:
            text, ok = run_tool(name, arguments, self.workspace, BASH_TIMEOUT), True
        except ToolFailure as err:
            text, ok = str(err), False
        record(self.ledger, {**entry, "phase": "answer", "time": time.time(), "result": text, "ok": ok})
        return text, ok


def server(tools: Tools) -> Server[Any]:
    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools.listing())

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name not in DEFINITIONS:
            text, ok = f"unknown tool {params.name!r}", False
        else:
            text, ok = await anyio.to_thread.run_sync(tools.call, params.name, dict(params.arguments or {}))
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=not ok)

    return Server("chaos-workspace-tools", version="1", on_list_tools=list_tools, on_call_tool=call_tool)


async def _stdio(app: Server[Any]) -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read, write):
        await app.run(read, write, app.create_initialization_options())


def _http(app: Server[Any], fd: int) -> None:
    import uvicorn

    sock = socket.socket(fileno=fd)
    config = uvicorn.Config(app.streamable_http_app(), log_level="warning", lifespan="on")
    served = uvicorn.Server(config)

    def _orphaned() -> None:  # chaos's end of our stdin closed: chaos is gone, and so are we
        sys.stdin.buffer.read()
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=_orphaned, daemon=True).start()
    served.run(sockets=[sock])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m chaos.world.mcp_server", description=__doc__)
    parser.add_argument("--workspace", required=True)
    parser.add_argument("--ledger", required=True)
    parser.add_argument("--gate-dir", required=True)
    parser.add_argument("--log-glob", required=True)
    how = parser.add_mutually_exclusive_group(required=True)
    how.add_argument("--stdio", action="store_true")
    how.add_argument("--http-fd", type=int)
    args = parser.parse_args(argv)
    app = server(Tools(Path(args.workspace), args.ledger, args.gate_dir, args.log_glob))
    if args.stdio:
        anyio.run(_stdio, app)
    else:
        _http(app, args.http_fd)
    return 0


if __name__ == "__main__":
    sys.exit(main())
