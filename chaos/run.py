"""Starting an agent as a child in its own process group, and waiting on it with a timeout."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from chaos.kill import KillReport, kill_tree


@dataclass
class Exit:
    returncode: int | None  # None: killed at the timeout
    stdout: str
    stderr: str
    kill: KillReport | None = None


def start(argv: Sequence[str], cwd: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        list(argv),
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )


def finish(proc: subprocess.Popen[bytes], timeout: float) -> Exit:
    """Wait for the agent; at the timeout kill its whole tree and report it, never wait forever."""
    try:
        out, err = proc.communicate(timeout=timeout)
        return Exit(proc.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"))
    except subprocess.TimeoutExpired:
        report = kill_tree(proc.pid)
        out, err = proc.communicate()
        return Exit(None, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"), report)
