"""A crash state: everything a resume can read once a crashed phase is gone, as one digest.

ALICE and CrashMonkey bound their work by the distinct states a crash can leave, not by the places it
can happen: two cases whose crashed phases left the same state feed their resumes the same inputs. The
digest covers what the next process reads: the session log (or the store, as its adapter reads it)
and every other file of the workspace; and what the world holds of the run, which the resume meets and
the checks judge: the effects that ran (the ledger) and how many times the model was asked at each step
(the model server answers a retry by its count). A kill before an effect and one after it leave the same
log and different worlds. Two runs of one agent never write the same bytes (its own ids,
its clock, the sandbox's path), so the log is compared with those renamed (``canonical_log``), and a
framework's store by its view with its call ids renamed (``View.normalized``): equal digests mean equal
states up to names the agent chose itself. Anything else that differs (a random token that is no UUID,
a file the store keeps beside the view) keeps two states apart: the digest errs on the side of
"different". Pure functions over bytes, and one bounded walk of the workspace.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from pathlib import Path

import orjson

from chaos.process.phase import Kept

UUID = re.compile(rb"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
# a JSON member whose name says it holds a moment (timestamp, createdAt, startedAt, time, ts)
PID = re.compile(rb'"pid"\s*:\s*(\d+)')  # the process an effect ran in: a number the system chose
CLOCK = re.compile(rb'"(\w*(?:[Aa]t|[Tt]imestamp|[Tt]ime|ts))"\s*:\s*("[^"\\]{0,64}"|-?\d+(?:\.\d+)?)')
MAX_FILES = 10_000  # files of a workspace the digest reads; more make the state unknown (None)
MAX_DEPTH = 64  # folders deep it walks; deeper ones make the state unknown
MAX_BYTES = 256 * 1024 * 1024  # bytes of one file it reads; the rest is counted, not read
CHUNK = 1 << 20
MAX_LEDGER = 16 * 1024 * 1024  # bytes of the effect ledger it compares; a longer one makes the state unknown


def canonical_log(log: bytes, places: tuple[bytes, ...] = ()) -> bytes:
    """The log with what differs between two runs of the same agent renamed: each UUID by the order it
    first appears in, each moment by 0, each of ``places`` (the sandbox's paths) by a placeholder."""
    for number, place in enumerate(places):
        if place:
            log = log.replace(place, b"<place-%d>" % number)
    names: dict[bytes, bytes] = {}
    log = UUID.sub(lambda m: names.setdefault(m.group(0).lower(), b"<id-%d>" % len(names)), log)
    return CLOCK.sub(lambda m: b'"' + m.group(1) + b'":0', log)


def canonical_ledger(ledger: bytes, places: tuple[bytes, ...] = ()) -> bytes:
    """The effect ledger as ``canonical_log`` reads a log, each process id also renamed by the order it
    first appears in: which effects ran, for which calls, in which process of the run, not when or under
    which number."""
    pids: dict[bytes, int] = {}
    ledger = PID.sub(lambda m: b'"pid":%d' % pids.setdefault(m.group(1), len(pids)), ledger)
    return canonical_log(ledger, places)


def file_digests(workspace: Path, skip: frozenset[str]) -> list[tuple[str, str]] | None:
    """Each regular file under ``workspace`` but ``skip`` (paths relative to it), with the SHA-256 of its
    first ``MAX_BYTES`` bytes and its size; symbolic links by their target, never followed; None past
    ``MAX_FILES`` files or ``MAX_DEPTH`` folders deep (the state is then unknown)."""
    out: list[tuple[str, str]] = []
    for folder, dirs, names in os.walk(workspace, followlinks=False):
        if dirs and os.path.relpath(folder, workspace).count(os.sep) + 1 >= MAX_DEPTH:
            return None  # (the walk goes no deeper: the agent's folders are hostile too)
        dirs.sort()
        for name in sorted(names):
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, workspace)
            if rel in skip:
                continue
            if len(out) >= MAX_FILES:
                return None
            try:
                info = os.lstat(path)
                if stat.S_ISLNK(info.st_mode):
                    out.append((rel, "link:" + os.readlink(path)))
                elif stat.S_ISREG(info.st_mode):
                    out.append((rel, _sha(path, info.st_size)))
            except OSError:
                out.append((rel, "unreadable"))
    return out


def _sha(path: str, size: int) -> str:
    hasher = hashlib.sha256()
    with open(path, "rb", buffering=0) as opened:
        left = min(size, MAX_BYTES)
        while left > 0:
            chunk = opened.read(min(CHUNK, left))
            if not chunk:
                break
            hasher.update(chunk)
            left -= len(chunk)
    return f"{hasher.hexdigest()}:{size}"


def ledger_of(path: Path) -> bytes | None:
    """The effect ledger's bytes (none yet: empty), or None past ``MAX_LEDGER`` (the state is unknown)."""
    try:
        with open(path, "rb") as opened:
            data = opened.read(MAX_LEDGER + 1)
    except FileNotFoundError:
        return b""
    return data if len(data) <= MAX_LEDGER else None


def crash_state(
    kept: Kept,
    workspace: Path,
    log: str | None,
    sandbox: Path,
    damaged: str | None = None,
    world: tuple[bytes, dict[str, int]] = (b"", {}),
) -> str | None:
    """The digest of what the next phase can read after ``kept`` (a session log at ``log``, relative to
    ``workspace``, or a framework's store as its view read it, and what a fault then ``damaged`` at
    rest) and of the ``world`` (the effect ledger's bytes, the model's asks per step), or None where it
    is unknown."""
    others = file_digests(workspace, frozenset([*kept.store_files, *([log] if log else [])]))
    if others is None:
        return None
    places = (str(workspace).encode(), str(sandbox).encode())
    if kept.view_after is not None:
        held: object = kept.view_after.normalized()
    else:
        held = canonical_log(kept.log_after, places).decode("utf-8", "replace")
    ledger, asked = world
    effects = canonical_ledger(ledger, places).decode("utf-8", "replace")
    body = orjson.dumps(
        {"held": held, "files": others, "damaged": damaged, "effects": effects, "asked": asked},
        option=orjson.OPT_SORT_KEYS,
    )
    return hashlib.sha256(body).hexdigest()[:16]
