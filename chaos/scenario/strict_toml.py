"""Reading TOML input strictly: every field typed, every unknown key an error, every error located.

Scenario and target files are written by hand, so a typo must not be silently
ignored (a misspelt ``[expect]`` key would make a check vanish). ``Table``
hands out fields one at a time and complains about whatever is left over,
naming the file, the line and the field (``turns[2].tool_calls[0].argz``).

``tomllib`` keeps no positions, so ``positions`` scans the source once more
(it is already known to be valid TOML) and maps every key path, array items
and inline-table keys included, to the line it starts on.
"""

from __future__ import annotations

import difflib
import json
import math
import re
import tomllib
from pathlib import Path
from typing import Any, TypeVar, cast

from chaos.errors import SpecError

MAX_SECONDS = 86_400.0  # a day: any longer wait, delay or timeout in a scenario is a mistake
T = TypeVar("T")
MISSING: Any = object()
Key = tuple[str | int, ...]
_BARE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


_BASIC_SPECIAL = re.compile(r'["\\]')
_LITERAL_SPECIAL = re.compile("'")


class _Scanner:
    """Walks valid TOML text and records the line of every key path (tables, keys, array items)."""

    def __init__(self, source: str) -> None:
        self.s, self.i, self.line = source, 0, 1
        self.positions: dict[Key, int] = {}
        self.arrays: dict[Key, int] = {}  # array-of-tables path -> index of its last element

    def _peek(self, n: int = 1) -> str:
        return self.s[self.i : self.i + n]

    def _advance(self, n: int = 1) -> None:
        self.line += self.s.count("\n", self.i, self.i + n)
        self.i += n

    def _skip(self, newlines: bool) -> None:
        while self.i < len(self.s):
            c = self.s[self.i]
            if c in " \t\r" or (newlines and c == "\n"):
                self._advance()
            elif c == "#":
                while self.i < len(self.s) and self.s[self.i] != "\n":
                    self.i += 1
            else:
                return

    def _string(self) -> str:
        quote = self._peek(3) if self._peek(3) in ('"""', "'''") else self._peek()
        self._advance(len(quote))
        start = end = self.i
        special = _BASIC_SPECIAL if quote[0] == '"' else _LITERAL_SPECIAL
        while (found := special.search(self.s, end)) is not None:  # a jump to the next quote or escape
            end = found.start()
            if self.s[end] == "\\":
                end += 2
            elif self.s.startswith(quote, end):
                break
            else:
                end += 1
        else:
            end = len(self.s)
        self._advance(end - start)
        text = self.s[start:end]
        self._advance(len(quote))
        return text

    def _key(self) -> list[str]:
        parts = []
        while True:
            self._skip(False)
            if self._peek() == '"':
                raw = self._string()
                try:  # a basic string's escapes are JSON's (TOML adds only \U and \e)
                    parts.append(json.loads(f'"{raw}"'))
                except ValueError:
                    parts.append(raw)
            elif self._peek() == "'":
                parts.append(self._string())
            else:
                start = self.i
                while self.i < len(self.s) and self.s[self.i] in _BARE:
                    self.i += 1
                parts.append(self.s[start : self.i])
            self._skip(False)
            if self._peek() != ".":
                return parts
            self._advance()

    def _resolve(self, parts: list[str]) -> Key:
        """A header's path with the current index of every array of tables it passes through."""
        path: Key = ()
        for part in parts[:-1]:
            path += (part,)
            if path in self.arrays:
                path += (self.arrays[path],)
        return (*path, parts[-1])

    def _value(self, path: Key) -> None:
        self.positions.setdefault(path, self.line)
        c = self._peek()
        if c in ('"', "'"):
            self._string()
        elif c == "[":
            self._advance()
            index = 0
            while True:
                self._skip(True)
                if self._peek() in ("]", ""):
                    self._advance()
                    return
                self._value((*path, index))
                self._skip(True)
                if self._peek() == ",":
                    self._advance()
                index += 1
        elif c == "{":
            self._advance()
            while True:
                self._skip(True)
                if self._peek() in ("}", ""):
                    self._advance()
                    return
                self._pair(path)
                self._skip(True)
                if self._peek() == ",":
                    self._advance()
        else:
            while self.i < len(self.s) and self.s[self.i] not in ",]}\n#":
                self.i += 1

    def _pair(self, table: Key) -> None:
        """``key = value`` in ``table``: the key's line is recorded, then the value's own keys."""
        line = self.line
        key = (*table, *self._key())
        self.positions[key] = line
        self._skip(False)
        self._advance()  # =
        self._skip(False)
        self._value(key)

    def run(self) -> dict[Key, int]:
        table: Key = ()
        while True:
            self._skip(True)
            if self.i >= len(self.s):
                return self.positions
            if self._peek() == "[":
                double = self._peek(2) == "[["
                line = self.line
                self._advance(2 if double else 1)
                path = self._resolve(self._key())
                self._advance(2 if double else 1)
                if double:
                    self.arrays[path] = self.arrays.get(path, -1) + 1
                    self.positions.setdefault(path, line)
                    table = (*path, self.arrays[path])
                else:
                    table = path
                self.positions.setdefault(table, line)
                continue
            self._pair(table)


def positions(source: str) -> dict[Key, int]:
    """The line of every key path in valid TOML ``source``, e.g. ``("turns", 2, "finish") -> 12``."""
    return _Scanner(source).run()


