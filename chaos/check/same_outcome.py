"""The resumed run ends as the uninterrupted run of the same scenario does: by itself, completed, with
the same final answer (the scripted model answers the same conversation the same way), and with no
effect the uninterrupted run did not have (how often each may run is ``effects-as-declared``'s)."""

from __future__ import annotations

from chaos.check.base import Problem, against_clean, effect_key
from chaos.cycle.evidence import Evidence


def _problems(evidence: Evidence, clean: Evidence) -> list[Problem]:
    last = evidence.ended
    if last.process.killed:
        return []  # (a recovery crashed on purpose: the checks judge the resume after it)
    if last.process.timed_out:
        return [
            Problem(
                "a resume never ended (killed at the timeout)",
                f"{last.name} ran {last.process.seconds:.1f} s",
            )
        ]
    if evidence.failed_by_provider:
        return []  # a provider's fault the agent went on through may fail the run (the contract's answer too)
    if last.process.outcome != "completed":
        return [
            Problem(
                f"the resume ended {last.process.outcome or 'with an unknown exit status'}",
                f"{last.name} exited {last.process.returncode}",
            )
        ]
    owed = {effect_key(e) for e in clean.effects()}
    extra = sorted({effect_key(e) for e in evidence.effects()} - owed)
    problems = [
        Problem("the resumed run ran an effect the uninterrupted run did not", f"{key} ran") for key in extra
    ]
    if not evidence.began:
        return problems  # the crash came before the run's input was durable: there is no run to finish
    expected, final = clean.view.final, evidence.view.final
    if final is None:
        problems.append(
            Problem("the resumed run ended without a final answer in the store", f"expected {expected!r}")
        )
    elif expected is not None and final != expected:
        problems.append(
            Problem("the resumed run ended with another final answer", f"{final!r}, not {expected!r}")
        )
    return problems


NEEDS = "view"  # what the store's adapter reads (``chaos.store.View``)
CATALOG = {
    "same-outcome": "a framework agent's resumed run ends as the uninterrupted run does (completed, same final answer, no new effect)"
}


judge = against_clean("same-outcome", "the resumed run ends as the uninterrupted run does", _problems)
