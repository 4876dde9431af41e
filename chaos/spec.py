"""Reading TOML input strictly: every field typed, every unknown key an error, every error located.

Scenario and target files are written by hand, so a typo must not be silently
ignored (a misspelt ``[expect]`` key would make a check vanish). ``Table``
hands out fields one at a time and complains about whatever is left over,
naming the file, the line and the field.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")
MISSING: Any = object()


class SpecError(Exception):
    """An unusable scenario or target file; the message says where and what is allowed."""


def load_toml(path: Path) -> tuple[dict[str, Any], str]:
    try:
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise SpecError(f"{path}: cannot read: {err}") from None
    try:
        return tomllib.loads(source), source
    except tomllib.TOMLDecodeError as err:
        raise SpecError(f"{path}: not valid TOML: {err}") from None


def _line_of(source: str, table: str, key: str) -> int | None:
    """Best-effort line of ``key`` inside ``[table]`` (TOML parsers keep no positions)."""
    current = ""
    head = table.split("[")[0]
    for number, line in enumerate(source.splitlines(), 1):
        stripped = line.strip()
        header = re.match(r"^\[\[?([^\]]+)\]\]?", stripped)
        if header:
            current = header.group(1).strip()
            if current == head and not key:
                return number
            continue
        if current == head and re.match(rf"^[\"']?{re.escape(key)}[\"']?\s*=", stripped):
            return number
    return None


class Table:
    """One TOML table being read; ``name`` is its dotted path for messages (``kill``, ``turns[2]``)."""

    def __init__(self, path: Path, source: str, name: str, data: Any) -> None:
        self.path, self.source, self.name = path, source, name
        if not isinstance(data, dict):
            self.fail("", f"must be a table, got {type(data).__name__}")
        self.data: dict[str, Any] = dict(data)

    def fail(self, key: str, message: str) -> None:
        where = ".".join(p for p in (self.name, key) if p) or "(top level)"
        line = _line_of(self.source, self.name, key)
        at = f" line {line}:" if line else ""
        raise SpecError(f"{self.path}:{at} {where}: {message}")

    def take(self, key: str, kind: type[T] | tuple[type, ...], default: Any = MISSING) -> T:
        if key not in self.data:
            if default is MISSING:
                self.fail(key, "is required")
            return default
        value = self.data.pop(key)
        kinds = kind if isinstance(kind, tuple) else (kind,)
        if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
            names = " or ".join(k.__name__ for k in kinds)
            self.fail(key, f"must be {names}, got {type(value).__name__} {value!r}")
        return value

    def choice(self, key: str, allowed: tuple[str, ...], default: Any = MISSING) -> str:
        value = self.take(key, str, default)
        if value is not None and value not in allowed:
            self.fail(key, f"{value!r} is not allowed; use one of: {', '.join(allowed)}")
        return value

    def strings(self, key: str, default: Any = MISSING) -> list[str]:
        value = self.take(key, list, default)
        if value is not None and not all(isinstance(v, str) for v in value):
            self.fail(key, "must be a list of strings")
        return value

    def table(self, key: str, required: bool = False) -> Table:
        value = self.take(key, dict, MISSING if required else {})
        return Table(self.path, self.source, f"{self.name}.{key}" if self.name else key, value)

    def tables(self, key: str) -> list[Table]:
        value = self.take(key, list, [])
        return [Table(self.path, self.source, f"{key}[{i}]", item) for i, item in enumerate(value)]

    def done(self) -> None:
        """Every field has been read: anything left is an unknown key."""
        if self.data:
            key = sorted(self.data)[0]
            self.fail(key, "unknown key (check the spelling; see scenarios/README.md for the fields)")
