"""The bundled Temporal agent: a workflow whose activities are the model's answers and the tool's runs,
each a chat message in OpenAI's format (what ``chaos.store.temporal`` reads). The only chaos-specific
line is the tool's call of ``chaos.ledger.effect`` (``loading.deploy``), which records the real effect and its
call id (the activity's id is the tool call's: Temporal runs it again under the same one).

Activities heartbeat, so a worker that dies is noticed in ``HEARTBEAT`` seconds and its activity given
to the next worker, not after the activity's whole timeout.

The broken variants are the classic mistakes. ``ToolInWorkflow``: the tool runs in the workflow's own
code, not in an activity, so a worker that replays the history after a crash runs it again, and nothing
of it is recorded. ``ReadsTheWorld``: the workflow checks in its own code whether a deploy already
happened (a file the deploy leaves), to skip it; a new worker that replays the history after a crash
sees the file, skips the deploy it recorded scheduling, and Temporal fails the replay as
non-deterministic (the workflow fails on it, as its ``failure_exception_types`` asks, rather than retry a
task that cannot succeed). It is run by a worker that caches workflows (``--cache``): without a cache
every workflow task replays, and the mistake would show without a crash.

``LocalSteps`` is correct, and runs the calls of one answer at once (``asyncio.gather``), each call two
local activities in a row: the deploy, then its entry in the change log (an effect of its own, under no
call of the model's). Local activities run in the worker within the workflow task and are recorded as
markers when the task completes, in the order they resolved: a new worker replays that order
(temporalio/sdk-python#1578 is the report that it once did not)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

from temporalio import activity, workflow
from temporalio.common import RetryPolicy
from temporalio.workflow import ActivityConfig

with workflow.unsafe.imports_passed_through():
    from chaos.ledger import effect

    from .loading import TOOLS, assistant_message, deadline, deploy, model_client, model_name

SYSTEM = "Deploy what you are asked to."
HEARTBEAT = 2.0  # seconds without a heartbeat before the server gives an activity to another worker
RETRIES = RetryPolicy(initial_interval=timedelta(seconds=0.2), maximum_attempts=3)
T = TypeVar("T")


def activity_config() -> ActivityConfig:
    """How the bundled workflows run an activity: the model's deadline and some slack to finish in, a
    heartbeat every ``HEARTBEAT`` seconds, three attempts."""
    return ActivityConfig(
        start_to_close_timeout=timedelta(seconds=deadline() + 30),
        heartbeat_timeout=timedelta(seconds=HEARTBEAT),
        retry_policy=RETRIES,
    )


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


def _deploy_and_mark(call: dict[str, Any]) -> dict[str, Any]:
    output = deploy(call)
    Path(f"deployed-{call['id']}").touch()  # (what ReadsTheWorld looks for)
    return output


@activity.defn(name="run_tool")
async def run_tool_and_mark(call: dict[str, Any]) -> dict[str, Any]:
    """``run_tool``, leaving a file that says the deploy happened (in the workspace, the worker's cwd)."""
    return await _beating(asyncio.to_thread(_deploy_and_mark, call))


@activity.defn
async def deploy_locally(call: dict[str, Any]) -> dict[str, Any]:
    """One call's deploy as a local activity (it runs within the workflow task: no heartbeat)."""
    return await asyncio.to_thread(deploy, call)


@activity.defn
async def log_change(call: dict[str, Any]) -> str:
    """What follows a deploy: its entry in the change log (a line in a shared log)."""
    await asyncio.to_thread(effect, "changelog", call["id"])
    return f"logged {call['id']}"


async def _locally(call: dict[str, Any]) -> dict[str, Any]:
    """One call as LocalSteps runs it: the deploy, then its change log entry, under ids of the call's."""
    timeout = activity_config()["start_to_close_timeout"]  # (a local activity has no heartbeat)
    output: dict[str, Any] = await workflow.execute_local_activity(
        deploy_locally, call, activity_id=call["id"], start_to_close_timeout=timeout, retry_policy=RETRIES
    )
    await workflow.execute_local_activity(
        log_change,
        call,
        activity_id=f"log-{call['id']}",
        start_to_close_timeout=timeout,
        retry_policy=RETRIES,
    )
    return output


def _already_deployed(call: dict[str, Any]) -> bool:
    """ReadsTheWorld's mistake: the world read in the workflow's own code."""
    with workflow.unsafe.sandbox_unrestricted():
        return os.path.exists(f"deployed-{call['id']}")


async def _loop(
    prompt: str, in_workflow: bool = False, reads_the_world: bool = False, local: bool = False
) -> str:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": prompt},
    ]
    config = activity_config()
    while True:
        message = await workflow.execute_activity(ask, messages, **config)
        messages.append(message)
        if not message.get("tool_calls"):
            return str(message.get("content") or "")
        if local:
            messages += await asyncio.gather(*(_locally(call) for call in message["tool_calls"]))
            continue
        for call in message["tool_calls"]:
            if reads_the_world and _already_deployed(call):
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": "already deployed"})
                continue
            if in_workflow:
                with workflow.unsafe.sandbox_unrestricted():
                    messages.append(deploy(call))
                continue
            output = await workflow.execute_activity(run_tool, call, **(config | {"activity_id": call["id"]}))
            messages.append(output)


@workflow.defn(name="chaos-agent")
class Agent:
    @workflow.run
    async def run(self, prompt: str) -> str:
        return await _loop(prompt)


@workflow.defn(name="chaos-agent")
class ToolInWorkflow:
    @workflow.run
    async def run(self, prompt: str) -> str:
        return await _loop(prompt, in_workflow=True)


@workflow.defn(name="chaos-agent", failure_exception_types=[workflow.NondeterminismError])
class ReadsTheWorld:
    @workflow.run
    async def run(self, prompt: str) -> str:
        return await _loop(prompt, reads_the_world=True)


@workflow.defn(name="chaos-agent")
class LocalSteps:
    @workflow.run
    async def run(self, prompt: str) -> str:
        return await _loop(prompt, local=True)


ACTIVITIES: list[Callable[..., Any]] = [ask, run_tool]
MARKING: list[Callable[..., Any]] = [ask, run_tool_and_mark]  # (ReadsTheWorld's: its deploys leave a file)
LOCAL: list[Callable[..., Any]] = [ask, deploy_locally, log_change]  # (LocalSteps')
