"""The effect ledger's Python API: a tool calls ``effect`` where it performs a real external effect.

    from chaos.ledger import effect

    def deploy(service: str, call_id: str) -> str:
        effect("deploy", service, call_id=call_id)  # records the start, then the end
        ...

Outside chaos (``CHAOS_LEDGER`` unset) it does nothing, so a tool may call it
unconditionally. Under chaos it appends one line when the effect starts and one
when it is done, each with the tool call's id when the tool knows it, and it
honours chaos's gates: it blocks while the effect is held *running*
(``NAME.during``) or *done with its result not yet durable* (``NAME.after``).
The call id is what lets chaos tell an effect repeated under the same id (at
least once, caught by an idempotency key) from one repeated under a new id
(nothing can catch that). Shell tools use ``$CHAOS_EFFECT NAME`` instead
(``chaos.world.ledger``), which records the same lines.

This module imports nothing of chaos: an agent pays only for it.
"""

from __future__ import annotations

import fcntl
import hashlib
import hmac
import json
import os
import time
from pathlib import Path
from typing import Any


def record(ledger: str, entry: dict[str, Any]) -> None:
    """Append one line to the ledger with a single write (O_APPEND: whole lines, whoever writes)."""
    fd = os.open(ledger, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, json.dumps(entry).encode() + b"\n")
    finally:
        os.close(fd)


# The line a run approved later by a separate command gets when the approval begins
# (``chaos.process.approval``): not an effect, the moment a person gave the approval. The approval chain
# signs it with a key chaos made for the case (``APPROVAL_KEY``, which the chain takes out of the
# environment before it starts the agent or the approve command): a line without the signature, such as
# an agent that approves by itself writes, is kept as ``UNSIGNED``, and approves nothing.
APPROVAL = "approval"
APPROVAL_KEY = "CHAOS_APPROVAL_KEY"
UNSIGNED = "approval-unsigned"
MAX_LINE = 1 << 20  # bytes of one ledger line chaos reads (an effect's line is a few hundred)


class LedgerError(ValueError):
    """A ledger line that is not one chaos's helpers write: the message names the file and the line."""


def signature(key: str, when: float) -> str:
    """An approval line's signature: the moment it was given, under the case's key."""
    return hmac.new(key.encode(), repr(when).encode(), hashlib.sha256).hexdigest()


# The world's MCP server gives each call's command this variable (``PID:N``: the server's process and its
# number of the call): an effect made inside the call says so in its start line (``mcpCall``)
MCP_CALL = "CHAOS_MCP_CALL"

# The lines that say an effect begins: a tool's ``start`` (``effect``, ``$CHAOS_EFFECT``), and a ``call`` at
# the world's MCP server (``chaos.world.mcp_server``: each tools/call is an effect of its own, ``mcp:NAME``)
STARTS = ("start", "call")


def numbered(ledger: str, name: str, entry: dict[str, Any]) -> int:
    """Append an effect's first line (``entry``: its ``start`` or ``call``) and return its number among
    those of ``name``: counted and written under an exclusive lock on the ledger, so two effects running
    at once (a framework's parallel tool calls, two processes) never both take number 1, and each has a
    gate of its own."""
    fd = os.open(ledger, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        occurrence = 1 + sum(
            1 for e in entries(Path(ledger)) if e["effect"] == name and e["phase"] == entry["phase"]
        )
        os.write(fd, json.dumps(entry).encode() + b"\n")
        return occurrence
    finally:
        os.close(fd)  # (releases the lock)


def entries(path: Path, key: str | None = None) -> list[dict[str, Any]]:
    """The ledger's lines, in order. Each is a JSON object with an ``effect`` and a ``phase``, as the
    helpers write them; any other line (an agent's own, hand-written) is a ``LedgerError``. With ``key``
    (chaos's reading, not an effect's count), an approval line whose signature does not hold is kept as
    ``UNSIGNED``."""
    if not path.exists():
        return []
    out = []
    with path.open("rb") as lines:
        for number, raw in enumerate(lines, 1):
            if not raw.strip():
                continue
            try:
                entry = json.loads(raw) if len(raw) <= MAX_LINE else None
            except (ValueError, RecursionError):
                entry = None
            if (
                not isinstance(entry, dict)
                or not isinstance(entry.get("effect"), str)
                or "phase" not in entry
            ):
                raise LedgerError(
                    f"the effect ledger ($CHAOS_LEDGER), line {number}: not a line chaos's effect helpers write (a JSON object with "
                    "effect and phase): an agent records effects only through $CHAOS_EFFECT or "
                    "chaos.ledger.effect, never by writing to $CHAOS_LEDGER itself"
                )
            if key is not None and entry["phase"] == APPROVAL:
                signed = entry.get("signature")
                time_given = entry.get("time")
                if (
                    not isinstance(time_given, float)
                    or not isinstance(signed, str)
                    or not hmac.compare_digest(signed, signature(key, time_given))
                ):
                    entry = {**entry, "phase": UNSIGNED}
            out.append(entry)
    return out


def gate(name: str, occurrence: int, since: float | None = None) -> None:
    """Block while ``name`` (or ``name#occurrence``) is one of CHAOS_GATES, until chaos releases it.

    The files are per occurrence (``deploy.during#2.waiting``), so releasing the
    first run of an effect never lets a later run through its gate. The mark holds when the call stopped
    going on (``since``: the effect's done line, where the gate follows it): a loaded machine may let
    other threads commit between that line and the mark, and what they commit is still made while this
    call's output is not.
    """
    gates = os.environ.get("CHAOS_GATES", "").split(",")
    if name not in gates and f"{name}#{occurrence}" not in gates:
        return
    gate_dir = Path(os.environ["CHAOS_GATE_DIR"])
    (gate_dir / f"{name}#{occurrence}.waiting").write_text(repr(time.time() if since is None else since))
    while not (gate_dir / f"{name}#{occurrence}.release").exists():
        time.sleep(0.005)


def effect(name: str, *detail: str, call_id: str | None = None, **known: Any) -> None:
    """Record that the effect ``name`` runs now (``detail``: what it acts on, e.g. the service), for the
    tool call ``call_id``; ``known`` adds fields to the start line (the shell helper's durable intents)."""
    ledger = os.environ.get("CHAOS_LEDGER")
    if not ledger:
        return
    base: dict[str, Any] = {"effect": name, "detail": list(detail), "pid": os.getpid()}
    if call_id is not None:
        base["callId"] = call_id
    if os.environ.get(MCP_CALL):
        base["mcpCall"] = os.environ[MCP_CALL]
    occurrence = numbered(ledger, name, {**base, "phase": "start", "time": time.time(), **known})
    gate(f"{name}.during", occurrence)
    done = time.time()
    record(ledger, {**base, "phase": "done", "time": done})
    gate(f"{name}.after", occurrence, since=done)
