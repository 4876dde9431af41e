"""The corpus of public bugs (``bench/corpus``): every entry is whole and names what chaos has, and CI runs
each entry's case on the release the project installs, which must be clean where it is the fixed release
or later, and show the one failure where it is the affected release of a bug still open upstream. The
affected releases are installed and run by ``python bench/corpus.py``, outside CI."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from chaos import api
from chaos.check import CATALOG
from chaos.fault import FAULTS
from chaos.scenario import load_target
from chaos.scenario.model import Boundary, Strike
from tests.conftest import REPO, needs_ptrace


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_corpus", REPO / "bench" / "corpus.py")
    assert spec is not None and spec.loader is not None
    module = sys.modules[spec.name] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CORPUS = _bench()
BUGS = [CORPUS.Bug.load(p.parent) for p in sorted((REPO / "bench" / "corpus").glob("*/bug.toml"))]


def _release(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split(".")[:3] if part.isdigit())


def test_every_entry_names_a_release_pair_a_target_a_scenario_a_fault_and_a_check() -> None:
    assert BUGS, "the corpus is empty"
    for bug in BUGS:
        assert bug.issue.startswith("https://github.com/") and "/issues/" in bug.issue
        assert not bug.fixed or _release(bug.affected) < _release(bug.fixed), bug.name
        load_target(bug.folder / bug.target)
        api.load(bug.scenario)
        assert bug.fault in FAULTS and bug.failure in CATALOG, bug.name
        Strike(Boundary.parse(bug.crash), bug.fault)
        assert bool(bug.then_crash) == bool(bug.then_fault), bug.name
        if bug.then_crash:
            Strike(Boundary.parse(bug.then_crash), bug.then_fault)


@pytest.mark.slow
@needs_ptrace
@pytest.mark.parametrize("bug", BUGS, ids=[b.name for b in BUGS])
def test_the_installed_release_of_each_entry_is_what_its_entry_says(bug: object, tmp_path: Path) -> None:
    assert isinstance(bug, CORPUS.Bug)
    try:
        installed = importlib.metadata.version(bug.package)
    except importlib.metadata.PackageNotFoundError:
        pytest.skip(f"{bug.package} is not installed here (its extra)")
    open_here = not bug.fixed and installed == bug.affected  # (open upstream: the release it is on)
    if not open_here and (not bug.fixed or _release(installed) < _release(bug.fixed)):
        pytest.skip(
            f"{bug.package} {installed} is neither the fixed release nor the affected one of an open bug"
        )
    crash = Strike(Boundary.parse(bug.crash), bug.fault)
    then = Strike(Boundary.parse(bug.then_crash), bug.then_fault) if bug.then_crash else None
    case = api.load(bug.scenario).with_crash(crash, then)
    verdict = api.run(case, bug.folder / bug.target, results=tmp_path)
    assert verdict.evidence.start.landing.reached, verdict.result().to_json()
    if then is not None:  # (the recovery's crash too, at the moment its entry names)
        assert verdict.phases[1].landing.reached and verdict.phases[1].landing.exact, (
            verdict.result().to_json()
        )
    if open_here:  # (its one distinct failure: the first failing check, as reported)
        assert [c.id for c in verdict.failed][:1] == [bug.failure], [c.text() for c in verdict.failed]
    else:
        assert verdict.ok, [c.text() for c in verdict.failed]
