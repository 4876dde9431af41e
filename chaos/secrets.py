"""Values chaos did not invent are secrets: kept by name only in everything chaos writes.

A ``--target-env`` value (an API key, a token), a credential header a recorded
provider saw, the host's own paths: chaos passes them on to the agent or the
provider, and never writes them. Every file chaos writes about a case (its
logs and outputs, ``verdict.json``, the journal, the summary, the report, a
JUnit file, a mined fixture, a recording) passes through ``scrub``, which puts
``${NAME}`` where a registered value stood, in its raw, JSON-escaped and
HTML/XML-escaped forms. The marker holds no character any of those formats
escapes (``<``, ``&``, quotes, backslash), so scrubbing a finished JUnit file or
report leaves it well-formed, and it reads as the variable the reproduce
command names. The register is process-wide on purpose: a secret is a secret for every
writer, and one forgotten writer is a leak.

Which ``--target-env`` values are secrets (``looks_secret``): a value whose
name says so (``..._KEY``, ``TOKEN``, ``SECRET``, ``PASSWORD``, ``AUTH``, ...),
or one long and opaque enough to be a credential (``OPAQUE`` characters or
more, no white space). Others are configuration (``APP_STAGE=production``):
scrubbing them would rewrite the scenario's own words (a prompt that says
"production" became ``${APP_STAGE}``, and its reproduce command ran another
scenario). Values shorter than ``SHORTEST`` characters are never scrubbed:
replacing ``1`` or ``yes`` everywhere would corrupt the evidence, and such a
value protects nothing.

A SQLite database is not scrubbed byte by byte: SQLite splits a long value
across overflow pages (so the bytes never hold it whole), and a WAL whose
bytes change fails its checksums (so the copy would read as nothing durable).
``scrub_store`` keeps a database as it is unless a secret is in it, in its
rows or its bytes; then the rows are scrubbed in a private copy and the
database rewritten whole (``VACUUM INTO``: no WAL, no free page keeps the old
value).
"""

from __future__ import annotations

import html
import os
import re
import sqlite3
import tempfile
import threading
from pathlib import Path

import orjson

SHORTEST = 6
OPAQUE = 16  # a value this long with no white space is a credential's shape, whatever it is named
SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASS|PWD|CRED|AUTH|PRIVATE|COOKIE|SESSION|SIGNATURE|CERT", re.I)
SQLITE = b"SQLite format 3\0"
_LOCK = threading.Lock()
_SECRETS: dict[bytes, bytes] = {}


def register(name: str, value: str) -> None:
    """From now on, ``value`` is written as ``${name}`` wherever chaos writes it."""
    if len(value) < SHORTEST:
        return
    marker = f"${{{name}}}".encode()
    forms = {value, orjson.dumps(value)[1:-1].decode(), html.escape(value), html.escape(value, quote=False)}
    with _LOCK:
        for form in (text.encode("utf-8", "surrogateescape") for text in forms):
            _SECRETS.setdefault(form, marker)


def looks_secret(name: str, value: str) -> bool:
    """A ``--target-env`` value chaos treats as a secret: its name says so, or it is long and opaque."""
    return bool(SECRET_NAME.search(name)) or (len(value) >= OPAQUE and not any(c.isspace() for c in value))


def register_env(env: dict[str, str]) -> None:
    for name, value in env.items():
        if looks_secret(name, value):
            register(name, value)


def scrub(data: bytes) -> bytes:
    """``data`` with every registered value replaced by its name (longest first, so that a value that
    contains another is named whole)."""
    with _LOCK:
        pairs = sorted(_SECRETS.items(), key=lambda pair: -len(pair[0]))
    for value, marker in pairs:
        if value in data:
            data = data.replace(value, marker)
    return data


def scrub_text(text: str) -> str:
    return scrub(text.encode("utf-8", "surrogateescape")).decode("utf-8", "surrogateescape")


def scrub_file(path: Path) -> None:
    """Scrub a file someone else wrote (an agent's output) in place."""
    try:
        data = path.read_bytes()
    except OSError:
        return
    clean = scrub(data)
    if clean != data:
        path.write_bytes(clean)


def scrub_tree(folder: Path) -> None:
    """Every file under ``folder`` scrubbed in place: the last pass over what a command wrote."""
    for root, _, names in os.walk(folder):
        for name in names:
            scrub_file(Path(root) / name)


def _has_secret(data: bytes) -> bool:
    with _LOCK:
        return any(value in data for value in _SECRETS)


def scrub_store(files: dict[str, bytes]) -> dict[str, bytes]:
    """A store's files (by name) as chaos may write them: each SQLite database (with its ``-wal``) as it
    was, or rewritten whole with its rows scrubbed where a secret is in it; any other file scrubbed."""
    out: dict[str, bytes] = {}
    for name, data in files.items():
        main = name.removesuffix("-wal")
        if name != main and files.get(main, b"").startswith(SQLITE):
            continue  # read with its database
        if data.startswith(SQLITE):
            out.update(_scrub_sqlite(name, data, files.get(f"{name}-wal")))
        else:
            out[name] = scrub(data)
    return out


def _scrub_sqlite(name: str, data: bytes, wal: bytes | None) -> dict[str, bytes]:
    kept = {name: data, **({f"{name}-wal": wal} if wal is not None else {})}
    in_bytes = _has_secret(data) or _has_secret(wal or b"")  # (a free page, an old WAL frame: not a row)
    with tempfile.TemporaryDirectory(prefix="chaos-scrub-") as folder:
        path = Path(folder) / "copy.db"
        path.write_bytes(data)
        if wal is not None:
            Path(f"{path}-wal").write_bytes(wal)
        connection = sqlite3.connect(path)
        try:
            connection.execute("PRAGMA trusted_schema = OFF")
            connection.create_function("chaos_secret", 1, _cell_has_secret, deterministic=True)
            connection.create_function("chaos_scrub", 1, _scrub_cell, deterministic=True)
            tables = [
                str(t)
                for (t,) in connection.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
                )
            ]
            columns = {
                t: [str(c[1]) for c in connection.execute(f'PRAGMA table_info("{t}")')] for t in tables
            }
            held = any(
                connection.execute(f'SELECT 1 FROM "{t}" WHERE chaos_secret("{c}") LIMIT 1').fetchone()
                for t in tables
                for c in columns[t]
            )
            if not held and not in_bytes:
                return kept
            for (trigger,) in connection.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'"):
                connection.execute(f'DROP TRIGGER "{trigger}"')  # the agent's, not to run here
            for t in tables:
                for c in columns[t]:
                    connection.execute(f'UPDATE "{t}" SET "{c}" = chaos_scrub("{c}")')
            connection.commit()
            rewritten = Path(folder) / "scrubbed.db"
            connection.execute("VACUUM INTO ?", (str(rewritten),))
            return {name: rewritten.read_bytes()}
        except sqlite3.Error:  # a database SQLite cannot read whole: kept only if it holds no secret
            return {} if in_bytes else kept
        finally:
            connection.close()


def _cell_has_secret(value: str | bytes | int | float | None) -> bool:
    if isinstance(value, str):
        return _has_secret(value.encode("utf-8", "surrogateescape"))
    return isinstance(value, bytes) and _has_secret(value)


def _scrub_cell(value: str | bytes | int | float | None) -> str | bytes | int | float | None:
    if isinstance(value, str):
        return scrub_text(value)
    return scrub(value) if isinstance(value, bytes) else value
