"""Sandbox workspaces: a fresh directory per run, and an environment scrubbed to what the target declares.

The workspace is what the agent may touch; the ledger, gates and the agent's
HOME live beside it, outside the workspace, so a tool cannot forge its own
effect record. The environment is built from nothing: no credential of the
caller's shell leaks into the agent or into a saved fixture.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

BASE_ENV = ("PATH", "LANG", "LC_ALL", "TZ")


@dataclass(frozen=True)
class WorkspaceFile:
    content: str
    executable: bool = False


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

    def waiting(self, gate: str) -> bool:
        return (self.gate_dir / f"{gate}.waiting").exists()

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

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


def make_sandbox(files: dict[str, WorkspaceFile], parent: Path | None = None) -> Sandbox:
    """A new sandbox whose workspace holds ``files`` (paths relative to the workspace)."""
    root = Path(tempfile.mkdtemp(prefix="chaos-", dir=parent)).resolve()
    box = Sandbox(root)
    for directory in (box.workspace, box.gate_dir, box.home):
        directory.mkdir()
    for name, spec in files.items():
        path = (box.workspace / name).resolve()
        if box.workspace not in path.parents:
            raise ValueError(f"workspace file {name!r} would land outside the workspace")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(spec.content)
        if spec.executable:
            path.chmod(0o755)
    return box
