"""Run a DBOS workflow on a SQLite (or PostgreSQL) system database, and recover it from there after a crash.

    python -m chaos.bundled.targets.frameworks.dbos_driver --db dbos.sqlite --workflow W "PROMPT"
    python -m chaos.bundled.targets.frameworks.dbos_driver --db dbos.sqlite --workflow W --resume

``--app module:attr`` names the workflow function (``@DBOS.workflow()``, taking the prompt). The start
runs it under the workflow id chaos gives; a resume launches DBOS, which recovers the pending workflows
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

from dbos import DBOS, DBOSConfig, SetWorkflowID

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
    args = options.parse_args(argv)
    workflow = load(args.app, args.db)
    on_server = args.db.startswith(("postgresql://", "postgres://"))
    if on_server:
        url = args.db  # a PostgreSQL system database (DBOS makes its schema, dbos, itself)
    else:
        with sqlite3.connect(args.db) as connection:
            connection.execute(f"PRAGMA journal_mode={args.journal.upper()}")
        url = f"sqlite:///{args.db}"
    _launched({"name": "chaos-agent", "system_database_url": url}, on_server)
    try:
        if args.resume:
            if DBOS.get_workflow_status(args.workflow) is None:
                print("nothing to resume")
                return 0
            result: object = DBOS.retrieve_workflow(args.workflow).get_result()
        else:
            with SetWorkflowID(args.workflow):
                result = workflow(args.prompt)
    except Exception as err:  # the workflow failed (a step raised): DBOS recorded it so
        print(f"dbos agent: the workflow failed: {err}", file=sys.stderr)
        return 1
    finally:
        DBOS.destroy()
    print(result)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
