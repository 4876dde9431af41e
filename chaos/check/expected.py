"""A scenario's own expectations (``[expect]``) on a framework agent's store: judged where the store can show
them, said as not judged where it cannot; never dropped without a word.

``effects`` (how often each effect runs) is judged where the target promises at most once: a scenario
written for the session contract counts a ``never`` tool's runs, and an agent declared at least once may
legally run an effect again. ``plan`` (the recovery the contract's oracle plans for the crash prefix) is
a session log's: a store holds no such plan.
"""

from __future__ import annotations

from chaos.check.base import Check
from chaos.check.effects import effect_counts
from chaos.cycle.evidence import Evidence

NEEDS = "view"  # what the store's adapter reads (``chaos.store.View``)
CATALOG: dict[str, str] = {}  # (effect-count and prefix-plan are the log's concerns; judged here on a store)


def judge(ev: Evidence) -> list[Check]:
    expect, spec = ev.scenario.expect, ev.target.store_spec
    checks = []
    if expect.effects and spec.semantics != "at-most-once":
        checks.append(
            Check.skip(
                "effect-count",
                "each effect ran as often as the scenario says",
                f"the scenario counts effects for an agent that runs each at most once, and {ev.target.name} "
                f"declares {spec.semantics}",
            )
        )
    else:
        checks += effect_counts(ev)
    if expect.plan is not None:
        checks.append(
            Check.skip(
                "prefix-plan",
                "the oracle's plan for the crash prefix is what the scenario expects",
                "the scenario expects a session log's recovery plan, and this target keeps a framework's store",
            )
        )
    return checks
