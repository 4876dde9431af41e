"""What each request said against what the log says was sent: the question, not the answer.

The log is the agent's record of every model request: a ``stepAttempt`` names
the context it sends (the active context through ``contextThroughEntryId``)
and the configuration it sends it under (``configurationSnapshot``: the system
prompt's and each tool definition's digest). Recovery trusts that record: the
planner's configuration gates compare digests, and a resumed step is built
from the durable context. An agent that sends something else (results in
another order than its calls, a tool definition it did not digest, a resumed
compaction over the wrong range of entries) passes every check on the log and
misleads every later recovery. The script still decides what to answer; this
check decides whether the question was right.

Each request is read through its protocol (``chaos.world.protocols``: what a
request *said*, in neutral terms) and compared, item by item, with the context
the log had made durable for the attempt open when it arrived. The system
prompt and the tools are compared with the attempt's snapshot for assistant
steps; a compaction step's prompt is the compaction's own, and the snapshot
describes the run's configuration. A request that arrived when the log was
already rejected, or with no durable attempt, is another check's to judge.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from chaos.check.base import Check
from chaos.contract.digest import digest
from chaos.contract.framing import committed_lines
from chaos.contract.reducer import ContractError, Reducer
from chaos.cycle.evidence import Evidence
from chaos.world.protocols import PROTOCOLS, Protocol, Said, said_of_messages

EXPECTED = "what the log says each attempt sent"
NEEDS = "facts"  # the session contract's facts in its store (``chaos.check.check_all``)
CATALOG = {
    "request-context": "each model request carries the context the log made durable for its attempt, under "
    "the system prompt and tool definitions its configuration snapshot digests",
}


@dataclass(frozen=True)
class Attempted:
    """What the log says an attempt sends: its step kind, its snapshot, its context's messages."""

    kind: str
    snapshot: dict[str, Any]
    context: list[dict[str, Any]]


def attempts_of(log: bytes) -> dict[str, Attempted]:
    """Each attempt of ``log`` (up to a line the reducer rejects) with the context durable when it was."""
    reducer, out = Reducer(), {}
    for line in committed_lines(log):
        try:
            reducer.append_line(line)
        except ContractError:
            break
        st = reducer.state
        step = st.operation.step if st is not None and st.operation is not None else None
        if st is None or step is None or step.attempt_id in out:
            continue
        ids = [entry_id for entry_id, _ in st.active]
        through = ids.index(step.context_through) + 1 if step.context_through in ids else len(ids)
        out[step.attempt_id] = Attempted(step.step_kind, step.snapshot, [m for _, m in st.active[:through]])
    return out


def _short(item: Said | None) -> str:
    if item is None:
        return "nothing"
    text = item.text if len(item.text) <= 60 else item.text[:57] + "..."
    if item.kind == "call":
        return f"tool call {item.name} {item.arguments!r} (id {item.id})"
    if item.kind == "result":
        return f"tool result for {item.id}: {text!r}"
    return f"{item.kind} message {text!r}"


def _same(logged: Said, sent: Said, protocol: Protocol) -> bool:
    # a wire that takes an object only cannot carry arguments that are no object: any object will do
    uncarried = not protocol.carries_raw_arguments and not isinstance(logged.arguments, dict)
    if uncarried and logged.kind == "call" == sent.kind:
        return (logged.id, logged.name) == (sent.id, sent.name) and isinstance(sent.arguments, dict)
    return logged == sent


KINDS = {
    "user": "a user message",
    "assistant": "an assistant message",
    "call": "a tool call",
    "result": "a tool result",
}


def _kind(item: Said | None) -> str:
    return "nothing" if item is None else KINDS[item.kind]


Differs = tuple[str, str]  # what differs, in words with values; and in words without (the failure's cause)


def _conversation(attempted: Attempted, body: dict[str, Any], protocol: Protocol) -> Differs | None:
    logged = said_of_messages(attempted.context)
    sent = protocol.said(body)
    for n in range(max(len(logged), len(sent))):
        mine = logged[n] if n < len(logged) else None
        theirs = sent[n] if n < len(sent) else None
        if mine is None or theirs is None or not _same(mine, theirs, protocol):
            said = f"item {n + 1}: the log has {_short(mine)}; the request sent {_short(theirs)}"
            if _kind(mine) == _kind(theirs):
                return said, f"sent {_kind(theirs)} other than the log's"
            return said, f"sent {_kind(theirs)} where the log has {_kind(mine)}"
    return None


def _digests(value: Any) -> set[str]:
    """The digests an agent may have meant: the contract's (JCS, section 5), or of a string's bytes."""
    out = {digest(value)}
    if isinstance(value, str):
        out.add("sha256:" + hashlib.sha256(value.encode()).hexdigest())
    return out


def _configuration(attempted: Attempted, body: dict[str, Any], protocol: Protocol) -> Differs | None:
    snapshot = attempted.snapshot
    try:
        system = protocol.conversation(body).system
    except (KeyError, TypeError, ValueError, AttributeError):
        system = ""
    if snapshot.get("systemPromptDigest") not in _digests(system):
        said = f"the system prompt sent ({system[:60]!r}) is not the one systemPromptDigest describes"
        return said, "sent a system prompt its systemPromptDigest does not describe"
    recorded = {t.get("name"): t.get("definitionDigest") for t in snapshot.get("tools") or []}
    sent = {t["name"]: t for t in protocol.tools(body)}
    if set(sent) != set(recorded):
        said = f"tools sent {sorted(map(str, sent))}; the snapshot declares {sorted(map(str, recorded))}"
        return said, "sent other tools than its configuration snapshot declares"
    for name, definition in sent.items():
        readings = {digest(definition)}
        if definition["description"] is None:
            readings |= {
                digest({**definition, "description": ""}),
                digest({"name": name, "parameters": definition["parameters"]}),
            }
        if recorded[name] not in readings:
            said = f"tool {name}: the definition sent is not the one its definitionDigest describes"
            return said, "sent a tool definition its definitionDigest does not describe"
    return None


def judge(ev: Evidence) -> list[Check]:
    name = "every model request carried the durable context and configuration of its attempt"
    attempts: dict[str, Attempted] = {}
    logs = {n: p.kept.written for p in ev.phases for n in range(*p.seen.requests)}  # as written
    wrong: list[Differs] = []
    judged = 0
    for n, request in enumerate(ev.requests):
        attempt, log = request.get("attempt"), logs.get(n)
        protocol = PROTOCOLS.get(str(request.get("protocol")))
        if attempt is None or request.get("rejected") is not None or log is None or protocol is None:
            continue
        if attempt not in attempts:
            attempts |= attempts_of(log)
        attempted = attempts.get(attempt)
        body = request.get("body")
        if attempted is None or not isinstance(body, dict):
            continue
        judged += 1
        differs = _conversation(attempted, body, protocol)
        if differs is None and attempted.kind == "assistant":
            differs = _configuration(attempted, body, protocol)
        if differs is not None:
            said, cause = differs
            wrong.append(
                (
                    f"request {n + 1} ({attempted.kind} attempt {attempt[:13]}...): {said}",
                    f"{cause}, in {'an' if attempted.kind == 'assistant' else 'a'} {attempted.kind} step's request",
                )
            )
    if not judged:
        return [Check.skip("request-context", name, "no request arrived under a durable attempt")]
    if not wrong:
        return [Check("request-context", name, True, EXPECTED, "ok")]
    more = f" (and {len(wrong) - 1} more)" if len(wrong) > 1 else ""
    return [Check("request-context", name, False, EXPECTED, wrong[0][0] + more, cause=wrong[0][1])]
