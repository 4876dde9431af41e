"""Every model request is one the real provider accepts (``chaos.world.strict``): a resume that sends a
tool call without its output, or an output without its call, is refused by the provider itself."""

from __future__ import annotations

from chaos.check.store.base import Problem, StoreCheck
from chaos.cycle.store import StoreEvidence


def judge(evidence: StoreEvidence, clean: StoreEvidence) -> list[Problem]:
    return [
        Problem(
            f"a model request the provider refuses: {r.get('refusedRule') or r['refused']}",
            f"request {n} was refused: {r['refused']}",
        )
        for n, r in enumerate(evidence.requests, 1)
        if r.get("refused")
    ]


CHECK = StoreCheck("requests-valid", "every model request is one the provider accepts", judge)