def display(path: Key) -> str:
    """A key path as people write it: ``turns[2].tool_calls[0].arguments``."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out


def load_toml(path: Path) -> tuple[dict[str, Any], dict[Key, int]]:
    """The document and the line of every key, or SpecError naming the file (and the line)."""
    try:
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise SpecError(f"{path}: cannot read: {err}") from None
    try:
        return tomllib.loads(source), positions(source)
    except tomllib.TOMLDecodeError as err:
        raise SpecError(f"{path}: not valid TOML: {err}") from None
    except RecursionError:
        raise SpecError(
            f"{path}: line {_too_deep(source)}: arrays or tables nested too deeply to read; flatten them"
        ) from None


def _too_deep(source: str, limit: int = 100) -> int:
    """The line where brackets first nest deeper than ``limit`` (strings aside, roughly)."""
    depth, quoted = 0, ""
    for number, line in enumerate(source.splitlines(), 1):
        for char in line:
            if quoted:
                quoted = "" if char == quoted else quoted
            elif char in "\"'":
                quoted = char
            elif char in "[{":
                depth += 1
                if depth > limit:
                    return number
            elif char in "]}":
                depth -= 1
        quoted = ""
    return 1


class Table:
    """One TOML table being read, at ``path`` (``("turns", 2)``) in ``file``."""

    def __init__(self, file: Path, lines: dict[Key, int], path: Key, data: Any) -> None:
        self.file, self.lines, self.path = file, lines, path
        if not isinstance(data, dict):
            self.fail(None, f"must be a table, got {type(data).__name__}")
        self.data: dict[str, Any] = dict(data)
        self.known: set[str] = set()  # the keys this table was asked for: what a misspelt key may mean

    @classmethod
    def top(cls, file: Path) -> Table:
        data, lines = load_toml(file)
        return cls(file, lines, (), data)

    def where(self, key: str | int | None) -> str:
        """``FILE: line N: FIELD``, with the line of the field, or of the nearest table that holds it."""
        path: Key = self.path if key is None else (*self.path, key)
        line = next((self.lines[path[:n]] for n in range(len(path), 0, -1) if path[:n] in self.lines), None)
        at = f" line {line}:" if line else ""
        return f"{self.file}:{at} {display(path) or '(top level)'}"

    def fail(self, key: str | int | None, message: str) -> Any:
        raise SpecError(f"{self.where(key)}: {message}")

    def take(self, key: str, kind: type[T] | tuple[type, ...], default: Any = MISSING) -> T:
        self.known.add(key)
        if key not in self.data:
            if default is MISSING:
                close = difflib.get_close_matches(key, [k for k in self.data if isinstance(k, str)], n=1)
                if close:  # a required key misspelt: point at the misspelling
                    self.fail(close[0], f"unknown key (did you mean {key!r}? {key} is required)")
                self.fail(key, "is required")
            return default  # type: ignore[no-any-return]
        value = self.data.pop(key)
        kinds = kind if isinstance(kind, tuple) else (kind,)
        if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
            names = " or ".join(k.__name__ for k in kinds)
            self.fail(key, f"must be {names}, got {type(value).__name__} {value!r}")
        return cast(T, value)

    def choice(self, key: str, allowed: tuple[str, ...], default: Any = MISSING) -> Any:
        value = self.take(key, str, default)
        if value is not None and value not in allowed:
            self.fail(key, f"{value!r} is not allowed; use one of: {', '.join(allowed)}")
        return value

    def number(self, key: str, default: float, minimum: float, exclusive: bool = False) -> float:
        """A number of seconds, at least ``minimum`` (above it, when ``exclusive``) and at most a day."""
        value = float(self.take(key, (int, float), default))
        low = value <= minimum if exclusive else value < minimum
        if not math.isfinite(value) or low or value > MAX_SECONDS:
            bound = f"more than {minimum:g}" if exclusive else f"{minimum:g} or more"
            self.fail(
                key, f"must be a finite number of seconds, {bound} and at most {MAX_SECONDS:g}; got {value:g}"
            )
        return value

    def integer(self, key: str, default: Any, low: int, high: int, what: str = "") -> Any:
        value = self.take(key, int, default)
        if value is not None and not low <= value <= high:
            self.fail(key, f"must be {what or 'an integer'} from {low} to {high}; got {value}")
        return value

    def strings(self, key: str, default: Any = MISSING) -> Any:
        value = self.take(key, list, default)
        if value is not None and not all(isinstance(v, str) for v in value):
            self.fail(key, "must be a list of strings")
        return value

    def table(self, key: str, required: bool = False) -> Table:
        self.known.add(key)
        value = self.take(key, dict, MISSING if required else {})
        return Table(self.file, self.lines, (*self.path, key), value)

    def tables(self, key: str) -> list[Table]:
        value = self.take(key, list, [])
        return [Table(self.file, self.lines, (*self.path, key, i), item) for i, item in enumerate(value)]

    def done(self, guide: str = "scenarios/README.md") -> None:
        """Every field has been read: anything left is an unknown key."""
        if self.data:
            key = sorted(self.data)[0]
            close = difflib.get_close_matches(key, sorted(self.known), n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            self.fail(key, f"unknown key ({hint}check the spelling; see {guide} for the fields)")
