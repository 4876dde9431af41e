"""Jepsen's pause nemesis: the contract allows one writer per session.

With a writer paused at its boundary and a second one resuming the session,
the second must refuse it, or wait for it (then the first is let go on); the
first, let go on, must not write once the second has. Writing is any change
to the log: an append, or bytes rewritten in place.
"""

from __future__ import annotations

from chaos.check.base import Check
from chaos.cycle.evidence import Evidence

NEEDS = "facts"  # the session contract's facts in its store (``chaos.check.check_all``)
CATALOG = {
    "one-writer": "with a writer paused and another resuming its session, only one of them wrote",
}


def judge(ev: Evidence) -> list[Check]:
    continued = ev.continued
    if continued is None:
        return []
    second = ev.recoveries[0] if ev.recoveries else None
    wrote = [
        f"{p.name} {'appended ' + str(p.kept.appended) + ' bytes' if p.kept.appended > 0 else 'rewrote the log in place'}"
        for p in (second, continued)
        if p is not None and p.wrote
    ]
    return [
        Check(
            "one-writer",
            "only one writer wrote the session",
            len(wrote) < 2,
            "one of the two writers",
            "; ".join(wrote) or "neither",
        )
    ]
