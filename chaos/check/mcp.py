"""Tools over MCP: the server's word against the agent's log.

When a target's tools are on the world's MCP server (``mcp`` in its target file), the server writes each
``tools/call`` to the ledger (``call``, with the intents durable then; ``answer``, with the text it
returned). ``intent-before-effect`` and ``never-once`` count those calls as effects (``chaos.check.effects``:
the server's executions, not the agent's beliefs). Here, two promises only an MCP agent makes:

- *trust*: an MCP tool is replayed only where the host says it may be (the target's ``mcp_trusted``, or a
  tool the scenario's configuration declares safe), never because the server hints it is read-only or
  idempotent: a hint is text from another process;
- *answers*: a success the log records for a call is an answer the server gave that call, and delivered
  whole (its text, or a cut of it): never a success the server did not report, or one the agent never
  read (an answer a fault spoiled: ``chaos.fault.mcp``). An error result is the agent's own to give (it
  may give up on a call whose answer is late, not knowing whether it ran), and so is a synthetic one.

A framework agent's store (its ``View``) says no success or error of an output: it holds the text. An
output that carries a success the server gave a call of its tool (the answer's text, as it is or as the
framework quoted it) must carry the answer the server gave *that* call (its tool, its arguments) and
delivered whole; any other output is the agent's own words. *Trust* is judged on a session log only: a
framework declares no replay of its own (its reruns are ``effects-as-declared``'s, under its semantics).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from chaos.check.base import Check
from chaos.check.effects import started
from chaos.contract.reading import facts
from chaos.cycle.evidence import Evidence

NEEDS = "world"  # the server's ledger, against what the agent made durable (its facts, or its view)
CATALOG = {
    "mcp-trust": "an MCP tool was declared safe to replay only where the host trusts it",
    "mcp-answer": "each success the log records for an MCP call is an answer the server gave it",
}


def _trusted(ev: Evidence) -> set[str]:
    scenario = ev.scenario
    configurations = (scenario.start, scenario.start.then(scenario.change))
    return set(ev.target.mcp_trusted) | {
        name
        for config in configurations
        for name, values in config.tools.items()
        if values.get("replay") == "safe"
    }


def _trust(ev: Evidence) -> Check:
    trusted = _trusted(ev)
    wrong = sorted(
        {
            f"{record['toolName']} ({record.get('replayKey', '?')})"
            for record in started(ev).values()
            if record.get("replay") == "safe" and record["toolName"] not in trusted
        }
    )
    return Check(
        "mcp-trust",
        "MCP tools were declared safe to replay only where the host trusts them",
        not wrong,
        f"safe only: {', '.join(sorted(trusted)) or 'none'} (the host's word, not the server's hints)",
        f"declared safe: {', '.join(wrong)}" if wrong else "ok",
    )


def _answers(ev: Evidence) -> dict[str, list[dict[str, Any]]]:
    """The server's answers per toolStartedId (the intent pending latest when the call arrived)."""
    calls: dict[tuple[int, int], str] = {}
    answers: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for entry in ev.ledger:
        key = (entry.get("pid", 0), entry.get("call", 0))
        if entry["phase"] == "call" and entry.get("pending"):
            calls[key] = entry["pending"][-1]
            answers.setdefault(calls[key], [])
        elif entry["phase"] == "answer" and key in calls:
            answers[calls[key]].append(entry)
    return answers


def _delivered(given: list[dict[str, Any]], held: str, holds: Callable[[str, str], bool]) -> bool:
    """One of the server's answers ``given`` succeeded, reached the agent whole, and is what the agent
    ``held`` (``holds(held, answer)``)."""
    return any(a["ok"] and a.get("delivered", "whole") == "whole" and holds(held, a["result"]) for a in given)


def _begins(held: str, answer: str) -> bool:
    """The log holds the answer, or a cut of it (an agent may keep the start of a long one)."""
    return answer.startswith(held)


def _said(given: list[dict[str, Any]]) -> str:
    """What the server answered, each answer and how it was delivered, for a person."""
    return "; ".join(
        f"{'ok' if a['ok'] else 'error'} {a['result'][:60]!r} ({a.get('delivered', 'whole')})" for a in given
    )


def _answer(ev: Evidence) -> Check:
    answers = _answers(ev)
    wrong = []
    for f in facts(ev.last_log):
        body = f.get("entry", {}) if f["kind"] == "entry" else {}
        started = body.get("toolStartedId")
        kind = body.get("result", {}).get("type")
        if started not in answers or kind != "success":
            continue  # an error or a synthetic result is the agent's own to give
        content = body["message"]["content"]
        given = answers[started]
        if not _delivered(given, content, _begins):
            wrong.append(
                f"{body.get('toolName', '?')} {started}: log {kind} {content[:60]!r}, server "
                + (_said(given) or "never answered")
            )
    return Check(
        "mcp-answer",
        "each success the log records for an MCP call is an answer the server gave it",
        not wrong,
        "each success the server's answer (or a cut of it)",
        "; ".join(wrong) or "ok",
    )


def _quotes(text: str, answer: str) -> bool:
    """The output holds the server's answer: as it is, or quoted the way a framework keeps a tool's
    content (a JSON string, or Python's repr of the parts: the OpenAI Agents SDK)."""
    return answer in text or json.dumps(answer)[1:-1] in text or repr(answer)[1:-1] in text


def _same_arguments(given: Any, arguments: str) -> bool:
    try:
        return bool(json.loads(arguments) == given)
    except ValueError:
        return True  # arguments the store keeps as no JSON: the tool's name decides


def _answer_view(ev: Evidence) -> Check:
    view = ev.view
    calls = {c.id: c for c in view.calls}
    answers = [e for e in ev.ledger if e["phase"] == "answer" and str(e["effect"]).startswith("mcp:")]
    wrong = []
    for output in view.outputs:
        call = calls.get(output.call_id)
        if call is None:
            continue  # an output without its call: store-consistent's
        of_tool = [a for a in answers if a["effect"] == f"mcp:{call.name}"]
        if not any(a["ok"] and a["result"] and _quotes(output.text, a["result"]) for a in of_tool):
            continue  # the agent's own words (an error, a synthetic result), or no MCP tool's
        given = [a for a in of_tool if _same_arguments(a.get("arguments"), call.arguments)]
        if not _delivered(given, output.text, _quotes):
            wrong.append(
                f"{call.name} {call.id}: store holds a success {output.text[:60]!r}, server "
                + (_said(given) or "never answered this call")
            )
    return Check(
        "mcp-answer",
        "each success the store records for an MCP call is an answer the server gave it",
        not wrong,
        "each success the server's answer to that call, delivered whole",
        "; ".join(wrong) or "ok",
    )


def judge(ev: Evidence) -> list[Check]:
    if ev.target.mcp is None:
        return []
    if not ev.facts:
        return [_answer_view(ev)]
    return [_trust(ev), _answer(ev)]
