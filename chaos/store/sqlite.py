"""Reading a copy of a SQLite database, and telling a commit from the writes around it.

In WAL mode a transaction is a run of frames appended to ``NAME.db-wal`` (a
24-byte frame header, then a page); its last frame's header carries the
database size after the commit (bytes 4..8, zero in every other frame). After a
SIGKILL the commit point is the completed write of that last frame's page:
readers recover every frame up to the last valid commit frame. In a rollback
journal mode (SQLite's default, DELETE; TRUNCATE; PERSIST) the transaction
writes the pages it changes to ``NAME.db-journal`` first, then the database in
place, and commits when the journal stops being hot: deleted, cut to nothing,
or its header zeroed (``JOURNAL_HEADER`` bytes). A copy of the database file
with its WAL or its journal, opened elsewhere, reads exactly what a recovering
process would (SQLite replays the WAL, or rolls a hot journal back, on open).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import tempfile
from abc import abstractmethod
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

from chaos.store.base import SQLITE_SIDES, Store, View, beside, oversized
from chaos.store.inert import Blind

FRAME_HEADER = 24
JOURNAL_HEADER = 28  # what PERSIST mode zeroes to commit (SQLite's zeroJournalHdr)


def commits_frame(header: bytes) -> bool:
    """A WAL frame header whose frame ends a transaction (nonzero database size after the commit)."""
    return len(header) == FRAME_HEADER and header[4:8] != b"\0\0\0\0"


@contextlib.contextmanager
def opened_copy(files: dict[str, bytes], main: str) -> Iterator[sqlite3.Connection | None]:
    """``main`` (and its ``-wal`` or ``-journal``) copied from ``files`` into a private folder and opened; None when the
    copy holds no database yet."""
    if main not in files:
        yield None
        return
    with tempfile.TemporaryDirectory(prefix="chaos-store-") as folder:
        path = Path(folder) / "copy.db"
        path.write_bytes(files[main])
        for side in SQLITE_SIDES:  # a hot rollback journal is rolled back on open, as a resume would
            if f"{main}{side}" in files:
                Path(f"{path}{side}").write_bytes(files[f"{main}{side}"])
        connection = sqlite3.connect(path)
        try:
            yield connection
        finally:
            connection.close()


def tables(connection: sqlite3.Connection) -> list[str]:
    rows = connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    return sorted(str(r[0]) for r in rows)


def rows(connection: sqlite3.Connection) -> int:
    """Every row of every table: what a resume that adds nothing leaves as it was."""
    return sum(
        int(connection.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0]) for t in tables(connection)
    )


def main_file(files: dict[str, bytes]) -> str | None:
    """The database among copied files (not its WAL nor its journal)."""
    mains = sorted(name for name in files if not beside(name))
    return mains[0] if mains else None


def unreadable(err: Exception) -> str:
    return f"{type(err).__name__}: {err}".replace(os.linesep, " ")


class SqliteStore(Store):
    """A store in one SQLite database: each read opens a private copy (``opened_copy``)."""

    commit = "sqlite"
    marker: ClassVar[str]  # a table only this store's database has: none yet, nothing durable yet

    def read(self, files: dict[str, bytes]) -> View:
        if (large := oversized(files)) is not None:
            return View(blind=large)
        main = main_file(files)
        try:
            with opened_copy(files, main or "") as connection:
                if connection is None or self.marker not in tables(connection):
                    return View()
                return self.from_database(connection)
        except Blind as err:
            return View(blind=str(err))
        except (sqlite3.Error, ValueError, KeyError, TypeError) as err:
            return View(unreadable=unreadable(err))

    @abstractmethod
    def from_database(self, connection: sqlite3.Connection) -> View:
        """What the opened copy makes durable; raises ``Blind`` where chaos cannot decode it."""
