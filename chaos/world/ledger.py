"""The effect ledger: one line per real external effect, kept outside the workspace.

Scenario tools call this helper (``$CHAOS_EFFECT NAME``, e.g. from a ``deploy.sh``)
where they perform an effect. It records the effect's start and end, and which
``toolStarted`` intents were durable and unresolved in the session log at that
moment (and those already resolved, and whether the log was rejected), so chaos
can prove intent-before-effect and at-most-once for ``never`` tools. Named gates let chaos hold the effect *in progress* (``NAME.during``)
or *done but its result not yet durable* (``NAME.after``) until it releases them.

A tool that knows the call it runs for passes its id (``$CHAOS_EFFECT deploy
--call-id ID``, or ``CHAOS_CALL_ID`` in its environment): chaos then tells an
effect repeated under the same id from one under a new id, and judges the
effect against the moment its call became durable.

Environment: CHAOS_LEDGER (ledger file), CHAOS_LOG_GLOB (the session logs),
CHAOS_GATE_DIR and CHAOS_GATES (comma-separated gate names to block on),
CHAOS_CALL_ID (the tool call's id, where ``--call-id`` is not given).
"""

from __future__ import annotations

import glob
import os
import sys
from pathlib import Path
from typing import Any

from chaos.contract import Reducer
from chaos.ledger import effect

CALL_ID = "CHAOS_CALL_ID"


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


def main(argv: list[str]) -> int:
    call_id = os.environ.get(CALL_ID) or None
    if argv[1:2] == ["--call-id"] and len(argv) > 2:
        call_id, argv = argv[2], argv[:1] + argv[3:]
    if not argv or argv[0].startswith("-"):
        print("usage: python -m chaos.world.ledger EFFECT_NAME [--call-id ID] [DETAIL...]", file=sys.stderr)
        return 2
    name, ledger = argv[0], os.environ.get("CHAOS_LEDGER")
    if not ledger:
        print("chaos ledger: CHAOS_LEDGER is not set; run this under chaos", file=sys.stderr)
        return 2
    effect(name, *argv[1:], call_id=call_id, **intents(os.environ.get("CHAOS_LOG_GLOB", "")))
    print(f"{name}: done")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
