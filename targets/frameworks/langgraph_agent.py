"""Run a LangGraph graph on LangGraph's SQLite checkpointer, and resume it from there after a crash.

    python -m chaos.bundled.targets.frameworks.langgraph_agent --db state.db --thread T "PROMPT"
    python -m chaos.bundled.targets.frameworks.langgraph_agent --db state.db --thread T --resume

``--app module:attr`` names the graph: a ``StateGraph`` (compiled here with the
checkpointer) or a function taking the checkpointer and returning a compiled
graph. ``--durability`` is LangGraph's: ``sync`` writes each step's checkpoint
before the next step starts, ``async`` (LangGraph's default) writes it while the
next step runs. A resume invokes the graph with no input, as LangGraph resumes
a thread; a thread with nothing left to run adds nothing. Exit 0: completed.
"""

from __future__ import annotations

import sqlite3
import sys
from typing import Any

from langgraph.checkpoint.sqlite import SqliteSaver

from .loading import load, parser


def compiled(app: Any, saver: SqliteSaver) -> Any:
    return app.compile(checkpointer=saver) if hasattr(app, "compile") else app(saver)


def main(argv: list[str]) -> int:
    options = parser(
        "langgraph_agent", "chaos.bundled.targets.frameworks.langgraph_app:graph", "state.db", "--thread"
    )
    options.add_argument("--durability", choices=("sync", "async", "exit"), default="async")
    args = options.parse_args(argv)
    app = load(args.app, args.db)
    connection = sqlite3.connect(args.db, check_same_thread=False)
    graph = compiled(app, SqliteSaver(connection))
    config = {"configurable": {"thread_id": args.thread}}
    if args.resume:
        snapshot = graph.get_state(config)
        if not snapshot.next and not snapshot.tasks:  # (a task with pending writes is not in ``next``)
            print("nothing to resume")
            return 0
        result = graph.invoke(None, config, durability=args.durability)
    else:
        result = graph.invoke({"messages": [("user", args.prompt)]}, config, durability=args.durability)
    print(result["messages"][-1].content)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
