"""The world's MCP server: the workspace tools (read, write, edit, bash) served over the Model Context
Protocol by the official SDK, over Streamable HTTP or stdio.

An agent whose tools live on an MCP server calls them in another process: the agent can die while the
server goes on and completes the effect. This program is that server. It runs apart from the agent:

- ``--http-fd FD``: the world binds a socket on 127.0.0.1 and passes it; the server lives as long as the
  case (every phase of it meets the same server, as a real agent meets a long-lived one), and ends when
  its standard input (a pipe from chaos) closes. chaos gives the agent ``{mcp_url}``, whose path holds
  the case's token (``$CHAOS_MCP_TOKEN``, never on the command line, which every local user can read):
  a request on any other path is answered 404, so no other local user reaches the tools (``bash``
  among them) through the port.
- ``--stdio``: the agent starts it as a child (``{mcp_command}``) and talks over its stdin/stdout; it
  dies with the agent's tree.

Every ``tools/call`` is written to the effect ledger twice, each line with the call's JSON-RPC id
(``request``) and the server's own number for it (``call``): phase ``call`` (the arguments, and the
intents the session log held durable at that moment, as ``$CHAOS_EFFECT`` records them) and phase
``answer`` (the text returned, whether it was an error, and how it was delivered: ``delivered``). Each
call is an effect of its own (``mcp:NAME``, numbered among that tool's calls) with the two gates of any
effect: held running at the server (before its tool runs) and done there (its answer not sent), so
every call an agent makes is a place a crash lands. The scenario's own effects (``$CHAOS_EFFECT deploy``
inside a script the ``bash`` tool runs) and their gates work as they do in-process. The gates of the
phase now running are read from the gate directory's ``active`` file at each call (the phase changes;
a long-lived server does not).

The server fails the way real ones do when a fault asks it to (``chaos.fault.mcp``): the fault writes
the gate directory's ``spoil`` file while the server holds a call, and the call, once it has run, is
answered that way: ``error`` (a JSON-RPC error: its handler failed after the work was done), ``cut``
(the answer's stream stops half-way and the connection closes), ``session-lost`` (the connection
closes with no answer, and the session is forgotten: a request naming it is answered 404, and the
client must initialize a new one; a client of the 2026 protocol has no session, and loses the answer
alone).

It is run by chaos (``python -m chaos.world.mcp_server``), never imported by it: it imports the SDK.
"""

from __future__ import annotations

import argparse
import contextlib
import json
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
from mcp import MCPError, types
from mcp.server.lowlevel import Server
from mcp.types import INTERNAL_ERROR, INVALID_REQUEST

# the workspace tools are the bundled agents' own (mapped into chaos.bundled when installed; mypy checks
# them as targets.reference)
from chaos.bundled.targets.reference.tools import (  # type: ignore[import-not-found]
    DEFINITIONS,
    ToolFailure,
    run_tool,
)
from chaos.ledger import MCP_CALL, gate, numbered, record
from chaos.world import MCP_TOKEN_ENV
from chaos.world.ledger import intents

ACTIVE = "active"  # the gate directory's file naming the gates of the phase now running
SPOIL = "spoil"  # the gate directory's file naming how the held call's answer goes wrong (a fault's)
SPOILS = ("error", "cut", "session-lost")
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

    def call(self, name: str, arguments: dict[str, Any], request: Any = None) -> tuple[str, bool, str]:
        """Run one call in a worker thread: the text it returns, whether it succeeded, and how its answer
        is delivered ("whole", or the spoil a fault armed while the call was held)."""
        with contextlib.suppress(OSError):
            os.environ["CHAOS_GATES"] = (Path(self.gate_dir) / ACTIVE).read_text().strip()
        with self.lock:
            self.calls += 1
            number = self.calls
        effect = f"mcp:{name}"
        entry = {
            "effect": effect,
            "arguments": arguments,
            "pid": os.getpid(),
            "call": number,
            "request": request,
        }
        occurrence = numbered(
            self.ledger, effect, {**entry, "phase": "call", "time": time.time(), **intents(self.log_glob)}
        )
        gate(f"{effect}.during", occurrence)  # effect-running: held before its tool runs
        try:
            # an effect the tool makes names this call: it is judged by what was durable when it arrived
            text, ok = (
                run_tool(
                    name, arguments, self.workspace, BASH_TIMEOUT, {MCP_CALL: f"{os.getpid()}:{number}"}
                ),
                True,
            )
        except ToolFailure as err:
            text, ok = str(err), False
        gate(f"{effect}.after", occurrence)  # effect-done: held once it ran, its answer not sent
        delivered = self._spoil()
        answer = {"phase": "answer", "time": time.time(), "result": text, "ok": ok, "delivered": delivered}
        record(self.ledger, {**entry, **answer})
        return text, ok, delivered

    def _spoil(self) -> str:
        """The spoil armed for the call that just ran, taken (one call's), or "whole"."""
        taken = Path(self.gate_dir) / f"{SPOIL}.taken"
        try:
            os.rename(Path(self.gate_dir) / SPOIL, taken)  # atomic: one call takes it
        except OSError:
            return "whole"
        how = taken.read_text().strip()
        return how if how in SPOILS else "whole"


