"""The checks of one crash cycle: did recovery keep the contract's promises?

Each check is pure over the cycle's ``Evidence`` (the logs in their roles, the
phases' exit statuses, the effect ledger, the model server's requests, the
oracle's plans) and reports what was expected and what happened, so a failure
reads as a finding a person can act on. ``CATALOG`` lists every check chaos
can report, in the order they are reported; each has a test that makes it
fail (``tests/test_fail_table.py``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from chaos.contract import Reducer, plan_recovery
from chaos.contract.describe import detail, plan_text
from chaos.contract.framing import committed_facts, committed_length
from chaos.contract.kinds import kind_of
from chaos.contract.shapes import USAGE_KEYS
from chaos.cycle.evidence import Evidence
from chaos.process.phase import Phase, PhaseKind

# id -> what the check guarantees. The order is the order checks are reported in, causes before
# symptoms (the log's structure, then what recovery did first, then how it ended, then effects and
# processes): the first failing check names a failure (``chaos.triage``).
CATALOG = {
    "reached": "the run reached the scenario's crash boundary",
    "prefix-reduces": "the crash prefix reduces",
    "prefix-plan": "the oracle's plan for the crash prefix is the one the scenario expects",
    "append-only": "no phase rewrote committed bytes (a torn tail may only be dropped)",
    "final-reduces": "the final log reduces",
    "plan-followed": "each resume first carries out the oracle's plan for the log it started from",
    "blocked-stops": "a resume the oracle plans as blocked stops blocked",
    "blocked-appends-nothing": "a resume the oracle plans as blocked appends nothing",
    "outcome": "the process that ended the operation reported the expected outcome",
    "blocked-reason": "a blocked recovery is blocked for the expected reason",
    "idle-terminal": "the final state is idle, with one operationFinished per operation",
    "intent-before-effect": "no effect ran before its toolStarted was durable",
    "intent-synced": "no effect ran before its toolStarted was synced to disk (where the tracer saw the syncs)",
    "never-once": "a never-replay effect ran at most once per tool call",
    "effect-count": "each effect ran as often as the scenario says",
    "third-attempt": "no step got a third model request",
    "requests-attempted": "every model request belongs to a stepAttempt durable when it arrived, one request each",
    "usage-billed": "the usage recorded for each attempt is none, or exactly what the provider billed for it",
    "again-appends-nothing": "resuming the finished session once more appends nothing",
    "timeout": "every phase ended before its timeout",
    "processes": "no process outlived the run",
    "sandbox": "nothing was written beside the workspace, outside the sandbox's own files",
    "one-writer": "with a writer paused and another resuming its session, only one of them wrote",
    "oracle-agrees": "another implementation's reducer (--oracle) agrees on every crash prefix and final log",
}
ORDER = {check_id: n for n, check_id in enumerate(CATALOG)}


@dataclass(frozen=True)
class Check:
    id: str
    name: str
    ok: bool
    expected: str = ""
    got: str = ""

    def __post_init__(self) -> None:
        if self.id not in CATALOG:
            raise ValueError(f"{self.id!r} is not a check of the catalog")

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "ok": self.ok, "expected": self.expected, "got": self.got}

    def text(self) -> str:
        """How every report words a check: its name and, when it failed, what was expected and got."""
        return self.name if self.ok else f"{self.name}: expected {self.expected}, got {self.got}"


@lru_cache(maxsize=64)
def reduced(data: bytes) -> Reducer:
    """The checks read the same few logs many times over; each is reduced once. Read only."""
    return Reducer.of(data)


def facts(data: bytes) -> list[dict[str, Any]]:
    """The facts of the lines the reducer accepts (a corrupt line and all after it are left out)."""
    return committed_facts(data, reduced(data).line)


def reduces(data: bytes) -> bool:
    """The log reduces (an empty log does not: it has no header)."""
    return bool(reduced(data).result()["ok"])


def error_text(data: bytes) -> str:
    error = reduced(data).result().get("error")
    if error is None:
        return "ok"
    seq = f" (seq {error['seq']})" if "seq" in error else ""
    return f"{error['code']} at line {error['line']}{seq}"


def plan(data: bytes, current: dict[str, Any] | None) -> dict[str, Any] | None:
    """The oracle's plan for ``data`` under ``current``, or None when the log does not reduce."""
    reducer = reduced(data)
    if reducer.error is not None or reducer.state is None or current is None:
        return None
    return plan_recovery(reducer.state, current)


