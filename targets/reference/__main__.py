"""python -m chaos.bundled.targets.reference [PROMPT] [--session ID] [--compact] [--configuration]

Exit codes: 0 completed, 3 blocked, 4 failed, 5 aborted, 1 the session log is
corrupt or cannot be opened, 2 usage error.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from pathlib import Path

from chaos.contract import facts as F

from .agent import DEFERRED_ABORT_EXIT, EXIT, Agent, DeferredAbort
from .session import SessionBusy, SessionFile, SessionUnusable

REFUSAL_EXIT = 75  # EX_TEMPFAIL: the refusal-exit variant's answer to a session another writer holds


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        print(f"reference agent: {message}", file=sys.stderr)
        sys.exit(2)


def main(argv: list[str]) -> int:
    parser = _Parser(prog="python -m chaos.bundled.targets.reference", description=__doc__)
    parser.add_argument("prompt", nargs="?")
    parser.add_argument("--session", metavar="ID")
    parser.add_argument("--compact", action="store_true")
    parser.add_argument("--configuration", action="store_true")
    args = parser.parse_args(argv)
    workspace = Path.cwd().resolve()
    try:
        agent = Agent(workspace, dict(os.environ))
    except ValueError as err:
        parser.error(str(err))
    if args.configuration:
        print(json.dumps(agent.current()))
        return 0
    if "no-abort" in agent.variants:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
    if "sigterm-aborts" in agent.bugs:
        signal.signal(signal.SIGTERM, signal.default_int_handler)
    if args.compact and not args.session:
        parser.error("--compact needs --session ID")
    if not args.session and not args.prompt:
        parser.error("give a PROMPT, or --session ID to resume")
    if not agent.base_url or not agent.model:
        parser.error("TINY_BASE_URL and TINY_MODEL must be set")
    try:
        if args.session:
            session = SessionFile.open(
                workspace,
                args.session,
                repair_torn_tail="no-torn-tail-repair" not in agent.bugs,
                repair_on_write="repair-on-write" in agent.variants,
                sync=not agent.bugs & {"no-fsync", "resume-no-sync"},
                lock="no-session-lock" not in agent.bugs,
                wait="blocking-lock" in agent.variants,
                split="one-fact-per-transaction" in agent.variants,
                corrupt_as_torn="corrupt-as-torn" in agent.bugs,
            )
            session.careless = "ignore-log-errors" in agent.bugs
            session.full_disk_in_memory = "full-disk-in-memory" in agent.bugs
            print(f"session: {session.state.header['id']}", file=sys.stderr, flush=True)
            agent.recovering = True
            outcome, reason = agent.drive(session)
            agent.recovering = False
            if outcome == "blocked" or not (args.prompt or args.compact):
                return _finish(outcome, reason)
        else:
            session = SessionFile.create(
                workspace,
                "openai-compatible",
                agent.model,
                agent.environment_identity,
                sync="no-fsync" not in agent.bugs,
                lock="no-session-lock" not in agent.bugs,
                split="one-fact-per-transaction" in agent.variants,
                sync_directory="no-directory-sync" not in agent.bugs,
                sync_parents="unsynced-parents" not in agent.bugs,
            )
            session.careless = "ignore-log-errors" in agent.bugs
            session.full_disk_in_memory = "full-disk-in-memory" in agent.bugs
            print(f"session: {session.state.header['id']}", file=sys.stderr, flush=True)
        if args.compact:
            st = session.state
            w = session.writer
            if len(st.active) < 2:
                print("nothing to compact", file=sys.stderr)
                return 0
            session.commit(F.compaction_started(st, w.new_id(), w.new_id(), keep=0))
        else:
            session.commit(*F.start_run(session.writer.new_id, args.prompt))
        return _finish(*agent.drive(session))
    except DeferredAbort:
        print("aborted: the abort is durable; resume the session to finish it", file=sys.stderr)
        return DEFERRED_ABORT_EXIT
    except SessionUnusable as err:
        print(f"reference agent: {err}", file=sys.stderr)
        return REFUSAL_EXIT if isinstance(err, SessionBusy) and "refusal-exit" in agent.variants else 1


def _finish(outcome: str, reason: str | None) -> int:
    if reason:
        print(f"blocked: {reason}", file=sys.stderr)
    return EXIT[outcome]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
