"""A small harness for driving the reference agent in a real world: sandbox, scripted server, ledger."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from chaos.contract import Reducer
from chaos.ledger import entries as read_ledger
from chaos.process.ptrace import default_signals
from chaos.scenario.model import Turn, WorkspaceFile
from chaos.world.model_server import ModelServer
from chaos.world.sandbox import Sandbox, make_sandbox

REPO = Path(__file__).resolve().parent.parent
AGENT = [sys.executable, "-m", "chaos.bundled.targets.reference"]
DEPLOY = WorkspaceFile('#!/bin/bash\n$CHAOS_EFFECT deploy "$@"\n', executable=True)
FILES = {"README.md": WorkspaceFile("hello from the workspace\n"), "deploy.sh": DEPLOY}
SESSIONS = ".tiny-agent/sessions"


@dataclass
class Exit:
    returncode: int | None  # None: killed at the timeout
    stdout: str
    stderr: str


def start(argv: Sequence[str], cwd: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """The agent as a plain child (no chaos run stage): these tests drive the agent directly."""
    return subprocess.Popen(
        list(argv),
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        preexec_fn=default_signals,  # as chaos starts agents: SIGINT not ignored, whatever ran before
    )


def finish(proc: subprocess.Popen[bytes], timeout: float) -> Exit:
    try:
        out, err = proc.communicate(timeout=timeout)
        code: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        for child in [*psutil.Process(proc.pid).children(recursive=True), psutil.Process(proc.pid)]:
            child.kill()
        out, err = proc.communicate()
        code = None
    return Exit(code, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"))


def live_descendants(pid: int) -> list[int]:
    try:
        return [p.pid for p in psutil.Process(pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


@dataclass
class World:
    box: Sandbox
    server: ModelServer
    env: dict[str, str]

    def log_path(self) -> Path:
        paths = sorted((self.box.workspace / SESSIONS).glob("*.jsonl"))
        assert len(paths) == 1, paths
        return paths[0]

    def session_id(self) -> str:
        return self.log_path().stem.split("_", 1)[1]

    def state(self) -> Any:
        reducer = Reducer()
        reducer.feed(self.log_path().read_bytes())
        return reducer

    def effects(self, name: str = "deploy") -> list[dict[str, Any]]:
        return [e for e in read_ledger(self.box.ledger) if e["effect"] == name and e["phase"] == "start"]

    def agent(self, *args: str, timeout: float = 60, **extra_env: str) -> Exit:
        return finish(start([*AGENT, *args], self.box.workspace, {**self.env, **extra_env}), timeout)

    def put_log(self, name: str, data: bytes) -> None:
        directory = self.box.workspace / SESSIONS
        directory.mkdir(parents=True, exist_ok=True)
        (directory / name).write_bytes(data)


@contextmanager
def world(
    script: list[Turn], files: dict[str, WorkspaceFile] | None = None, gates: tuple[str, ...] = (), **env: str
) -> Iterator[World]:
    box = make_sandbox(FILES if files is None else files)
    server = ModelServer(script)
    declared = {
        "TINY_BASE_URL": server.url,
        "TINY_MODEL": "scripted/model",
        "TINY_AGENT_ENVIRONMENT_IDENTITY": "chaos-test",
        "PYTHONPATH": str(REPO),
        **env,
    }
    try:
        yield World(
            box, server, box.environment(declared, list(gates), str(box.workspace / SESSIONS / "*.jsonl"))
        )
    finally:
        server.close()
        box.remove()


def read(path: str) -> dict[str, Any]:
    return {"name": "read", "arguments": {"path": path}}


def bash(command: str) -> dict[str, Any]:
    return {"name": "bash", "arguments": {"command": command}}


FULL_SCRIPT = [
    Turn(tool_calls=[read("README.md"), bash("./deploy.sh prod")]),
    Turn(tool_calls=[{"name": "write", "arguments": {"path": "notes.txt", "content": "deployed"}}]),
    Turn(
        tool_calls=[
            {"name": "edit", "arguments": {"path": "notes.txt", "old": "deployed", "new": "deployed once"}}
        ]
    ),
    Turn(text="Deployed to prod."),
]