def _subset(expected: Any, got: Any) -> bool:
    """``got`` has every field ``expected`` names (recursively; lists item by item, same length)."""
    if isinstance(expected, dict):
        return isinstance(got, dict) and all(_subset(v, got.get(k)) for k, v in expected.items())
    if isinstance(expected, list):
        return isinstance(got, list) and len(got) == len(expected) and all(map(_subset, expected, got))
    return bool(expected == got)


def check_crash(ev: Evidence) -> list[Check]:
    checks = []
    crash, start = ev.scenario.crash, ev.start
    if crash is not None and (start.reached or ev.scenario.expect.must_reach):
        got = "reached" if start.reached else f"the agent ended first (exit {start.returncode})"
        checks.append(
            Check("reached", f"the run reached {crash.boundary}", bool(start.reached), "reached", got)
        )
    checks.append(
        Check(
            "prefix-reduces",
            "crash prefix reduces",
            reduces(ev.prefix),
            "ok",
            error_text(ev.prefix),
        )
    )
    expected_plan = ev.scenario.expect.plan
    if expected_plan is not None and (crash is None or start.reached):  # unreached: not the prefix it means
        got_plan = plan(ev.prefix, ev.current)
        ok = got_plan is not None and _subset(expected_plan, got_plan)
        checks.append(
            Check("prefix-plan", "oracle plan for the prefix", ok, str(expected_plan), str(got_plan))
        )
    return checks


def _finished(log: bytes) -> list[dict[str, Any]]:
    return [f["record"] for f in facts(log) if f.get("record", {}).get("type") == "operationFinished"]


def appended_finishes(phase: Phase) -> list[dict[str, Any]]:
    """The ``operationFinished`` records ``phase`` appended to the log it started from."""
    before = phase.log_before[: committed_length(phase.log_before)]
    return _finished(phase.log_after)[len(_finished(before)) if before else 0 :]


def derived_outcome(ev: Evidence, ending: Phase) -> tuple[str | None, str | None]:
    """What the ending process must report, as the oracle reads the logs: (outcome, blocked reason).

    Blocked, with the oracle's reason, when the oracle plans blocked for the log the process
    *started* from; else the outcome of the operation it finished; else completed when nothing was
    left to do. A recovery may also end blocked after progress of its own (a live 429 under a
    changed environment): blocked then, but with no reason, since the only reading of it would be
    the final log's plan, and a check of the final log against itself cannot fail. (None, None)
    when the oracle cannot read the logs.
    """
    if ending is not ev.start and ending.kind is not PhaseKind.CONTINUED:  # a resume plans under the gates
        planned = plan(ending.log_before[: committed_length(ending.log_before)], ev.current)
        if planned is None:
            return None, None
        if planned["type"] == "blocked":
            return "blocked", planned["reason"]
    after = ending.log_after
    finished = appended_finishes(ending)
    if finished:
        return finished[-1]["outcome"], None
    planned, state = plan(after, ev.current), reduced(after).state
    if planned is not None and planned["type"] == "blocked":
        return "blocked", None
    if planned is not None and planned["type"] == "finish" and state is not None and state.operation is None:
        return planned["outcome"], None
    return None, None


