"""The crash itself: did the run reach its boundary, and is the prefix it left a log the contract reads?"""

from __future__ import annotations

from typing import Any

from chaos.check.base import Check
from chaos.contract.framing import committed_facts
from chaos.contract.reading import error_text, plan, reduces
from chaos.cycle.evidence import Evidence

NEEDS = "facts"  # the session contract's facts in its store (``chaos.check.check_all``)
CATALOG = {
    "reached": "the run reached the scenario's crash boundary",
    "prefix-reduces": "the crash prefix reduces",
    "prefix-plan": "the oracle's plan for the crash prefix is the one the scenario expects",
}


def subset(expected: Any, got: Any) -> bool:
    """``got`` has every field ``expected`` names (recursively; lists item by item, same length)."""
    if isinstance(expected, dict):
        return isinstance(got, dict) and all(subset(v, got.get(k)) for k, v in expected.items())
    if isinstance(expected, list):
        return isinstance(got, list) and len(got) == len(expected) and all(map(subset, expected, got))
    return bool(expected == got)


def _missed(ev: Evidence) -> bool:
    """The run wrote its crash boundary, and chaos, polling the log of a writer it does not trace (a
    paused writer: a traced tree cannot be left stopped for another's turn), saw it only once the writer had
    ended: chaos was late, the agent reached it."""
    crash, start = ev.scenario.crash, ev.start
    if crash is None or start.landing.reached or start.landing.mechanism != "poll":
        return False
    return sum(map(crash.boundary.matches, committed_facts(start.kept.log_after))) >= crash.boundary.nth


def judge(ev: Evidence) -> list[Check]:
    checks = []
    crash, start = ev.scenario.crash, ev.start
    if _missed(ev):
        assert crash is not None
        why = "the agent wrote it and ended before chaos, polling its log (the writer is not traced), saw it"
        checks.append(Check.skip("reached", f"the run reached {crash.boundary}", f"not exercised: {why}"))
    elif crash is not None and (start.landing.reached or ev.scenario.expect.must_reach):
        got = (
            "reached" if start.landing.reached else f"the agent ended first (exit {start.process.returncode})"
        )
        checks.append(
            Check("reached", f"the run reached {crash.boundary}", bool(start.landing.reached), "reached", got)
        )
    name = "crash prefix reduces" if crash is not None else "the start's log reduces"
    lost = crash is not None and crash.fault.cuts_to_synced and start.landing.reached and not ev.prefix
    if lost:  # a power cut that kept nothing: what was done on the lost facts is intent-synced's to judge
        why = "the power cut kept no log: nothing of it was durable (see intent-synced, requests-attempted)"
        checks.append(Check.skip("prefix-reduces", name, why))
    else:
        checks.append(Check("prefix-reduces", name, reduces(ev.prefix), "ok", error_text(ev.prefix)))
    expected_plan = ev.scenario.expect.plan
    if expected_plan is not None and lost:
        checks.append(Check.skip("prefix-plan", "oracle plan for the prefix", "the power cut kept no log"))
    elif expected_plan is not None and (
        crash is None or start.landing.reached
    ):  # unreached: not the prefix it means
        got_plan = plan(ev.prefix, ev.current)
        ok = got_plan is not None and subset(expected_plan, got_plan)
        checks.append(
            Check("prefix-plan", "oracle plan for the prefix", ok, str(expected_plan), str(got_plan))
        )
    return checks
