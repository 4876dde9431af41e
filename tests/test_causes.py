"""One cause, one failure, named right; and the failure says exactly what broke.

A cause that fails makes the checks that read past it symptoms (not judged, naming the cause); an
explanation names the real cause (another writer, not a missing intent); what an agent did is said
even when the reducer rejects it; the oracle's errors name the fact, the field and what was expected.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from chaos.case.run import run_case
from chaos.case.verdict import Verdict
from chaos.check import check_all
from chaos.cli import main
from chaos.scenario import Strike, load_scenario, load_target
from chaos.scenario.model import Boundary
from tests.conftest import REPO, needs_ptrace

pytestmark = pytest.mark.slow  # starts agent processes (-m 'not slow' leaves it out)

REFERENCE = REPO / "targets" / "reference.toml"
TARGETS = REPO / "tests" / "targets"


def _run(
    name: str, tmp: Path, bug: str = "", target: Path = REFERENCE, timeout: float | None = None
) -> Verdict:
    env = {"TINY_REFERENCE_BUG": bug} if bug else {}
    scenario = load_scenario(REPO / "scenarios" / f"{name}.toml")
    return run_case(scenario, load_target(target), env, tmp / name, timeout)


def _checks(verdict: Verdict) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for check in verdict.checks:
        out.setdefault(check.id, []).append("fail" if not check.ok else "skip" if check.unjudged else "ok")
    return out


@needs_ptrace
def test_requests_after_a_rejected_line_are_not_judged(tmp_path: Path) -> None:
    """A request the reducer could not attribute (the log was rejected before it) was a second failure."""
    verdict = _run("section8-read-replay", tmp_path)
    evidence = verdict.evidence
    rejected = [{**r, "attempt": None, "rejected": 7} for r in evidence.requests]
    checks = {c.id: c for c in check_all(replace(evidence, requests=rejected))}
    assert checks["requests-attempted"].ok and "rejected at line 7" in checks["requests-attempted"].unjudged


@needs_ptrace
def test_an_effect_whose_intent_another_writer_resolved_is_that_writer_s_cause(tmp_path: Path) -> None:
    verdict = _run("two-writers", tmp_path, bug="no-session-lock")
    checks = _checks(verdict)
    assert verdict.failed[0].id == "one-writer"
    assert checks["intent-before-effect"] == ["ok"], [c.text() for c in verdict.checks]


@needs_ptrace
def test_a_plan_an_effect_before_its_intent_broke_is_that_effect_s_symptom(tmp_path: Path) -> None:
    """Issue 37: a scenario's hand-written plan for a crash during the effect failed as a second group."""
    verdict = _run("pending-deploy-interrupted", tmp_path, bug="intent-after-effect")
    checks = {c.id: c for c in verdict.checks}
    assert verdict.failed[0].id == "intent-before-effect"
    assert checks["prefix-plan"].ok and checks["prefix-plan"].unjudged.startswith(
        "a symptom of intent-before-effect"
    )


@needs_ptrace
@pytest.mark.parametrize(("then", "failed"), [("entry:tool", []), ("stepAttempt", ["requests-attempted"])])
def test_what_a_power_cut_took_from_a_resume_is_judged_as_it_was_written(
    then: str, failed: list[str], tmp_path: Path
) -> None:
    """Issue 37: a resume that wrote its plan without syncing it, cut by a power loss, was reported as
    'the agent appended nothing'. What it wrote carries out the plan; what it did before syncing (a
    request under an unsynced attempt) is the finding."""
    scenario = load_scenario(REPO / "scenarios" / "full-workflow.toml").with_crash(
        Strike(Boundary.parse("toolStarted[toolName=bash]")), Strike(Boundary.parse(then), "power-loss")
    )
    verdict = run_case(scenario, load_target(REFERENCE), {"TINY_REFERENCE_BUG": "no-fsync"}, tmp_path / "r")
    assert verdict.evidence.resumes[0].kept.cut, "the resume wrote, and the power cut took it"
    plans = [c for c in verdict.checks if c.id == "plan-followed"]
    assert plans[0].ok and "the power cut then took what was not synced" in plans[0].got
    assert [c.id for c in verdict.failed] == failed


@needs_ptrace
def test_a_writer_that_rewrites_the_log_in_place_wrote(tmp_path: Path) -> None:
    verdict = _run("two-writers", tmp_path)
    evidence = verdict.evidence
    continued = evidence.continued
    assert continued is not None and verdict.ok
    second = evidence.recoveries[0]
    before = continued.kept.log_before
    overwritten = before[:-10] + b"x" * 9 + b"\n"  # same length: no byte appended
    phases = [
        replace(p, kept=replace(p.kept, log_after=overwritten))
        if p is continued
        else replace(p, kept=replace(p.kept, log_after=before + b"{}\n"))
        if p is second
        else p
        for p in evidence.phases
    ]
    checks = {c.id: c for c in check_all(replace(evidence, phases=phases))}
    assert not checks["one-writer"].ok and "rewrote the log in place" in checks["one-writer"].got


@needs_ptrace
def test_the_outcome_is_judged_on_every_process_not_only_the_first(tmp_path: Path) -> None:
    """In a SIGINT scenario the start finished the abort (exit 5): a resume that exits 1 on that
    finished session was never judged."""
    verdict = _run("sigint-after-failure", tmp_path, target=TARGETS / "resume-fails.toml")
    failed = [c.text() for c in verdict.failed]
    assert any(
        "resume-1 outcome: expected completed (nothing to do" in t and "got no known outcome (exit 1)" in t
        for t in failed
    ), failed


@needs_ptrace
def test_what_an_agent_appended_is_said_even_when_rejected(tmp_path: Path) -> None:
    verdict = _run("length-with-tool-calls", tmp_path, bug="synthetic-missing-field")
    texts = [c.text() for c in verdict.checks]
    assert not any("got nothing" in t for t in texts), texts
    first = verdict.failed[0]
    assert first.id == "final-reduces"
    assert "INVALID_FACT at line" in first.got
    assert "a pre-execution synthetic tool result entry: entry lacks assistantEntryId" in first.got


@needs_ptrace
def test_a_hung_phase_is_one_failure(tmp_path: Path) -> None:
    verdict = _run("section8-read-replay", tmp_path, target=TARGETS / "hang-on-resume.toml", timeout=3.0)
    assert [c.id for c in verdict.failed] == ["timeout"], [c.text() for c in verdict.failed]
    symptoms = [c for c in verdict.checks if c.unjudged.startswith("a symptom of timeout")]
    assert symptoms, "what the hang cut short is said to be its symptom"


INVALID = b'{"kind":"header","version":2,"id":"018f0000-0000-7000-8000-000000000001","createdAt":1,"cwd":"/w","provider":"p","model":"m","environmentIdentity":"e"}\n{"kind":"record","seq":1,"id":"018f0000-0000-7000-8000-000000000002","timestamp":1,"record":{"type":"toolStarted"}}\n'


def test_the_oracle_names_the_fact_and_field_everywhere(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "bad.jsonl"
    log.write_bytes(INVALID)
    said = "INVALID_FACT at line 2 (seq 1): toolStarted record: record lacks operationId (a UUIDv7)"
    assert main(["reduce", str(log)]) == 1
    assert said in capsys.readouterr().err
    assert main(["show", str(log), "--no-colour"]) == 1
    assert "INVALID_FACT at line 2: toolStarted record: record lacks operationId" in capsys.readouterr().out
