"""Damage at rest: what a store's files become when the disk changes bytes between a crash and the
resume. Pure functions over the files a crash kept (path -> bytes); the fault ``bit-flip`` applies them.

It acts on the newest thing the store wrote, by the store's own unit: a line of a session log or a file
of lines; a file of a store written whole (the one renamed into place last); for SQLite, a WAL frame (a
commit is one or more frames, the last one carrying the database's size) or, without a WAL, a page of
the database file. A byte changed in a WAL frame breaks its checksum,
and SQLite then reads the WAL only up to the frame before: the commit is gone without a word, which is
the older state a framework resumes from if nothing tells it otherwise.

Not built: losing a whole unit (a log's last line, a WAL's last commit). Nothing in a JSONL log or in
SQLite's WAL tells a resume that synced bytes are gone, so every agent on them would resume from the
older state; it belongs to a store that keeps a checksum or a length elsewhere.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

WAL_HEADER, FRAME_HEADER, DATABASE_HEADER = 32, 24, 100
SQLITE_MAGIC = b"SQLite format 3\x00"


@dataclass(frozen=True)
class Damage:
    """What a fault did to one file: its path (relative to the workspace), its bytes now, and what it did
    in words (the verdict says it)."""

    path: str
    data: bytes
    said: str


def newest(files: dict[str, bytes], renamed_last: str | None = None) -> tuple[str, str] | None:
    """The file that holds the newest writes, and its kind (``whole``, ``wal``, ``database`` or
    ``lines``): in a store of files written whole, the one renamed into place last (``renamed_last``: the
    tracer saw it; their bytes cannot tell), else a non-empty WAL, then a SQLite database (its whole
    header there), then a file of lines; None when nothing can be damaged."""
    if renamed_last is not None:
        return (renamed_last, "whole") if files.get(renamed_last) else None
    for path, data in sorted(files.items()):
        if path.endswith("-wal") and len(data) > WAL_HEADER:
            return path, "wal"
    for path, data in sorted(files.items()):
        if data.startswith(SQLITE_MAGIC) and len(data) >= DATABASE_HEADER:
            return path, "database"
    for path, data in sorted(files.items()):
        if not path.endswith(("-wal", "-journal", "-shm")) and b"\n" in data:
            return path, "lines"
    return None


def _last_line(data: bytes) -> int:
    """Where the last complete line begins (a torn tail after it is no line; ``data`` holds one)."""
    return data.rfind(b"\n", 0, data.rfind(b"\n")) + 1


def _page(size: int) -> int | None:
    """A SQLite page size as its files spell it (1 for 65536), or None: not one (hostile bytes)."""
    size = 65536 if size == 1 else size
    return size if 512 <= size <= 65536 and size & (size - 1) == 0 else None


def _frames(data: bytes) -> tuple[int, list[int]] | None:
    """A WAL's page size and where each of its whole frames begins (None: no page size it could have)."""
    page = _page(struct.unpack(">I", data[8:12])[0])
    if page is None:
        return None
    size = FRAME_HEADER + page
    return page, list(range(WAL_HEADER, len(data) - size + 1, size))


def bit_flip(files: dict[str, bytes], renamed_last: str | None = None) -> Damage | None:
    """One byte of the newest unit changed (its lowest bit flipped): the first byte of a log's last line
    (no reader can take it for JSON), of a file written whole (the same, for a JSON checkpoint), a byte
    of a WAL's last frame's page (its checksum breaks), or the first byte of a database's last page (its
    kind of page, or on page 1 the file's magic)."""
    found = newest(files, renamed_last)
    if found is None:
        return None
    path, kind = found
    data = files[path]
    if kind == "whole":
        at, what = 0, "the file renamed into place last"
    elif kind == "lines":
        at, what = _last_line(data), "its last line"
    elif kind == "wal":
        framed = _frames(data)
        if framed is None or not framed[1]:
            return None
        page, frames = framed
        at, what = frames[-1] + FRAME_HEADER + page // 2, "its last WAL frame"
    else:
        page_size = _page(struct.unpack(">H", data[16:18])[0])
        if page_size is None or len(data) < page_size:
            return None
        at, what = (len(data) // page_size - 1) * page_size, "its last page"
    flipped = data[:at] + bytes([data[at] ^ 1]) + data[at + 1 :]
    return Damage(path, flipped, f"{path}: one byte of {what} changed (offset {at})")
