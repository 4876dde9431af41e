"""A user's graph module written as a script (issue 32): its command line runs when the module is imported,
with no ``if __name__ == "__main__":`` guard. Loaded by ``--app acts_on_import:make``, it runs a graph of
its own on the driver's store before the driver runs: a setup mistake chaos must name as one."""

from __future__ import annotations

import sys

from langgraph.checkpoint.sqlite import SqliteSaver
from my_graph import make


def main() -> None:
    prompt = sys.argv[1] if len(sys.argv) > 1 else "Hello."
    with SqliteSaver.from_conn_string("state.db") as saver:
        make(saver).invoke({"messages": [("user", prompt)]}, {"configurable": {"thread_id": "scratch"}})


main()
