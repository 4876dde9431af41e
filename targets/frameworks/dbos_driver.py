"""Run a DBOS workflow on a SQLite (or PostgreSQL) system database, and recover it from there after a crash.

    python -m chaos.bundled.targets.frameworks.dbos_driver --db dbos.sqlite --workflow W "PROMPT"
    python -m chaos.bundled.targets.frameworks.dbos_driver --db dbos.sqlite --workflow W --resume

``--app module:attr`` names the workflow function (``@DBOS.workflow()``, taking the prompt). The start
runs it under the workflow id chaos gives (``--queue``: enqueues it on a DBOS queue, which this executor's
poller dequeues and runs, and waits for its result); a resume launches DBOS, which recovers the pending workflows
as it does after any crash, and waits for that one's result (a workflow that never became durable: there
is nothing to resume). The system database is put in WAL mode first (SQLite's mode for a database other
threads read; ``--journal delete`` keeps SQLite's and DBOS's default, a rollback journal); a ``--db`` that is a PostgreSQL URL is DBOS's
system database as it is (a server that goes away while DBOS launches is met by launching again).
DBOS 3 starts no server: nothing listens.
Exit 0: completed; 1: the workflow failed.
"""

from __future__ import annotations

import sqlite3
import sys
import time
from collections.abc import Callable
from typing import TypeVar

from dbos import DBOS, DBOSConfig, Queue, SetWorkflowID
from sqlalchemy.exc import OperationalError

from .loading import load, parser


def _launched(config: DBOSConfig, on_server: bool) -> None:
    """DBOS launched: it migrates its system database, then recovers this executor's pending workflows,
    each on a thread of its own. A server that goes away meanwhile (it crashed, it fails over) is met
    by launching again once it answers, for up to ten seconds: a launch that gave up would leave the
    workflow never started, and nothing for a resume to resume."""
    deadline = time.monotonic() + 10
    while True:
        DBOS(config=config)
        try:
            DBOS.launch()
            return
        except Exception as err:  # (SQLAlchemy's OperationalError, wrapping psycopg's)
            DBOS.destroy()
            if not on_server or time.monotonic() > deadline:
                raise
            print(
                f"dbos agent: the system database went away ({type(err).__name__}); launching again",
                file=sys.stderr,
            )
            time.sleep(0.2)


QUEUE = "chaos-agents"  # the queue a --queue run is enqueued on
NOTHING = object()  # no workflow of that id: it never became durable, there is nothing to resume


T = TypeVar("T")


def _outlasting(ask: Callable[[], T], on_server: bool) -> T:
    """What ``ask`` returns, a system database that goes away meanwhile (it crashed, it fails over) waited
    out, as a worker waits: a lost connection is not the workflow failing."""
    while True:
        try:
            return ask()
        except OperationalError as err:
            if not on_server:
                raise
            print(f"dbos agent: the system database went away ({err.orig!r}); waiting on", file=sys.stderr)
            time.sleep(0.2)


def _result(workflow_id: str) -> object:
    """The recovered workflow's result (or ``NOTHING``), since the workflow is still DBOS's to finish."""
    if DBOS.get_workflow_status(workflow_id) is None:
        return NOTHING
    return DBOS.retrieve_workflow(workflow_id).get_result()


def main(argv: list[str]) -> int:
    options = parser(
        "dbos_driver", "chaos.bundled.targets.frameworks.dbos_app:agent", "dbos.sqlite", "--workflow"
    )
    options.add_argument(
        "--journal",
        default="wal",
        choices=("wal", "delete"),
        help="the SQLite system database's journal mode (delete is SQLite's default and DBOS's)",
    )
    options.add_argument(
        "--queue",
        action="store_true",
        help="enqueue the run on a DBOS queue (its recovery puts it back on the queue, as a queued run's is)",
    )
    args = options.parse_args(argv)
    workflow = load(args.app, args.db)
    # DBOS 2 declares a queue before it launches, DBOS 3 registers it in its system database once launched
    register = getattr(DBOS, "register_queue", None)
    queue = Queue(QUEUE) if args.queue and register is None else None
    on_server = args.db.startswith(("postgresql://", "postgres://"))
    if on_server:
        url = args.db  # a PostgreSQL system database (DBOS makes its schema, dbos, itself)
    else:
        with sqlite3.connect(args.db) as connection:
            connection.execute(f"PRAGMA journal_mode={args.journal.upper()}")
        url = f"sqlite:///{args.db}"
    _launched({"name": "chaos-agent", "system_database_url": url}, on_server)
    if args.queue and register is not None:
        # (in the resume too: its poller runs what recovery puts back on the queue)
        queue = _outlasting(lambda: register(QUEUE), on_server)
    try:
        if args.resume:
            result: object = _outlasting(lambda: _result(args.workflow), on_server)
            if result is NOTHING:
                print("nothing to resume")
                return 0
        else:
            with SetWorkflowID(args.workflow):
                result = queue.enqueue(workflow, args.prompt).get_result() if queue else workflow(args.prompt)
    except Exception as err:  # the workflow failed (a step raised): DBOS recorded it so
        print(f"dbos agent: the workflow failed: {err}", file=sys.stderr)
        return 1
    finally:
        DBOS.destroy()
    print(result)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
