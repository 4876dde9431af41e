"""Exact kills are probed, never assumed: where ptrace is refused chaos polls and says so once; a tracer
that breaks is chaos's own failure (exit 3, tests/test_exit_codes.py), never the agent's."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

from chaos.cli import main
from chaos.process import ptrace
from tests.conftest import REPO

pytestmark = pytest.mark.slow  # starts agent processes (-m 'not slow' leaves it out)

SECTION8 = str(REPO / "scenarios" / "section8-read-replay.toml")
PTRACE = {"x86_64": 101, "aarch64": 117}
# Run the rest of argv with every ptrace call refused (EPERM), as in a locked-down container.
REFUSE = r"""
import ctypes, os, struct, sys
arch, nr = int(sys.argv[1]), int(sys.argv[2])
program = [(0x20, 0, 0, 4), (0x15, 0, 3, arch), (0x20, 0, 0, 0), (0x15, 0, 1, nr),
           (0x06, 0, 0, 0x00050000 | 1), (0x06, 0, 0, 0x7FFF0000)]
code = b"".join(struct.pack("HBBI", *insn) for insn in program)
buf = ctypes.create_string_buffer(code, len(code))
prog = ctypes.create_string_buffer(struct.pack("HxxxxxxQ", len(program), ctypes.addressof(buf)))
libc = ctypes.CDLL(None, use_errno=True)
assert libc.prctl(38, 1, 0, 0, 0) == 0 and libc.prctl(22, 2, prog, 0, 0) == 0
os.execv(sys.executable, [sys.executable, *sys.argv[3:]])
"""


def _verdict(folder: Path) -> dict:  # type: ignore[type-arg]
    return json.loads((folder / "verdict.json").read_text())  # type: ignore[no-any-return]


def test_no_ptrace_polls_with_a_one_line_notice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CHAOS_NO_PTRACE", "1")
    code = main(["run", SECTION8, "--results", str(tmp_path)])
    err = capsys.readouterr().err
    assert code in (0, 1)
    assert err.count("exact kills unavailable (CHAOS_NO_PTRACE=1); polling the log instead") == 1
    assert _verdict(tmp_path)["phases"][0]["mechanism"] == "poll"


@pytest.mark.skipif(platform.machine() not in PTRACE, reason="the refusal filter knows x86_64 and aarch64")
def test_a_refused_ptrace_falls_back_to_polling_instead_of_blaming_the_agent(tmp_path: Path) -> None:
    """Issue 12: where PTRACE_TRACEME was refused every run said 'the agent ended first (exit 126)'."""
    arch = ptrace.SYSCALLS[platform.machine()][0]
    argv = [sys.executable, "-c", REFUSE, str(arch), str(PTRACE[platform.machine()])]
    argv += ["-m", "chaos", "run", SECTION8, "--results", str(tmp_path)]
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=300, env={**os.environ, "CHAOS_NO_PTRACE": ""}
    )
    assert "exact kills unavailable (the kernel refused PTRACE_TRACEME" in done.stderr, done.stderr
    verdict = _verdict(tmp_path)
    assert verdict["phases"][0]["mechanism"] == "poll"
    assert "126" not in json.dumps([p["returncode"] for p in verdict["phases"]])
    assert done.returncode in (0, 1), done.stdout + done.stderr
