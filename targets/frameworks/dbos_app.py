"""The bundled DBOS agent: a durable workflow whose steps are the model's answers and the tool's runs,
each a chat message in OpenAI's format (what ``chaos.store.dbos`` reads). The only chaos-specific line
is the tool's call of ``chaos.ledger.effect`` (``loading.deploy``), which records the real effect and its call id.

``unrecorded_model`` is the classic mistake: the model is called in the workflow's own code, not in a
step, so a recovery asks it again and gets calls with new ids."""

from __future__ import annotations

import os
from typing import Any

from dbos import DBOS
from openai import OpenAI

from .loading import TOOLS, assistant_message, deadline, deploy, whole_answer

SYSTEM = "Deploy what you are asked to."


def _answer(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The model's answer as an assistant message (plain values: what DBOS records), or TimeoutError when
    no whole answer came within the deadline: the client's own timeout is per read, and an answer that
    trickles in never trips it. The request's thread is a daemon: it never holds the process open."""
    seconds = deadline()
    return whole_answer(lambda: _request(messages, seconds), seconds)


def _request(messages: list[dict[str, Any]], deadline: float) -> dict[str, Any]:
    client = OpenAI(
        base_url=os.environ["OPENAI_BASE_URL"],
        api_key=os.environ.get("OPENAI_API_KEY", "chaos"),
        max_retries=0,
        timeout=deadline,
    )
    model = os.environ.get("CHAOS_MODEL", "scripted/model")
    answer = client.chat.completions.create(model=model, messages=messages, tools=TOOLS)  # type: ignore[arg-type]
    return assistant_message(answer.choices[0].message)


@DBOS.step()
def ask(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The model step: its answer (and the calls in it) is recorded before any of them runs."""
    return _answer(messages)


@DBOS.step()
def run_tool(call: dict[str, Any]) -> dict[str, Any]:
    """One call, as a step of its own: its output recorded when it returns."""
    return deploy(call)


def _loop(prompt: str, answer: Any) -> str:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": prompt},
    ]
    while True:
        message = answer(messages)
        messages.append(message)
        if not message.get("tool_calls"):
            return str(message.get("content") or "")
        messages += [run_tool(call) for call in message["tool_calls"]]


@DBOS.workflow()
def agent(prompt: str) -> str:
    return _loop(prompt, ask)


@DBOS.workflow()
def unrecorded_model(prompt: str) -> str:
    return _loop(prompt, _answer)
