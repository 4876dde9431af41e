"""From a session log to a scenario that replays it (``chaos scenario from-log``).

The property: a log written by a correct agent, turned into a scenario and run
against the same agent, gives back the same sequence of facts (ids and times
aside), whether the log ended idle or crashed (then the scenario crashes where
it ended). Logs come from both bundled agents over every protocol, and from
the mined corpus.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from chaos import api
from chaos.case.run import run_case
from chaos.cli import main
from chaos.contract import reduce
from chaos.contract.reading import facts
from chaos.mine.from_log import NotReplayable, scenario_from_log
from chaos.mine.signature import fact_shape
from chaos.scenario import load_scenario, load_target
from chaos.scenario.model import Scenario
from tests.conftest import REPO, needs_ptrace

pytestmark = pytest.mark.slow  # starts agent processes (-m 'not slow' leaves it out)

SCENARIOS = [
    "section8-read-replay",
    "full-workflow",
    "live-429-failed",
    "unknown-tool-invalid-arguments",
    "compaction-crash",
]
TARGETS = ["reference", "reference-anthropic", "reference-responses", "node-reference"]


def _shapes(log: bytes) -> list[list[object]]:
    return [fact_shape(f) for f in facts(log)]


def _replayed(scenario: Scenario, log: bytes, target: str, folder: Path) -> bytes:
    spec = load_target(REPO / "targets" / f"{target}.toml")
    inferred = scenario_from_log(log, "replay", api.current(spec), scenario.files)
    verdict = run_case(inferred.scenario, spec, {}, folder)
    assert verdict.ok, [c.text() for c in verdict.failed]
    return verdict.evidence.prefix


# Each bundled agent with each scenario it can run (the protocol targets declare no compaction).
PAIRS = [
    (name, target)
    for target in TARGETS
    for name in SCENARIOS
    if name != "compaction-crash" or target in ("reference", "node-reference")
]


@needs_ptrace
@pytest.mark.parametrize(("name", "target"), PAIRS)
def test_a_log_replays_as_the_same_facts(name: str, target: str, tmp_path: Path) -> None:
    scenario = load_scenario(REPO / "scenarios" / f"{name}.toml")
    spec = load_target(REPO / "targets" / f"{target}.toml")
    clean = run_case(scenario.with_crash(None), spec, {}, tmp_path / "clean").evidence.prefix
    assert _shapes(_replayed(scenario, clean, target, tmp_path / "clean-replay")) == _shapes(clean)
    crashed = run_case(scenario, spec, {}, tmp_path / "crashed").evidence.prefix
    assert _shapes(_replayed(scenario, crashed, target, tmp_path / "crash-replay")) == _shapes(crashed)


def _idle(path: Path) -> bool:
    """A fixture that ends idle with an operation to replay (a log that is only its header has none)."""
    reduced = reduce(path.read_bytes())
    return (
        bool(reduced["ok"])
        and reduced["state"]["operation"]["kind"] == "idle"
        and b"runStarted" in path.read_bytes()
    )


IDLE = sorted(p for p in (REPO / "results" / "fixtures" / "fixtures").glob("*.jsonl") if _idle(p))


@needs_ptrace
@pytest.mark.parametrize("fixture", IDLE, ids=[p.stem for p in IDLE])
def test_each_idle_log_of_the_mined_corpus_is_a_scenario_the_correct_agent_passes(
    fixture: Path, tmp_path: Path
) -> None:
    inferred = api.from_log(fixture)
    verdict = api.run(inferred.scenario, results=tmp_path)
    assert verdict.ok, [c.text() for c in verdict.failed]


def test_what_cannot_be_replayed_is_refused_with_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(NotReplayable, match="no header"):
        scenario_from_log(b"")
    header = next(iter(IDLE)).read_bytes().split(b"\n")[0] + b"\n"
    with pytest.raises(NotReplayable, match="no operation"):
        scenario_from_log(header)
    (tmp_path / "empty.jsonl").write_bytes(header)
    assert main(["scenario", "from-log", str(tmp_path / "empty.jsonl")]) == 2
    assert "no operation" in capsys.readouterr().err
    assert main(["scenario", "from-log", str(tmp_path / "missing.jsonl")]) == 2


def test_the_command_writes_a_scenario_and_says_what_it_could_not_infer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = REPO / "results" / "fixtures" / "fixtures" / "full-workflow-clean.jsonl"
    out = tmp_path / "replay.toml"
    assert main(["scenario", "from-log", str(log), "--out", str(out)]) == 0
    said = capsys.readouterr().out
    assert "file 'README.md': what read returned" in said
    assert "bash call" in said and "depends on the world" in said
    replay = load_scenario(out)
    assert [len(t.tool_calls) for t in replay.turns] == [2, 1, 1, 0] and replay.crash is None
    assert main(["scenario", "from-log", str(log), "--out", str(out)]) == 2  # no overwrite without --force
