"""The world's MCP server over Streamable HTTP: one process per case, in a cage of its own.

A target with ``mcp = "http"`` reaches its tools at ``{mcp_url}``. chaos binds the socket on 127.0.0.1
itself and hands it to the server (``chaos.world.mcp_server --http-fd``), so the URL is known before the
server has started and no port can be taken in between: an agent that connects early waits in the
socket's backlog. The URL's path holds a token made for the case: the server answers nothing else, so
another local user who finds the port cannot run the case's ``bash``. The server outlives each phase (an agent killed mid-call leaves it to complete the
call, as a real server would) and goes when the world closes; everything it started goes with it (its
cage), and it ends by itself if chaos dies first (its standard input closes).
"""

from __future__ import annotations

import contextlib
import importlib.util
import secrets
import socket
import subprocess
import sys
import time

from chaos.errors import TargetUnusable
from chaos.ledger import entries
from chaos.world import MCP_TOKEN_ENV
from chaos.world.contain import Cage
from chaos.world.world import World

STOP_WAIT = 5.0  # seconds a server has to end once asked
SETTLE_WAIT = 40.0  # seconds a call let go may still run at the server (its bash tool's limit is 30)


def serve_tools(world: World) -> None:
    """Start the world's MCP server where its target takes its tools over HTTP (stdio servers are the
    agent's to start, from ``{mcp_command}``)."""
    if world.target.mcp is None:
        return
    missing = [name for name in ("mcp", "uvicorn") if importlib.util.find_spec(name) is None]
    if missing:
        raise TargetUnusable(
            f"{world.target.path}: mcp = {world.target.mcp!r}: the world serves its tools with the MCP SDK, "
            f"and {', '.join(missing)} is not installed here; install it with: pip install 'durable-chaos[mcp]'"
        )
    if world.target.mcp != "http":
        return
    token = secrets.token_urlsafe(24)
    served = Served(world, socket.create_server(("127.0.0.1", 0), backlog=64), token)
    world.mcp_url = f"http://127.0.0.1:{served.listener.getsockname()[1]}/{token}/mcp"
    world.closers.append(served.close)
    world.restart_tools, world.settle_tools = served.restart, served.settle


class Served:
    """The server process of one world, on the socket chaos holds for the whole case."""

    def __init__(self, world: World, listener: socket.socket, token: str) -> None:
        self.world, self.listener, self.token = world, listener, token
        try:
            self._start()
        except BaseException:
            listener.close()
            raise

    def _start(self) -> None:
        world, fd = self.world, self.listener.fileno()
        self.cage = Cage()
        argv = [
            sys.executable,
            "-m",
            "chaos.world.mcp_server",
            "--http-fd",
            str(fd),
            *world.mcp_server_args(),
        ]
        try:
            with (world.box.home / "mcp-server.stderr").open("ab") as err:
                self.proc = subprocess.Popen(
                    argv,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.DEVNULL,
                    stderr=err,
                    pass_fds=[fd],
                    start_new_session=True,
                    preexec_fn=self.cage.enter,
                    env=world.box.environment({MCP_TOKEN_ENV: self.token}, [], world.log_glob),
                )
        except BaseException:
            self.cage.remove()
            raise

    def _stop(self, wait: float) -> None:
        proc = self.proc
        with contextlib.suppress(OSError):
            assert proc.stdin is not None
            proc.stdin.close()  # the server's sign to go
        try:
            proc.wait(wait)
        except subprocess.TimeoutExpired:
            proc.kill()
        finally:
            self.cage.kill()
            self.cage.remove()
            proc.wait()

    def settle(self) -> None:
        """Wait until the server has answered every call it took (the agent is gone: a call held at its
        gate was let go, and runs to its end there, as it would at a real server while the agent is
        down), so the next phase meets what the server did, never a call still running beside it."""
        deadline = time.monotonic() + SETTLE_WAIT
        while time.monotonic() < deadline and self.proc.poll() is None:
            lines = [e for e in entries(self.world.box.ledger) if e.get("pid") == self.proc.pid]
            taken = {e["call"] for e in lines if e["phase"] == "call"}
            if taken <= {e["call"] for e in lines if e["phase"] == "answer"}:
                return
            time.sleep(0.01)

    def restart(self) -> None:
        """The mcp-restart fault: the server dies at once, with what it was running (an answer it had not
        sent is lost, and every session with it), and a new one takes the same socket."""
        self._stop(0)
        self._start()

    def close(self) -> None:
        self.listener.close()
        self._stop(STOP_WAIT)
