"""The final store is one a framework can go on from: every tool call has exactly one output, and every
output has its call. A call left without its output makes every later model request one the provider
refuses (or one the framework silently drops the call from); two outputs for one call are two answers
to one question."""

from __future__ import annotations

from chaos.check.base import Problem, against_clean
from chaos.cycle.evidence import Evidence


def _problems(evidence: Evidence, clean: Evidence) -> list[Problem]:
    final = evidence.view
    if final.unreadable:
        return [Problem("the final store cannot be read", final.unreadable)]
    problems = [
        Problem("a tool call without its output in the final store", f"{c.name} (call {c.id}) has no output")
        for c in final.orphan_calls()
    ]
    problems += [
        Problem("two outputs for one tool call in the final store", f"call {i} has more than one output")
        for i in final.duplicated_outputs()
    ]
    problems += [
        Problem("an output without its tool call in the final store", f"output for call {o.call_id}")
        for o in final.orphan_outputs()
    ]
    return problems


NEEDS = "view"  # what the store's adapter reads (``chaos.store.View``)
CATALOG = {"store-consistent": "the final store pairs every tool call with one output"}


judge = against_clean("store-consistent", "the final store pairs every tool call with one output", _problems)
