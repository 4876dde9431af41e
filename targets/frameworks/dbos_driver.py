"""Run a DBOS workflow on a SQLite (or PostgreSQL) system database, and recover it from there after a crash.

    python -m chaos.bundled.targets.frameworks.dbos_driver --db dbos.sqlite --workflow W "PROMPT"
    python -m chaos.bundled.targets.frameworks.dbos_driver --db dbos.sqlite --workflow W --resume

``--app module:attr`` names the workflow function (``@DBOS.workflow()``, taking the prompt). The start
runs it under the workflow id chaos gives; a resume launches DBOS, which recovers the pending workflows
as it does after any crash, and waits for that one's result (a workflow that never became durable: there
is nothing to resume). The system database is put in WAL mode first (SQLite's mode for a database other
threads read: the commit chaos stops at is a WAL frame); a ``--db`` that is a PostgreSQL URL is DBOS's
system database as it is. DBOS 3 starts no server: nothing listens.
Exit 0: completed; 1: the workflow failed.
"""

from __future__ import annotations

import sqlite3
import sys

from dbos import DBOS, DBOSConfig, SetWorkflowID

from .loading import load, parser


def main(argv: list[str]) -> int:
    options = parser(
        "dbos_driver", "chaos.bundled.targets.frameworks.dbos_app:agent", "dbos.sqlite", "--workflow"
    )
    args = options.parse_args(argv)
    workflow = load(args.app, args.db)
    if args.db.startswith(("postgresql://", "postgres://")):
        url = args.db  # a PostgreSQL system database (DBOS makes its schema, dbos, itself)
    else:
        with sqlite3.connect(args.db) as connection:
            connection.execute("PRAGMA journal_mode=WAL")
        url = f"sqlite:///{args.db}"
    config: DBOSConfig = {"name": "chaos-agent", "system_database_url": url}
    DBOS(config=config)
    DBOS.launch()  # recovers this executor's pending workflows, each on a thread of its own
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
