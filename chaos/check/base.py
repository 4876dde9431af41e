"""What a check reports: held, failed, or not judged (and why), with what was expected and what happened."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from chaos.cycle.evidence import Evidence
    from chaos.process.phase import Phase


@dataclass(frozen=True)
class Check:
    """One check's result. ``unjudged`` says why the check could not be judged (the log it must read is
    rejected earlier, say): a check that is not judged holds, so one cause is one failure."""

    id: str
    name: str
    ok: bool
    expected: str = ""
    got: str = ""
    unjudged: str = ""
    cause: str = ""  # what went wrong in words free of ids and values, for the failure key (optional)

    def __post_init__(self) -> None:
        from chaos.check import CATALOG  # the catalogue is assembled from the concern modules

        if self.id not in CATALOG:
            raise ValueError(f"{self.id!r} is not a check of the catalog")
        if self.unjudged and not self.ok:
            raise ValueError("a check that is not judged cannot fail")

    @classmethod
    def skip(cls, id: str, name: str, why: str) -> Check:
        return cls(id, name, True, unjudged=why)

    @property
    def judged(self) -> bool:
        return not self.unjudged

    def to_json(self) -> dict[str, Any]:
        out = {"id": self.id, "name": self.name, "ok": self.ok, "expected": self.expected, "got": self.got}
        return (
            out
            | ({"unjudged": self.unjudged} if self.unjudged else {})
            | ({"cause": self.cause} if self.cause else {})
        )

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Check:
        return cls(**data)

    def text(self) -> str:
        """How every report words a check: its name and, when it failed, what was expected and got."""
        if self.unjudged:
            return f"{self.name}: not judged: {self.unjudged}"
        if self.ok:
            return self.name
        return (
            f"{self.name}: expected {self.expected}, got {self.got}"
            if self.expected
            else f"{self.name}: {self.got}"
        )

    @property
    def mark(self) -> str:
        return "○" if self.unjudged else "✓" if self.ok else "✗"


@dataclass(frozen=True)
class Problem:
    """One thing a check found wrong: ``key`` the cause in words that are the same wherever it happens
    (what failures are grouped by), ``text`` this case's particulars (call ids, phases)."""

    key: str
    text: str


class NotJudged(Exception):
    """A check that cannot judge this case (it says why): shown as not judged, never as passed."""


def against_clean(
    id: str, name: str, find: Callable[[Evidence, Evidence], list[Problem]]
) -> Callable[[Evidence], list[Check]]:
    """A store check's ``judge``: ``find`` reads the case and the scenario's uninterrupted run (the case
    itself when it was not crashed) and returns problems; one failed ``Check`` per problem (its key the
    cause), one that held when there is none, one not judged when ``find`` raises ``NotJudged``."""

    def judge(ev: Evidence) -> list[Check]:
        try:
            problems = find(ev, ev.clean or ev)
        except NotJudged as why:
            return [Check.skip(id, name, str(why))]
        return [Check(id, name, False, got=f"{p.key}: {p.text}", cause=p.key) for p in problems] or [
            Check(id, name, True)
        ]

    return judge


def effect_key(entry: dict[str, Any]) -> str:
    """An effect as a person names it: its name and what it acted on (``deploy web``)."""
    return " ".join([str(entry["effect"]), *map(str, entry.get("detail", []))])


def phase_of(ev: Evidence, line: int) -> Phase:
    """The phase that wrote ledger line ``line`` (0-based)."""
    owner = ev.phases[0]
    for phase in ev.phases:
        if phase.kept.ledger_before <= line:
            owner = phase
    return owner


def without_call_ids(evidence: Evidence) -> str:
    """Why no effect of a framework agent carried the tool call it ran for, by its real cause."""
    served = sorted({str(e["effect"]) for e in evidence.ledger if str(e["effect"]).startswith("mcp:")})
    if served:
        return (
            f"its effects ({', '.join(served)}) were made at the world's MCP server, whose writes the tracer "
            "does not see, and carry no call id"
        )
    names = ", ".join(sorted({str(e["effect"]) for e in evidence.effects()}))
    return (
        f"no effect carried its call id ({names}): a tool passes it as $CHAOS_EFFECT NAME --call-id ID, "
        "CHAOS_CALL_ID in its environment, or chaos.ledger.effect(name, call_id=...)"
    )
