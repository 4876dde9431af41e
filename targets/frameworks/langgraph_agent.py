"""Run a LangGraph graph on LangGraph's SQLite checkpointer, and resume it from there after a crash.

    python -m chaos.bundled.targets.frameworks.langgraph_agent --db state.db --thread T "PROMPT"
    python -m chaos.bundled.targets.frameworks.langgraph_agent --db state.db --thread T --resume

``--app module:attr`` names the graph: a ``StateGraph`` (compiled here with the
checkpointer) or a function taking the checkpointer and returning a compiled
graph. ``--durability`` is LangGraph's: ``sync`` writes each step's checkpoint
before the next step starts, ``async`` (LangGraph's default) writes it while the
next step runs. ``--saver async`` runs the graph as an asyncio application does:
on ``AsyncSqliteSaver`` (aiosqlite: the same file format, written from a thread of
its own) with ``ainvoke``. ``--db`` may be a PostgreSQL URL (``postgresql://...``): the graph then
checkpoints with ``PostgresSaver`` (``--saver async``: ``AsyncPostgresSaver``), its tables made by the
saver's own ``setup()``; a connection lost under a run (the server crashed) is met by
resuming the thread from what the server kept, never by sending the prompt again. A resume invokes the graph with no input, as LangGraph
resumes a thread; a thread with nothing left to run adds nothing. A graph that
asks for approval (``interrupt()``) is approved at once (``Command(resume=True)``),
and a resume finds a parked approval and gives it. With ``--park`` the run parks instead: it exits
``PARKED`` with the thread waiting, a resume leaves it waiting, and the separate command ``--approve``
(what a person runs later) gives the approval and goes on. ``--ordered-saves`` applies the fix
proposed for langgraph#8039 to the loop (a checkpoint is saved only after the writes that produced it).
Exit 0: completed; 4: parked.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
import sys
import time
import types
from collections.abc import AsyncIterator, Iterator
from typing import Any

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.types import Command

from .loading import load, parked, parser, with_approvals


def compiled(app: Any, saver: Any) -> Any:
    return app.compile(checkpointer=saver) if hasattr(app, "compile") else app(saver)


# The answer to an ``interrupt()``: approved, as a person at once would
APPROVE: Command[Any] = Command(resume=True)
PARK = object()  # (what ``_input`` and ``_invoke`` give for a run that stays parked)


def _input(args: Any, snapshot: Any) -> Any:
    """What to invoke the graph with: the prompt to start; to resume, the approval a parked
    ``interrupt()`` waits for, or None as LangGraph resumes a thread (``...``: nothing to resume)."""
    if not args.resume:
        return {"messages": [("user", args.prompt)]}
    if snapshot.interrupts:
        if _parks(args) and not args.approve:
            return PARK  # a person approves it, later, by the separate command
        return APPROVE
    if not snapshot.next and not snapshot.tasks:  # (a task with pending writes is not in ``next``)
        if args.prompt and not snapshot.values:  # a start whose run the server never kept: begin it
            return {"messages": [("user", args.prompt)]}
        return ...
    return None


def _parks(args: Any) -> bool:
    """A run stops at an approval and exits parked (``--park``), rather than approving it here."""
    if os.environ.get("LANGGRAPH_DRIVER_BUG") == "resume-approves" and args.resume and not args.approve:
        return False  # (the bug: a resume after a crash approves what it meets, as if a person had)
    return bool(args.park)


def _on_server(db: str) -> bool:
    return db.startswith(("postgresql://", "postgres://"))


@contextlib.contextmanager
def _saver(db: str) -> Iterator[Any]:
    if not _on_server(db):
        yield SqliteSaver(sqlite3.connect(db, check_same_thread=False))
        return
    from langgraph.checkpoint.postgres import PostgresSaver

    with PostgresSaver.from_conn_string(db) as saver:
        saver.setup()
        yield saver


@contextlib.asynccontextmanager
async def _async_saver(db: str) -> AsyncIterator[Any]:
    if not _on_server(db):
        async with AsyncSqliteSaver.from_conn_string(db) as saver:
            yield saver
        return
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

    async with AsyncPostgresSaver.from_conn_string(db) as server_saver:
        await server_saver.setup()
        yield server_saver


async def _run_async(args: Any, app: Any, config: dict[str, Any]) -> int:
    async with _async_saver(args.db) as saver:
        graph = compiled(app, saver)
        given = _input(args, await graph.aget_state(config) if args.resume else None)
        if given is ... or given is PARK:
            return _said(given)
        result = await graph.ainvoke(given, config, durability=args.durability)
        while result.get("__interrupt__"):
            if _parks(args):
                return _said(PARK)
            result = await graph.ainvoke(APPROVE, config, durability=args.durability)
    return _said(result)


def _ordered_saves() -> None:
    """The fix proposed for langgraph#8039 (its pull request 8055), applied to the loop as it runs: the save
    of a checkpoint waits for every task's writes submitted before it, not only a delta channel's, so a
    checkpoint never becomes durable before the writes that produced it."""
    from langgraph.pregel._loop import SyncPregelLoop

    enter = SyncPregelLoop.__enter__

    def entered(loop: Any) -> Any:
        enter(loop)
        submit, writes = loop.submit, list[Any]()

        def ordered(loop: Any, fn: Any, *args: Any, **kwargs: Any) -> Any:
            if fn == loop._checkpointer_put_after_previous:
                previous, produced, *rest = args
                args = (previous, [*produced, *writes], *rest)
                writes.clear()
            future = submit(fn, *args, **kwargs)
            if fn == loop.checkpointer_put_writes:
                writes.append(future)
            return future

        loop.submit = types.MethodType(ordered, loop)  # (the loop keeps a weak reference to a bound method)
        return loop

    SyncPregelLoop.__enter__ = entered  # type: ignore[method-assign]


def _said(result: Any) -> int:
    """The run's end said on stdout, as its exit status."""
    if result is PARK:
        return parked()
    print("nothing to resume" if result is ... else result["messages"][-1].content)
    return 0


