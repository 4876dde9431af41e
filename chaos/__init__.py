"""chaos: crash-injection chaos testing for durable AI agents.

A tiny public API over the pipeline ``scenario -> world -> run -> kill ->
resume -> check -> mine -> report``::

    from chaos import Strike, Scenario, Turn, call, run

    scenario = Scenario(
        prompt="What does the README say?",
        files={"README.md": "hello\\n"},
        turns=[Turn(tool_calls=[call("read", path="README.md")]), Turn(text="It says hello.")],
        crash=Strike("toolStarted[toolName=read]"),
    )
    verdict = run(scenario, target="reference")
    assert verdict.ok, [c.text() for c in verdict.failed]

``sweep`` crashes scenarios at every boundary; ``chaos.contract`` holds the
pure oracle (``reduce``, ``plan_recovery``).
"""

from typing import TYPE_CHECKING, Any

from chaos.version import __version__

if TYPE_CHECKING:
    from chaos.api import ExploreResult, SweepResult, check_target, explore, merge, run, sweep
    from chaos.case.verdict import Verdict
    from chaos.errors import ExitCode, Interrupted, Skipped, UsageError
    from chaos.scenario import Boundary, Configuration, Scenario, Strike, Target, Turn, call

# The modules the public names live in. Names are imported on first use (PEP 562), because every
# agent process that imports ``chaos.contract`` runs this file first and must not pay for the rest.
_HOMES = ("chaos.api", "chaos.scenario", "chaos.errors", "chaos.case.verdict")


def __getattr__(name: str) -> Any:
    if name in __all__:
        import importlib

        for home in _HOMES:
            module = importlib.import_module(home)
            if hasattr(module, name):
                return getattr(module, name)
    raise AttributeError(f"module 'chaos' has no attribute {name!r}")


# The public face: what a user of chaos needs. Extenders use ``chaos.extend``; the pure oracle is
# ``chaos.contract`` (``reduce``, ``plan_recovery``); every other module is the engine, internal.
__all__ = [
    "Boundary",
    "Configuration",
    "ExitCode",
    "ExploreResult",
    "Interrupted",
    "Scenario",
    "Skipped",
    "Strike",
    "SweepResult",
    "Target",
    "Turn",
    "UsageError",
    "Verdict",
    "__version__",
    "call",
    "check_target",
    "explore",
    "merge",
    "run",
    "sweep",
]
