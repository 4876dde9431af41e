"""The scenario language: scenarios and target specs as data, read from and written to TOML."""

from chaos.scenario.files import load_scenario, scenario_files, scenario_toml, write_scenario
from chaos.scenario.model import (
    Boundary,
    Configuration,
    Expect,
    Scenario,
    Strike,
    Turn,
    WorkspaceFile,
    call,
)
from chaos.scenario.target import Target, find_target, load_target

__all__ = [
    "Boundary",
    "Configuration",
    "Expect",
    "Scenario",
    "Strike",
    "Target",
    "Turn",
    "WorkspaceFile",
    "call",
    "find_target",
    "load_scenario",
    "load_target",
    "scenario_files",
    "scenario_toml",
    "write_scenario",
]
