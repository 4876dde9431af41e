"""What the provider saw against what the log made durable: requests against attempts, usage against bills.

An agent that sends before it records turns a crash into a billed request
nobody can see; a client that quietly retries a 429 bills twice while the log
shows one attempt; a log that records a response's usage twice, or on the
wrong attempt, misreports what was spent. A request that arrived when the log
was already rejected is not judged: nothing after a rejected line is durable.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from chaos.check.base import Check
from chaos.contract.reading import facts
from chaos.contract.shapes import USAGE_KEYS
from chaos.cycle.evidence import Evidence
from chaos.fault import FAULTS
from chaos.fault.network import Network

NEEDS = "world"  # requests-valid judges any agent's requests; the rest read the contract's facts
CATALOG = {
    "requests-valid": "every model request is one the real provider accepts (calls and results paired by id, "
    "ids unique, required fields present: chaos.world.strict)",
    "third-attempt": "no step got a third model request",
    "requests-attempted": "every model request belongs to a stepAttempt durable when it arrived, one request each",
    "usage-billed": "the usage recorded for each attempt is none, or exactly what the provider billed for it",
    "answer-delivered": "no answer the provider never delivered whole (none, cut short, reset, not JSON) became "
    "an assistant entry",
}
# The network faults whose answer never arrives whole: its attempt can end only in a stepFailed or a crash.
UNDELIVERED = tuple(
    name
    for name, f in FAULTS.items()
    if isinstance(f, Network) and f.misbehaviour.sends in ("nothing", "half", "not-json")
)


def _add_usage(totals: dict[str, tuple[int, ...]], owner: str, counters: dict[str, int]) -> None:
    """Add ``counters`` to ``owner``'s running totals (a tuple in ``USAGE_KEYS`` order)."""
    mine = totals.get(owner, (0,) * len(USAGE_KEYS))
    totals[owner] = tuple(a + counters[k] for a, k in zip(mine, USAGE_KEYS, strict=True))


def _judged(ev: Evidence) -> list[tuple[int, dict[str, Any]]]:
    """The model requests (numbered from 1) that arrived before the log was rejected."""
    return [(n, r) for n, r in enumerate(ev.requests, 1) if r.get("rejected") is None]


def unattempted(ev: Evidence) -> list[int]:
    """The requests (numbered from 1) with no durable stepAttempt of their own: none open when they
    arrived, or one another request had already used."""
    judged = _judged(ev)
    per_attempt = Counter(r["attempt"] for _, r in judged if r.get("attempt"))
    return [n for n, r in judged if r.get("attempt") is None or per_attempt[r["attempt"]] > 1]


def requests_attempted(ev: Evidence) -> Check:
    name = "every model request had a durable stepAttempt of its own"
    judged = _judged(ev)
    if not judged and ev.requests:
        line = ev.requests[0]["rejected"]
        return Check.skip(
            "requests-attempted", name, f"every request arrived after the log was rejected at line {line}"
        )
    orphans = [str(n) for n, r in judged if r.get("attempt") is None]
    per_attempt = Counter(r["attempt"] for _, r in judged if r.get("attempt"))
    twice = [f"{a[:13]}... got {n}" for a, n in per_attempt.items() if n > 1]
    got = []
    if orphans:
        more = f" and {len(orphans) - 5} more" if len(orphans) > 5 else ""
        got.append(f"request(s) {', '.join(orphans[:5])}{more} arrived with no durable stepAttempt open")
    if twice:
        got.append("; ".join(twice))
    return Check(
        "requests-attempted", name, not got, "one request per durable attempt", "; ".join(got) or "ok"
    )


def usage_billed(ev: Evidence) -> Check:
    name = "recorded usage matches what the provider billed, attempt by attempt"
    last = ev.last_log  # (read up to a rejected line: it
    # can only record less than was billed, which is no failure)
    zero = (0,) * len(USAGE_KEYS)
    billed: dict[str, tuple[int, ...]] = {}
    for r in ev.requests:
        if r.get("status") == 200 and r.get("billed"):
            _add_usage(billed, r.get("attempt") or f"request {r['received']}", r["billed"])
    logged: dict[str, tuple[int, ...]] = {}
    for fact in facts(last):
        if fact["kind"] == "usage" and "attemptId" in fact:
            _add_usage(logged, fact["attemptId"], fact["usage"])
    wrong = [
        f"attempt {a[:13]}... recorded {list(u)}, billed {list(billed[a]) if a in billed else 'nothing'}"
        for a, u in logged.items()
        if u != zero and u != billed.get(a)
    ]
    total_logged = tuple(map(sum, zip(zero, *logged.values(), strict=True)))
    total_billed = tuple(map(sum, zip(zero, *billed.values(), strict=True)))
    if any(a > b for a, b in zip(total_logged, total_billed, strict=True)):
        wrong.append(f"in all recorded {list(total_logged)}, billed {list(total_billed)}")
    return Check(
        "usage-billed",
        name,
        not wrong,
        "per attempt: none, or exactly what was billed",
        "; ".join(wrong) or "ok",
    )


def requests_valid(ev: Evidence) -> Check:
    refused = [(n, r) for n, r in enumerate(ev.requests, 1) if r.get("refused")]
    got, cause = "ok", ""
    if refused:
        n, first = refused[0]
        more = f" (and {len(refused) - 1} more)" if len(refused) > 1 else ""
        got = f"request {n} refused with {first.get('status')}: {first['refused']}{more}"
        cause = f"sent a request the provider refuses: {first.get('refusedRule')}"
    return Check(
        "requests-valid",
        "every model request was one the real provider accepts",
        not refused,
        "no request a real provider refuses",
        got,
        cause=cause,
    )


def answer_delivered(ev: Evidence) -> Check:
    name = "no answer the provider never delivered became an assistant entry"
    faulted = {
        r["attempt"]: r["fault"] for r in ev.requests if r.get("fault") in UNDELIVERED and r.get("attempt")
    }
    if not faulted:
        return Check.skip("answer-delivered", name, "no answer was withheld, cut or garbled")
    made = [
        f"{faulted[f['attemptId']]} answer of attempt {f['attemptId'][:13]}..."
        for f in (fact["entry"] for fact in facts(ev.final) if fact.get("kind") == "entry")
        if f.get("type") == "message" and f.get("attemptId") in faulted
    ]
    return Check(
        "answer-delivered",
        name,
        not made,
        "a stepFailed (or an open attempt) for each answer that never arrived whole",
        "an assistant entry from the " + ", ".join(made) if made else "ok",
    )


def judge(ev: Evidence) -> list[Check]:
    if not ev.facts:
        return [requests_valid(ev)]
    most = max(ev.attempts_per_step.values(), default=0)
    third = Check(
        "third-attempt",
        "no step got a third model attempt",
        most <= 2,
        "at most 2 requests per step",
        f"{most}",
    )
    return [requests_valid(ev), third, requests_attempted(ev), usage_billed(ev), answer_delivered(ev)]
