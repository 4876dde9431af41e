"""Readable timelines of a session log: what a person debugging a recovery needs to see.

``timeline`` is pure over bytes: one row per fact with the fields recovery
depends on, rows grouped by transaction, the torn tail and the reducer's error
placed where they are, the reduced state summarised and, given a current
configuration, the plan. ``render`` prints it (ANSI colour on a terminal),
every line escaped first (the log's text is the agent's); ``chaos report``
and ``chaos run --pause`` reuse both.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from chaos.contract import Reducer, plan_recovery
from chaos.contract.describe import detail, plan_text
from chaos.contract.framing import FramingError, committed_length, committed_lines, facts_of, parse_line
from chaos.contract.kinds import kind_of
from chaos.report.text import printable

COLOURS = {"record": "36", "entry": "32", "usage": "90", "error": "31;1", "torn": "33", "plan": "35;1"}


@dataclass
class Row:
    line: int
    seq: int | None
    kind: str  # record / entry / usage / header
    name: str  # toolStarted, entry:toolUse, ...
    detail: str
    position: str = ""  # "" alone in its transaction, else first / middle / last

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Timeline:
    rows: list[Row] = field(default_factory=list)
    error: dict[str, Any] | None = None  # {code, line, seq?}
    unjudged: int = 0  # committed lines after the error
    torn: int = 0  # bytes of torn tail
    repaired_length: int = 0
    state: dict[str, Any] | None = None  # the summary
    plan: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "rows": [r.to_json() for r in self.rows],
            "error": self.error,
            "unjudgedLines": self.unjudged,
            "tornTailBytes": self.torn,
            "repairedLength": self.repaired_length,
            "state": self.state,
            "plan": self.plan,
        }


def _summary(reducer: Reducer) -> dict[str, Any] | None:
    if reducer.state is None:
        return None
    state = reducer.result().get("state") or {}
    operation = state.get("operation", {})
    return {
        "operation": operation.get("kind"),
        "step": (operation.get("step") or {}).get("status") if isinstance(operation, dict) else None,
        "transcript": len(state.get("transcript", [])),
        "activeContext": len(state.get("activeContext", [])),
        "pendingTools": [
            c.get("toolName")
            for c in (operation.get("toolCalls") or [] if isinstance(operation, dict) else [])
            if c.get("status") == "pending"
        ],
    }


def timeline(data: bytes, current: dict[str, Any] | None = None) -> Timeline:
    reducer = Reducer.of(data)
    result = reducer.result()
    error = result.get("error")
    if error is not None and reducer.error is not None and reducer.error.detail:
        error = {**error, "detail": reducer.error.detail}  # what broke, in words (not the golden shape)
    tl = Timeline(error=error, repaired_length=committed_length(data))
    tl.torn = len(data) - tl.repaired_length
    for number, line in enumerate(committed_lines(data), 1):
        if tl.error is not None and number >= tl.error["line"]:
            tl.unjudged += number > tl.error["line"]
            if number == tl.error["line"]:
                tl.rows.append(Row(number, tl.error.get("seq"), "error", tl.error["code"], _excerpt(line)))
            continue
        try:
            facts = facts_of(parse_line(line))
        except FramingError:
            continue
        for index, fact in enumerate(facts):
            position = (
                ""
                if len(facts) == 1
                else ("first" if index == 0 else "last" if index == len(facts) - 1 else "middle")
            )
            name = kind_of(fact)[0] if isinstance(fact, dict) else "?"
            tl.rows.append(Row(number, fact.get("seq"), fact.get("kind", "?"), name, detail(fact), position))
    tl.state = _summary(reducer)
    if current is not None and reducer.state is not None and reducer.error is None:
        tl.plan = plan_recovery(reducer.state, current)
    return tl


def _excerpt(line: bytes) -> str:
    text = line.decode("utf-8", "replace")
    return text if len(text) <= 80 else text[:77] + "..."


def _paint(text: str, colour: str | None, on: bool) -> str:
    """Escape a line (it may hold the log's text), then colour it."""
    text = printable(text)
    return f"\033[{colour}m{text}\033[0m" if on and colour else text


def render(tl: Timeline, colour: bool = False, mark: int | None = None) -> str:
    """The timeline as text; ``mark``: a line number to flag (where a kill landed)."""
    bracket = {"": " ", "first": "┌", "middle": "│", "last": "└"}
    out = []
    for row in tl.rows:
        seq = "" if row.seq is None else str(row.seq)
        text = f"{row.line:>4} {bracket[row.position]} {seq:>4}  {row.name:<18} {row.detail}".rstrip()
        if row.kind == "error":
            text = f"{row.line:>4}   {seq:>4}  ✗ {row.name}: {row.detail}"
        out.append(_paint(text, COLOURS.get(row.kind), colour))
        if mark is not None and row.line == mark and row.position in ("", "last"):
            out.append(_paint("     ── kill landed here ──", COLOURS["error"], colour))
    if tl.unjudged:
        out.append(
            _paint(f"          ({tl.unjudged} committed line(s) after the error, not judged)", None, colour)
        )
    if tl.torn:
        out.append(
            _paint(
                f"   ~ torn tail: {tl.torn} byte(s) after the last LF, not committed", COLOURS["torn"], colour
            )
        )
    if tl.error is None:
        out.append(_paint(f"reduces: ok; repairedLength {tl.repaired_length}", None, colour))
    else:
        out.append(
            _paint(
                f"reduces: no, {tl.error['code']} at line {tl.error['line']}"
                + (f": {tl.error['detail']}" if tl.error.get("detail") else ""),
                COLOURS["error"],
                colour,
            )
        )
    if tl.state and tl.error is None:
        s = tl.state
        pending = f", pending tools: {', '.join(map(str, s['pendingTools']))}" if s["pendingTools"] else ""
        step = f", step {s['step']}" if s["step"] else ""
        text = f"state: operation {s['operation']}{step}, {s['transcript']} message(s){pending}"
        out.append(_paint(text, None, colour))
    if tl.plan is not None:
        out.append(_paint(f"plan: {plan_text(tl.plan)}", COLOURS["plan"], colour))
    return "\n".join(out)


@dataclass
class Diff:
    common: int  # committed lines both logs share (byte for byte, or by kind across sessions)
    removed: list[Row]  # rows of the first log after the common part (a rewrite, if any)
    added: list[Row]  # rows of the second log after the common part
    sessions: bool = False  # the logs are different sessions: compared by position and kind


def _session(data: bytes) -> object:
    lines = committed_lines(data)
    try:
        header = parse_line(lines[0]) if lines else None
    except FramingError:
        return None
    return header.get("id") if isinstance(header, dict) else None


def diff(before: bytes, after: bytes) -> Diff:
    """Where two logs part: recovery should only append, so ``removed`` is normally empty.

    Two different sessions (two runs of one scenario) never share bytes: their
    ids differ. They are compared line by line by the kinds of their facts.
    """
    rows_a, rows_b = timeline(before).rows, timeline(after).rows
    sessions = _session(before) != _session(after)
    if sessions:
        a = [
            [r.name for r in rows_a if r.line == n] for n in range(1, (rows_a[-1].line if rows_a else 0) + 1)
        ]
        b = [
            [r.name for r in rows_b if r.line == n] for n in range(1, (rows_b[-1].line if rows_b else 0) + 1)
        ]
    else:
        a, b = committed_lines(before), committed_lines(after)  # type: ignore[assignment]
    common = 0
    while common < min(len(a), len(b)) and a[common] == b[common]:
        common += 1
    removed, added = [r for r in rows_a if r.line > common], [r for r in rows_b if r.line > common]
    return Diff(common, removed, added, sessions)


def diff_row(sign: str, row: Row) -> str:
    """One row of a diff: ``+`` appended, ``-`` lost."""
    seq = "" if row.seq is None else str(row.seq)
    return f"{sign} {row.line:>4} {seq:>4}  {row.name:<18} {row.detail}".rstrip()


def render_diff(d: Diff, colour: bool = False) -> str:
    if d.sessions:
        out = [
            "different sessions (their header ids differ): compared line by line by the kinds of their facts",
            f"{d.common} line(s) alike",
        ]
    else:
        out = [f"{d.common} committed line(s) in common"]
    for sign, rows, paint in (("-", d.removed, COLOURS["error"]), ("+", d.added, COLOURS["entry"])):
        out += [_paint(diff_row(sign, row), paint, colour) for row in rows]
    if not d.removed and not d.added:
        out.append("no difference" if not d.sessions else "the same kinds of facts, line by line")
    elif d.removed and not d.sessions:
        out.append(
            _paint("committed lines differ: the second log rewrote the first", COLOURS["error"], colour)
        )
    return "\n".join(out)
