"""``chaos target check``: the bundled targets are usable, and each broken target in tests/targets
fails with the concern it breaks and a message that says what to change (exit 2 for the target
file, 1 for the agent's own misbehaviour, never a traceback)."""

from __future__ import annotations

from pathlib import Path

import pytest

from chaos.cli import main
from tests.conftest import REPO, needs_node, needs_ptrace

pytestmark = pytest.mark.slow  # starts agent processes (-m 'not slow' leaves it out)

BUNDLED = [
    "reference",
    "reference-anthropic",
    "reference-responses",
    pytest.param("node-reference", marks=needs_node),
]


@needs_ptrace
@pytest.mark.parametrize("target", BUNDLED)
def test_bundled_targets_are_usable(target: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["target", "check", target, "--results", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert out.count("✓") == 7 and "usable: chaos sweep can drive this target" in out


BROKEN = [
    # target file, exit code, the concern that fails, what the message must say
    ("missing-program", 2, "the start and resume commands run", "'/nonexistent/agent' is not an executable"),
    ("wrong-sessions", 2, "writes its log where sessions says", ".agent/logs/*.jsonl' matched nothing"),
    ("wrong-exit", 2, "exit codes mean what [exit] says", "set [exit] completed = 0"),
    ("swapped-exit", 2, "exit codes mean what [exit] says", "set [exit] blocked = 3"),
    ("typo-program", 2, "the start and resume commands run", "did not start"),
    ("bad-configuration", 2, "the configuration command prints JSON", "printed no strict JSON"),
    ("no-identity", 2, "the environment identity chaos gives reaches", "pass {environment_identity}"),
    ("rewrites-log", 1, "appended only", "a session log is append-only"),
    ("hang-on-resume", 1, "phases end in time", "did not end in time"),
    ("leaves-daemon", 1, "leave no process", "outlived its phase"),
    ("writes-outside", 1, "write nothing outside the workspace", "wrote beside its workspace"),
]


@needs_ptrace
@pytest.mark.parametrize(("target", "code", "concern", "says"), BROKEN, ids=[b[0] for b in BROKEN])
def test_each_broken_target_fails_precisely(
    target: str, code: int, concern: str, says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = REPO / "tests" / "targets" / f"{target}.toml"
    got = main(["target", "check", str(spec), "--timeout", "5", "--results", str(tmp_path)])
    captured = capsys.readouterr()
    out = captured.out + captured.err
    assert got == code, out
    assert "Traceback" not in out
    failed = [line for line in out.splitlines() if line.lstrip().startswith("✗")]
    assert any(concern in line for line in failed), out
    assert says in out, out


def test_the_slow_target_is_usable(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Slow is not broken: a check that fails every target would pass the table above."""
    spec = REPO / "tests" / "targets" / "slow.toml"
    assert main(["target", "check", str(spec), "--results", str(tmp_path)]) == 0, capsys.readouterr().out


@needs_ptrace
@pytest.mark.parametrize("target", ["wrong-sessions", "bad-configuration", "missing-program"])
def test_what_nothing_showed_is_not_judged_and_the_fix_comes_first(
    target: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 38: when the agent did not start (or sessions matched nothing), the other concerns showed ✓."""
    spec = REPO / "tests" / "targets" / f"{target}.toml"
    assert main(["target", "check", str(spec), "--timeout", "5", "--results", str(tmp_path)]) == 2
    lines = [
        line for line in capsys.readouterr().out.splitlines() if line.startswith("  ") and line[2] in "✓✗-"
    ]
    assert lines[0].startswith("  ✗"), lines
    assert not any(line.startswith("  ✓") for line in lines), lines
    assert sum("not judged" in line for line in lines) == len(lines) - 1, lines


def test_the_doctor_notes_a_missing_request_deadline_without_changing_its_verdict(tmp_path: Path) -> None:
    """Issue 36: without request_deadline a hang case waits out the phase and may blame a correct agent."""
    from dataclasses import replace

    from chaos.doctor.diagnosis import Diagnosis, notes
    from chaos.scenario import load_target

    reference = load_target(REPO / "targets" / "reference.toml")
    assert notes(reference) == []
    silent = replace(reference, request_deadline=None, takes_deadline=False)
    said = Diagnosis(silent, [], tmp_path, notes(silent))
    assert said.exit_code == 0 and "usable: chaos sweep can drive this target" in said.text()
    assert "note: no request_deadline: a case whose fault withholds a model answer" in said.text()
