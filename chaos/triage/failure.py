"""The failure key: what makes two failing cases the same failure, whatever scenario or boundary exposed it.

A key is built from the cause, never from where it showed, so one bug is one
group across scenarios, boundaries, protocols, shards and agents:

1. the first failing check, in the order checks are reported (causes first, ``chaos.check``);
2. for a log that no longer reduces: the oracle's error code, the kind of the
   fact it rejects, and the rule it broke in words with ids, values and
   counts left out (``entry lacks assistantEntryId``), one cause whether the
   start wrote the line (the crash prefix) or a resume did (the final log);
3. for a wrong plan: the decision of the contract's decision tree the agent
   broke (the plan's type, mode, blocked reason and synthetic reasons: the
   rows that decide alike, ``chaos.contract.planner.ROWS``, are one decision,
   so a recovery that never writes its finish is one failure whether the run
   completed, failed or stopped at its length) and what it did instead (the
   kind of fact it appended and the fields recovery reads, or that it appended
   nothing, or how it ended; where the plan is to stop, any fact appended is
   one "went on", since which one depends on the model's script, not the bug);
4. for a wrong outcome: what was expected and what the process reported;
5. for a check that names its cause (``Check.cause``: the provider rule a request broke, what a request
   said where the log says another thing): that cause;
6. an effect or a model request built on a fact the log does not keep (``ACTED``) is one cause, whichever
   phase did it: ``unsynced-directory-entry`` when a power cut took the whole log because an entry on its
   path was never synced, ``acted-before-sync`` when the agent wrote the fact and did not sync it,
   ``acted-after-failed-write`` when a write to the log had failed (a disk fault). Which check saw it
   first (the effect's intent, or the request's attempt) depends on where the fault landed, not on the bug.

Checks that are not about plans or outcomes (the crash prefix, an effect that
ran twice, a process left behind) key on the check alone; a timeout, a
leftover process or a stray file also keys on the kinds of phase it happened in, except a timeout in a
case whose fault withheld a model answer (``hang``, ``trickle``): that is the agent's deadline, one cause
in whichever phase the answer was withheld.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

import orjson

from chaos.case.result import FailureRecord
from chaos.case.verdict import Verdict
from chaos.check import CATALOG
from chaos.check.base import Check
from chaos.check.effects import without_intent
from chaos.check.recovery import carried_out, departure
from chaos.check.requests import unattempted
from chaos.contract.framing import committed_length, committed_lines
from chaos.contract.kinds import kind_of
from chaos.contract.reading import appended_lines, decision, raw_facts, reduced
from chaos.cycle.evidence import Evidence
from chaos.mine.signature import action_shape
from chaos.process.phase import Phase, PhaseKind

_PHASED = ("timeout", "processes", "sandbox")  # checks whose failing phase kind is part of the key
WITHHELD = "an answer withheld"  # a timeout's where, when the case's fault withheld a model answer
# Checks about plans and outcomes: their key has the divergence.
_ABOUT_PLANS = (
    "prefix-reduces",
    "final-reduces",
    "plan-followed",
    "blocked-stops",
    "blocked-appends-nothing",
    "outcome",
    "blocked-reason",
    "idle-terminal",
    "again-appends-nothing",
)
_IDS = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|sha256:[0-9a-f]{64}")
_PARSER = re.compile(r"(not strict JSON): .*")  # the JSON parser's words depend on where a line was cut
_VALUES = re.compile(r"'[^']*'|\"[^\"]*\"|\b\d+\b|\[[\d, ]*\]")


def rule(detail: str) -> str:
    """The rule an oracle error's detail states, with ids, digests, values and counts left out."""
    return _VALUES.sub("…", _IDS.sub("ID", _PARSER.sub(r"\1", detail)))


@dataclass(frozen=True)
class Divergence:
    planned: str | None  # the decision the agent broke, in words (None: the log does not reduce there)
    did: str  # what the agent did, in words
    shape: list[Any]  # the parts of the key
    agent: bool = True  # ``did`` says what the agent did (else it is a whole sentence: a store's cause)

    def text(self) -> str:
        """In words, from the key's parts only (so the words are as stable as the key)."""
        if self.planned is None:
            return f"the agent {self.did}" if self.agent else self.did
        return f"the oracle planned {self.planned}; the agent {self.did}"


