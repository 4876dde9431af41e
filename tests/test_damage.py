"""Damage at rest (``bit-flip``): one byte of the newest unit a store wrote, changed; what SQLite makes
of a broken WAL frame; hostile bytes that name no page size are left alone."""

from __future__ import annotations

import sqlite3
import struct
from pathlib import Path

from chaos.fault.damage import bit_flip


def test_a_log_s_last_complete_line_no_longer_reads_and_a_torn_tail_stays() -> None:
    log = b'{"a":1}\n{"b":2}\n{"c"'
    damage = bit_flip({"s.jsonl": log})
    assert damage is not None and damage.path == "s.jsonl"
    assert damage.data == b'{"a":1}\nz"b":2}\n{"c"'  # '{' ^ 1 == 'z'
    assert bit_flip({"s.jsonl": b'{"c"'}) is None  # no complete line: nothing to change


def test_a_store_written_whole_has_the_file_renamed_into_place_last_changed() -> None:
    """Which file a rename made last is not in the files' bytes: the tracer names it."""
    files = {"c/b.json": b'{"n": 2}', "c/a.json": b'{"n": 1}'}
    damage = bit_flip(files, "c/a.json")
    assert damage is not None and damage.path == "c/a.json" and damage.data == b'z"n": 1}'
    assert "renamed into place last" in damage.said
    assert bit_flip({"c/a.json": b""}, "c/a.json") is None  # an empty file: nothing to change


def _wal_store(folder: Path) -> tuple[sqlite3.Connection, dict[str, bytes]]:
    db = sqlite3.connect(folder / "s.db")
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA wal_autocheckpoint=0")
    db.execute("CREATE TABLE t (x)")
    for n in range(3):
        db.execute("INSERT INTO t VALUES (?)", (n,))
        db.commit()
    files = {p.name: p.read_bytes() for p in folder.iterdir() if not p.name.endswith("-shm")}
    return db, files


def test_a_broken_wal_frame_loses_its_commit_without_a_word(tmp_path: Path) -> None:
    """What a framework on SQLite resumes from: the WAL read up to the frame before the broken one."""
    (tmp_path / "made").mkdir()
    db, files = _wal_store(tmp_path / "made")
    damage = bit_flip(files)
    db.close()
    assert damage is not None and damage.path == "s.db-wal" and "last WAL frame" in damage.said
    copy = tmp_path / "copy"
    copy.mkdir()
    for name, data in {**files, damage.path: damage.data}.items():
        (copy / name).write_bytes(data)
    intact = sqlite3.connect(tmp_path / "made" / "s.db").execute("SELECT count(*) FROM t").fetchone()
    read = sqlite3.connect(copy / "s.db").execute("SELECT count(*) FROM t").fetchone()
    assert intact == (3,) and read == (2,)  # the last commit is gone, and SQLite said nothing


def test_bytes_that_name_no_page_size_are_left_alone() -> None:
    header = bytearray(32)
    for size in (0, 3, 1 << 20):
        struct.pack_into(">I", header, 8, size)
        assert bit_flip({"s.db-wal": bytes(header) + b"x" * 5000}) is None
    database = bytearray(b"SQLite format 3\x00" + bytes(84))
    struct.pack_into(">H", database, 16, 0)
    assert bit_flip({"s.db": bytes(database)}) is None
    assert bit_flip({}) is None and bit_flip({"s.db-wal": b""}) is None
    assert bit_flip({"s.db": b"SQLite format 3\x00\x10"}) is None  # a header cut short: no page size to read
