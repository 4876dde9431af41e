"""Crash states, not crash points (issue 55, point 2): a recovery run once per crash state and taken, in
its own names, by every case that left that state; verified case by case against each case's own."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from chaos.cli import main
from chaos.cycle.share import Recovery
from chaos.process.phase import Kept, Phase, PhaseKind
from tests.conftest import REPO, needs_ptrace

A, B = "01a24d76-41a5-751c-8af7-eb89192c3d8d", "01a24d76-41cd-7518-82b2-9c33ba5b9b41"
C, D = "11111111-2222-7333-8444-555555555555", "99999999-2222-7333-8444-555555555555"
THEIRS = (b"/tmp/chaos-aaaa/workspace", b"/tmp/chaos-aaaa")
OURS = (b"/tmp/chaos-bbbb/workspace", b"/tmp/chaos-bbbb")
PREFIX = f'{{"id":"{A}","cwd":"/tmp/chaos-aaaa/workspace"}}\n{{"id":"{B}","parent":"{A}"}}\n'.encode()
MINE = PREFIX.replace(A.encode(), C.encode()).replace(B.encode(), D.encode()).replace(b"aaaa", b"bbbb")
APPENDED = (
    f'{{"id":"77777777-2222-7333-8444-555555555555","parent":"{B}","text":"/tmp/chaos-aaaa/workspace/x"}}\n'
)


def _recovery(appended: bytes = APPENDED.encode()) -> Recovery:
    resume = Phase(
        PhaseKind.RESUME,
        ["agent", "resume", A],
        index=1,
        kept=Kept(log_before=PREFIX, log_after=PREFIX + appended, ledger_before=1),
    )
    ledger = ({"effect": "deploy", "callId": "call_1", "detail": ["/tmp/chaos-aaaa/workspace"]},)
    return Recovery("first", PREFIX, THEIRS, (resume,), ledger, (), 1, 2, {"s1": 1})


def test_a_recovery_taken_by_another_case_speaks_in_that_case_s_names() -> None:
    taken = _recovery().renamed(MINE, OURS)
    assert taken is not None
    (resume,) = taken.phases
    assert resume.argv == ["agent", "resume", C]  # the session it resumes is this case's
    assert resume.kept.log_before == MINE  # this case's prefix, byte for byte (its own clock and all)
    appended = resume.kept.log_after[len(MINE) :]
    # an id the prefixes share is renamed, a new one the recovery made is kept, and so are the paths
    assert appended == APPENDED.replace(B, D).replace("aaaa", "bbbb").encode()
    assert taken.ledger[0]["detail"] == ["/tmp/chaos-bbbb/workspace"]
    assert (taken.ledger_from, taken.requests_from) == (1, 2)


def test_a_recovery_renaming_cannot_make_another_case_s_is_not_taken() -> None:
    assert _recovery().renamed(MINE + b" ", OURS) is None  # prefixes of other lengths
    other_ids = MINE.replace(D.encode(), C.encode())  # one id where the representative had two
    assert _recovery().renamed(other_ids, OURS) is None
    rewritten = _recovery()
    resume = rewritten.phases[0]
    resume.kept.log_after = PREFIX[:10] + b"truncated\n"  # the resume rewrote the prefix
    assert rewritten.renamed(MINE, OURS) is None


PATHS = [str(REPO / "scenarios" / f"{n}.toml") for n in ("compaction-crash", "pending-deploy-interrupted")]
THREE = "stale-assistant-calls,replay-never-tools,intent-after-effect"


def _sweep(tmp_path: Path, mode: str, *extra: str) -> tuple[int, dict[str, Any], list[dict[str, Any]]]:
    results = tmp_path / mode
    argv = ["sweep", *PATHS, "-j", "2", "--mine", "none", "--crash-states", mode, "--results", str(results)]
    code = main([*argv, *extra])
    summary = json.loads((results / "summary.json").read_text())
    cases = [json.loads(line) for line in (results / "sweep.jsonl").read_text().splitlines()]
    return code, summary, cases


@pytest.mark.slow
@needs_ptrace
def test_shared_recoveries_judge_every_case_as_its_own_would(tmp_path: Path) -> None:
    """The bug switches' sweep verified case by case (each case run in full, and judged again on the
    recovery it would have taken), then run shared: the same verdicts, the same groups, a fifth or more
    of the recoveries not run."""
    env = ["--target-env", f"TINY_REFERENCE_BUG={THREE}"]
    verdicts = {}
    for mode in ("verify", "shared"):
        code, summary, cases = _sweep(tmp_path, mode, *env)
        assert code == 1
        verdicts[mode] = (
            {c["case"]: (c["ok"], sorted(x["id"] for x in c["checks"] if not x["ok"])) for c in cases},
            sorted(g["label"] for g in summary["groups"]),
        )
        took = [c for c in cases if c["sharedWith"]]
        assert summary["sharedRecoveries"] == len(took)
        if mode == "verify":
            assert not took  # every case ran its own recovery
            (said,) = [line for line in summary["starts"] if "crash states verified" in line]
            assert int(said.split(": ")[1].split()[0]) > 20, said
        else:
            assert len(took) > len(cases) // 5
    assert verdicts["shared"] == verdicts["verify"]
    assert len(verdicts["shared"][1]) == 3


@pytest.mark.slow
@needs_ptrace
def test_verify_says_when_a_shared_recovery_would_judge_a_case_otherwise(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The verification can fail: a recovery taken without its last phase (the rerun of the finished
    session) judges the case otherwise, and the sweep ends 3, chaos's own fault, naming the case."""
    renamed = Recovery.renamed

    def lossy(self: Recovery, prefix: bytes, places: tuple[bytes, ...]) -> Recovery | None:
        taken = renamed(self, prefix, places)
        return None if taken is None else replace(taken, phases=taken.phases[:-1])

    monkeypatch.setattr(Recovery, "renamed", lossy)
    path = str(REPO / "scenarios" / "pending-deploy-interrupted.toml")
    argv = ["sweep", path, "--fault", "kill", "--fault", "power-loss", "--crash-states", "verify"]
    assert main([*argv, "--mine", "none", "--results", str(tmp_path)]) == 3
    said = capsys.readouterr().err
    assert "judged on the recovery of" in said and "again-appends-nothing" in said, said
