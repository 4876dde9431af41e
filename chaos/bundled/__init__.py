"""The scenarios and targets chaos ships, addressable by name.

They live at the top of the repository (``scenarios/``, ``targets/``) and are
installed as the package data of ``chaos.bundled.scenarios`` and
``chaos.bundled.targets`` (see ``pyproject.toml``), so ``chaos run
section8-read-replay`` and ``--target reference`` work from any directory, in
a checkout or from a wheel.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def _folder(package: str) -> Path:
    return Path(str(resources.files(package)))


def scenarios_folder() -> Path:
    return _folder("chaos.bundled.scenarios")


def targets_folder() -> Path:
    return _folder("chaos.bundled.targets")


def frameworks_folder() -> Path:
    """The scenarios for framework agents (judged on their stores, ``chaos.store``)."""
    return scenarios_folder() / "frameworks"


def scenario_names() -> list[str]:
    """Every bundled scenario's name."""
    return sorted(
        p.stem for folder in (scenarios_folder(), frameworks_folder()) for p in folder.glob("*.toml")
    )


def scenario_path(name: str) -> Path | None:
    for folder in (scenarios_folder(), frameworks_folder()):
        path = folder / f"{name}.toml"
        if path.is_file():
            return path
    return None
