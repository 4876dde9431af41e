"""Sandbox workspaces: a fresh directory per run, and an environment scrubbed to what the target declares.

The workspace is what the agent may touch; the ledger, gates and the agent's
HOME live beside it, outside the workspace, so a tool cannot forge its own
effect record. The environment is built from nothing: no credential of the
caller's shell leaks into the agent or into a saved fixture.

Each sandbox names its owner (the chaos process and its start time), so a
sandbox left behind by a chaos that was killed outright is removed by the next
chaos that starts; nothing else ever outlives a run.
"""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import psutil

from chaos.errors import InternalError
from chaos.scenario.model import WorkspaceFile, files_problem
from chaos.store.base import servers

BASE_ENV = ("PATH", "LANG", "LC_ALL", "TZ")
PREFIX = "chaos-"
OWNER = ".chaos-owner"
# what a sandbox root may hold (and the folders of the world's servers: chaos.store.base.server_folder)
LAYOUT = frozenset({"workspace", "gates", "home", "ledger.jsonl", OWNER})
SAVES_READ = 1 << 20  # bytes of a phase's ``saves`` file read
SAVES_KEPT = 10_000  # saves of one phase kept
SAVE_KEY = 200  # characters of a save's key kept (its interpreter writes no more)
MARK_READ = 64  # bytes of a gate's waiting mark read (a time)
MARK_SLACK = 5.0  # seconds a waiting mark's time may stand from its file's (a loaded machine is slow)


@dataclass
class Sandbox:
    root: Path

    @property
    def workspace(self) -> Path:
        return self.root / "workspace"

    @property
    def ledger(self) -> Path:
        return self.root / "ledger.jsonl"

    @property
    def gate_dir(self) -> Path:
        return self.root / "gates"

    @property
    def home(self) -> Path:
        return self.root / "home"

    def release(self, gate: str) -> None:
        (self.gate_dir / f"{gate}.release").touch()

    def released(self, gate: str) -> bool:
        return (self.gate_dir / f"{gate}.release").exists()

    def activate(self, gates: list[str]) -> None:
        """Name the gates of the phase about to run, for what reads them from the gate directory rather than
        its environment (the world's MCP server outlives a phase: ``chaos.world.mcp_server``). The saves a
        phase begins are counted from 1 in its own process: an earlier phase's are gone."""
        for old in self.gate_dir.glob("save*"):
            old.unlink(missing_ok=True)
        (self.gate_dir / "active").write_text(",".join(gates))

    def saves(self) -> list[tuple[str, int, str]]:
        """The saves the phase's process began, in order, as its interpreter wrote them
        (``chaos.process.forkserver``: ``KIND N KEY`` a line): agent-written bytes, read bounded and
        parsed strictly (a line that does not parse is not a save)."""
        try:
            with (self.gate_dir / "saves").open("rb") as file:
                text = file.read(SAVES_READ).decode("utf-8", "replace")
        except FileNotFoundError:
            return []
        out = []
        for line in text.splitlines()[:SAVES_KEPT]:
            kind, _, rest = line.partition(" ")
            number, _, key = rest.partition(" ")
            if kind.isidentifier() and number.isascii() and number.isdigit():  # ("²" is a digit to isdigit)
                out.append((kind, int(number), key[:SAVE_KEY]))
        return out

    def begin_first(self, kind: str, key: str) -> None:
        """In the phases after this one, the parallel work of ``kind`` about ``key`` (a save's, as
        ``saves`` read it) begins before the rest of its kind (``chaos.process.forkserver``)."""
        (self.gate_dir / "first").write_text(f"{kind} {key}")

    def spoil(self, how: str) -> None:
        """Have the world's MCP server spoil the answer of the call it holds (``chaos.world.mcp_server``)."""
        (self.gate_dir / "spoil").write_text(how)

    def waiting(self, gate: str) -> bool:
        return (self.gate_dir / f"{gate}.waiting").exists()

    def waited_since(self, gate: str) -> float:
        """When the effect held at ``gate`` stopped going on (epoch seconds), as its mark says
        (``chaos.ledger.gate``); agent-written bytes: a mark that does not hold a time of this run's
        sandbox is read as its file's time (coarse: a filesystem's clock ticks in milliseconds)."""
        mark = self.gate_dir / f"{gate}.waiting"
        with mark.open("rb") as file:
            text = file.read(MARK_READ)
        try:
            since = float(text)
        except ValueError:
            since = math.nan
        made = mark.stat().st_mtime
        return since if made - MARK_SLACK <= since <= made + MARK_SLACK else made

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    def strays(self) -> list[str]:
        """What was written beside the workspace, outside the sandbox's own layout."""
        try:
            return sorted(name for name in os.listdir(self.root) if name not in LAYOUT | servers())
        except FileNotFoundError:
            return []

    def environment(self, declared: dict[str, str], gates: list[str], log_glob: str) -> dict[str, str]:
        """The agent's whole environment: a few base variables, the world's, then the target's."""
        env = {k: os.environ[k] for k in BASE_ENV if k in os.environ}
        env.update(
            HOME=str(self.home),
            TMPDIR=str(self.home),
            CHAOS_LEDGER=str(self.ledger),
            CHAOS_GATE_DIR=str(self.gate_dir),
            CHAOS_GATES=",".join(gates),
            CHAOS_LOG_GLOB=log_glob,
            CHAOS_EFFECT=f"{sys.executable} -m chaos.world.ledger",
        )
        env.update(declared)
        return env


