"""Text for people, made safe: nothing taken from a log reaches a terminal or a page unescaped.

A session log is written by the agent under test, which may be hostile or
broken: an ESC or OSC sequence in a tool name would rewrite the user's
terminal, a bidirectional override would make a report lie about what it
shows, a newline would forge a report line. ``printable`` turns every such
character into a visible escape (``\\x1b``, ``\\u202e``); every line chaos
prints or writes for people goes through it before any colour is added.
"""

from __future__ import annotations

import re

_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """``text`` with every control, line-breaking and bidi-override character shown as an escape."""
    return _UNSAFE.sub(_escape, text)


def lines(text: str) -> str:
    """A block of lines, each made printable (the line breaks themselves are kept)."""
    return "\n".join(printable(line) for line in text.split("\n"))
