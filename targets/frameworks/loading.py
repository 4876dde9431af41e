"""What the framework drivers share: their command line, and loading the user's graph or agent by
``module:attr``, as a target file names it."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import queue
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from openai import AsyncOpenAI

T = TypeVar("T")

# What a module that runs its own command line when imported is told (``load``)
GUARD = 'it acts on import: put its command line under `if __name__ == "__main__":`'


def _refuse(said: str) -> SystemExit:
    """A setup mistake: said on stderr, exit 2 (a usage error, as argparse's; no outcome a target names)."""
    print(said, file=sys.stderr)
    return SystemExit(2)


def _stamp(store: str) -> list[tuple[int, int] | None]:
    """The store's files as they stand (size and change time; None: absent), a write-ahead log too."""
    stamps: list[tuple[int, int] | None] = []
    for path in (Path(store), Path(f"{store}-wal")):
        try:
            found = path.stat()
        except FileNotFoundError:
            stamps.append(None)
        else:
            stamps.append((found.st_size, found.st_mtime_ns))
    return stamps


def load(spec: str, store: str) -> Any:
    """The object ``spec`` (``package.module:attr``) names; the working directory is importable, so a
    user's ``myagent.py`` beside the target file's workspace is found. Importing it must do nothing but
    define: a module that runs its command line on import (it exits, or writes the ``store`` the driver
    is about to run on) would make a setup mistake look like an agent that changes its store."""
    module, _, attr = spec.partition(":")
    if not module or not attr:
        raise _refuse(f"--app {spec!r}: write it as module:attr, e.g. myproject.graph:builder")
    sys.path.insert(0, ".")
    before = _stamp(store)
    try:
        found = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as err:
        raise _refuse(f"--app {spec!r}: {err}") from None
    except SystemExit as exit:
        raise _refuse(f"--app {spec!r}: importing {module} exited ({exit.code}); {GUARD}") from None
    if _stamp(store) != before:
        raise _refuse(f"--app {spec!r}: importing {module} changed the store {store}; {GUARD}")
    return found


def parser(prog: str, app: str, db: str, session: str) -> argparse.ArgumentParser:
    """A driver's options: the prompt (start) or ``--resume``, the app, its database, its session flag."""
    options = argparse.ArgumentParser(prog=prog)
    options.add_argument("prompt", nargs="?")
    options.add_argument("--app", default=app)
    options.add_argument("--db", default=db)
    options.add_argument(session, default="chaos-session")
    options.add_argument("--resume", action="store_true")
    return options


# The bundled apps' one tool, as the model is told of it (OpenAI's format)
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "deploy",
            "description": "Deploy a service to production.",
            "parameters": {"type": "object", "properties": {"service": {"type": "string"}}},
        },
    }
]

PARKED = 4  # the exit status of a run parked for approval (``--park``)


def with_approvals(options: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """A driver's options for a run a person approves later: ``--park`` exits ``PARKED`` at an approval
    (and a resume leaves a parked run waiting), ``--approve`` (with ``--resume``) gives the approval."""
    options.add_argument("--park", action="store_true", help="exit parked at an approval, not approve it")
    options.add_argument("--approve", action="store_true", help="approve the parked run (with --resume)")
    return options


def parked() -> int:
    print("parked: waiting for approval")
    return PARKED


def deadline() -> float:
    """Seconds the bundled apps wait for one whole model answer (the target's ``request_deadline``, which
    chaos shortens where a fault withholds an answer)."""
    return float(os.environ.get("CHAOS_AGENT_TIMEOUT", "20"))


def model_client() -> AsyncOpenAI:
    """The official OpenAI client at chaos's scripted model server (the target's ``[env]``): no retries of
    its own (a retry is the agent's decision, or its framework's), the target's deadline for each read."""
    from openai import AsyncOpenAI  # (each bundled app's extra brings it; a driver alone needs none)

    return AsyncOpenAI(
        base_url=os.environ.get("OPENAI_BASE_URL", "http://127.0.0.1:9/v1"),
        api_key=os.environ.get("OPENAI_API_KEY", "chaos"),
        max_retries=0,
        timeout=deadline(),
    )


def model_name() -> str:
    """The model the scripted server answers as (the target's ``CHAOS_MODEL``)."""
    return os.environ.get("CHAOS_MODEL", "scripted/model")


def assistant_message(message: Any) -> dict[str, Any]:
    """An OpenAI client's assistant message as plain values (what a durable step or activity returns, and
    what ``chaos.store.dbos`` and ``chaos.store.temporal`` read): its text and its function calls."""
    calls = [
        {
            "id": c.id,
            "type": "function",
            "function": {"name": c.function.name, "arguments": c.function.arguments},
        }
        for c in message.tool_calls or []
        if c.type == "function"
    ]
    return {"role": "assistant", "content": message.content, **({"tool_calls": calls} if calls else {})}


def deploy(call: dict[str, Any]) -> dict[str, Any]:
    """The bundled apps' tool, run for one call in OpenAI's format: the deploy (recorded in the effect
    ledger with the call's id), answered as a tool message."""
    from chaos.ledger import effect

    function = call["function"]
    if function["name"] != "deploy":
        text = f"Error: {function['name']} is not a valid tool"
    else:
        service = json.loads(function["arguments"] or "{}").get("service", "")
        effect("deploy", service, call_id=call["id"])
        text = f"deployed {service}"
    return {"role": "tool", "tool_call_id": call["id"], "content": text}


def whole_answer(ask: Callable[[], T], seconds: float) -> T:
    """``ask()``'s result within ``seconds``, or TimeoutError: a client's own timeout is per read, and an
    answer that trickles in never trips it. The request's thread is a daemon: it never holds the process
    open."""
    came: queue.Queue[tuple[bool, Any]] = queue.Queue(1)

    def ask_now() -> None:
        try:
            came.put((True, ask()))
        except Exception as err:  # (handed to the caller, which raises it)
            came.put((False, err))

    threading.Thread(target=ask_now, daemon=True).start()
    try:
        ok, value = came.get(timeout=seconds)
    except queue.Empty:
        raise TimeoutError(f"no whole answer from the model in {seconds:g} s") from None
    if not ok:
        raise value
    return value  # type: ignore[no-any-return]
