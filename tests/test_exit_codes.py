"""Exit codes tell a regression from a typo from a bug in chaos: a fault injected into each of chaos's
own threads (the tracer, the model server, the report writer) ends in exit 3 with its cause, never in
1 (a finding against the agent) or 2 (unusable input)."""

from __future__ import annotations

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
