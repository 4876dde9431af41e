"""The ``chaos`` command line: a thin shell over ``chaos.api`` and the report stage.

Each command is a small module that declares its own options (``add``) and calls the public API.
Exit statuses (``chaos.errors``): 0 nothing found, 1 a finding against the agent, 2 unusable input
(named with its file, line and field, or its option), 3 chaos itself failed (never blamed on the
agent), 130 interrupted. A user's mistake is never a finding and never a traceback.
"""

from __future__ import annotations

import argparse
import errno
import signal
import sys
import threading
import traceback
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from chaos.errors import ExitCode, InternalError, Interrupted, UsageError

# The commands are imported by ``main`` (``_commands``) while ``_startup`` notes a Ctrl-C: one while
# chaos is still importing its engine is an interruption (exit 130), not a traceback.
EPILOG = """exit statuses: 0 nothing found; 1 a finding against the agent; 2 unusable input (a bad
scenario, target or option, named with its file, line and field); 3 chaos itself failed (not the
agent; please report it); 130 interrupted (every agent chaos started is dead)"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="chaos",
        description=__doc__.split("\n")[0],
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True)
    for command in _commands():
        command.add(commands)
    return parser


def _commands() -> tuple[Any, ...]:
    from chaos.cli import debug, explore, oracle, recheck, record, run, scenario, sweep, target

    return (run, sweep, explore, scenario, record, recheck, target, debug, oracle)


def say(text: str, stream: Any = None) -> None:
    from chaos.cli.options import say as said

    said(text, stream)


def _terminate(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


@contextmanager
def _startup() -> Iterator[list[int]]:
    """While chaos imports its engine and reads its options, a Ctrl-C is noted, not raised: a
    KeyboardInterrupt inside an import leaves the interpreter half set up (seen: a TypeError
    traceback, a segmentation fault, death by SIGINT after the message). Noted only where Ctrl-C
    would have interrupted (the default handler), and the handler is given back afterwards."""
    noted: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield noted
        return
    before = signal.getsignal(signal.SIGINT)
    if before is signal.default_int_handler:
        signal.signal(signal.SIGINT, lambda signum, frame: noted.append(signum))
    try:
        yield noted
    finally:
        signal.signal(signal.SIGINT, before)


def main(argv: Sequence[str] | None = None) -> int:
    with _startup() as interrupted:
        try:
            args = build_parser().parse_args(argv)
        except SystemExit as exit:  # argparse refused an option (it printed which): exit 2, no traceback
            return exit.code if isinstance(exit.code, int) else ExitCode.USAGE
    if interrupted:
        sys.stderr.write("chaos: interrupted while starting; nothing ran\n")
        return ExitCode.INTERRUPTED
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _terminate)  # SIGTERM cleans up like Ctrl-C: no child left
    try:
        from chaos.world.contain import remove_stale as remove_stale_cages
        from chaos.world.sandbox import remove_stale

        remove_stale()
        remove_stale_cages()
        return int(args.func(args))
    except UsageError as err:
        say(f"chaos: {err}", sys.stderr)
        return ExitCode.USAGE
    except (Interrupted, KeyboardInterrupt) as err:
        from chaos.world.contain import kill_all

        kill_all()
        say(
            f"chaos {args.command}: interrupted ({str(err) or 'Ctrl-C'}); every agent it started is dead; "
            "nothing more ran",
            sys.stderr,
        )
        return ExitCode.INTERRUPTED
    except InternalError as err:
        say(f"chaos: chaos itself failed, not the agent: {err}", sys.stderr)
        return ExitCode.INTERNAL
    except Exception as err:  # a bug in chaos: said so, with its traceback, never blamed on the agent
        if isinstance(err, OSError) and err.errno in (errno.ENOSPC, errno.EDQUOT):
            say(
                f"chaos: the disk is full, not the agent's doing: {err}; free space and run again", sys.stderr
            )
            return ExitCode.INTERNAL
        say("chaos: internal error (a bug in chaos, not a finding against the agent):", sys.stderr)
        traceback.print_exc()
        return ExitCode.INTERNAL


def entry() -> int:
    """The ``chaos`` program: ``main``, then a Ctrl-C is ignored. Once ``main`` has returned the
    verdict is decided and said; the interpreter's shutdown puts SIGINT back to its default action,
    and a Ctrl-C landing there killed chaos by the signal (status -2, no message) instead of exiting
    with the verdict's status."""
    status = main()
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    return status


if __name__ == "__main__":
    sys.exit(entry())