# The checks that see the agent act (run an effect, send a request) on a fact the log does not keep; the
# last two see it only where a power cut took written facts (else they have causes of their own).
ACTED = ("intent-before-effect", "intent-synced", "requests-attempted", "third-attempt")
ACTED_ON_CUT = ACTED[2:]
# The causes they key on (``_acted_on_lost_facts``)
FAILED_WRITE, UNSYNCED, LOST_ENTRY = (
    "acted-after-failed-write",
    "acted-before-sync",
    "unsynced-directory-entry",
)
LOST = (FAILED_WRITE, UNSYNCED, LOST_ENTRY)
# The checks that say a log the agent wrote is rejected: one cause, whichever phase wrote the line (the
# same bug rejects the crash prefix when the start writes it, the final log when a resume does).
REJECTED = ("prefix-reduces", "final-reduces")


@dataclass(frozen=True)
class Failure:
    check: str  # the first failing check (or the earlier divergence, see failure_of)
    divergence: Divergence | None
    where: tuple[str, ...] = ()  # kinds of phase, for the checks in _PHASED

    @property
    def cause(self) -> str:
        if self.divergence and self.divergence.shape[0] in LOST:
            return str(self.divergence.shape[0])
        return "log-rejected" if self.check in REJECTED and self.divergence else self.check

    @property
    def key(self) -> str:
        parts = [self.cause, self.divergence.shape if self.divergence else None, list(self.where)]
        return "F-" + hashlib.sha256(orjson.dumps(parts)).hexdigest()[:12]

    @property
    def label(self) -> str:
        where = f" ({', '.join(self.where)})" if self.where else ""
        return f"{self.cause}{where}: " + (self.divergence.text() if self.divergence else CATALOG[self.check])

    def record(self) -> FailureRecord:
        return FailureRecord(self.key, self.check, self.label)


def _did(appended: list[Any]) -> tuple[str, list[Any]]:
    if not appended:
        return "appended nothing", ["nothing"]
    try:
        shape = action_shape(appended[0])
    except (KeyError, TypeError, AttributeError):
        return "appended a fact of no known kind", ["?"]
    return "appended " + " ".join(str(p) for p in shape if p not in (None, [], False)), shape


def _planned(made_plan: dict[str, Any]) -> str:
    reasons = sorted({r["reason"] for r in made_plan.get("results", [])})
    parts = [made_plan["type"], made_plan.get("mode"), made_plan.get("reason"), ",".join(reasons) or None]
    return " ".join(str(p) for p in parts if p)


def _rejected_line(before: bytes, after: bytes) -> Divergence | None:
    """The first line of ``after`` beyond ``before`` that the reducer rejects: keyed by the error's code,
    the kind of the fact it rejects and the rule it states."""
    error = reduced(after).error
    if error is None or (before and error.line <= reduced(before).line):
        return None
    rejected = raw_facts([committed_lines(after)[error.line - 1]])
    fact = next((f for f in rejected if isinstance(f, dict) and f.get("seq") == error.seq), None)
    fact = fact or (rejected[0] if rejected else None)
    try:
        kind = kind_of(fact)[0] if isinstance(fact, dict) else "an unreadable line"
    except (KeyError, TypeError, AttributeError):
        kind = "a fact of no known kind"
    said = rule(error.detail)
    return Divergence(
        None, f"appended {kind}, which the reducer rejects ({error.code}: {said})", [error.code, kind, said]
    )


