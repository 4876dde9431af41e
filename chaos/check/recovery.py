"""What recovery did: carried out the oracle's plans, stopped where it must, and ended as it should.

Every expectation here is the contract's, read by the oracle, never the
reference agent's design: a resume carries out the plan for the log it
started from (section 7); a process that finished the operation reports that
outcome; a resume of a finished session has nothing to do (row 0: finish
completed); a blocked plan stops and writes nothing. What a process did not
decide is not held against it: a second writer that refused a session its
paused owner held, a start that handed an abort on to its resume.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from chaos.check.base import Check
from chaos.contract.describe import detail, plan_text
from chaos.contract.framing import committed_length, committed_lines
from chaos.contract.kinds import kind_of
from chaos.contract.reading import (
    appended_lines,
    decision,
    facts,
    plan,
    raw_facts,
    reduced,
    rejected_at,
)
from chaos.cycle.evidence import Evidence
from chaos.process.phase import Phase, PhaseKind

NEEDS = "facts"  # the session contract's facts in its store (``chaos.check.check_all``)
CATALOG = {
    "plan-followed": "each resume first carries out the oracle's plan for the log it started from",
    "blocked-stops": "a resume the oracle plans as blocked stops blocked",
    "blocked-appends-nothing": "a resume the oracle plans as blocked appends nothing",
    "outcome": "the process that ended the operation reported the expected outcome",
    "blocked-reason": "a blocked recovery is blocked for the expected reason",
    "idle-terminal": "the final state is idle, with one operationFinished per operation",
    "again-appends-nothing": "resuming the finished session once more appends nothing",
}
NOTHING_TO_DO = "completed (nothing to do: the contract plans finish completed for a finished session)"


def carried_out(planned: dict[str, Any], appended: list[Any], current: dict[str, Any] | None = None) -> bool:
    """Whether the first facts a resume appended (as written, even where rejected) are the one effect
    ``planned`` describes, in every field the contract defines for it."""
    return departure(planned, appended, current) is None


@dataclass(frozen=True)
class Departure:
    """How a resume's first facts depart from the plan: in words, and the field that differs when the
    fact is of the planned kind (the failure key keeps the field, never its values)."""

    text: str
    field: str | None = None


def _field(body: dict[str, Any], want: dict[str, Any], *names: str) -> Departure | None:
    for name in names:
        if name in want and body.get(name) != want[name]:
            return Departure(f"{name} {body.get(name)!r} where the plan has {want[name]!r}", name)
    return None


def _started_as_declared(body: dict[str, Any], current: dict[str, Any] | None) -> Departure | None:
    """A new ``toolStarted`` records the tool's current declaration and the current environment."""
    if current is None:
        return None
    declared = next((t for t in current.get("tools", []) if t.get("name") == body.get("toolName")), None)
    return (_field(body, declared, "replay", "replayKey") if declared else None) or _field(
        body, current, "environmentIdentity"
    )


def _synthetic(got: Any, want: dict[str, Any]) -> Departure | None:
    """A synthetic result entry against the plan's: the fields its kind of entry carries (an interrupted
    one names its toolStarted, a pre-execution one the call's assistant entry and index)."""
    kind, body = _kind(got)
    result, message = body.get("result"), body.get("message")
    if kind != "entry:tool" or not isinstance(result, dict) or not isinstance(message, dict):
        return Departure(f"{kind}, not a synthetic tool result")
    if result.get("type") != "synthetic":
        return Departure(f"a {result.get('type')} result, not a synthetic one")
    mine = {
        "reason": result.get("reason"),
        "content": message.get("content"),
        "toolCallId": message.get("tool_call_id"),
        "toolName": body.get("toolName"),
        "toolStartedId": body.get("toolStartedId"),
        "resultEntryId": got.get("id"),
        "assistantEntryId": body.get("assistantEntryId"),
        "toolIndex": body.get("toolIndex"),
    }
    own = ("toolStartedId", "resultEntryId") if "toolStartedId" in want else ("assistantEntryId", "toolIndex")
    return _field(mine, want, "reason", "content", "toolCallId", "toolName", *own)


