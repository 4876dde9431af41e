"""The order a framework promises its saves: a save begins only once those it must follow are made.

A framework that saves from background threads (LangGraph submits a finished task's writes and the next
checkpoint to one executor) decides the order in which its work becomes durable. Where its store's
adapter names a promise (``chaos.store.Save.after``: the next checkpoint only after the writes that
produced it), ``--fault overtaken`` holds each save as it begins and waits for a save promised to follow
it; one that begins meanwhile is the promise broken, whatever the resume makes of it after: the order
the crash leaves is the scheduler's, and a recovery that replays or re-executes is decided by luck
(langgraph#8039)."""

from __future__ import annotations

from chaos.check.base import Check
from chaos.cycle.evidence import Evidence
from chaos.store import store_named

NEEDS = "view"  # a framework's store, whose saves the adapter names
CATALOG = {"saved-in-order": "no save began while a save it is promised to follow was held"}
NAME = "each save begins after the saves it is promised to follow"


def judge(ev: Evidence) -> list[Check]:
    held = [p for p in ev.phases if p.crash is not None and p.crash.boundary.what == "save"]
    if not any(p.landing.reached for p in held):
        why = "no save was held as it began" if not held else "the held save was never reached"
        return [Check.skip("saved-in-order", NAME, f"{why} (--fault overtaken at a save boundary)")]
    promised = {kind for save in store_named(ev.target.store_spec.kind).saves for kind in save.after}
    held = [p for p in held if p.crash is not None and p.crash.boundary.where["kind"] in promised]
    if not held:
        return [Check.skip("saved-in-order", NAME, "no save is promised to follow the kind held")]
    broken = [f"{p.name}: {p.landing.out_of_order}" for p in held if p.landing.out_of_order]
    return [
        Check(
            "saved-in-order",
            NAME,
            not broken,
            "no save promised to follow the held one began while it was held",
            "; ".join(broken) or "none began",
            cause="a save began while a save it is promised to follow was held",
        )
    ]
