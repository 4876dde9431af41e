"""The log recovery left: appended only, and still a log the contract reduces."""

from __future__ import annotations

from chaos.check.base import Check
from chaos.contract.reading import error_text, reduces
from chaos.cycle.evidence import Evidence

NEEDS = "facts"  # the session contract's facts in its store (``chaos.check.check_all``)
CATALOG = {
    "append-only": "no phase rewrote committed bytes (a torn tail may only be dropped)",
    "final-reduces": "the final log reduces",
}


def judge(ev: Evidence) -> list[Check]:
    if not ev.resumes:
        return []
    rewrites = [phase.name for phase, before, after in ev.transitions() if not after.startswith(before)]
    final = ev.final
    return [
        Check(
            "append-only",
            "append-only: committed bytes are never rewritten",
            not rewrites,
            "each log starts with the committed bytes before it",
            f"rewritten by {', '.join(rewrites)}" if rewrites else "ok",
        ),
        Check("final-reduces", "final log reduces", reduces(final), "ok", error_text(final)),
    ]
