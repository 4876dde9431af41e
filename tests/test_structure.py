"""The package's structure: stages import only downward, the pipeline runs on data, the API is small."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.conftest import REPO

# The pipeline, bottom up: a module may import its own stage and the ones before it, never a later one.
STAGES = [
    ("chaos.version", "chaos.errors", "chaos.bundled", "chaos.ledger", "chaos.secrets"),
    ("chaos.contract",),
    ("chaos.store",),
    ("chaos.fault",),
    ("chaos.scenario",),
    ("chaos.world",),
    ("chaos.process",),
    ("chaos.cycle",),
    ("chaos.check",),
    ("chaos.case",),
    ("chaos.mine",),
    ("chaos.triage",),
    ("chaos.report",),
    ("chaos.doctor",),
    ("chaos.sweep",),
    ("chaos.explore",),
    ("chaos.api", "chaos.cli", "chaos.pytest_plugin", "chaos.extend", "chaos.__main__", "chaos"),
]
AGENTS = "chaos.bundled.targets"  # agents under test, not stages: they may use the contract, nothing else
AGENT_MAY = ("chaos.contract", "chaos.ledger")  # (and the effect ledger's API, which a tool calls)
# The bundled frameworks' store adapters written as a user's are: through chaos.extend only
ADAPTERS = ("chaos.bundled.targets.frameworks.adk_store", "chaos.bundled.targets.frameworks.maf_store")


def _stage(module: str) -> int:
    for index, prefixes in enumerate(STAGES):
        if (
            any(module == p or module.startswith(p + ".") for p in prefixes if p != "chaos")
            or module in prefixes
        ):
            return index
    raise AssertionError(f"{module} belongs to no stage; add it to STAGES")


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted((REPO / "chaos").rglob("*.py")):
        parts = list(path.relative_to(REPO).with_suffix("").parts)
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    for path in sorted((REPO / "targets").rglob("*.py")):
        parts = ["chaos", "bundled", *path.relative_to(REPO).with_suffix("").parts]
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _imports(module: str, path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against the module's package
                package = module.rsplit(".", node.level - (1 if path.name == "__init__.py" else 0))[0]
                found.add(f"{package}.{node.module}" if node.module else package)
            elif node.module and node.module.split(".")[0] == "chaos":
                found.add(node.module)
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.split(".")[0] == "chaos"}
    return found


MODULES = _modules()


@pytest.mark.parametrize("module", sorted(MODULES))
def test_every_import_goes_down_the_pipeline(module: str) -> None:
    imported = _imports(module, MODULES[module])
    if module in ADAPTERS:
        assert imported == {"chaos.extend"}, f"the adapter {module} may import only chaos.extend: {imported}"
        return
    if module.startswith(AGENTS):
        outside = {m for m in imported if not (m.startswith(AGENTS) or m.startswith(AGENT_MAY))}
        assert not outside, f"the bundled agent {module} may import only chaos.contract: {outside}"
        return
    stage = _stage(module)
    upward = {m for m in imported if _stage(m) > stage}
    assert not upward, f"{module} (stage {stage}) imports later stages: {sorted(upward)}"


def test_no_import_cycle_between_modules() -> None:
    graph = {m: {i for i in _imports(m, p) if i in MODULES and i != m} for m, p in MODULES.items()}
    graph = {
        m: {i for i in deps if not m.startswith(i + ".")} for m, deps in graph.items()
    }  # a package's own face
    state: dict[str, int] = {}

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for nxt in graph[node]:
            if state.get(nxt) == 1:
                raise AssertionError("import cycle: " + " -> ".join([*trail, node, nxt]))
            if nxt not in state:
                visit(nxt, [*trail, node])
        state[node] = 2

    for module in graph:
        if module not in state:
            visit(module, [])


def test_the_public_api_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The ten-line example of the public API (docs/python-api.md), run as written."""
    documented = (REPO / "docs" / "python-api.md").read_text()
    example = re.search(r"```python\n(# the public API.*?)```", documented, re.S)
    assert example, "docs/python-api.md has the public API example"
    assert len(example.group(1).strip().splitlines()) <= 12
    monkeypatch.chdir(tmp_path)
    exec(compile(example.group(1), "python-api.md", "exec"), {})
    assert list((tmp_path / "results" / "runs").iterdir()), "it ran a real case"


def test_every_package_ships_in_the_wheel() -> None:
    """pyproject lists the packages by hand (the bundled folders are mapped): a new stage must be in it."""
    import tomllib

    listed = set(tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    present = {
        ".".join(path.parent.relative_to(REPO).parts) for path in (REPO / "chaos").rglob("__init__.py")
    }
    assert present <= listed, f"missing from [tool.setuptools] packages: {sorted(present - listed)}"


def test_the_package_root_is_small_and_every_name_resolves() -> None:
    import chaos
    import chaos.extend
    from chaos.errors import ExitCode

    assert len(chaos.__all__) <= 20, chaos.__all__
    for name in (*chaos.__all__, *chaos.extend.__all__):
        module = chaos if name in chaos.__all__ else chaos.extend
        assert getattr(module, name) is not None, name
    assert [int(c) for c in ExitCode] == [0, 1, 2, 3, 130]


def test_the_pytest_plugin_is_built_on_the_public_api() -> None:
    """The plugin is a user of chaos like any other: the package root, ``chaos.api``, ``chaos.extend``."""
    used = {
        m for m in _imports("chaos.pytest_plugin", MODULES["chaos.pytest_plugin"]) if m.startswith("chaos")
    }
    assert used <= {"chaos", "chaos.api", "chaos.extend"}, used


def test_the_architecture_table_names_every_registered_store_and_fault() -> None:
    """docs/internals.md's table is held to the registries: a built-in adapter or fault added without it
    fails (the suite's own, registered from outside the package, are not chaos's)."""
    from chaos.fault import FAULTS
    from chaos.store import known, store_named

    stores = {name for name in known() if type(store_named(name)).__module__.startswith("chaos.")}
    faults = {name for name, fault in FAULTS.items() if type(fault).__module__.startswith("chaos.")}

    rows = {
        line.split("|")[1].strip(): line
        for line in (REPO / "docs" / "internals.md").read_text().splitlines()
        if line.startswith("| ")
    }
    named = lambda row: set(re.findall(r"`([a-z-]+)`", rows[row]))  # noqa: E731
    assert stores <= named("store"), stores - named("store")
    assert faults <= named("fault"), faults - named("fault")
