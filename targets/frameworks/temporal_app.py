"""The bundled Temporal agent: a workflow whose activities are the model's answers and the tool's runs,
each a chat message in OpenAI's format (what ``chaos.store.temporal`` reads). The only chaos-specific
line is the tool's call of ``chaos.ledger.effect`` (``loading.deploy``), which records the real effect and its
call id (the activity's id is the tool call's: Temporal runs it again under the same one).

Activities heartbeat, so a worker that dies is noticed in ``HEARTBEAT`` seconds and its activity given
to the next worker, not after the activity's whole timeout.

``ToolInWorkflow`` is the classic mistake: the tool runs in the workflow's own code, not in an
activity, so a worker that replays the history after a crash runs it again, and nothing of it is
recorded."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any, TypeVar

from temporalio import activity, workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from .loading import TOOLS, assistant_message, deadline, deploy, model_client, model_name

SYSTEM = "Deploy what you are asked to."
HEARTBEAT = 2.0  # seconds without a heartbeat before the server gives an activity to another worker
RETRIES = RetryPolicy(initial_interval=timedelta(seconds=0.2), maximum_attempts=3)
T = TypeVar("T")


async def _beating(work: Awaitable[T]) -> T:
    """``work``'s result, the activity heartbeating meanwhile (its worker is alive)."""
    task = asyncio.ensure_future(work)
    while True:
        done, _ = await asyncio.wait({task}, timeout=HEARTBEAT / 4)
        if done:
            return task.result()
        activity.heartbeat()


async def _request(messages: list[dict[str, Any]]) -> dict[str, Any]:
    answer = await asyncio.wait_for(
        model_client().chat.completions.create(model=model_name(), messages=messages, tools=TOOLS),  # type: ignore[arg-type]
        deadline(),
    )
    return assistant_message(answer.choices[0].message)


@activity.defn
async def ask(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The model activity: its answer (and the calls in it) is in the history before any of them runs."""
    return await _beating(_request(messages))


@activity.defn
async def run_tool(call: dict[str, Any]) -> dict[str, Any]:
    """One call, as an activity of its own (its id the call's): its output in the history when it returns."""
    return await _beating(asyncio.to_thread(deploy, call))


async def _loop(prompt: str, in_workflow: bool) -> str:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": prompt},
    ]
    timeout = timedelta(seconds=deadline() + 30)
    while True:
        message = await workflow.execute_activity(
            ask, messages, start_to_close_timeout=timeout, heartbeat_timeout=timedelta(seconds=HEARTBEAT),
            retry_policy=RETRIES,
        )  # fmt: skip
        messages.append(message)
        if not message.get("tool_calls"):
            return str(message.get("content") or "")
        for call in message["tool_calls"]:
            if in_workflow:
                with workflow.unsafe.sandbox_unrestricted():
                    messages.append(deploy(call))
                continue
            output = await workflow.execute_activity(
                run_tool, call, activity_id=call["id"], start_to_close_timeout=timeout,
                heartbeat_timeout=timedelta(seconds=HEARTBEAT), retry_policy=RETRIES,
            )  # fmt: skip
            messages.append(output)


@workflow.defn(name="chaos-agent")
class Agent:
    @workflow.run
    async def run(self, prompt: str) -> str:
        return await _loop(prompt, in_workflow=False)


@workflow.defn(name="chaos-agent")
class ToolInWorkflow:
    @workflow.run
    async def run(self, prompt: str) -> str:
        return await _loop(prompt, in_workflow=True)


ACTIVITIES: list[Callable[..., Any]] = [ask, run_tool]