def departure(
    planned: dict[str, Any], appended: list[Any], current: dict[str, Any] | None = None
) -> Departure | None:
    """How the first facts a resume appended depart from ``planned`` (None: they carry it out): the fact
    kind it wrote instead, or the first field whose value is not the plan's."""
    first = appended[0] if appended else None
    kind, body = _kind(first)
    wanted = {
        "startStep": "stepAttempt",
        "closeAttempt": "stepFailed",
        "finish": "operationFinished",
        "appendSynthetic": "entry:tool",
        "startTool": "toolStarted" if planned.get("mode") == "start" else "entry:tool",
    }.get(planned["type"])
    if wanted is None:  # blocked: nothing
        return Departure(f"appended {kind}") if appended else None
    if kind != wanted:
        return Departure(f"{kind if appended else 'nothing'} where the plan needs {wanted}")
    match planned["type"]:
        case "startStep":
            return _field(body, planned, "stepKind", "attempt", "contextThroughEntryId", "stepId")
        case "startTool" if planned["mode"] == "start":
            return _field(body, planned, "assistantEntryId", "toolIndex", "toolName", "arguments") or (
                _started_as_declared(body, current)
            )
        case "startTool":
            result = body.get("result")
            made = result.get("type") if isinstance(result, dict) else None
            if made not in ("success", "error"):
                return Departure(f"a {made} result where the plan replays the tool (a real result)", "result")
            return _field(body, planned, "toolStartedId")
        case "appendSynthetic":
            results = planned["results"]
            if len(appended) < len(results):
                return Departure(
                    f"{len(appended)} fact(s) where the plan has {len(results)} synthetic result(s)"
                )
            return next(
                filter(None, (_synthetic(g, w) for g, w in zip(appended, results, strict=False))), None
            )
        case "closeAttempt":
            return _field(body, planned, "error")
        case "finish":
            return _field(body, planned, "outcome", "completion", "finalEntryId", "error")
    return None


def _kind(fact: Any) -> tuple[str, dict[str, Any]]:
    try:
        return kind_of(fact)
    except (KeyError, TypeError, AttributeError):
        return "?", {}


def _result_reason(fact: Any) -> Any:
    result = _kind(fact)[1].get("result")
    return result.get("reason") if isinstance(result, dict) else None


def _described(fact: Any) -> str:
    kind, _ = _kind(fact)
    try:
        return f"{kind} {detail(fact)}".rstrip()
    except (KeyError, TypeError, AttributeError):
        return kind


def _judged_transitions(ev: Evidence) -> list[tuple[Phase, bytes, bytes]]:
    """The resumes whose first steps are the oracle's to judge: not the paused writer let go on (its own
    work), not a second writer that refused the session its paused owner held."""
    return [
        (phase, before, after)
        for phase, before, after in ev.transitions()
        if phase.kind is not PhaseKind.CONTINUED and not ev.refused(phase)
    ]


def plans_followed(ev: Evidence) -> list[Check]:
    """Each resume's first appended facts carry out the oracle's plan for the log it started from."""
    checks = []
    for phase, before, _ in _judged_transitions(ev):
        made = decision(before, ev.current)
        if made is None or made.row == "0-idle":
            continue  # a log the oracle cannot read (another check says why), or nothing to carry out
        # judged on what the process wrote: a power cut that took what it had not synced yet changes what
        # survives, not what the agent did (what it did before syncing is intent-synced's and
        # requests-attempted's to judge)
        written = phase.kept.written
        appended = raw_facts(appended_lines(before, written))
        did = _described(appended[0]) if appended else "nothing"
        departed = departure(made.plan, appended, ev.current)
        if departed is not None and appended:
            did += f": {departed.text}"
        error = reduced(written).error
        if appended and error is not None and error.line > len(committed_lines(before)):
            did += f" (in a line the reducer rejects: {error.code})"
        if appended and phase.kept.cut:
            did += " (written; the power cut then took what was not synced)"
        checks.append(
            Check(
                "plan-followed",
                f"{phase.name} carried out the oracle's plan",
                departed is None,
                plan_text(made.plan),
                did,
            )
        )
    return checks


def blocked_stops(ev: Evidence) -> list[Check]:
    checks = []
    for phase, before, _ in _judged_transitions(ev):
        planned = plan(before, ev.current) or {}
        if planned.get("type") != "blocked":
            continue
        checks.append(
            Check(
                "blocked-stops",
                f"{phase.name} stopped blocked as the oracle plans",
                phase.process.outcome == "blocked" or phase.landing.reached is True,
                f"blocked {planned['reason']}",
                f"{phase.process.outcome or 'no known outcome'} (exit {phase.process.returncode})",
            )
        )
        checks.append(
            Check(
                "blocked-appends-nothing",
                f"blocked {phase.name} appended nothing",
                phase.kept.appended == 0,
                "0 bytes",
                f"{phase.kept.appended} bytes",
            )
        )
    return checks


def _started_from(phase: Phase) -> bytes:
    return phase.kept.log_before[: committed_length(phase.kept.log_before)]


