"""The checks of one crash cycle: did recovery keep the contract's promises?

Each check is pure over what the run left behind (the logs after each phase,
the phases' exit statuses, the effect ledger, the model server's requests, the
oracle's plan) and reports what was expected and what happened, so a failure
reads as a finding a person can act on.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from chaos.contract import Reducer, plan_recovery
from chaos.contract.framing import committed_facts, committed_length
from chaos.run import Phase
from chaos.scenario import Scenario
from chaos.show import detail, plan_text
from chaos.watch import kind_of


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    expected: str = ""
    got: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "ok": self.ok, "expected": self.expected, "got": self.got}

    def text(self) -> str:
        """How every report words a check: its name and, when it failed, what was expected and got."""
        return self.name if self.ok else f"{self.name}: expected {self.expected}, got {self.got}"


@dataclass
class Evidence:
    """Everything a cycle left behind, as the checks read it."""

    scenario: Scenario
    start: Phase
    prefix: bytes
    resumes: list[Phase]  # the last one is the idempotence rerun
    logs: list[bytes]  # the log after each resume
    current: dict[str, Any] | None
    ledger: list[dict[str, Any]]
    attempts_per_step: dict[str, int]
    setup: Phase | None = None  # the clean run before a compaction scenario's crash


@lru_cache(maxsize=32)
def _reduced(data: bytes) -> Reducer:
    """The checks read the same few logs many times over; each is reduced once. Read only."""
    return Reducer.of(data)


def _facts(data: bytes) -> list[dict[str, Any]]:
    """The facts of the lines the reducer accepts (a corrupt line and all after it are left out)."""
    return committed_facts(data, _reduced(data).line)


def _error_text(reducer: Reducer) -> str:
    error = reducer.result().get("error")
    if error is None:
        return "ok"
    seq = f" (seq {error['seq']})" if "seq" in error else ""
    return f"{error['code']} at line {error['line']}{seq}"


def _committed(data: bytes) -> bytes:
    """The bytes up to the last LF: a torn tail is never committed, corrupt or not."""
    return data[: committed_length(data)]


def _plan(data: bytes, current: dict[str, Any] | None) -> dict[str, Any] | None:
    reducer = _reduced(data)
    if reducer.error is not None or reducer.state is None or current is None:
        return None
    return plan_recovery(reducer.state, current)


def _subset(expected: Any, got: Any) -> bool:
    """``got`` has every field ``expected`` names (recursively; lists item by item, same length)."""
    if isinstance(expected, dict):
        return isinstance(got, dict) and all(_subset(v, got.get(k)) for k, v in expected.items())
    if isinstance(expected, list):
        return isinstance(got, list) and len(got) == len(expected) and all(map(_subset, expected, got))
    return expected == got


def _last_recovery(ev: Evidence) -> int | None:
    """Index of the last resume that recovered (the idempotence rerun aside), if any ran."""
    recoveries = [i for i, p in enumerate(ev.resumes) if p.name != "resume-again"]
    return recoveries[-1] if recoveries else None


def _final(ev: Evidence) -> bytes:
    """The log after the last recovery."""
    last = _last_recovery(ev)
    return ev.prefix if last is None else ev.logs[last]


def _ending(ev: Evidence) -> tuple[Phase, bytes]:
    """The process that ended the operation (its exit status tells how), and the log it left."""
    last = _last_recovery(ev)
    killed = ev.start.reached and ev.scenario.crash is not None and ev.scenario.crash.signal == "SIGKILL"
    if not killed or last is None:
        return ev.start, ev.prefix
    return ev.resumes[last], ev.logs[last]


def _transitions(ev: Evidence) -> Iterator[tuple[Phase, bytes, bytes]]:
    """Each resume with the committed log it started from and the log it left."""
    snapshots = [ev.prefix, *ev.logs]
    for phase, before, after in zip(ev.resumes, snapshots[:-1], snapshots[1:], strict=True):
        yield phase, _committed(before), after


def check_crash(ev: Evidence) -> list[Check]:
    checks = []
    crash = ev.scenario.crash
    if crash is not None and (ev.start.reached or ev.scenario.expect.must_reach):
        got = "reached" if ev.start.reached else f"the agent ended first (exit {ev.start.returncode})"
        checks.append(Check(f"the run reached {crash.boundary}", bool(ev.start.reached), "reached", got))
    reducer = _reduced(ev.prefix)
    checks.append(Check("crash prefix reduces", reducer.error is None, "ok", _error_text(reducer)))
    expected_plan = ev.scenario.expect.plan
    if expected_plan is not None:
        plan = _plan(ev.prefix, ev.current)
        checks.append(
            Check(
                "oracle plan for the prefix",
                plan is not None and _subset(expected_plan, plan),
                str(expected_plan),
                str(plan),
            )
        )
    return checks


def _finished(log: bytes) -> list[dict[str, Any]]:
    return [f["record"] for f in _facts(log) if f.get("record", {}).get("type") == "operationFinished"]


def _oracle_outcome(
    ending: Phase, log: bytes, current: dict[str, Any] | None
) -> tuple[str | None, str | None]:
    """What the ending process must report, as the oracle reads its log: blocked (and why), the
    outcome of the operation it finished, or completed when there was nothing left to do."""
    reducer = _reduced(log)
    if reducer.error is not None or reducer.state is None or current is None:
        return None, None
    plan = plan_recovery(reducer.state, current)
    if plan["type"] == "blocked":
        return "blocked", plan["reason"]
    finished = _finished(log)[len(_finished(log[: ending.log_before])) :]
    if finished:
        return finished[-1]["outcome"], None
    return (plan["outcome"] if plan["type"] == "finish" else None), None


def check_recovery(ev: Evidence) -> list[Check]:
    expect = ev.scenario.expect
    ending, ended = _ending(ev)
    final = _final(ev)
    outcome, reason = (expect.outcome, expect.reason)
    if expect.derived:
        outcome, reason = _oracle_outcome(ending, ended, ev.current)
    source = " (as the oracle reads the final log)" if expect.derived else ""
    checks = []
    if outcome is not None:  # None: the oracle cannot read the log; the reduce check says why
        checks.append(
            Check(
                f"{ending.name} outcome",
                ending.outcome == outcome,
                f"{outcome}{source}",
                f"{ending.outcome or 'no known outcome'} (exit {ending.returncode})",
            )
        )
    if outcome == "blocked":
        plan = _plan(final, ev.current) or {}
        checks.append(
            Check("blocked reason", plan.get("reason") == reason, str(reason), str(plan.get("reason")))
        )
    reducer = _reduced(final)
    checks.append(Check("final log reduces", reducer.error is None, "ok", _error_text(reducer)))
    rewrites = [phase.name for phase, before, after in _transitions(ev) if not after.startswith(before)]
    checks.append(
        Check(
            "append-only: committed bytes are never rewritten",
            not rewrites,
            "each log starts with the committed bytes before it",
            f"rewritten by {', '.join(rewrites)}" if rewrites else "ok",
        )
    )
    for phase, before, after in _transitions(ev):
        planned = _plan(before, ev.current) or {}
        if planned.get("type") == "blocked":
            checks.append(
                Check(
                    f"{phase.name} stopped blocked as the oracle plans",
                    phase.outcome == "blocked" or phase.reached is True,
                    f"blocked {planned['reason']}",
                    f"{phase.outcome or 'no known outcome'} (exit {phase.returncode})",
                )
            )
            appended = len(after) - len(before)
            checks.append(
                Check(f"blocked {phase.name} appended nothing", appended == 0, "0 bytes", f"{appended} bytes")
            )
    if outcome != "blocked" and reducer.error is None:
        checks.append(_idle_and_terminal(final, reducer))
    return checks


def carried_out(plan: dict[str, Any], appended: list[dict[str, Any]]) -> bool:
    """Whether the first facts a resume appended are the one effect ``plan`` describes."""
    first = appended[0] if appended else None
    kind, body = kind_of(first) if first else ("", {})
    match plan["type"]:
        case "startStep":
            same_step = "stepId" not in plan or body.get("stepId") == plan["stepId"]
            return (
                kind == "stepAttempt"
                and body["attempt"] == plan["attempt"]
                and body["contextThroughEntryId"] == plan["contextThroughEntryId"]
                and same_step
            )
        case "startTool" if plan["mode"] == "start":
            return kind == "toolStarted" and (body["assistantEntryId"], body["toolIndex"]) == (
                plan["assistantEntryId"],
                plan["toolIndex"],
            )
        case "startTool":
            return kind == "entry:tool" and body.get("toolStartedId") == plan["toolStartedId"]
        case "appendSynthetic":
            facts = appended[: len(plan["results"])]
            return len(facts) == len(plan["results"]) and all(
                kind_of(got)[1].get("result", {}).get("reason") == want["reason"]
                and got["id"] == want.get("resultEntryId", got["id"])
                for got, want in zip(facts, plan["results"], strict=True)
            )
        case "closeAttempt":
            return kind == "stepFailed" and body["error"]["code"] == plan["error"]["code"]
        case "finish":
            return kind == "operationFinished" and body["outcome"] == plan["outcome"]
    return not appended  # blocked: nothing


def check_plans_followed(ev: Evidence) -> list[Check]:
    """Each resume's first appended facts carry out the oracle's plan for the log it started from."""
    checks = []
    for phase, before, after in _transitions(ev):
        reducer = _reduced(before)
        if reducer.error is not None or reducer.state is None or ev.current is None:
            continue
        plan = plan_recovery(reducer.state, ev.current)
        if plan["type"] == "finish" and reducer.state.operation is None:
            continue  # idle: nothing to carry out
        appended = _facts(after)[len(_facts(before)) :]
        first = appended[0] if appended else None
        checks.append(
            Check(
                f"{phase.name} carried out the oracle's plan",
                carried_out(plan, appended),
                plan_text(plan),
                f"{kind_of(first)[0]} {detail(first)}".rstrip() if first else "nothing",
            )
        )
    return checks


def _idle_and_terminal(final: bytes, reducer: Reducer) -> Check:
    state = reducer.result()["state"]
    records = [f["record"] for f in _facts(final) if f["kind"] == "record"]
    opened = [r["operationId"] for r in records if r["type"] in ("runStarted", "compactionStarted")]
    finished = Counter(r["operationId"] for r in records if r["type"] == "operationFinished")
    wrong = [op for op in opened if finished[op] != 1]
    ok = state["operation"] == {"kind": "idle"} and not wrong
    got = f"operation {state['operation'].get('kind')}" + (
        f", {len(wrong)} operation(s) without exactly one operationFinished" if wrong else ""
    )
    return Check("final state idle, one terminal record per operation", ok, "idle, 1 each", got)


def check_effects(ev: Evidence) -> list[Check]:
    final = ev.logs[-1] if ev.logs else ev.prefix
    started = {
        f["id"]: f["record"]
        for f in _facts(final)
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
            "no effect ran before its toolStarted was durable",
            not blind,
            "every effect had a durable intent",
            f"{len(blind)} without: {', '.join(blind)}" if blind else "ok",
        ),
        Check(
            "never-replay effects ran at most once per tool call",
            not twice,
            "at most once",
            "; ".join(twice) or "ok",
        ),
    ]
    counts = Counter(e["effect"] for e in runs)
    for name, count in ev.scenario.expect.effects.items():
        checks.append(
            Check(f"effect {name} ran {count}x", counts[name] == count, str(count), str(counts[name]))
        )
    most = max(ev.attempts_per_step.values(), default=0)
    checks.append(
        Check("no step got a third model attempt", most <= 2, "at most 2 requests per step", f"{most}")
    )
    return checks


def check_processes(ev: Evidence) -> list[Check]:
    phases = [*([ev.setup] if ev.setup else []), ev.start, *ev.resumes]
    again = ev.resumes[-1] if ev.resumes and ev.resumes[-1].name == "resume-again" else None
    checks = []
    if again is not None:
        before = _final(ev)
        appended = len(ev.logs[-1]) - len(_committed(before))
        checks.append(
            Check(
                "resuming the finished session again appends nothing",
                appended == 0,
                "0 bytes",
                f"{appended} bytes",
            )
        )
    hung = [f"{p.name} after {p.seconds:.1f}s" for p in phases if p.timed_out]
    checks.append(
        Check(
            "every phase ended before its timeout",
            not hung,
            f"within {ev.scenario.timeout:g}s",
            f"killed at the timeout: {', '.join(hung)}" if hung else "ok",
        )
    )
    left = [f"{p.name}: {pid}" for p in phases for pid in (*p.kill.outlived, *p.kill.survivors)]
    checks.append(Check("no process outlived the run", not left, "none", ", ".join(left) or "none"))
    return checks


def check_all(ev: Evidence) -> list[Check]:
    checks = check_crash(ev)
    if ev.resumes:
        checks += check_recovery(ev) + check_plans_followed(ev)
    return checks + check_effects(ev) + check_processes(ev)
