"""The effect ledger: one line per real external effect, kept outside the workspace.

Scenario tools call this helper (``$CHAOS_EFFECT NAME``, e.g. from a ``deploy.sh``)
where they perform an effect. It records the effect's start and end, and which
``toolStarted`` intents were durable and unresolved in the session log at that
moment (and those already resolved, and whether the log was rejected), so chaos
can prove intent-before-effect and at-most-once for ``never`` tools. Named gates let chaos hold the effect *in progress* (``NAME.during``)
or *done but its result not yet durable* (``NAME.after``) until it releases them.

Environment: CHAOS_LEDGER (ledger file), CHAOS_LOG_GLOB (the session logs),
CHAOS_GATE_DIR and CHAOS_GATES (comma-separated gate names to block on).
"""

from __future__ import annotations

import glob
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from chaos.contract import Reducer


def intents(log_glob: str) -> dict[str, Any]:
    """What the session logs make durable about tool intents now: ``pending`` (toolStartedIds durable
    and without a result), ``resolved`` (durable, with a result) and ``rejected`` (the first line the
    reducer rejects, where a log is corrupt: nothing after it is durable to the contract)."""
    pending: list[str] = []
    resolved: list[str] = []
    rejected = None
    for path in sorted(glob.glob(log_glob)):
        reducer = Reducer.of(Path(path).read_bytes())
        if reducer.error is not None:
            rejected = reducer.error.line
        state = reducer.state
        if state is None:
            continue
        op = state.operation
        open_now = (
            {c.tool_started_id for c in op.tool_calls.values() if c.status == "pending"} if op else set()
        )
        for started in state.tool_owners:  # every toolStarted of the log, finished operations' too
            (pending if started in open_now else resolved).append(started)
    return {"pending": pending, "resolved": resolved, "rejected": rejected}


def _record(ledger: str, entry: dict[str, Any]) -> None:
    fd = os.open(ledger, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, json.dumps(entry).encode() + b"\n")
    finally:
        os.close(fd)


def gate(name: str, occurrence: int) -> None:
    """Block while ``name`` (or ``name#occurrence``) is one of CHAOS_GATES, until chaos releases it.

    The files are per occurrence (``deploy.during#2.waiting``), so releasing the
    first run of an effect never lets a later run through its gate.
    """
    gates = os.environ.get("CHAOS_GATES", "").split(",")
    if name not in gates and f"{name}#{occurrence}" not in gates:
        return
    gate_dir = Path(os.environ["CHAOS_GATE_DIR"])
    (gate_dir / f"{name}#{occurrence}.waiting").write_text(str(os.getpid()))
    while not (gate_dir / f"{name}#{occurrence}.release").exists():
        time.sleep(0.005)


def read_ledger(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: python -m chaos.world.ledger EFFECT_NAME [DETAIL...]", file=sys.stderr)
        return 2
    name, ledger = argv[0], os.environ.get("CHAOS_LEDGER")
    if not ledger:
        print("chaos ledger: CHAOS_LEDGER is not set; run this under chaos", file=sys.stderr)
        return 2
    base = {"effect": name, "detail": argv[1:], "pid": os.getpid()}
    occurrence = 1 + sum(
        1 for e in read_ledger(Path(ledger)) if e["effect"] == name and e["phase"] == "start"
    )
    _record(
        ledger,
        {
            **base,
            "phase": "start",
            "time": time.time(),
            **intents(os.environ.get("CHAOS_LOG_GLOB", "")),
        },
    )
    gate(f"{name}.during", occurrence)
    _record(ledger, {**base, "phase": "done", "time": time.time()})
    gate(f"{name}.after", occurrence)
    print(f"{name}: done")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
