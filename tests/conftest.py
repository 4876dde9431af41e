"""Shared test setup: where the contract's conformance corpus lives.

``CHAOS_CONFORMANCE_DIR`` names the tiny-agent folder (``.ci/run`` sets it);
when it is set, a missing folder fails the run instead of skipping. Unset, the
folder beside the checkout is used when present, and the corpus tests skip
with a reason otherwise (a user's fresh clone).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

import tests.store_adapter  # noqa: F401 (registers the test's own store adapter, test-jsonl)

REPO = Path(__file__).resolve().parent.parent
# the shipped scenarios whose fault needs tools on the world's MCP server (skipped by a target with none)
MCP_ONLY = ["mcp-cut-answer", "mcp-error-answer", "mcp-server-restart", "mcp-session-lost"]
ENV = "CHAOS_CONFORMANCE_DIR"


def conformance_dir() -> Path | None:
    configured = os.environ.get(ENV)
    if configured:
        return Path(configured)
    default = REPO.parent / "shared" / "contract" / "tiny-agent"
    return default if default.is_dir() else None


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # a submodule of a package that is not installed
        return False


def needs_modules(*modules: str) -> pytest.MarkDecorator:
    """Skip where an optional extra's modules are missing, unless CI requires every framework."""
    missing = [m for m in modules if not _importable(m)]
    if missing and os.environ.get("CHAOS_REQUIRE_FRAMEWORKS") == "1":
        pytest.fail(f"CHAOS_REQUIRE_FRAMEWORKS=1 but {', '.join(missing)} cannot be imported", pytrace=False)
    return pytest.mark.skipif(
        bool(missing), reason=f"pip install 'durable-chaos[...]' for {', '.join(missing)}"
    )


MINED = REPO / "results" / "fixtures"


def _no_exact_kills() -> str | None:
    from chaos.process import ptrace

    return ptrace.unavailable()


# End-to-end tests that assert exact kills run only where a traced child really traps a write.
needs_ptrace = pytest.mark.skipif(
    _no_exact_kills() is not None, reason=f"exact kills unavailable here: {_no_exact_kills()}"
)


def _entries(root: Path, kind: str, prefix: str) -> list[Any]:
    manifest = root / ("fixtures" if kind == "reducer" else "planner-fixtures") / "manifest.json"
    if not manifest.is_file():
        return [pytest.param(("missing", str(manifest)), id=f"{prefix}corpus-missing")]
    entries = json.loads(manifest.read_text())["fixtures"]
    return [pytest.param((root, entry), id=prefix + entry["name"]) for entry in entries]


def _cases(kind: str) -> list[Any]:
    """The contract's golden corpus, then the corpus chaos mined (committed under results/fixtures)."""
    root = conformance_dir()
    mined = _entries(MINED, kind, "mined:")
    if root is None:
        return [
            pytest.param(None, marks=pytest.mark.skip(reason=f"no conformance corpus: set {ENV}")),
            *mined,
        ]
    return _entries(root, kind, "") + mined


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    for kind in ("reducer", "planner"):
        name = f"{kind}_case"
        if name in metafunc.fixturenames:
            metafunc.parametrize(name, _cases(kind))


# The longest tests of a clean clone's run (its --durations), started first: two workers then end together
# on the short ones instead of one waiting out a two-minute sweep begun last. Order only; a stale name
# costs nothing.
LONGEST = (
    "tests/test_node_agent.py::test_a_full_sweep_passes_with_exact_kills",
    "tests/test_frameworks.py::test_an_interleaving_exploration_reports_the_orders_it_reached",
    "tests/test_mcp.py::test_a_sweep_with_mcp_tools_is_clean_with_exact_kills[stdio]",
    "tests/test_frameworks.py::test_recorded_steps_are_recovered_and_a_model_outside_them_is_caught",
    "tests/test_store.py::test_a_disk_fault_lands_on_a_store_and_an_agent_that_ignores_it_is_caught",
    "tests/test_hostile_run.py::test_a_target_env_secret_is_in_no_file_a_sweep_or_a_mine_writes",
    "tests/test_postgres.py::test_langgraph_on_postgres_is_killed_exactly_at_the_server_answer_and_keeps",
    "tests/test_frameworks.py::test_an_approval_given_later_by_a_separate_command",
    "tests/test_mcp.py::test_a_sweep_with_mcp_tools_is_clean_with_exact_kills[http]",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The longest tests first (``LONGEST``, by prefix of their node id), then the slow ones, then the
    rest; otherwise in collection order."""

    def rank(item: pytest.Item) -> tuple[int, int]:
        first = next((n for n, name in enumerate(LONGEST) if item.nodeid.startswith(name)), None)
        if first is not None:
            return 0, first
        return (1, 0) if item.get_closest_marker("slow") else (2, 0)

    items.sort(key=rank)


def unpack_case(case: Any) -> tuple[Path, dict[str, Any]]:
    if case[0] == "missing":
        pytest.fail(f"{ENV} points at a folder without {case[1]}")
    return case


@pytest.fixture(autouse=True)
def no_process_outlives_a_test() -> Any:
    """Every test must leave no child process behind, whatever it started."""
    import psutil

    yield
    leftovers = psutil.Process().children(recursive=True)
    for proc in leftovers:
        proc.kill()
    assert not leftovers, f"processes outlived the test: {[p.pid for p in leftovers]}"


# The bundled Node.js agent's tests skip where node is absent, unless CI says it must be there.
needs_node = pytest.mark.skipif(
    shutil.which("node") is None and not os.environ.get("CHAOS_REQUIRE_NODE"),
    reason="no node on PATH (.ci/run installs Debian's nodejs)",
)


def answer_json(handler: Any, body: Any) -> None:
    """A stand-in upstream provider's 200 answer with a JSON body (``chaos record``'s tests)."""
    data = json.dumps(body).encode()
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)
