"""Each TINY_REFERENCE_BUG switch really changes the reference agent's behaviour, and only when set."""

from __future__ import annotations

import pytest

from chaos.contract import Reducer, reduce
from chaos.contract import facts as F
from chaos.scenario.model import Turn
from tests.agent_world import bash, read
from tests.test_reference_agent import _complete, _cut_after, _resume, _started, world

pytestmark = pytest.mark.slow  # starts agent processes (-m 'not slow' leaves it out)

READ_THEN_STOP = [Turn(tool_calls=[read("README.md")]), Turn(text="It says hello.")]
DEPLOY_THEN_STOP = [Turn(tool_calls=[bash("./deploy.sh prod")]), Turn(text="Deployed.")]


def test_stale_assistant_calls_corrupts_the_log_after_a_replayed_read() -> None:
    full, name = _complete(READ_THEN_STOP)
    prefix = _cut_after(full, _started("read"))
    code, final, _, _ = _resume(READ_THEN_STOP, prefix, name)
    assert code == 0 and reduce(final)["ok"]
    _, final, _, _ = _resume(READ_THEN_STOP, prefix, name, TINY_REFERENCE_BUG="stale-assistant-calls")
    assert reduce(final)["ok"] is False
    assert reduce(final)["error"]["code"] == "INVALID_TRANSITION"


def test_replay_never_tools_runs_the_deploy_again() -> None:
    full, name = _complete(DEPLOY_THEN_STOP)
    prefix = _cut_after(full, _started("bash"))
    _, _, effects, _ = _resume(DEPLOY_THEN_STOP, prefix, name)
    assert effects == []
    _, _, effects, _ = _resume(DEPLOY_THEN_STOP, prefix, name, TINY_REFERENCE_BUG="replay-never-tools")
    assert len(effects) == 1 and len(effects[0]["pending"]) == 1, "re-ran an intent that was already started"


def test_intent_after_effect_runs_the_tool_before_its_intent_is_durable() -> None:
    for bug, expected_pending in (("", 1), ("intent-after-effect", 0)):
        with world(DEPLOY_THEN_STOP) as w:
            assert w.agent("deploy", TINY_REFERENCE_BUG=bug).returncode == 0
            [effect] = w.effects()
            assert len(effect["pending"]) == expected_pending, bug


def test_no_torn_tail_repair_glues_new_facts_onto_torn_bytes() -> None:
    full, name = _complete(READ_THEN_STOP)
    prefix = _cut_after(full, _started("read")) + b'{"kind":"rec'
    code, final, _, _ = _resume(READ_THEN_STOP, prefix, name)
    assert code == 0 and reduce(final)["ok"]
    _, final, _, _ = _resume(READ_THEN_STOP, prefix, name, TINY_REFERENCE_BUG="no-torn-tail-repair")
    assert reduce(final)["error"]["code"] == "MALFORMED_JSON"


def test_unbounded_retry_sends_a_third_attempt() -> None:
    full, name = _complete(READ_THEN_STOP)
    first_attempt = _cut_after(full, lambda f: f["kind"] == "record" and f["record"]["type"] == "stepAttempt")
    reducer = Reducer()
    reducer.feed(first_attempt)
    assert reducer.state is not None and reducer.state.operation is not None
    step = reducer.state.operation.step
    assert step is not None
    retry = {
        "type": "startStep",
        "stepKind": "assistant",
        "attempt": 2,
        "contextThroughEntryId": step.context_through,
    }
    w = F.Writer(reducer)
    prefix = first_attempt + w.commit(
        F.step_attempt(reducer.state.operation, retry, step.step_id, w.new_id(), step.snapshot)
    )
    code, final, _, requests = _resume(READ_THEN_STOP, prefix, name)
    assert (code, requests, final) == (3, 0, prefix), "attempts exhausted: blocked, nothing sent or written"
    _, _, _, requests = _resume(READ_THEN_STOP, prefix, name, TINY_REFERENCE_BUG="unbounded-retry")
    assert requests >= 1


def test_skip_finish_on_resume_leaves_the_operation_open() -> None:
    full, name = _complete(READ_THEN_STOP)
    prefix = _cut_after(full, lambda f: f["kind"] == "entry" and f["entry"].get("stopReason") == "stop")
    _, final, _, _ = _resume(READ_THEN_STOP, prefix, name)
    assert reduce(final)["state"]["operation"] == {"kind": "idle"}
    _, final, _, _ = _resume(READ_THEN_STOP, prefix, name, TINY_REFERENCE_BUG="skip-finish-on-resume")
    assert reduce(final)["state"]["operation"]["kind"] == "run"


def test_unknown_bug_name_is_a_usage_error() -> None:
    with world(READ_THEN_STOP) as w:
        result = w.agent("go", TINY_REFERENCE_BUG="no-such-bug")
        assert result.returncode == 2 and "TINY_REFERENCE_BUG" in result.stderr
