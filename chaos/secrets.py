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

Values shorter than ``SHORTEST`` characters are not scrubbed: replacing ``1``
or ``yes`` everywhere would corrupt the evidence, and such a value protects
nothing.
"""

from __future__ import annotations

import html
import os
import threading
from pathlib import Path

import orjson

SHORTEST = 6
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


def register_env(env: dict[str, str]) -> None:
    for name, value in env.items():
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