def check_recovery(ev: Evidence) -> list[Check]:
    expect = ev.scenario.expect
    ending, final = ev.ending(), ev.final
    outcome: str | None = expect.outcome
    reason = expect.reason
    if expect.derived:
        outcome, reason = derived_outcome(ev, ending)
    source = " (as the oracle reads the log it started from)" if expect.derived else ""
    checks = []
    if outcome is not None:  # None: the oracle cannot read the log; the reduce check says why
        checks.append(
            Check(
                "outcome",
                f"{ending.name} outcome",
                ending.outcome == outcome,
                f"{outcome}{source}",
                f"{ending.outcome or 'no known outcome'} (exit {ending.returncode})",
            )
        )
    if outcome == "blocked" and reason is not None:
        got = (plan(final, ev.current) or {}).get("reason")
        checks.append(
            Check(
                "blocked-reason",
                "blocked reason",
                got == reason,
                str(reason),
                f"{got} (the final log's plan)",
            )
        )
    checks.append(Check("final-reduces", "final log reduces", reduces(final), "ok", error_text(final)))
    rewrites = [phase.name for phase, before, after in ev.transitions() if not after.startswith(before)]
    checks.append(
        Check(
            "append-only",
            "append-only: committed bytes are never rewritten",
            not rewrites,
            "each log starts with the committed bytes before it",
            f"rewritten by {', '.join(rewrites)}" if rewrites else "ok",
        )
    )
    for phase, before, after in ev.transitions():
        planned = plan(before, ev.current) or {}
        if planned.get("type") == "blocked" and phase.kind is not PhaseKind.CONTINUED:
            checks.append(
                Check(
                    "blocked-stops",
                    f"{phase.name} stopped blocked as the oracle plans",
                    phase.outcome == "blocked" or phase.reached is True,
                    f"blocked {planned['reason']}",
                    f"{phase.outcome or 'no known outcome'} (exit {phase.returncode})",
                )
            )
            appended = len(after) - len(before)
            checks.append(
                Check(
                    "blocked-appends-nothing",
                    f"blocked {phase.name} appended nothing",
                    appended == 0,
                    "0 bytes",
                    f"{appended} bytes",
                )
            )
    if outcome != "blocked" and reduced(final).error is None:
        checks.append(_idle_and_terminal(final))
    return checks


def carried_out(planned: dict[str, Any], appended: list[dict[str, Any]]) -> bool:
    """Whether the first facts a resume appended are the one effect ``planned`` describes."""
    first = appended[0] if appended else None
    kind, body = kind_of(first) if first else ("", {})
    match planned["type"]:
        case "startStep":
            same_step = "stepId" not in planned or body.get("stepId") == planned["stepId"]
            return (
                kind == "stepAttempt"
                and body["attempt"] == planned["attempt"]
                and body["contextThroughEntryId"] == planned["contextThroughEntryId"]
                and same_step
            )
        case "startTool" if planned["mode"] == "start":
            return kind == "toolStarted" and (body["assistantEntryId"], body["toolIndex"]) == (
                planned["assistantEntryId"],
                planned["toolIndex"],
            )
        case "startTool":
            return kind == "entry:tool" and body.get("toolStartedId") == planned["toolStartedId"]
        case "appendSynthetic":
            firsts = appended[: len(planned["results"])]
            return len(firsts) == len(planned["results"]) and all(
                kind_of(got)[1].get("result", {}).get("reason") == want["reason"]
                and got["id"] == want.get("resultEntryId", got["id"])
                for got, want in zip(firsts, planned["results"], strict=True)
            )
        case "closeAttempt":
            return kind == "stepFailed" and body["error"]["code"] == planned["error"]["code"]
        case "finish":
            return kind == "operationFinished" and body["outcome"] == planned["outcome"]
    return not appended  # blocked: nothing


def check_plans_followed(ev: Evidence) -> list[Check]:
    """Each resume's first appended facts carry out the oracle's plan for the log it started from."""
    checks = []
    for phase, before, after in ev.transitions():
        if phase.kind is PhaseKind.CONTINUED:
            continue  # the paused writer goes on with its own work: no plan of the oracle's
        if ev.continued is not None and phase is ev.recoveries[0] and len(after) == len(before):
            continue  # a second writer that refused the session while the paused one held it
        reducer = reduced(before)
        planned = plan(before, ev.current)
        if planned is None or reducer.state is None:
            continue
        if planned["type"] == "finish" and reducer.state.operation is None:
            continue  # idle: nothing to carry out
        appended = facts(after)[len(facts(before)) :]
        first = appended[0] if appended else None
        checks.append(
            Check(
                "plan-followed",
                f"{phase.name} carried out the oracle's plan",
                carried_out(planned, appended),
                plan_text(planned),
                f"{kind_of(first)[0]} {detail(first)}".rstrip() if first else "nothing",
            )
        )
    return checks


