"""A fault with a mechanism of its own, defined outside the package through ``chaos.extend`` alone, is swept
like a built-in one (issue 48: the built-in faults use only what ``chaos.extend`` gives an extender)."""

from __future__ import annotations

from pathlib import Path

import pytest

from chaos import api
from chaos.fault import FAULTS
from tests.conftest import REPO, needs_modules
from tests.outside_fault import SECONDS, register

pytestmark = pytest.mark.slow


@needs_modules("langgraph.checkpoint.sqlite", "langchain_openai")
def test_a_fault_written_outside_the_package_holds_the_store_s_next_commit(tmp_path: Path) -> None:
    fault = register()
    try:
        scenario = REPO / "scenarios" / "frameworks" / "deploy-one-service.toml"
        done = api.sweep([scenario], "langgraph", faults=("delayed-commit",), results=tmp_path, jobs=1)
        cases = [r for r in done.summary.results if r.fault == "delayed-commit"]
        assert cases and all(r.ok for r in done.summary.results), [
            r.case for r in done.summary.results if not r.ok
        ]
        assert all(r.exact for r in cases)  # landed at its commit, exactly
        assert len(fault.injections) == len(cases)
        # each held the next commit once: all but the last, after which the run commits nothing more
        assert [i.held for i in fault.injections] == [[SECONDS]] * (len(cases) - 1) + [[]]
    finally:
        FAULTS.pop("delayed-commit", None)
