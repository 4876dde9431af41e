"""Option types shared by the commands, and printing made safe: a bad value is refused by argparse,
naming the option (exit 2); every line printed is escaped first (it may hold a log's text)."""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

import orjson

from chaos.errors import UsageError
from chaos.fault import FAULTS
from chaos.process import ptrace
from chaos.report.text import printable
from chaos.scenario.model import PERSISTENCE, Boundary

Commands = Any  # argparse's subparsers action (a private type)


def say(text: str, stream: Any = None) -> None:
    print("\n".join(printable(line) for line in text.split("\n")), file=stream or sys.stdout, flush=True)


def emit(value: Any) -> None:
    sys.stdout.write(orjson.dumps(value, option=orjson.OPT_INDENT_2).decode() + "\n")


def read(path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as err:
        raise UsageError(f"{path}: cannot read: {err.strerror}") from None


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {value}")
    return value


def seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a finite number of seconds more than 0, got {text}")
    return value


def seconds_or_zero(text: str) -> float:
    return 0.0 if text.strip() in ("0", "0.0") else seconds(text)


def key_value(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key, value


def shard(text: str) -> tuple[int, int]:
    index, sep, count = text.partition("/")
    if not (sep and index.isdigit() and count.isdigit() and 1 <= int(index) <= int(count)):
        raise argparse.ArgumentTypeError(f"expected K/N with 1 <= K <= N, e.g. 2/4; got {text!r}")
    return int(index), int(count)


def boundary(text: str) -> Boundary:
    try:
        return Boundary.parse(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def faults(p: argparse.ArgumentParser, default: tuple[str, ...], what: str) -> None:
    """``--fault NAME`` (repeatable: one case per applicable fault at each boundary) and ``--persistence``."""
    p.add_argument(
        "--fault",
        action="append",
        choices=list(FAULTS),
        metavar="FAULT",
        help=f"{what} (repeatable; default {', '.join(default)}): {', '.join(FAULTS)}",
    )
    p.add_argument(
        "--persistence",
        choices=PERSISTENCE,
        help="what a power cut keeps of a new log's directory entry (default: the scenario's, posix)",
    )


def target_env(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--target-env",
        action="append",
        default=[],
        type=key_value,
        metavar="KEY=VALUE",
        help="extra agent environment",
    )


def out_file(p: argparse.ArgumentParser, default: str) -> None:
    """``--out FILE`` and ``--force``, for a command that writes a new file."""
    p.add_argument("--out", metavar="FILE", help=f"where to write it (default: {default})")
    p.add_argument("--force", action="store_true", help="overwrite --out if it exists")


def new_file(args: argparse.Namespace, default: str) -> Path:
    """Where ``out_file``'s options say to write: an existing file only with ``--force``."""
    out = Path(args.out or default)
    if out.exists() and not args.force:
        raise UsageError(f"--out {out}: exists; give another path, or --force to overwrite it")
    return out


def notice_polling() -> None:
    """One line, once, when exact kills are unavailable here."""
    reason = ptrace.unavailable()
    if reason is not None:
        say(
            f"chaos: exact kills unavailable ({reason}); polling the log instead: "
            "a kill may land late, and each verdict says how late",
            sys.stderr,
        )
