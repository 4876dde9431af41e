"""A session log from an untrusted agent never reaches a terminal or a page unescaped."""

from __future__ import annotations

import re
import socket
import threading
from pathlib import Path

import pytest

from chaos.case.result import CaseResult, CaseView
from chaos.check.base import Check
from chaos.cli import main
from chaos.contract import Reducer
from chaos.contract import facts as F
from chaos.report.html import write_html
from chaos.report.show import render, timeline
from chaos.report.summary import summarize
from tests.agent_world import world

pytestmark = pytest.mark.slow  # starts agent processes (-m 'not slow' leaves it out)

EVIL = "\x1b]0;owned\x07\x1b[2J\u202e<script>alert(1)</script>\x9b"
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e]")


def _hostile_log() -> bytes:
    w = F.Writer(Reducer(), F.counter_ids())
    data = w.header("/workspace", "evil", EVIL, EVIL)
    data += w.commit(*F.start_run(w.new_id, "hi"))
    op = w.state.operation
    assert op is not None
    snapshot = {
        "model": EVIL,
        "systemPromptDigest": "sha256:" + "0" * 64,
        "tools": [],
        "adapterIdentity": EVIL,
        "routingIdentity": "r",
        "outputOptionsDigest": "sha256:" + "0" * 64,
    }
    plan = {"stepKind": "assistant", "attempt": 1, "contextThroughEntryId": op.input_entry_id}
    data += w.commit(F.step_attempt(op, plan, w.new_id(), w.new_id(), snapshot))
    data += w.commit(F.step_failed(op, EVIL, EVIL))
    return data + b'{"torn tail' + EVIL.encode()


def _clean(text: str) -> None:
    assert not RAW.search(text), repr(RAW.search(text))
    assert "\\x1b" in text, "the escape is shown, escaped"


def test_show_escapes_every_control_character(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "hostile.jsonl"
    log.write_bytes(_hostile_log())
    main(["show", str(log)])
    _clean(capsys.readouterr().out)


def test_diff_escapes_every_control_character(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a.jsonl").write_bytes(b"".join(_hostile_log().splitlines(True)[:2]))
    (tmp_path / "b.jsonl").write_bytes(_hostile_log())
    main(["diff", str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl")])
    _clean(capsys.readouterr().out)


def test_the_html_report_escapes_the_log_and_the_checks(tmp_path: Path) -> None:
    view = CaseView(render(timeline(_hostile_log())), ["+ " + EVIL])
    check = Check("final-reduces", "final log reduces", False, "ok", EVIL)
    result = CaseResult(
        case=f"{EVIL} @ stepFailed#1",
        scenario=EVIL,
        target="reference",
        ok=False,
        crash="stepFailed#1",
        landed="exactly",
        checks=[check],
        reproduce=f"chaos run {EVIL}",
        view=view,
    )
    write_html(tmp_path / "report.html", summarize([result], [], 0.0))
    page = (tmp_path / "report.html").read_text()
    _clean(page)
    assert "<script>" not in page and "&lt;script&gt;" in page


def test_diff_of_two_runs_compares_by_position_and_kind(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 13: two runs of one scenario are different sessions, never a 'rewrite' of each other."""
    section8 = str(Path(__file__).resolve().parent.parent / "scenarios" / "section8-read-replay.toml")
    for name in ("a", "b"):
        assert main(["run", section8, "--results", str(tmp_path / name)]) == 0
    capsys.readouterr()
    main(["diff", str(tmp_path / "a"), str(tmp_path / "b")])
    out = capsys.readouterr().out
    assert "different sessions" in out and "rewrote" not in out
    assert "the same kinds of facts, line by line" in out


def test_a_bad_status_line_from_the_provider_is_a_step_failure_not_a_crash() -> None:
    """Issue 13: http.client.HTTPException made the reference agent exit 1, which means a corrupt log."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()

    def serve() -> None:
        connection, _ = listener.accept()
        connection.recv(65536)
        connection.sendall(b"HTTP/1.1 99999 garbage\r\n\r\n")
        connection.close()

    threading.Thread(target=serve, daemon=True).start()
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
    with world([]) as w:
        result = w.agent("hi", TINY_BASE_URL=url)
        listener.close()
        assert result.returncode == 4, result.stderr  # failed: the live provider error is a stepFailed
        assert b'"stepFailed"' in w.log_path().read_bytes()


def test_the_saves_an_interpreter_writes_are_read_bounded_and_strictly(tmp_path: Path) -> None:
    """The ``saves`` file is written inside the agent's process: chaos reads at most 1 MiB of it, and a
    line that is not ``KIND N KEY`` (a kind that is no identifier, a number that is none or not ASCII
    digits, bytes that are not UTF-8) is not a save."""
    from chaos.world.sandbox import SAVES_READ, Sandbox

    box = Sandbox(tmp_path)
    box.gate_dir.mkdir()
    lines = (
        b"writes 1 abc\n$(rm -rf) 2 x\nwrites two x\nwrites \xc2\xb2 x\n\xff\xfe 3 y\ncheckpoint 2 "
        + b"k" * 500
        + b"\n"
    )
    (box.gate_dir / "saves").write_bytes(lines + b"writes 9 " + b"z" * (2 * SAVES_READ))
    saves = box.saves()
    assert saves[:2] == [("writes", 1, "abc"), ("checkpoint", 2, "k" * 200)]
    assert len(saves) == 3 and len(saves[2][2]) == 200  # the oversized line, cut where the read stopped