def _identity(pid: int) -> str:
    return f"{pid} {psutil.Process(pid).create_time()}"


def claim(root: Path) -> None:
    """Name this chaos as the owner of the folder ``root`` (``PREFIX``...): removed by the next chaos that
    starts, should this one be killed before it could remove it (``remove_stale``)."""
    (root / OWNER).write_text(_identity(os.getpid()))


def _owner_gone(owner: str) -> bool:
    pid = int(owner.split()[0])
    try:
        return _identity(pid) != owner
    except psutil.NoSuchProcess:
        return True


def remove_stale(parent: Path | None = None) -> list[Path]:
    """Remove the sandboxes whose owning chaos process is gone (killed before it could clean up)."""
    removed = []
    for root in Path(parent or tempfile.gettempdir()).glob(f"{PREFIX}*"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            if _owner_gone((root / OWNER).read_text()):
                shutil.rmtree(root, ignore_errors=True)
                removed.append(root)
    return removed


MIN_FREE = 1 << 20  # bytes: a disk with less is full, for a sandbox and for results alike


def disk_full(path: Path) -> str | None:
    """Why the file system of ``path`` cannot take what chaos or an agent writes (full), or None."""
    try:
        st = os.statvfs(path)
    except OSError:
        return None
    free = st.f_bavail * st.f_frsize
    return f"the disk of {path} is full ({free:,} bytes free)" if free < MIN_FREE else None


def sandbox_disk_full(root: Path | None = None) -> None:
    """A full sandbox disk is chaos's trouble, never the agent's (exit 3): every write it made would fail."""
    why = disk_full(root or Path(tempfile.gettempdir()))
    if why:
        raise InternalError(
            f"{why}: the sandbox (TMPDIR) has no room, and the agent's failures would be the disk's; free "
            "space there or point TMPDIR at another disk, and run again"
        )


def make_sandbox(files: dict[str, WorkspaceFile], parent: Path | None = None) -> Sandbox:
    """A new sandbox whose workspace holds ``files`` (paths relative to the workspace).

    A path that cannot be a workspace file is refused with ValueError before
    anything is created; nothing is left behind when creation fails.
    """
    problem = files_problem(list(files))
    if problem:
        raise ValueError(f"workspace files: {problem}")
    sandbox_disk_full(parent)
    root = Path(tempfile.mkdtemp(prefix=PREFIX, dir=parent)).resolve()
    box = Sandbox(root)
    try:
        claim(root)
        for directory in (box.workspace, box.gate_dir, box.home):
            directory.mkdir()
        for name, spec in files.items():
            path = box.workspace / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(spec.content)
            if spec.executable:
                path.chmod(0o755)
    except BaseException:
        box.remove()
        raise
    return box
