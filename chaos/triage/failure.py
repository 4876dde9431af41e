"""The failure key: what makes two failing cases the same failure, whatever scenario or boundary exposed it.

A key has three parts, each free of ids, paths, texts, times and scenario names,
so it is stable across runs, machines and shards:

1. the first failing check, in the order checks are reported (``chaos.check.CATALOG``);
2. the *divergence*: where the agent left the oracle's way, as the oracle's plan
   there (type, mode, reason, and the reasons of synthetic results) paired with
   what the agent did instead (the kind of fact it appended and the fields
   recovery reads, or that it appended nothing, or how it ended). For a log that
   no longer reduces it is the first transaction the reducer rejects (its error
   code is part of it); otherwise the first resume whose first appended facts do
   not carry out the oracle's plan for the log it started from, else the
   recovery ending while the oracle still plans work;
3. the recovery-relevant shape of the state it diverged from (``state_shape``,
   beside mining's signatures): an abort in progress, the replay policies of
   started tools left pending.

Checks that are not about plans or outcomes (the crash prefix, an effect that ran
twice, a process left behind) key on the check alone; a timeout, a leftover
process or a stray file also keys on the kinds of phase it happened in.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

import orjson

from chaos.case.verdict import Verdict
from chaos.check.checks import CATALOG, carried_out, facts, plan, reduced
from chaos.contract.framing import FramingError, committed_length, committed_lines, facts_of, parse_line
from chaos.cycle.evidence import Evidence
from chaos.mine.signature import action_shape, plan_key, state_shape
from chaos.process.phase import PhaseKind

_PHASED = ("timeout", "processes", "sandbox")  # checks whose failing phase kind is part of the key
# Checks about plans and outcomes: their key has the divergence. (A crash-prefix check is about the
# run before recovery, an effect or process check about what the ledger or the kernel saw.)
_ABOUT_PLANS = (
    "final-reduces",
    "plan-followed",
    "blocked-stops",
    "blocked-appends-nothing",
    "outcome",
    "blocked-reason",
    "idle-terminal",
    "again-appends-nothing",
)


@dataclass(frozen=True)
class Divergence:
    planned: dict[str, Any] | None  # the oracle's plan where the agent diverged
    did: str  # what the agent did there, in words
    shape: list[Any]  # planned, did and the state's shape, for the key

    def text(self) -> str:
        """In words, from the key's parts only (so the words are as stable as the key)."""
        planned = self.shape[0]
        words = " ".join(str(p) for p in planned[:3] if p) if planned else "nothing (the log does not reduce)"
        if planned and planned[3]:
            words += " " + ",".join(planned[3])
        pending = (
            f" ({', '.join(self.shape[2][1])} tool pending)"
            if len(self.shape[2]) > 1 and self.shape[2][1]
            else ""
        )
        return f"the oracle planned {words}{pending}; the agent {self.did}"


@dataclass(frozen=True)
class Failure:
    check: str
    divergence: Divergence | None
    where: tuple[str, ...] = ()  # kinds of phase, for the checks in _PHASED

    @property
    def key(self) -> str:
        parts = [self.check, self.divergence.shape if self.divergence else None, list(self.where)]
        return "F-" + hashlib.sha256(orjson.dumps(parts)).hexdigest()[:12]

    @property
    def label(self) -> str:
        where = f" ({', '.join(self.where)})" if self.where else ""
        return f"{self.check}{where}: " + (self.divergence.text() if self.divergence else CATALOG[self.check])

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "check": self.check, "label": self.label}


def _did(appended: list[dict[str, Any]]) -> tuple[str, list[Any]]:
    if not appended:
        return "appended nothing", ["nothing"]
    shape = action_shape(appended[0])
    return "appended " + " ".join(str(p) for p in shape if p not in (None, [], False)), shape


