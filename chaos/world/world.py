"""One scenario's world: its sandbox, its scripted model server, and the target's environment per phase.

The crash run and every resume share one world (same workspace, ledger and
server, so the model and the effects see the whole history), but each phase
gets the configuration of its moment: the scenario's start configuration for
the crash run, with the scenario's change applied for the resumes.
"""

from __future__ import annotations

import fnmatch
import glob
import json
import secrets
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chaos.contract import Reducer
from chaos.contract.framing import committed_facts
from chaos.contract.kinds import kind_of
from chaos.errors import TargetUnusable
from chaos.ledger import APPROVAL_KEY
from chaos.scenario.model import Configuration, Scenario
from chaos.scenario.target import Target, cwd_problem, fill, phase_limit, placeholders
from chaos.secrets import register_env
from chaos.store import Store, store_named
from chaos.world.model_server import ModelServer
from chaos.world.pgwire import Relay
from chaos.world.sandbox import Sandbox, make_sandbox


@dataclass
class World:
    scenario: Scenario
    target: Target
    box: Sandbox
    server: ModelServer
    extra_env: dict[str, str]  # --target-env: for every phase, over everything else
    # what a power cut would keep of the log now (a phase with such a fault sets it): requests are
    # judged against that, not against bytes a power cut would lose
    durable_limit: Callable[[], int] | None = None
    # how its phases' processes start: a ``chaos.process.warm.WarmStarts`` (forks of a warm interpreter,
    # where a sweep chose them), or None (each a new process)
    starts: Any = None
    # the sweep's crash states and the recoveries their first cases ran (``chaos.cycle.share.Shares``), or
    # None (every case recovers by itself)
    share: Any = None
    # where the world serves the target's tools over MCP: the URL of its Streamable HTTP server, once
    # started (``chaos.world.mcp``; "" otherwise), and what stops that server when the world closes
    mcp_url: str = ""
    # signs the approval chain's ledger lines (``chaos.process.approval``): made here, given to the chain
    approval_key: str = field(default_factory=lambda: secrets.token_hex(16))
    closers: list[Callable[[], None]] = field(default_factory=list)
    restart_tools: Callable[[], None] | None = None  # restarts that server (the mcp-restart fault)
    settle_tools: Callable[[], None] | None = None  # waits for that server to answer the calls it took
    # where a target's store lives on a server (``chaos.world.engine``): what the agent connects to (the
    # placeholder its store adapter names, ``{postgres_url}``: the relay), and a server crash; on
    # PostgreSQL, the relay (it sees each commit)
    engine_address: str = ""
    restart_engine: Callable[[], None] | None = None
    relay: Relay | None = None

    @property
    def store(self) -> Store:
        """The adapter of the target's store: what it makes durable, read at the commits of its files."""
        return store_named(self.target.store_spec.kind)

    @property
    def spoil_tool_answer(self) -> Callable[[str], None] | None:
        """Its MCP server answers the call it holds badly (``chaos.fault.WorldServers``), where it serves
        the target's tools."""
        return self.box.spoil if self.target.mcp is not None else None

    def restart_server(self, server: str) -> Callable[[], None] | None:
        """The server the store lives on crashes and restarts (``postgres-crash``, ``temporal-crash``),
        where it is ``server``."""
        return self.restart_engine if self.store.server == server else None

    @property
    def cut_database_connections(self) -> Callable[[], None] | None:
        """The relay cuts every connection to its database server, which lives on (``connection-lost``)."""
        return self.relay.cut if self.relay is not None else None

    @property
    def log_glob(self) -> str:
        return str(self.box.workspace / self.target.sessions)

    def log_path(self) -> Path | None:
        found = sorted(glob.glob(self.log_glob))
        return Path(found[0]) if found else None

    def log(self) -> bytes:
        """The session log's bytes now (empty when the agent has not created it)."""
        path = self.log_path()
        try:
            return path.read_bytes() if path else b""
        except FileNotFoundError:
            return b""

    def log_size(self) -> int:
        path = self.log_path()
        try:
            return path.stat().st_size if path else 0
        except FileNotFoundError:
            return 0

    def open_attempt(self) -> tuple[str | None, int | None]:
        """The attempt a model request arriving now belongs to: the latest ``stepAttempt`` durable in the
        log that no answer settled (open, or closed by a ``stepFailed`` the agent wrote while its request
        was on its way: an abort, a timeout). And the line the reducer rejects, where the log is corrupt
        (nothing after it is durable)."""
        log = self.log()
        if self.durable_limit is not None:
            log = log[: self.durable_limit()]
        reducer = Reducer.of(log)
        rejected = reducer.error.line if reducer.error is not None else None
        attempt: str | None = None
        for fact in committed_facts(log, reducer.line):
            kind, body = kind_of(fact)
            if kind == "stepAttempt":
                attempt = body["attemptId"]
            elif "attemptId" in body and body["attemptId"] == attempt and fact["kind"] == "entry":
                attempt = None  # its answer settled it
            elif kind == "entry:compaction":
                attempt = None
        return attempt, rejected

    def values(self, config: Configuration) -> dict[str, str]:
        return placeholders(
            self.target,
            self.box.workspace,
            model_url=self.server.url,
            model_root=self.server.url.removesuffix("/v1"),
            model=config.model or self.target.model,
            environment_identity=config.environment_identity or self.target.environment_identity,
            tools_json=json.dumps(config.tools, sort_keys=True),
            request_deadline=f"{self.deadline:g}" if self.deadline is not None else "",
            mcp_url=self.mcp_url,
            **({self.store.server_placeholder: self.engine_address} if self.store.server else {}),
            mcp_command=json.dumps(self.mcp_command()),
        )

    def mcp_server_args(self) -> list[str]:
        """What the world's MCP server needs to know of this world (``chaos.world.mcp_server``)."""
        box = self.box
        return [
            "--workspace", str(box.workspace), "--ledger", str(box.ledger),
            "--gate-dir", str(box.gate_dir), "--log-glob", self.log_glob,
        ]  # fmt: skip

    def mcp_command(self) -> list[str]:
        """The command an agent starts to reach the world's tools over stdio (``{mcp_command}``, as JSON)."""
        return [sys.executable, "-m", "chaos.world.mcp_server", "--stdio", *self.mcp_server_args()]

    @property
    def deadline(self) -> float | None:
        """The agent's deadline for one model answer in this case (``Target.deadline``)."""
        return self.target.deadline(self.scenario.withholds_answer())

    @property
    def phase_limit(self) -> float:
        return phase_limit(self.scenario, self.target)

    def env(self, config: Configuration, gates: list[str]) -> dict[str, str]:
        values = self.values(config)
        declared = {key: fill(value, values) for key, value in self.target.env.items()}
        signing = {APPROVAL_KEY: self.approval_key} if self.target.approve is not None else {}
        return self.box.environment(
            {**declared, **config.env, **self.extra_env, **signing}, gates, self.log_glob
        )

    def argv(self, template: list[str], config: Configuration, **values: str) -> list[str]:
        filled = {**self.values(config), **values}
        return [fill(part, filled) for part in template]

    @property
    def cwd(self) -> Path:
        return Path(fill(self.target.cwd, self.values(Configuration())))

    def close(self) -> None:
        for close in reversed(self.closers):
            close()
        self.server.close()
        self.box.remove()


def build_world(scenario: Scenario, target: Target, extra_env: dict[str, str]) -> World:
    """A fresh sandbox and model server for one case; refuses what would let the agent out of it."""
    for name in scenario.files:
        if fnmatch.fnmatch(name, target.sessions):
            where = scenario.path or "the scenario"
            raise TargetUnusable(
                f"{where}: files.{name}: pre-seeds a session log (the target's sessions glob "
                f"{target.sessions!r} matches it); a session log must be one the agent wrote"
            )
    register_env(extra_env)  # --target-env values are passed on, never written (chaos.secrets)
    box = make_sandbox(scenario.files)
    world = World(scenario, target, box, ModelServer(scenario.turns, protocol=target.protocol), extra_env)
    # A real provider gives fresh call ids; a store without the contract's facts has no attempts to read.
    world.server.fresh_ids = not target.facts
    world.server.attempt_of = world.open_attempt if target.facts else None
    problem = cwd_problem(world.cwd, box.workspace)
    if problem:
        world.close()
        raise TargetUnusable(f"{target.path}: cwd {target.cwd!r} {problem}")
    return world