def _rejection(ev: Evidence) -> Divergence | None:
    """The first transaction a resume appended that the reducer rejects. Where the resume had left the
    oracle's plan by then (it appended another kind of fact than the plan's), the key is that departure:
    the rule it broke and the fact that broke it, not the reducer's words, which differ with the
    operation it broke it in (a stale step in a run or in a compaction is one bug)."""
    for _, before, after in ev.transitions():
        found = _rejected_line(before, after)
        if found is None:
            continue
        error = reduced(after).error
        assert error is not None  # ``found``: the reducer rejects a line of ``after``
        lines, line = committed_lines(after), error.line  # the log before the rejected line reduces
        until = b"".join(kept + b"\n" for kept in lines[: line - 1])
        made = decision(until, ev.current)
        if made is not None and made.row != "0-idle":
            departed = departure(made.plan, raw_facts(lines[line - 1 : line]), ev.current)
            if departed is not None and departed.field is None:
                planned, kind = _planned(made.plan), found.shape[1]
                return Divergence(
                    planned, f"appended {kind}, which the reducer rejects", [planned, kind, "rejected"]
                )
        return found
    return None


def _first_step(ev: Evidence) -> Divergence | None:
    """The first resume whose first appended facts do not carry out the oracle's plan for its log."""
    for phase, before, _ in ev.transitions():
        if phase.kind is PhaseKind.CONTINUED or ev.refused(phase):
            continue
        made = decision(before, ev.current)
        if made is None or made.row == "0-idle":
            continue
        appended = raw_facts(
            appended_lines(before, phase.kept.written)
        )  # as written (plan-followed's reading)
        departed = departure(made.plan, appended, ev.current)
        if departed is not None:
            did, shape = _did(appended)
            planned = _planned(made.plan)
            if made.plan["type"] == "blocked" and appended:
                # Whatever it appended next came from the model's script, not from the bug: a recovery that
                # goes on where it must stop is one failure, whichever answer it then got.
                return Divergence(planned, "went on where it must stop", [planned, ["went on"]])
            if departed.field is None:
                return Divergence(planned, did, [planned, shape])
            return Divergence(
                planned, f"{did} with another {departed.field}", [planned, shape, departed.field]
            )
    return None


def _ending(ev: Evidence) -> Divergence | None:
    """The recovery ended while the oracle still plans work (and no block)."""
    ending, final = ev.ending(), ev.final
    made, state = decision(final, ev.current), reduced(final).state
    if made is None or state is None or state.operation is None or made.plan["type"] == "blocked":
        return None
    did = f"ended {ending.process.outcome or 'with no known outcome'}"
    planned = _planned(made.plan)
    return Divergence(planned, did, [planned, ["ended", ending.process.outcome]])


def divergence(ev: Evidence, check: str, expected: str, got: str) -> Divergence | None:
    """Where the agent left the oracle's way, as the failing ``check`` sees it."""
    if check == "prefix-reduces":
        return _rejected_line(b"", ev.prefix[: committed_length(ev.prefix)])
    if ev.current is None or reduced(ev.prefix).error is not None:
        return None
    if check == "final-reduces":
        return _rejection(ev)
    found = _first_step(ev) or _ending(ev)
    if found is None and check == "outcome":
        wanted, reported = expected.split(" ")[0], got.split(" ")[0]
        return Divergence(None, f"reported {reported} where {wanted} was due", ["outcome", wanted, reported])
    return found


def _diverged_before_rejection(ev: Evidence) -> bool:
    """A resume left the oracle's plan at a line before the first line the reducer rejects: that is the
    first thing that went wrong (a rejected line later on may be another bug, or its consequence)."""
    for _, before, after in ev.transitions():
        error = reduced(after).error
        made = decision(before, ev.current)
        if made is not None and made.row != "0-idle":
            appended = raw_facts(appended_lines(before, after))
            if not carried_out(made.plan, appended, ev.current):
                return error is None or error.line > len(committed_lines(before)) + 1
        if error is not None and error.line > reduced(before).line:
            return False
    return False