async def _refuse(send: Any, status: int, message: str) -> None:
    """An HTTP answer with a JSON-RPC error and no result, as the SDK gives one."""
    error = {"code": INVALID_REQUEST, "message": message}
    await send(
        {"type": "http.response.start", "status": status, "headers": [(b"content-type", b"application/json")]}
    )
    await send(
        {
            "type": "http.response.body",
            "body": json.dumps({"jsonrpc": "2.0", "id": None, "error": error}).encode(),
        }
    )


class Spoiling:
    """The HTTP side of the server (ASGI, around the SDK's app): only requests under the case's token
    reach the SDK (on its own path, the token taken off); the answers of the calls marked ``cut`` or
    ``session-lost`` are spoiled on their way out, and a forgotten session is answered 404, as the SDK
    answers a session it no longer knows."""

    def __init__(self, token: str) -> None:
        self.prefix = f"/{token}"
        self.app: Any = None  # the SDK's app, once built (it is built from the server this one marks for)
        self.marked: dict[tuple[str, Any], str] = {}  # (session id, JSON-RPC id) -> cut | session-lost
        self.forgotten: set[str] = set()

    def mark(self, ctx: Any, how: str) -> None:
        session = ctx.request.headers.get("mcp-session-id", "") if ctx.request is not None else ""
        self.marked[(session, ctx.request_id)] = how

    def _spoils(self, session: str, body: bytes) -> str | None:
        """How the chunk about to go out is spoiled: it carries the answer to a marked call."""
        for line in body.splitlines():
            if line.startswith(b"data:") or line.startswith(b"{"):
                with contextlib.suppress(ValueError):
                    sent = json.loads(line.removeprefix(b"data:"))
                    if isinstance(sent, dict) and (session, sent.get("id")) in self.marked:
                        return self.marked.pop((session, sent.get("id")))
        return None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":  # the lifespan
            await self.app(scope, receive, send)
            return
        path = str(scope.get("path", ""))
        if not path.startswith(f"{self.prefix}/"):
            await _refuse(send, 404, "Not found")
            return
        scope = {**scope, "path": path.removeprefix(self.prefix), "raw_path": None}
        try:
            session = dict(scope.get("headers", [])).get(b"mcp-session-id", b"").decode()
        except UnicodeDecodeError:
            await _refuse(send, 400, "Bad Request: the Mcp-Session-Id header is not UTF-8")
            return
        if session in self.forgotten:
            await _refuse(send, 404, "Session not found")
            return
        spoiled = False

        async def sending(message: Any) -> None:
            # After a spoil nothing more goes out, and the response stays unfinished: the server
            # closes the connection (uvicorn does, for a response its app did not complete).
            nonlocal spoiled
            how = self._spoils(session, message.get("body", b"")) if self.marked and not spoiled else None
            if how == "cut":
                body = message["body"]
                await send({"type": "http.response.body", "body": body[: len(body) // 2], "more_body": True})
            elif how is None and not spoiled:
                await send(message)
            if how == "session-lost" and session:  # (the 2026 protocol has none: the answer is lost alone)
                self.forgotten.add(session)
            spoiled = spoiled or how is not None

        await self.app(scope, receive, sending)


def server(tools: Tools, spoiling: Spoiling | None = None) -> Server[Any]:
    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools.listing())

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name not in DEFINITIONS:
            return _result(f"unknown tool {params.name!r}", False)
        text, ok, delivered = await anyio.to_thread.run_sync(
            tools.call, params.name, dict(params.arguments or {}), ctx.request_id
        )
        if delivered == "error":  # the work is done, and the handler fails after it
            raise MCPError(INTERNAL_ERROR, "internal error: the tool's result could not be sent")
        if delivered != "whole" and spoiling is not None:
            spoiling.mark(ctx, delivered)
        return _result(text, ok)

    return Server("chaos-workspace-tools", version="1", on_list_tools=list_tools, on_call_tool=call_tool)


def _result(text: str, ok: bool) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=not ok)


async def _stdio(app: Server[Any]) -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read, write):
        await app.run(read, write, app.create_initialization_options())


def _http(tools: Tools, fd: int) -> None:
    import uvicorn

    sock = socket.socket(fileno=fd)
    spoiling = Spoiling(os.environ[MCP_TOKEN_ENV])
    spoiling.app = server(tools, spoiling).streamable_http_app()
    config = uvicorn.Config(spoiling, log_level="warning", lifespan="on")
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
    tools = Tools(Path(args.workspace), args.ledger, args.gate_dir, args.log_glob)
    if args.stdio:
        anyio.run(_stdio, server(tools))
    else:
        _http(tools, args.http_fd)
    return 0


if __name__ == "__main__":
    sys.exit(main())
