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
    from chaos.api import SweepResult, check_target, run, sweep
    from chaos.case.verdict import Verdict
    from chaos.check.checks import CATALOG, Check
    from chaos.contract import ContractError, Reducer, SessionState, plan_recovery, reduce
    from chaos.doctor.doctor import Diagnosis
    from chaos.errors import ChaosFault, Interrupted, SpecError, TargetUnusable, UsageError
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

# Where each public name lives. They are imported on first use (PEP 562), because every agent
# process that imports ``chaos.contract`` runs this file first and must not pay for the rest.
_HOMES = {
    "SweepResult": "chaos.api",
    "run": "chaos.api",
    "sweep": "chaos.api",
    "check_target": "chaos.api",
    "Diagnosis": "chaos.doctor.doctor",
    "Verdict": "chaos.case.verdict",
    "CATALOG": "chaos.check.checks",
    "Check": "chaos.check.checks",
    **dict.fromkeys(
        ["ContractError", "Reducer", "SessionState", "plan_recovery", "reduce"], "chaos.contract"
    ),
    **dict.fromkeys(
        ["ChaosFault", "Interrupted", "SpecError", "TargetUnusable", "UsageError"], "chaos.errors"
    ),
    **dict.fromkeys(
        [
            "Boundary",
            "Configuration",
            "Crash",
            "Expect",
            "Scenario",
            "Target",
            "Turn",
            "WorkspaceFile",
            "call",
            "load_scenario",
            "load_target",
        ],
        "chaos.scenario",
    ),
}


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        import importlib

        return getattr(importlib.import_module(_HOMES[name]), name)
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
    "Interrupted",
    "Reducer",
    "Scenario",
    "SessionState",
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
    "load_scenario",
    "load_target",
    "plan_recovery",
    "reduce",
    "run",
    "sweep",
]