def _rejected(after: bytes, line: int) -> tuple[str, list[Any]]:
    """What the agent wrote on ``line``, the first line the reducer rejects."""
    error = reduced(after).result()["error"]
    try:
        first = facts_of(parse_line(committed_lines(after)[line - 1]))[0]
        did, shape = (
            _did([first]) if isinstance(first, dict) and "kind" in first else ("appended a non-fact", ["?"])
        )
    except (FramingError, KeyError, IndexError, TypeError):
        did, shape = "appended an unreadable line", ["unreadable"]
    return f"{did}, which the reducer rejects ({error['code']})", [*shape, error["code"]]


def _rejection(ev: Evidence) -> Divergence | None:
    """The first transaction a resume appended that the reducer rejects."""
    assert ev.current is not None
    for _, before, after in ev.transitions():
        error = reduced(after).error
        if error is not None and error.line > reduced(before).line:
            good = b"".join(line + b"\n" for line in committed_lines(after)[: error.line - 1])
            planned, state = plan(good, ev.current), reduced(good).state
            assert state is not None
            did, shape = _rejected(after, error.line)
            return Divergence(planned, did, [plan_key(planned), shape, state_shape(state)])
    return None


def _first_step(ev: Evidence) -> Divergence | None:
    """The first resume whose first appended facts do not carry out the oracle's plan for its log."""
    assert ev.current is not None
    for phase, before, after in ev.transitions():
        if phase.kind is PhaseKind.CONTINUED or (ev.continued is not None and len(after) == len(before)):
            continue  # the paused writer's own work, or a second writer that refused the session
        planned, state = plan(before, ev.current), reduced(before).state
        if planned is None or state is None or (planned["type"] == "finish" and state.operation is None):
            continue
        appended = facts(after)[len(facts(before)) :]
        if not carried_out(planned, appended):
            did, shape = _did(appended)
            return Divergence(planned, did, [plan_key(planned), shape, state_shape(state)])
    return None


def _ending(ev: Evidence) -> Divergence | None:
    """The recovery ended while the oracle still plans work (and no block)."""
    assert ev.current is not None
    ending, final = ev.ending(), ev.final
    planned, state = plan(final, ev.current), reduced(final).state
    if planned is None or state is None or state.operation is None or planned["type"] == "blocked":
        return None
    did = f"ended {ending.outcome or 'with no known outcome'} (exit {ending.returncode})"
    return Divergence(planned, did, [plan_key(planned), ["ended", ending.outcome], state_shape(state)])


def divergence(ev: Evidence, check: str) -> Divergence | None:
    """Where the agent left the oracle's way, as the failing ``check`` sees it: for a log that no longer
    reduces, the first transaction the reducer rejects; otherwise the first resume that did not carry
    out the oracle's plan, else the recovery ending while the oracle still plans work."""
    if ev.current is None or reduced(ev.prefix).error is not None:
        return None
    if check == "final-reduces":
        return _rejection(ev)
    return _first_step(ev) or _ending(ev)


def failure_of(verdict: Verdict) -> Failure | None:
    """The failure key of a failing case (None when every check held)."""
    failed = verdict.failed
    if not failed:
        return None
    first = failed[0]
    where: tuple[str, ...] = ()
    if first.id in _PHASED:
        named = {re.sub(r"-\d+", "", p.name) for p in verdict.phases if p.name in first.got}
        where = tuple(sorted(named))
    diverged = divergence(verdict.evidence, first.id) if first.id in _ABOUT_PLANS else None
    return Failure(first.id, diverged, where)


def size(verdict: Verdict) -> list[Any]:
    """How a group's representative is picked: a case whose crash lands the same way every time first
    (exact, by the tracer or the world; one timed by polling may land elsewhere when rerun), then the
    smallest: fewest facts committed in its crash prefix, then fewest turns, then its name."""
    state = reduced(verdict.evidence.prefix[: committed_length(verdict.evidence.prefix)]).state
    start = verdict.evidence.start
    exact = verdict.scenario.crash is None or bool(start.exact and start.mechanism != "poll")
    return [0 if exact else 1, state.seq if state else 0, len(verdict.scenario.turns), verdict.case]
