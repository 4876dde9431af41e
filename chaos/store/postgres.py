"""A store on a PostgreSQL server (the world's own, ``chaos.world.postgres``), read as a SQLite image.

The server holds what the agent committed; chaos copies it at a moment (a
commit the relay holds, an effect's start, a phase's end) in one read-only
``REPEATABLE READ`` transaction, every table of every schema but the
server's own, into a SQLite database in memory whose bytes are the copy
(``IMAGE``). So a server store is read like a file store: pure over bytes,
saved as a fixture, read again later without a server. Values are kept as
SQLite can hold them: JSON as its text, ``bytea`` as blobs, times as ISO text.

Where the server is: ``SERVER_DIR`` beside the workspace in the sandbox, its
Unix socket in it, the database ``DATABASE``. chaos reads it as the superuser
``USER`` with a password made for this chaos process (``PASSWORD``, in memory
only); the agent connects as ``AGENT``, the database's owner and no superuser
(no ``COPY ... TO PROGRAM``), with a password made for its case. Needs psycopg
(``pip install 'durable-chaos[postgres]'``).
"""

from __future__ import annotations

import datetime
import decimal
import json
import secrets
import sqlite3
import uuid
from pathlib import Path
from typing import Any, ClassVar

from chaos.store.base import Store, server_folder

SERVER_DIR = "postgres"  # the server's folder in the sandbox, beside the workspace (its socket in it)
DATABASE = USER = "chaos"
AGENT = "agent"  # the role the agent connects as (through the relay): it owns DATABASE, nothing more
PASSWORD = secrets.token_urlsafe(24)  # USER's: the cluster is made once per chaos process, with this
IMAGE = "postgres.db"  # the copy's name among a snapshot's files
PORT = 5432  # the socket's number (its name: .s.PGSQL.5432); nothing listens on TCP


def server_dir(workspace: Path) -> Path:
    return server_folder(workspace, SERVER_DIR)


def dsn(folder: Path) -> str:
    """How chaos reaches the world's server in ``folder`` (``server_dir``) directly, not through the relay:
    its reads are no commits."""
    return f"host={folder} port={PORT} dbname={DATABASE} user={USER} password={PASSWORD}"


def _plain(value: Any) -> Any:
    """A value as SQLite keeps it."""
    if isinstance(value, dict | list):
        return json.dumps(value, sort_keys=True)
    if isinstance(value, memoryview):
        return bytes(value)
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, decimal.Decimal | uuid.UUID):
        return str(value)
    return value


def image(connection: Any) -> bytes | None:
    """Every user table the psycopg ``connection`` sees, copied in one snapshot into a SQLite database's
    bytes (a table named by itself, or ``schema.table`` where two schemas share a name); None where the
    database holds no table yet."""
    connection.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
    found = connection.execute(
        "SELECT table_schema, table_name FROM information_schema.tables WHERE table_type = 'BASE TABLE' "
        "AND table_schema NOT IN ('pg_catalog', 'information_schema') ORDER BY 1, 2"
    ).fetchall()
    names = [name for _, name in found]
    if not found:
        connection.execute("COMMIT")
        return None
    copy = sqlite3.connect(":memory:")
    try:
        for schema, name in found:
            own = name if names.count(name) == 1 else f"{schema}.{name}"
            cursor = connection.execute(f'SELECT * FROM "{schema}"."{name}"')
            columns = [column.name for column in cursor.description or []]
            quoted = ", ".join(f'"{column}"' for column in columns)
            copy.execute(f'CREATE TABLE "{own}" ({quoted})')
            marks = ", ".join("?" for _ in columns)
            copy.executemany(
                f'INSERT INTO "{own}" VALUES ({marks})', [tuple(_plain(v) for v in row) for row in cursor]
            )
        connection.execute("COMMIT")
        copy.commit()
        return copy.serialize()
    finally:
        copy.close()


class ServerStore(Store):
    """A store on the world's PostgreSQL server: its commits are seen on the wire (the relay, ``wire``),
    its snapshot is the server's tables as a SQLite image. Mixed in before a ``SqliteStore`` that reads
    the image as it reads its own database."""

    commit: ClassVar[str] = "wire"
    server: ClassVar[str] = "postgres"
    server_placeholder: ClassVar[str] = "postgres_url"

    def files(self, workspace: Path, path: str, state: str | None = None) -> list[Path]:
        return []  # nothing of it is a file of the agent's machine: a power cut there keeps it all

    def snapshot(self, workspace: Path, path: str, state: str | None = None) -> dict[str, bytes]:
        import psycopg

        folder = server_dir(workspace)
        if not (folder / f".s.PGSQL.{PORT}").exists():
            return {}
        with psycopg.connect(dsn(folder), autocommit=True, connect_timeout=10) as connection:
            copied = image(connection)
        return {IMAGE: copied} if copied is not None else {}
