"""Run an OpenAI Agents SDK agent on a ``SQLiteSession``, and resume it from there after a crash.

    python -m chaos.bundled.targets.frameworks.agents_driver --db agent.db --session S "PROMPT"
    python -m chaos.bundled.targets.frameworks.agents_driver --db agent.db --session S --resume

``--app module:attr`` names the agent (an ``Agent``); its MCP servers, if it has any, are connected
for the run. A run that stops for an
approval is saved as a ``RunState`` beside the database (``DB.run-state.json``, or ``--state PATH``)
and approved at once, as a person would; a resume picks that saved state up
again when there is one, else it runs the agent on the session's items with no
new input. A session whose last item is the final answer adds nothing. With ``--retry`` a run whose
approved turn raised (a session write that failed) is run again once from the same ``RunState``, as
the SDK means a run state to be retried. With ``--park`` a run that
stops for an approval is saved and exits ``PARKED`` instead, a resume leaves a saved run waiting, and
the separate command ``--approve`` (what a person runs later) approves the saved run and goes on.
Exit 0: completed; 4: parked.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from pathlib import Path
from typing import Any

from agents import Runner, RunState, SQLiteSession

from .loading import load, parked, parser, with_approvals


def _finished(items: list[Any]) -> bool:
    last = items[-1] if items else {}
    return isinstance(last, dict) and last.get("role") == "assistant" and last.get("type") == "message"


async def _run(args: argparse.Namespace) -> int:
    agent = load(args.app, args.db)
    async with contextlib.AsyncExitStack() as servers:  # an agent's MCP servers, connected while it runs
        for server in agent.mcp_servers:
            await servers.enter_async_context(server)
        return await _drive(agent, args)


async def _drive(agent: Any, args: argparse.Namespace) -> int:
    session = SQLiteSession(args.session, args.db)
    saved = Path(args.state or f"{args.db}.run-state.json")
    saved.parent.mkdir(parents=True, exist_ok=True)
    if args.resume and saved.exists():
        if args.park and not args.approve:
            return parked()  # a person approves it, later, by the separate command
        state = await RunState.from_string(agent, saved.read_text())
        for item in state.get_interruptions():
            state.approve(item)
        result = await Runner.run(agent, state, session=session)
    elif args.resume:
        if _finished(await session.get_items()):
            print("nothing to resume")
            return 0
        result = await Runner.run(agent, [], session=session)
    else:
        result = await Runner.run(agent, args.prompt, session=session)
    while result.interruptions:
        state = result.to_state()
        saved.write_text(state.to_string())
        if args.park:
            return parked()
        for item in result.interruptions:
            state.approve(item)
        result = await _approved(agent, state, session, args.retry)
    saved.unlink(missing_ok=True)
    print(result.final_output)
    return 0


async def _approved(agent: Any, state: Any, session: SQLiteSession, retry: bool) -> Any:
    """The approved run goes on; with ``retry``, once more from the same state if that raised."""
    try:
        return await Runner.run(agent, state, session=session)
    except Exception as err:
        if not retry:
            raise
        print(f"the approved run failed ({err!r}); running its state again", file=sys.stderr)
        return await Runner.run(agent, state, session=session)


def main(argv: list[str]) -> int:
    options = parser(
        "agents_driver", "chaos.bundled.targets.frameworks.agents_app:agent", "agent.db", "--session"
    )
    options.add_argument(
        "--state", help="where a run stopped for approval is saved (default DB.run-state.json)"
    )
    options.add_argument(
        "--retry", action="store_true", help="run an approved turn that raised once more from its state"
    )
    return asyncio.run(_run(with_approvals(options).parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