def main(argv: list[str]) -> int:
    options = parser(
        "langgraph_agent", "chaos.bundled.targets.frameworks.langgraph_app:graph", "state.db", "--thread"
    )
    options.add_argument("--durability", choices=("sync", "async", "exit"), default="async")
    options.add_argument("--saver", choices=("sqlite", "async"), default="sqlite")
    options.add_argument(
        "--ordered-saves",
        action="store_true",
        help="the fix proposed for langgraph#8039, applied at run time",
    )
    with_approvals(options)
    args = options.parse_args(argv)
    if args.ordered_saves:
        _ordered_saves()
    app = load(args.app, args.db)
    config = {"configurable": {"thread_id": args.thread}}
    if args.saver == "async":
        return asyncio.run(_run_async(args, app, config))
    try:
        result = _invoke(args, app, config)
    except _LOST as err:  # the database server went away under the run (a crash, a failover)
        print(
            f"langgraph agent: the database connection was lost ({err}); resuming the thread", file=sys.stderr
        )
        if os.environ.get("LANGGRAPH_DRIVER_BUG") != "prompt-again-on-lost-connection":
            args.resume = True  # what the server kept is where the run goes on from, as a resume would
        # (the bug: the run starts over, its prompt a second time)
        result = _reconnected(args, app, config)
    return _said(result)


def _lost() -> tuple[type[BaseException], ...]:
    try:
        import psycopg
    except ImportError:
        return ()
    return (psycopg.OperationalError,)


_LOST = _lost()


def _reconnected(args: Any, app: Any, config: dict[str, Any]) -> Any:
    """``_invoke`` once the server answers again (it is restarting): tried for up to ten seconds."""
    deadline = time.monotonic() + 10
    while True:
        try:
            return _invoke(args, app, config)
        except _LOST:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def _invoke(args: Any, app: Any, config: dict[str, Any]) -> Any:
    """The graph run to its end on a saver of its own (``...``: nothing to resume; ``PARK``: it waits for
    approval)."""
    with _saver(args.db) as saver:
        graph = compiled(app, saver)
        given = _input(args, graph.get_state(config) if args.resume else None)
        if given is ... or given is PARK:
            return given
        result = graph.invoke(given, config, durability=args.durability)
        while result.get("__interrupt__"):  # a graph that asks for approval: given at once, in this process
            if _parks(args):
                return PARK
            result = graph.invoke(APPROVE, config, durability=args.durability)
        return result


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
