"""The bundled Pydantic AI agent on Temporal: an ``Agent`` made durable by ``TemporalDurability`` (its model
requests and its tool's calls are activities), run inside a ``@workflow.defn`` of the app's own that lists
the agent for Pydantic AI's worker plugin, as Pydantic AI documents it. What
``chaos.store.pydantic_temporal`` reads. The only chaos-specific line is the tool's call of
``chaos.ledger.effect``, which records the real effect and its call id.

``careless`` is the classic mistake: the deploy tool taken out of its activity (``metadata={"temporal":
False}``, which Pydantic AI allows for an async tool), so it runs in the workflow's own code. Nothing of
it is in the history; a worker that replays the workflow after a crash runs it again."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from pydantic_ai import Agent, RunContext, Tool
    from pydantic_ai.durable_exec.temporal import PydanticAIPlugin, TemporalDurability

    from chaos.ledger import effect

    from .pydantic_ai_model import scripted_model
    from .temporal_app import activity_config

INSTRUCTIONS = "Deploy what you are asked to."


async def deploy(ctx: RunContext[None], service: str) -> str:
    """Deploy a service to production."""
    if workflow.in_workflow():  # (careless's: the workflow's sandbox allows no I/O)
        with workflow.unsafe.sandbox_unrestricted():
            effect("deploy", service, call_id=ctx.tool_call_id)
    else:
        await asyncio.to_thread(effect, "deploy", service, call_id=ctx.tool_call_id)
    return f"deployed {service}"


def _agent(name: str, tool: Tool[None]) -> Agent[None, str]:
    durability = TemporalDurability(activity_config=activity_config())
    return Agent(
        scripted_model(), name=name, instructions=INSTRUCTIONS, tools=[tool], capabilities=[durability]
    )


durable = _agent("deployer", Tool(deploy))
careless = _agent("careless", Tool(deploy, metadata={"temporal": False}))


@workflow.defn(name="chaos-agent")
class Deployer:
    __pydantic_ai_agents__ = (durable,)

    @workflow.run
    async def run(self, prompt: str) -> str:
        return (await durable.run(prompt)).output


@workflow.defn(name="chaos-agent")
class Careless:
    __pydantic_ai_agents__ = (careless,)

    @workflow.run
    async def run(self, prompt: str) -> str:
        return (await careless.run(prompt)).output


ACTIVITIES: list[Callable[..., Any]] = []  # (Pydantic AI's plugin registers the agent's own)
PLUGINS = [PydanticAIPlugin()]