def _idle_and_terminal(final: bytes) -> Check:
    state = reduced(final).result()["state"]
    records = [f["record"] for f in facts(final) if f["kind"] == "record"]
    opened = [r["operationId"] for r in records if r["type"] in ("runStarted", "compactionStarted")]
    finished = Counter(r["operationId"] for r in records if r["type"] == "operationFinished")
    wrong = [op for op in opened if finished[op] != 1]
    ok = state["operation"] == {"kind": "idle"} and not wrong
    got = f"operation {state['operation'].get('kind')}" + (
        f", {len(wrong)} operation(s) without exactly one operationFinished" if wrong else ""
    )
    return Check(
        "idle-terminal", "final state idle, one terminal record per operation", ok, "idle, 1 each", got
    )


def _synced_intents(ev: Evidence) -> list[str] | None:
    """Effects whose intent was written but not synced when they started, in the phases whose syncs the
    tracer saw (None: no phase was watched that closely, and nothing can be said)."""
    watched = [p for p in ev.phases if p.synced_at_ledger is not None]
    if not watched:
        return None
    unsynced = []
    for phase in watched:
        written = phase.log_written if phase.log_written is not None else phase.log_after
        lines = ev.ledger[phase.ledger_before : phase.ledger_before + len(phase.synced_at_ledger or [])]
        for entry, durable in zip(lines, phase.synced_at_ledger or [], strict=False):
            if entry["phase"] != "start" or not entry.get("pending"):
                continue
            state = reduced(written[:durable]).state
            op = state.operation if state is not None else None
            synced = (
                {c.tool_started_id for c in op.tool_calls.values() if c.status == "pending"} if op else set()
            )
            if entry["pending"][-1] not in synced:
                unsynced.append(f"{entry['effect']} in {phase.name}: its toolStarted was written, not synced")
    return unsynced


def check_effects(ev: Evidence) -> list[Check]:
    last = ev.resumes[-1].log_after if ev.resumes else ev.prefix
    started = {
        f["id"]: f["record"]
        for f in facts(last)
        if f["kind"] == "record" and f["record"]["type"] == "toolStarted"
    }
    runs = [e for e in ev.ledger if e["phase"] == "start"]
    blind = [e["effect"] for e in runs if not e.get("pending")]
    per_call = Counter(e["pending"][-1] for e in runs if e.get("pending"))
    twice = [
        f"{started[i]['toolName']} {i} ran {n}x"
        for i, n in per_call.items()
        if n > 1 and started.get(i, {}).get("replay") == "never"
    ]
    checks = [
        Check(
            "intent-before-effect",
            "no effect ran before its toolStarted was durable",
            not blind,
            "every effect had a durable intent",
            f"{len(blind)} without: {', '.join(blind)}" if blind else "ok",
        ),
        Check(
            "never-once",
            "never-replay effects ran at most once per tool call",
            not twice,
            "at most once",
            "; ".join(twice) or "ok",
        ),
    ]
    synced = _synced_intents(ev)
    if synced is not None:
        checks.append(
            Check(
                "intent-synced",
                "no effect ran before its toolStarted was synced to disk",
                not synced,
                "each effect's intent fsynced first (a power cut keeps only that)",
                "; ".join(synced) or "ok",
            )
        )
    counts = Counter(e["effect"] for e in runs)
    for name, count in ev.scenario.expect.effects.items():
        checks.append(
            Check(
                "effect-count",
                f"effect {name} ran {count}x",
                counts[name] == count,
                str(count),
                str(counts[name]),
            )
        )
    most = max(ev.attempts_per_step.values(), default=0)
    checks.append(
        Check(
            "third-attempt",
            "no step got a third model attempt",
            most <= 2,
            "at most 2 requests per step",
            f"{most}",
        )
    )
    return checks