def derived_outcome(ev: Evidence, phase: Phase) -> tuple[str | None, str | None]:
    """What ``phase``'s process must report, as the oracle reads the logs: (outcome, blocked reason).

    The outcome of the operation it finished; else blocked, with the oracle's reason, when the oracle
    plans blocked for the log a resume started from; else blocked (no reason) when it ended blocked
    after progress of its own (a live 429 under a changed environment: the only reading of that is
    the final log's plan, which cannot fail against itself); else completed, when it started from a
    finished session and left it so (row 0). (None, None) when the logs do not say.
    """
    finished = ev.finishes_of(phase)
    if finished:
        return str(finished[-1]["outcome"]), None
    if phase.kind in (PhaseKind.RESUME, PhaseKind.AGAIN):
        made = decision(_started_from(phase), ev.current)
        if made is not None and made.plan["type"] == "blocked":
            return "blocked", made.plan["reason"]
        if made is not None and made.row == "0-idle" and not phase.wrote:
            return "completed", None
    after = plan(phase.kept.log_after, ev.current)
    if after is not None and after["type"] == "blocked":
        return "blocked", None
    return None, None


def _reported(phase: Phase) -> str:
    return f"{phase.process.outcome or 'no known outcome'} (exit {phase.process.returncode})"


def outcomes(ev: Evidence) -> tuple[list[Check], str | None]:
    """The process that ended the operation reports its outcome; every resume of the finished session
    after it reports that there was nothing to do."""
    expect = ev.scenario.expect
    ending = ev.ending()
    outcome: str | None = expect.outcome
    reason = expect.reason
    if expect.derived:
        outcome, reason = derived_outcome(ev, ending)
    source = " (as the oracle reads the logs)" if expect.derived else ""
    checks = []
    if outcome is not None and ending.process.timed_out:
        checks.append(
            Check.skip("outcome", f"{ending.name} outcome", f"{ending.name} was killed at the timeout")
        )
    elif outcome is not None:
        checks.append(
            Check(
                "outcome",
                f"{ending.name} outcome",
                ending.process.outcome == outcome,
                f"{outcome}{source}",
                _reported(ending),
            )
        )
    if outcome == "blocked" and reason is not None:
        got = (plan(ev.final, ev.current) or {}).get("reason")
        checks.append(
            Check(
                "blocked-reason",
                "blocked reason",
                got == reason,
                str(reason),
                f"{got} (the final log's plan)",
            )
        )
    for phase in ev.resumes:
        if (
            phase is ending
            or ev.refused(phase)
            or phase.process.killed
            or phase.process.timed_out
            or phase.process.returncode is None
        ):
            continue
        made = decision(_started_from(phase), ev.current)
        if made is None or made.row != "0-idle" or phase.wrote:
            continue  # a blocked plan is blocked-stops' to judge; work done is the plan's and the ending's
        checks.append(
            Check(
                "outcome",
                f"{phase.name} outcome",
                phase.process.outcome == "completed",
                NOTHING_TO_DO,
                _reported(phase),
            )
        )
    return checks, outcome


def idle_terminal(ev: Evidence, outcome: str | None) -> list[Check]:
    final = ev.final
    name = "final state idle, one terminal record per operation"
    if outcome == "blocked":
        return []
    rejected = rejected_at(final)
    if rejected is not None:
        return [Check.skip("idle-terminal", name, f"the final log is rejected at line {rejected}")]
    state = reduced(final).result()["state"]
    records = [f["record"] for f in facts(final) if f["kind"] == "record"]
    opened = [r["operationId"] for r in records if r["type"] in ("runStarted", "compactionStarted")]
    finished = Counter(r["operationId"] for r in records if r["type"] == "operationFinished")
    wrong = [op for op in opened if finished[op] != 1]
    ok = state["operation"] == {"kind": "idle"} and not wrong
    got = f"operation {state['operation'].get('kind')}" + (
        f", {len(wrong)} operation(s) without exactly one operationFinished" if wrong else ""
    )
    return [Check("idle-terminal", name, ok, "idle, 1 each", got)]


def again_appends_nothing(ev: Evidence) -> list[Check]:
    again = ev.again
    if again is None:
        return []
    return [
        Check(
            "again-appends-nothing",
            "resuming the finished session again appends nothing",
            again.kept.appended == 0,
            "0 bytes",
            f"{again.kept.appended} bytes",
        )
    ]


def judge(ev: Evidence) -> list[Check]:
    if not ev.resumes:
        return []
    ended, outcome = outcomes(ev)
    return (
        plans_followed(ev)
        + blocked_stops(ev)
        + ended
        + idle_terminal(ev, outcome)
        + again_appends_nothing(ev)
    )
