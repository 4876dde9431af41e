"""The bundled Microsoft Agent Framework workflow: a model and its tools as two executors of one
``Workflow``, checkpointed by ``FileCheckpointStorage`` at the end of each superstep, as the framework
documents: the model's answer (with its calls) is one superstep, the tools another, so a checkpoint holds
each call before its tool runs. The conversation travels as the executors' messages and is kept in the
workflow's state (``conversation``), plain chat messages in OpenAI's format; the model is called with the
official ``openai`` client at chaos's scripted server. The only chaos-specific line is the tool's call of
``chaos.ledger.effect``, which records the real effect and its call id.

``one_step`` is the classic mistake: the model and its tools in one executor (an agent that runs its own
tool loop inside one superstep), so no checkpoint holds a call before its tool runs, and a resume from
the last checkpoint asks the model again."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from agent_framework import (
    CheckpointStorage,
    Executor,
    Workflow,
    WorkflowBuilder,
    WorkflowContext,
    handler,
)

from chaos.ledger import effect

from .loading import TOOLS, deadline, model_client, model_name

Message = dict[str, Any]


def _deploy(call: Message) -> Message:
    """The tool: deploys, and answers the call."""
    service = json.loads(call["function"].get("arguments") or "{}").get("service", "")
    effect("deploy", service, call_id=call["id"])
    return {"role": "tool", "tool_call_id": call["id"], "content": f"deployed {service}"}


async def _answer(conversation: list[Message]) -> Message:
    """The model's next message, within the target's deadline (no retries of the client's own)."""
    asked = model_client().chat.completions.create(model=model_name(), messages=conversation, tools=TOOLS)  # type: ignore[arg-type]
    answer = await asyncio.wait_for(asked, deadline())  # the client's own timeout is per read
    return answer.choices[0].message.model_dump(exclude_none=True, include={"role", "content", "tool_calls"})


class Model(Executor):
    """Asks the model: its calls go to the tools (the next superstep), its final answer is the output."""

    def __init__(self, tools_inline: bool = False) -> None:
        super().__init__(id="model")
        self.tools_inline = tools_inline

    @handler
    async def ask(self, conversation: list[Message], ctx: WorkflowContext[list[Message], str]) -> None:
        message = await _answer(conversation)
        while self.tools_inline and message.get("tool_calls"):  # the mistake: calls run in this superstep
            conversation = [*conversation, message, *(_deploy(c) for c in message["tool_calls"])]
            message = await _answer(conversation)
        conversation = [*conversation, message]
        ctx.set_state("conversation", conversation)
        if message.get("tool_calls"):
            await ctx.send_message(conversation)
        else:
            await ctx.yield_output(message.get("content") or "")


class Tools(Executor):
    """Runs the calls of the model's last answer and hands the conversation back to the model."""

    def __init__(self) -> None:
        super().__init__(id="tools")

    @handler
    async def run(self, conversation: list[Message], ctx: WorkflowContext[list[Message]]) -> None:
        answered = [_deploy(call) for call in conversation[-1].get("tool_calls") or []]
        conversation = [*conversation, *answered]
        ctx.set_state("conversation", conversation)
        await ctx.send_message(conversation)


def _workflow(tools_inline: bool) -> Callable[[CheckpointStorage], Workflow]:
    def build(storage: CheckpointStorage) -> Workflow:
        model, tools = Model(tools_inline), Tools()
        builder = WorkflowBuilder(start_executor=model, checkpoint_storage=storage, name="deployer")
        return builder.add_edge(model, tools).add_edge(tools, model).build()

    return build


workflow = _workflow(tools_inline=False)
one_step = _workflow(tools_inline=True)
