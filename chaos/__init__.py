"""chaos: crash-injection chaos testing for durable AI agents.

A tiny public API over the pipeline ``scenario -> world -> run -> kill ->
resume -> check -> mine -> report``::

    from chaos import Crash, Scenario, Turn, call, run

    scenario = Scenario(
        prompt="What does the README say?",
        files={"README.md": "hello\\n"},
        turns=[Turn(tool_calls=[call("read", path="README.md")]), Turn(text="It says hello.")],
        crash=Crash("toolStarted[toolName=read]"),
    )
    verdict = run(scenario, target="reference")
    assert verdict.ok, [c.text() for c in verdict.failed]

``sweep`` crashes scenarios at every boundary; ``chaos.contract`` holds the
pure oracle (``reduce``, ``plan_recovery``).
"""

from typing import TYPE_CHECKING, Any

from chaos.version import __version__

if TYPE_CHECKING:
    from chaos.api import (
        ExploreResult,
        SweepResult,
        check_target,
        explore,
        merge,
        run,
        sweep,
    )
    from chaos.case.verdict import Verdict
    from chaos.check import CATALOG, Check
    from chaos.contract import ContractError, Reducer, SessionState, plan_recovery, reduce
    from chaos.doctor.diagnosis import Diagnosis
    from chaos.errors import ChaosFault, Interrupted, Skipped, SpecError, TargetUnusable, UsageError
    from chaos.scenario import (
        Boundary,
        Configuration,
        Crash,
        Expect,
        Scenario,
        Target,
        Turn,
        WorkspaceFile,
        call,
        load_scenario,
        load_target,
    )

# The modules the public names live in. Names are imported on first use (PEP 562), because every
# agent process that imports ``chaos.contract`` runs this file first and must not pay for the rest.
_HOMES = (
    "chaos.api",
    "chaos.contract",
    "chaos.scenario",
    "chaos.errors",
    "chaos.check",
    "chaos.case.verdict",
    "chaos.doctor.diagnosis",
)


def __getattr__(name: str) -> Any:
    if name in __all__:
        import importlib

        for home in _HOMES:
            module = importlib.import_module(home)
            if hasattr(module, name):
                return getattr(module, name)
    raise AttributeError(f"module 'chaos' has no attribute {name!r}")


__all__ = [
    "CATALOG",
    "Boundary",
    "ChaosFault",
    "Check",
    "Configuration",
    "ContractError",
    "Crash",
    "Diagnosis",
    "Expect",
    "ExploreResult",
    "Interrupted",
    "Reducer",
    "Scenario",
    "SessionState",
    "Skipped",
    "SpecError",
    "SweepResult",
    "Target",
    "TargetUnusable",
    "Turn",
    "UsageError",
    "Verdict",
    "WorkspaceFile",
    "__version__",
    "call",
    "check_target",
    "explore",
    "load_scenario",
    "load_target",
    "merge",
    "plan_recovery",
    "reduce",
    "run",
    "sweep",
]
