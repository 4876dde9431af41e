"""A traced agent waits at every trap for a Python thread that needs the GIL: while any process is
traced, the interpreter's switch interval is lowered, and restored when the last one is gone."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from chaos.process.tree import SWITCH_INTERVAL, TracedProcess

pytestmark = pytest.mark.slow  # starts agent processes (-m 'not slow' leaves it out)


class _Never:
    def attach(self, proc: TracedProcess) -> None:
        pass

    def at_trap(self, pid: int, tag: int) -> bool:
        return False


def test_the_switch_interval_is_low_only_while_a_process_is_traced(tmp_path: Path) -> None:
    before = sys.getswitchinterval()
    assert before > SWITCH_INTERVAL
    env = {"PATH": "/usr/bin:/bin"}
    out, err = tmp_path / "out", tmp_path / "err"
    first = TracedProcess(["sleep", "0.5"], tmp_path, env, out, err, _Never())
    second = TracedProcess(["sleep", "1"], tmp_path, env, out, err, _Never())
    try:
        assert sys.getswitchinterval() == SWITCH_INTERVAL
        assert first.wait(10)
        first.reap()
        assert sys.getswitchinterval() == SWITCH_INTERVAL, "one process is still traced"
        assert second.wait(10)
        second.reap()
    finally:
        first.kill()
        second.kill()
    for _ in range(500):  # the tracer thread restores it on its way out, just after the exit is seen
        if sys.getswitchinterval() == before:
            break
        time.sleep(0.01)
    assert sys.getswitchinterval() == before