def failure_of(verdict: Verdict) -> Failure | None:
    """The failure key of a failing case (None when every check held): named by the first failing check,
    or, where a resume left the plan before the log broke, by that earlier divergence."""
    failed = verdict.failed
    if not failed:
        return None
    first = failed[0]
    if first.id == "final-reduces" and verdict.evidence.current is not None:
        earlier = next((c for c in failed if c.id == "plan-followed"), None)
        if earlier is not None and _diverged_before_rejection(verdict.evidence):
            first = earlier
    acted = next((c for c in failed if c.id in ACTED), None)  # (what it explains may fail first)
    lost = _acted_on_lost_facts(verdict, acted) if acted is not None else None
    if lost is not None:
        return lost
    where: tuple[str, ...] = ()
    if first.id == "timeout" and verdict.scenario.withholds_answer():
        where = (WITHHELD,)  # the agent's deadline, whichever phase the fault withheld an answer from
    elif first.id in _PHASED:
        named = {re.sub(r"-\d+", "", p.name) for p in verdict.phases if p.name in first.got}
        where = tuple(sorted(named))
    about = first.id in _ABOUT_PLANS
    diverged = divergence(verdict.evidence, first.id, first.expected, first.got) if about else None
    if diverged is None and first.cause:
        diverged = Divergence(None, first.cause, ["cause", first.cause], verdict.evidence.facts)
    return Failure(first.id, diverged, where)


def _acted_on_lost_facts(verdict: Verdict, check: Check) -> Failure | None:
    """The agent acted on a fact the log does not keep: before syncing it (an effect's intent, seen by the
    tracer; or a model request's attempt that a power cut took), or after a write to the log failed (a
    disk fault). One cause each, whichever check saw it first and in whichever phase (the same code
    writes the log in a first run and in a resume)."""
    phases = verdict.evidence.phases
    entry = next((p.kept.lost_entry for p in phases if p.kept.lost_entry), None)
    if entry is not None:
        said = (
            "a power cut took the whole log: the agent created an entry on its path and never synced the "
            "directory holding it (POSIX keeps a new entry only then), and it had acted on the log"
        )
        return Failure(check.id, Divergence(None, said, [LOST_ENTRY], False))
    if check.id == "intent-synced" or (check.id in ACTED_ON_CUT and any(p.kept.cut for p in phases)):
        said = (
            "the agent acted on facts it had written and not synced (it ran an effect, or sent a model "
            "request): a power cut there keeps what was done and loses the facts that record it"
        )
        return Failure(check.id, Divergence(None, said, [UNSYNCED], False))
    if any(
        p.landing.failed_at is not None and p.landing.failed_at < at
        for p, at in _acts(verdict.evidence, check)
    ):
        said = "the agent went on after a write to the log failed: it acted on facts the log does not hold"
        return Failure(check.id, Divergence(None, said, [FAILED_WRITE], False))
    return None


def _acts(ev: Evidence, check: Check) -> list[tuple[Phase, float]]:
    """What the agent did that ``check`` (one of ``ACTED``) saw, as the process that did it and when. A
    failed write explains only what came after it in the same process: an effect run before its intent
    was written (and the write then failed), or run blind by a resume after a start that stopped at its
    failed write, is a bug of its own."""
    if check.id == "intent-before-effect":
        return [(p, entry["time"]) for entry, p in without_intent(ev)[0] if p is not None]
    sent = unattempted(ev) if check.id == "requests-attempted" else range(1, len(ev.requests) + 1)
    # (a step's third attempt: any request of the run may be it)
    return [
        (p, ev.requests[n - 1]["received"])
        for p in ev.phases
        for n in sent
        if p.seen.requests[0] < n <= p.seen.requests[1]
    ]


def size(verdict: Verdict) -> list[Any]:
    """How a group's representative is picked: a case whose crash lands the same way every time first
    (exact, by the tracer or the world; one timed by polling may land elsewhere when rerun), then the
    smallest: fewest facts committed in its crash prefix, then fewest turns, then its name."""
    state = reduced(verdict.evidence.prefix[: committed_length(verdict.evidence.prefix)]).state
    start = verdict.evidence.start
    exact = verdict.scenario.crash is None or bool(start.landing.exact and start.landing.mechanism != "poll")
    return [0 if exact else 1, state.seq if state else 0, len(verdict.scenario.turns), verdict.case]
