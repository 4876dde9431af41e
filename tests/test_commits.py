"""Every commit of a SQLite store is a boundary, in every journal mode that keeps a file (issue 50): a real
Python process writes a real database under the real tracer, and chaos counts its commits, stops it at one
(a SIGKILL right where the commit's call returns, or right before it), and reads what a recovering process
would: the commit there once it was made, rolled back by its hot journal before. A power cut keeps only
what was synced: a journal removed, cut or zeroed and not yet synced comes back, and rolls the commit back
(SQLite's own ``synchronous=EXTRA`` exists for that)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from chaos.process import ptrace
from chaos.process.commits import Commits
from chaos.store import store_named
from chaos.store.sqlite import opened_copy
from tests.conftest import needs_ptrace

pytestmark = needs_ptrace

WRITER = """
import sqlite3, sys
c = sqlite3.connect("state.db", isolation_level=None)
c.execute(f"PRAGMA journal_mode={sys.argv[1]}")
c.execute("CREATE TABLE IF NOT EXISTS t (n INTEGER)")
for n in range(3):
    c.execute("BEGIN"); c.execute("INSERT INTO t VALUES (?)", (n,)); c.execute("COMMIT")
"""
# The table and three rows are four commits; WAL mode commits once more, to switch into it.
MODES = {"wal": 5, "delete": 4, "truncate": 4, "persist": 4, "memory": 0}


def _write(tmp_path: Path, mode: str, stop_at: int = 0, before: bool = False) -> tuple[Commits, int | None]:
    """The writer in ``mode`` under the tracer; killed at its ``stop_at``-th commit (once its call returned,
    or ``before`` it ran), if any. The phase's commits and the process's exit."""
    commits = Commits(store_named("langgraph"), tmp_path, "state.db", ledger="", power_cut=True)

    def trapped(pid: int, tag: int) -> bool:
        asked, made = commits.observe(pid, tag)
        if stop_at and (commits.begun == stop_at and asked if before else made and commits.count == stop_at):
            os.kill(pid, signal.SIGKILL)
        return asked

    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, mode], cwd=tmp_path, preexec_fn=ptrace.child_setup(True)
    )
    ptrace.trace(proc, trapped, lambda pid: None, lambda code, alone: None)
    return commits, proc.returncode


def _rows(files: dict[str, bytes]) -> int:
    with opened_copy(files, "state.db") as connection:
        assert connection is not None
        return int(connection.execute("SELECT count(*) FROM t").fetchone()[0])


@pytest.mark.parametrize("mode", list(MODES))
def test_each_commit_is_seen_in_every_journal_mode_that_keeps_a_file(mode: str, tmp_path: Path) -> None:
    commits, code = _write(tmp_path, mode)
    assert code == 0 and commits.count == commits.begun == MODES[mode]


@pytest.mark.parametrize("mode", ["wal", "delete", "truncate", "persist"])
@pytest.mark.parametrize("before", [False, True], ids=["made", "about-to-be-made"])
def test_a_kill_at_a_commit_leaves_it_made_and_a_kill_before_it_rolled_back(
    mode: str, before: bool, tmp_path: Path
) -> None:
    """Killed at the commit of the second row: it is there (the journal gone, cut or zeroed; the WAL's
    commit frame written); killed just before, the hot journal the process left rolls it back when the
    copy is opened, as the resume's own open would. A power cut at the commit keeps what was synced: the
    first row only."""
    second_row = 3 + (mode == "wal")
    commits, code = _write(tmp_path, mode, stop_at=second_row, before=before)
    files = store_named("langgraph").snapshot(tmp_path, "state.db")
    assert code == -signal.SIGKILL
    assert _rows(files) == (1 if before else 2)
    assert _rows(commits.durable_files()) == 1
    if mode != "wal" and before:
        assert "state.db-journal" in files  # hot: part of the state chaos keeps and restores
