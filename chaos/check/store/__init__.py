"""What recovery must guarantee of a framework agent, judged on its store: one module per property.

Frameworks promise different things, so the target declares the semantics it
wants judged (``[store] semantics``): effects at most once (the default, what a
non-idempotent tool needs), or at least once with a stable tool call id
(LangGraph's documented promise with ``durability="sync"``). Every check reads
the case's ``StoreEvidence`` and the uninterrupted run of the same scenario,
and returns ``Problem``s: ``key`` says the cause in words that are the same in
every case it happens in (what failures are grouped by), ``text`` the
particulars (call ids, phases).
"""

from __future__ import annotations

from chaos.check.store import again, consistent, durable_first, outcome, requests, semantics
from chaos.check.store.base import Judged, Problem, StoreCheck, judge

STORE_CHECKS: list[StoreCheck] = [
    durable_first.CHECK,
    semantics.CHECK,
    consistent.CHECK,
    requests.CHECK,
    outcome.CHECK,
    again.CHECK,
]

__all__ = ["STORE_CHECKS", "Judged", "Problem", "StoreCheck", "judge"]
