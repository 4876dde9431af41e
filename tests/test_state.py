"""Crash states (issue 55, point 1): the digest of what a resume can read equates two crashes that left
the same state however their runs named things, and tells apart any two that left different ones."""

from __future__ import annotations

import os
import re
from pathlib import Path

from chaos.case.run import run_case
from chaos.process.phase import Kept
from chaos.process.state import canonical_ledger, canonical_log, crash_state
from chaos.scenario import load_scenario
from chaos.scenario.model import Boundary, Strike
from chaos.scenario.target import find_target, load_target
from tests.conftest import REPO

ONE = (
    b'{"kind":"header","id":"01a24d76-41a5-751c-8af7-eb89192c3d8d","createdAt":1796595925445,'
    b'"cwd":"/tmp/chaos-aaa/workspace"}\n'
    b'{"seq":1,"id":"01a24d76-41cd-7518-82b2-9c33ba5b9b41","timestamp":1796595925453,'
    b'"parent":"01a24d76-41a5-751c-8af7-eb89192c3d8d","text":"deploy"}\n'
)
TWO = (
    b'{"kind":"header","id":"11111111-2222-7333-8444-555555555555","createdAt":1796595999999,'
    b'"cwd":"/tmp/chaos-bbb/workspace"}\n'
    b'{"seq":1,"id":"99999999-2222-7333-8444-555555555555","timestamp":1796596000000,'
    b'"parent":"11111111-2222-7333-8444-555555555555","text":"deploy"}\n'
)


def test_two_runs_that_made_the_same_facts_durable_read_alike() -> None:
    places = (b"/tmp/chaos-aaa/workspace",)
    assert canonical_log(ONE, places) == canonical_log(TWO, (b"/tmp/chaos-bbb/workspace",))
    # what differs in what the agent made durable keeps them apart: a text, which id a line points at
    assert canonical_log(ONE, places) != canonical_log(TWO.replace(b"deploy", b"delete"), places)
    crossed = TWO.replace(b'"parent":"1111', b'"parent":"9999')  # the line points at itself
    assert canonical_log(ONE, places) != canonical_log(crossed, (b"/tmp/chaos-bbb/workspace",))
    # a torn tail is part of the state
    assert canonical_log(ONE + b'{"seq":2', places) != canonical_log(ONE, places)


def test_two_ledgers_of_the_same_effects_read_alike() -> None:
    """Which effects ran, for which calls, in which of the run's processes: not when, nor under which pid."""
    one = b'{"effect":"deploy","pid":4242,"phase":"start","time":1796595925.4}\n{"effect":"deploy","pid":4242,"phase":"done","time":1796595925.5}\n'
    two = one.replace(b"4242", b"977").replace(b"1796595925", b"1796596000")
    assert canonical_ledger(one) == canonical_ledger(two)
    assert canonical_ledger(one) != canonical_ledger(
        one.replace(b'"pid":4242,"phase":"done"', b'"pid":5,"phase":"done"')
    )
    assert canonical_ledger(one) != canonical_ledger(one.split(b"\n")[0] + b"\n")  # the effect never ended


def test_every_other_file_of_the_workspace_is_part_of_the_state(tmp_path: Path) -> None:
    work = tmp_path / "workspace"
    (work / "logs").mkdir(parents=True)
    (work / "logs" / "s.jsonl").write_bytes(ONE)
    kept = Kept(log_after=ONE)
    first = crash_state(kept, work, "logs/s.jsonl", tmp_path)
    (work / "logs" / "s.jsonl").write_bytes(TWO)  # the log is read as kept, not from the file
    assert crash_state(kept, work, "logs/s.jsonl", tmp_path) == first
    (work / "notes.md").write_text("deployed")
    noted = crash_state(kept, work, "logs/s.jsonl", tmp_path)
    assert noted not in (None, first)
    (work / "notes.md").write_text("deployed twice")
    assert crash_state(kept, work, "logs/s.jsonl", tmp_path) not in (None, first, noted)
    # a link is its target's name, never followed; a FIFO is never opened (it would block)
    (work / "elsewhere").symlink_to("/etc/passwd")
    os.mkfifo(work / "pipe")
    assert crash_state(kept, work, "logs/s.jsonl", tmp_path) is not None
    deep = work / "d"
    for _ in range(70):  # deeper than the walk goes: the state is unknown, never a RecursionError
        deep = deep / "d"
    deep.mkdir(parents=True)
    assert crash_state(kept, work, "logs/s.jsonl", tmp_path) is None


def test_a_kill_and_a_power_cut_where_all_was_synced_leave_one_state(tmp_path: Path) -> None:
    """The reference agent syncs each fact: a kill and a power cut at its first step attempt leave the
    same log (its own ids and clock aside); a kill at the next tool intent leaves another."""
    scenario = load_scenario(REPO / "scenarios" / "full-workflow.toml")
    target = load_target(find_target("reference"))
    states = []
    for n, crash in enumerate(("stepAttempt", "stepAttempt", "toolStarted")):
        fault = "power-loss" if n == 1 else "kill"
        strike = Strike(Boundary.parse(crash), fault)
        verdict = run_case(scenario.with_crash(strike), target, folder=tmp_path / str(n))
        assert verdict.evidence.start.landing.reached
        states.append(verdict.evidence.start.kept.state)
    assert states[0] is not None and states[0] == states[1] != states[2]
    assert verdict.result().phases[0].state == states[2]  # kept in verdict.json and the journal


def test_a_kill_before_an_effect_and_one_during_it_leave_one_log_and_two_states(tmp_path: Path) -> None:
    """The intent is durable in both, and the deploy ran in one only: the log cannot tell them apart, the
    world (the effect ledger) can, and a recovery of one judged for the other would be wrong."""
    scenario = load_scenario(REPO / "scenarios" / "deploy-intent-durable.toml")
    target = load_target(find_target("reference"))
    kept = []
    for n, crash in enumerate(("toolStarted[toolName=bash]", "effect-running[effect=deploy]")):
        strike = Strike(Boundary.parse(crash), "kill")
        verdict = run_case(scenario.with_crash(strike), target, folder=tmp_path / str(n))
        assert verdict.evidence.start.landing.reached
        kept.append((verdict.evidence.prefix, verdict.evidence.start.kept.state))
    world = re.compile(rb'"(?:cwd|environmentIdentity)":"[^"]*"')  # each world's own folder
    logs = [canonical_log(world.sub(b"<world>", prefix)) for prefix, _ in kept]
    assert logs[0] == logs[1]
    assert None not in (kept[0][1], kept[1][1]) and kept[0][1] != kept[1][1]
