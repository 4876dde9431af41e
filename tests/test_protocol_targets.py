"""The shipped scenarios, run as written against an agent that speaks each protocol.

The reference agent speaks Anthropic Messages and OpenAI Responses when its
target says so (``reference-anthropic``, ``reference-responses``); the model
server then serves only that protocol, so a request in any other shape fails
the run. Every scenario must pass as it does over chat completions, and the
section-8 bug must be caught with the same failure key whichever the wire.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from chaos.cli import main
from tests.conftest import MCP_ONLY, REPO, needs_ptrace

pytestmark = pytest.mark.slow  # starts agent processes (-m 'not slow' leaves it out)

PROTOCOL = {"reference-anthropic": "anthropic", "reference-responses": "openai-responses"}
TARGETS = list(PROTOCOL)
SCENARIOS = sorted(p.stem for p in (REPO / "scenarios").glob("*.toml"))


@needs_ptrace
@pytest.mark.parametrize("target", TARGETS)
def test_every_scenario_passes_as_written(target: str, tmp_path: Path) -> None:
    failed, spoken, skipped = [], set(), []
    for name in SCENARIOS:
        out = tmp_path / name
        if main(["run", name, "--target", target, "--results", str(out)]) != 0:
            failed.append(name)
        if not (out / "requests.json").exists():
            skipped.append(name)  # a capability the target does not declare (it does not stream)
            continue
        spoken |= {r["protocol"] for r in json.loads((out / "requests.json").read_text())}
    assert failed == []
    assert skipped == ["crash-mid-stream", *MCP_ONLY]  # no streaming; its tools are its own
    assert spoken == {PROTOCOL[target]}


@needs_ptrace
@pytest.mark.parametrize("target", TARGETS)
def test_the_section8_bug_is_caught_over_each_protocol(
    target: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The failure key names the bug, not the wire: the same key as over chat completions."""
    keys = []
    for name in ("reference", target):
        argv = ["run", "section8-read-replay", "--target", name, "--results", str(tmp_path / name)]
        assert main([*argv, "--target-env", "TINY_REFERENCE_BUG=stale-assistant-calls"]) == 1
        keys.append(re.findall(r"failure \[(F-[0-9a-f]+)\]", capsys.readouterr().out))
    assert keys[0] == keys[1] != []
