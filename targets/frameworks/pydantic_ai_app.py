"""The bundled Pydantic AI agent on DBOS: an ``Agent`` made durable by ``DBOSDurability`` (its model
requests recorded as DBOS steps), run inside a ``@DBOS.workflow`` of the app's own, as Pydantic AI
documents it; the deploy tool is a ``@DBOS.step`` (its output recorded when it returns). What
``chaos.store.pydantic_dbos`` reads. The only chaos-specific line is the tool's call of
``chaos.ledger.effect``, which records the real effect and its call id.

The agent runs the calls of one answer one after another (``parallel_execution_mode="sequential"``):
with Pydantic AI's default, ``parallel_ordered_events``, the tools of one answer run at once, each a
step that takes the next step number as it starts, so a recovery may number them in another order and
hand one call the output recorded for another, whose effect then never runs again (``parallel``: what
chaos found, ``deploy-two-at-once`` killed while the second deploy runs).

``forgetful`` is the classic mistake: the same agent without the capability, so its model requests
are no steps and a recovery asks the model again, which answers with calls under new ids."""

from __future__ import annotations

from dbos import DBOS
from pydantic_ai import Agent, RunContext
from pydantic_ai.durable_exec.dbos import DBOSDurability

from chaos.ledger import effect

from .pydantic_ai_model import scripted_model

INSTRUCTIONS = "Deploy what you are asked to."


@DBOS.step()
def deploy(ctx: RunContext[None], service: str) -> str:
    """Deploy a service to production."""
    effect("deploy", service, call_id=ctx.tool_call_id)
    return f"deployed {service}"


def _agent(name: str, *capabilities: DBOSDurability) -> Agent[None, str]:
    return Agent(
        scripted_model(),
        name=name,
        instructions=INSTRUCTIONS,
        tools=[deploy],
        capabilities=list(capabilities),
    )


durable = _agent("deployer", DBOSDurability(parallel_execution_mode="sequential"))
at_once = _agent("at_once", DBOSDurability())  # (Pydantic AI's default: parallel_ordered_events)
careless = _agent("careless")


@DBOS.workflow()
def agent(prompt: str) -> str:
    return durable.run_sync(prompt).output


@DBOS.workflow()
def parallel(prompt: str) -> str:
    return at_once.run_sync(prompt).output


@DBOS.workflow()
def forgetful(prompt: str) -> str:
    return careless.run_sync(prompt).output
