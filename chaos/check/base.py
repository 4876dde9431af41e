"""What a check reports: held, failed, or not judged (and why), with what was expected and what happened."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


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
        return self.name if self.ok else f"{self.name}: expected {self.expected}, got {self.got}"

    @property
    def mark(self) -> str:
        return "○" if self.unjudged else "✓" if self.ok else "✗"