def _add_usage(totals: dict[str, tuple[int, ...]], owner: str, counters: dict[str, int]) -> None:
    """Add ``counters`` to ``owner``'s running totals (a tuple in ``USAGE_KEYS`` order)."""
    mine = totals.get(owner, (0,) * len(USAGE_KEYS))
    totals[owner] = tuple(a + counters[k] for a, k in zip(mine, USAGE_KEYS, strict=True))


def check_requests(ev: Evidence) -> list[Check]:
    """What the provider saw against what the log made durable: requests against attempts, usage against
    bills. An agent that sends before it records turns a crash into a billed request nobody can see; a
    client that quietly retries a 429 bills twice while the log shows one attempt; a log that records a
    response's usage twice, or on the wrong attempt, misreports what was spent."""
    orphans = [str(n) for n, r in enumerate(ev.requests, 1) if r.get("attempt") is None]
    per_attempt = Counter(r["attempt"] for r in ev.requests if r.get("attempt"))
    twice = [f"{a[:13]}... got {n}" for a, n in per_attempt.items() if n > 1]
    got = []
    if orphans:
        more = f" and {len(orphans) - 5} more" if len(orphans) > 5 else ""
        got.append(f"request(s) {', '.join(orphans[:5])}{more} arrived with no durable stepAttempt open")
    if twice:
        got.append("; ".join(twice))
    checks = [
        Check(
            "requests-attempted",
            "every model request had a durable stepAttempt of its own",
            not got,
            "one request per durable attempt",
            "; ".join(got) or "ok",
        )
    ]
    last = ev.resumes[-1].log_after if ev.resumes else ev.prefix
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
    checks.append(
        Check(
            "usage-billed",
            "recorded usage matches what the provider billed, attempt by attempt",
            not wrong,
            "per attempt: none, or exactly what was billed",
            "; ".join(wrong) or "ok",
        )
    )
    return checks


def check_processes(ev: Evidence) -> list[Check]:
    checks = []
    again = ev.again
    if again is not None:
        appended = len(again.log_after) - committed_length(ev.final)
        checks.append(
            Check(
                "again-appends-nothing",
                "resuming the finished session again appends nothing",
                appended == 0,
                "0 bytes",
                f"{appended} bytes",
            )
        )
    hung = [f"{p.name} after {p.seconds:.1f}s" for p in ev.phases if p.timed_out]
    checks.append(
        Check(
            "timeout",
            "every phase ended before its timeout",
            not hung,
            f"within {ev.scenario.timeout:g}s",
            f"killed at the timeout: {', '.join(hung)}" if hung else "ok",
        )
    )
    left = [f"{p.name}: {pid}" for p in ev.phases for pid in (*p.kill.outlived, *p.kill.survivors)]
    checks.append(
        Check("processes", "no process outlived the run", not left, "none", ", ".join(left) or "none")
    )
    strays = [f"{p.name}: {name}" for p in ev.phases for name in p.strays]
    checks.append(
        Check(
            "sandbox",
            "nothing was written outside the workspace",
            not strays,
            "only the workspace and the agent's HOME",
            ("beside the workspace: " + ", ".join(strays)) if strays else "none",
        )
    )
    return checks


def check_writers(ev: Evidence) -> list[Check]:
    """Jepsen's pause nemesis: the contract allows one writer, so either the second refused the session
    while the paused one held it, or the paused one never wrote again once let go."""
    continued = ev.continued
    if continued is None:
        return []
    second = ev.recoveries[0] if ev.recoveries else None
    wrote = [
        f"{p.name} appended {p.appended} bytes"
        for p in (second, continued)
        if p is not None and p.appended > 0
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


def check_all(ev: Evidence) -> list[Check]:
    """Every check of the cycle, in catalog order."""
    checks = check_crash(ev)
    if ev.resumes:
        checks += check_recovery(ev) + check_plans_followed(ev)
    checks += check_effects(ev) + check_requests(ev) + check_processes(ev) + check_writers(ev)
    return sorted(checks, key=lambda c: ORDER[c.id])
