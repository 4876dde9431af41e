"""Exit codes tell a regression from a typo from a bug in chaos: a fault injected into each of chaos's
own threads (the tracer, the model server, the report writer) ends in exit 3 with its cause, never in
1 (a finding against the agent) or 2 (unusable input)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chaos.cli import main
from chaos.errors import ExitCode
from chaos.process import ptrace
from chaos.report import publish
from chaos.world import protocols

pytestmark = pytest.mark.slow  # starts agent processes (-m 'not slow' leaves it out)

SECTION8 = "section8-read-replay"


def _broken(*args: object, **kwargs: object) -> None:
    raise RuntimeError("injected bug")


def test_the_codes_are_distinct() -> None:
    assert len({ExitCode.OK, ExitCode.FINDING, ExitCode.USAGE, ExitCode.INTERNAL}) == 4


def test_a_tracer_that_breaks_is_chaos_s_failure_not_a_finding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    if ptrace.unavailable() is not None:
        pytest.skip(f"no exact kills here: {ptrace.unavailable()}")
    monkeypatch.setattr(ptrace, "trace", _broken)
    code = main(["run", SECTION8, "--results", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == ExitCode.INTERNAL, err
    assert "chaos itself failed, not the agent" in err and "injected bug" in err


def test_a_model_server_that_breaks_is_chaos_s_failure_not_a_finding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(protocols.OpenAIChat, "answer", _broken)
    code = main(["run", SECTION8, "--results", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == ExitCode.INTERNAL, err
    assert "the model server failed" in err and "injected bug" in err


def test_a_report_writer_that_breaks_is_chaos_s_failure_not_a_finding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(publish, "write_html", _broken)
    argv = [
        "sweep",
        str(Path(__file__).parent.parent / "scenarios" / "open-attempt-retry.toml"),
        "--fault",
        "kill",
    ]
    code = main([*argv, "--budget", "5", "--mine", "none", "--results", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == ExitCode.INTERNAL, err
    assert "internal error" in err and "injected bug" in err


@pytest.mark.parametrize("command", ["run", "sweep"])
def test_an_agent_that_cannot_run_at_all_is_a_setup_to_mend_not_a_finding(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 53, point 5: an agent whose import failed (``ModuleNotFoundError``) got 17 findings in 3 distinct
    failures from a sweep. Its first process ending with a status ``[exit]`` does not name, before it made
    anything durable, is exit 2 with what it said."""
    reference = (Path(__file__).parent.parent / "targets" / "reference.toml").read_text()
    agent = tmp_path / "agent.py"  # it starts its session, then imports its SDK where it first calls it
    agent.write_text(
        "import os\nos.makedirs('.tiny-agent/sessions', exist_ok=True)\n"
        "open('.tiny-agent/sessions/s.jsonl', 'w').write('{}\\n')\nimport an_sdk_not_installed_here\n"
    )
    broken = f'start = ["{{python}}", "{agent}", "{{prompt}}"]'
    target = tmp_path / "broken.toml"
    target.write_text(
        "\n".join(broken if line.startswith("start =") else line for line in reference.splitlines())
    )
    argv = [command, SECTION8, "--target", str(target), "--results", str(tmp_path / "r")]
    code = main([*argv, "--fault", "kill"] if command == "sweep" else argv)
    err = capsys.readouterr().err
    assert code == ExitCode.USAGE, err
    assert "could not run" in err and "ModuleNotFoundError" in err and "Traceback (most recent" not in err


def test_a_failing_phase_s_last_words_are_in_the_finding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 53, point 6: a failure was named by its symptom (``same-outcome: the resume ended failed``)
    while its cause was in the agent's stderr, one file away. The finding prints what a process that
    failed said last."""
    reference = (Path(__file__).parent.parent / "targets" / "reference.toml").read_text()
    said = "Schema version not found: the database might be malformed"
    broken = "resume = " + json.dumps(["bash", "-c", f"echo '{said}' >&2; exit 7"])
    target = tmp_path / "broken.toml"
    target.write_text(
        "\n".join(broken if line.startswith("resume =") else line for line in reference.splitlines())
    )
    code = main(["run", SECTION8, "--target", str(target), "--results", str(tmp_path / "r")])
    out, err = capsys.readouterr()
    assert code == ExitCode.FINDING, out + err
    assert f"resume-1 exited 7 and said: {said}" in out


@pytest.mark.parametrize("bug", ["", "replay-never-tools"])
def test_a_scenario_s_expectations_are_judged_on_a_store_or_said_not_judged(
    bug: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 53, point 4: ``pending-deploy-interrupted`` expects ``effects = { deploy = 1 }`` and a plan; on a
    target judged on its store the deploy ran twice and chaos said ``ok`` (exit 0), with no word that the
    expectations were dropped. The effect count is judged on a store that promises at most once, and the
    plan (a session log's) is said not judged."""
    target = Path(__file__).parent / "targets" / "reference-store.toml"
    argv = ["run", "pending-deploy-interrupted", "--target", str(target), "--results", str(tmp_path / "r")]
    code = main([*argv, "--target-env", f"TINY_REFERENCE_BUG={bug}"] if bug else argv)
    out = capsys.readouterr().out
    assert code == (ExitCode.FINDING if bug else ExitCode.OK), out
    assert ("✗ effect deploy ran 1x" if bug else "✓ effect deploy ran 1x") in out
    assert "○ the oracle's plan for the crash prefix is what the scenario expects: not judged" in out
