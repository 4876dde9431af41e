"""Run a Google ADK app on a ``DatabaseSessionService`` (SQLite), and resume it from there after a crash.

    python -m chaos.bundled.targets.frameworks.adk_driver --db agent.db --session S "PROMPT"
    python -m chaos.bundled.targets.frameworks.adk_driver --db agent.db --session S --resume

``--app module:attr`` names the app (an ``App``). The start creates the session and sends the prompt; a
resume reads the session and, unless its last event is the final answer, runs its last invocation again
by its id (``run_async(..., invocation_id=...)``, how ADK resumes a resumable app) with no new message.
Exit 0: completed (the final answer printed); 1: the run raised.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from google.adk.runners import Runner
from google.adk.sessions import DatabaseSessionService
from google.genai import types

from .loading import load, parser

USER = "chaos"


def _final(event: Any) -> bool:
    """The agent's final answer: the model's, with no call to make (an error event ends an invocation
    that failed midway: ADK resumes it)."""
    return bool(
        event.author != "user"
        and event.is_final_response()
        and not event.get_function_calls()
        and not event.error_code
    )


async def _run(app: Any, db: str, session_id: str, prompt: str | None) -> int:
    service = DatabaseSessionService(f"sqlite+aiosqlite:///{db}")
    try:
        return await _drive(app, service, session_id, prompt)
    finally:
        await service.close()


async def _drive(app: Any, service: DatabaseSessionService, session_id: str, prompt: str | None) -> int:
    runner = Runner(app=app, session_service=service)
    session = await service.get_session(app_name=app.name, user_id=USER, session_id=session_id)
    if prompt is not None:
        if session is None:
            await service.create_session(app_name=app.name, user_id=USER, session_id=session_id)
        events = runner.run_async(
            user_id=USER,
            session_id=session_id,
            new_message=types.Content(role="user", parts=[types.Part(text=prompt)]),
        )
    elif session is None or not session.events:
        print("nothing to resume: no session")
        return 0
    elif _final(session.events[-1]):
        print("nothing to resume")
        return 0
    else:
        invocation = session.events[-1].invocation_id
        events = runner.run_async(user_id=USER, session_id=session_id, invocation_id=invocation)
    answer = None
    async for event in events:
        if _final(event) and event.content and event.content.parts:
            answer = "".join(part.text or "" for part in event.content.parts)
    print(answer)
    return 0


def main(argv: list[str]) -> int:
    options = parser("adk_driver", "chaos.bundled.targets.frameworks.adk_app:app", "agent.db", "--session")
    args = options.parse_args(argv)
    app = load(args.app, args.db)
    return asyncio.run(_run(app, args.db, args.session, None if args.resume else args.prompt))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
