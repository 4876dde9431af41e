"""A case's world with the services it runs beside the agent: ``build_world`` (the sandbox and the model
server) and then what the target needs started before its first phase (the MCP server of a target whose
tools are on one, ``chaos.world.mcp``; the server of one whose store lives on one, ``chaos.world.engine``). Every way chaos runs an agent opens its world here, so no service is started
one way in a sweep and another in ``chaos record``."""

from __future__ import annotations

from chaos.scenario.model import Scenario
from chaos.scenario.target import Target
from chaos.world import postgres, temporal  # noqa: F401  (the engines: each registers itself)
from chaos.world.engine import serve_engine
from chaos.world.mcp import serve_tools
from chaos.world.world import World, build_world


def open_world(scenario: Scenario, target: Target, extra_env: dict[str, str]) -> World:
    """A fresh world for one case, its services started (closed with it: ``World.close``)."""
    world = build_world(scenario, target, extra_env)
    try:
        serve_tools(world)
        serve_engine(world)
    except BaseException:
        world.close()
        raise
    return world
