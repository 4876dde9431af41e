"""A real session log turned into a scenario that replays it: the incident becomes a regression test.

A session that died in production leaves its log, and the log says almost
everything a scenario needs: the prompt, every model answer that settled
(text, tool calls with their arguments as the model sent them, the stop
reason, the usage billed), every live failure, the tools the configuration
declared, what ``read`` returned, and where the log ends. What it cannot say
is said too (``Inferred.notes``): what a ``bash`` command printed depends on
the world, a tool's description is only a digest, earlier operations of the
session are not replayed. Pure over the log's bytes; the workspace and the
target's declarations, when given, are read by the caller.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from chaos.contract.framing import committed_lines, facts_of, parse_json
from chaos.contract.kinds import kind_of
from chaos.contract.reducer import ContractError, Reducer
from chaos.scenario.model import (
    Boundary,
    Configuration,
    Expect,
    Scenario,
    Strike,
    Turn,
    WorkspaceFile,
    workspace_path_problem,
)

FINISH = {"stop": "stop", "toolUse": "tool_calls", "length": "length"}
_STATUS = re.compile(r"\b([45]\d\d)\b")


class NotReplayable(ValueError):
    """The log holds nothing a scenario can replay (no header, no operation)."""


@dataclass
class Inferred:
    """A scenario written from a log, and what was inferred and what could not be, in words."""

    scenario: Scenario
    inferred: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)


def _arguments(text: Any) -> Any:
    """The arguments as the model sent them: an object, or the raw text a scenario sends verbatim."""
    if not isinstance(text, str):
        return text
    try:
        value = json.loads(text)
    except ValueError:
        return text
    return value if isinstance(value, dict) else text


def _failed_turn(error: dict[str, Any]) -> tuple[Turn, str]:
    """A live failure as the scripted error that causes it (the code and message are the agent's words)."""
    words = f"{error.get('code', '')} {error.get('message', '')}"
    if "timeout" in words.lower() or "timed out" in words.lower():
        return Turn(timeout=True), f"a step that failed by timeout ({words.strip()!r}) as a timeout"
    found = _STATUS.search(words)
    status = int(found.group(1)) if found else 500
    how = f"HTTP {status}" if found else "HTTP 500 (no status in its words)"
    return Turn(error=status), f"a step that failed with {words.strip()!r} as {how}"


@dataclass
class _Reading:
    facts: list[dict[str, Any]]  # the committed facts the reducer accepts, in order
    lines: list[int]  # the line of each fact
    torn: bool
    rejected: str | None
    idle: bool


def _read(data: bytes) -> _Reading:
    reducer, facts, lines, rejected = Reducer(), [], [], None
    for number, line in enumerate(committed_lines(data), 1):
        try:
            reducer.append_line(line)
        except ContractError as err:
            rejected = f"line {number} is rejected ({err.code}{': ' + err.detail if err.detail else ''})"
            break
        if number > 1:
            found = facts_of(parse_json(line))
            facts += found
            lines += [number] * len(found)
    if reducer.state is None:
        raise NotReplayable("the log has no header a reducer accepts: nothing to replay")
    torn = bool(Reducer.of(data).tail) and rejected is None
    return _Reading(facts, lines, torn, rejected, reducer.state.operation is None)


def _operations(facts: list[dict[str, Any]]) -> list[tuple[int, dict[str, Any]]]:
    """Where each operation starts (the index of its first fact) and its starting record."""
    starts = []
    for index, fact in enumerate(facts):
        kind, body = kind_of(fact)
        if kind in ("runStarted", "compactionStarted"):
            first = (
                index - 1
                if kind == "runStarted" and index and kind_of(facts[index - 1])[0] == "entry:user"
                else index
            )
            starts.append((first, body))
    return starts


def _declared(facts: list[dict[str, Any]]) -> set[str]:
    """The tools the log's configuration declared (a call to any other is the model's invention)."""
    return {
        t["name"]
        for f in facts
        if kind_of(f)[0] == "stepAttempt"
        for t in kind_of(f)[1]["configurationSnapshot"]["tools"]
    }


def _tools(
    facts: list[dict[str, Any]], current: dict[str, Any] | None
) -> tuple[dict[str, dict[str, str]], list[str], list[str]]:
    """The tools' replay declarations the log shows, as configuration overrides where the target's own
    differ; and the words about it."""
    declared: dict[str, dict[str, str]] = {}
    digests: dict[str, str] = {}
    for fact in facts:
        kind, body = kind_of(fact)
        if kind == "stepAttempt":
            digests |= {t["name"]: t["definitionDigest"] for t in body["configurationSnapshot"]["tools"]}
        if kind == "toolStarted":
            declared[body["toolName"]] = {"replay": body["replay"], "replayKey": body["replayKey"]}
    said, unknown = [f"tools declared: {', '.join(sorted(digests)) or 'none'}"], []
    overrides: dict[str, dict[str, str]] = {}
    now = {t["name"]: t for t in (current or {}).get("tools", [])}
    for name in sorted(digests):
        if current is None:
            continue
        if name not in now:
            unknown.append(f"tool {name}: the target does not declare it now")
            continue
        if now[name]["definitionDigest"] != digests[name]:
            unknown.append(
                f"tool {name}: its definition differs from the target's (only its digest is in the log)"
            )
        if name in declared and any(now[name].get(k) != v for k, v in declared[name].items()):
            overrides[name] = declared[name]
            said.append(
                f"tool {name}: replay {declared[name]['replay']} ({declared[name]['replayKey']}), as the log has it"
            )
    return overrides, said, unknown


def scenario_from_log(
    data: bytes,
    name: str = "from-log",
    current: dict[str, Any] | None = None,
    workspace: dict[str, WorkspaceFile] | None = None,
) -> Inferred:
    """The scenario that replays ``data``'s last operation; ``current`` is the target's configuration
    (for the tools' differences), ``workspace`` the workspace's files as they are (they win over what
    ``read`` results show)."""
    reading = _read(data)
    operations = _operations(reading.facts)
    if not operations:
        raise NotReplayable("the log holds no operation (no runStarted): nothing to replay")
    inferred, unknown = [], []
    if reading.rejected:
        unknown.append(f"{reading.rejected}: the scenario replays the log up to it")
    first, started = operations[-1]
    compaction = started["type"] == "compactionStarted"
    runs = [(i, s) for i, s in operations if s["type"] == "runStarted"]
    if not runs:
        raise NotReplayable("the log's only operations are compactions: there is no prompt to replay")
    run_first, run = runs[-1]
    left_out = len([o for o in operations if o[0] < run_first])
    if left_out:
        unknown.append(f"{left_out} earlier operation(s) of the session are not replayed")
    facts = reading.facts[run_first:]
    entries = {f["id"]: f["entry"] for f in facts if f["kind"] == "entry"}
    prompt = str(entries[run["inputEntryId"]]["message"]["content"])
    inferred.append(f"prompt: {prompt[:60]!r}")

    usage = {f["attemptId"]: f["usage"] for f in facts if f["kind"] == "usage" and "attemptId" in f}
    turns: list[Turn] = []
    files: dict[str, WorkspaceFile] = {}
    called: set[str] = set()
    started_tools: dict[str, dict[str, Any]] = {}
    for fact in facts:
        kind, body = kind_of(fact)
        if kind in ("entry:stop", "entry:toolUse", "entry:length"):
            message = body["message"]
            calls = [
                {"name": c["function"]["name"], "arguments": _arguments(c["function"]["arguments"])}
                for c in message.get("tool_calls") or []
            ]
            called |= {c["name"] for c in calls}
            finish = FINISH[body["stopReason"]]
            turns.append(
                Turn(
                    text=message.get("content") or None,
                    tool_calls=calls,
                    finish="length" if finish == "length" else None,
                    usage=usage.get(body["attemptId"]),
                )
            )
        elif kind == "stepFailed" and body["error"].get("code") != "aborted":
            turn, said = _failed_turn(body["error"])
            turns.append(turn)
            inferred.append(said)
        elif kind == "toolStarted":
            started_tools[body["resultEntryId"]] = body
        elif kind == "entry:tool" and fact["id"] in started_tools:
            intent = started_tools[fact["id"]]
            path = intent["arguments"].get("path")
            ok = body["result"]["type"] == "success"
            outside = workspace_path_problem(path) if isinstance(path, str) else None
            if intent["toolName"] == "read" and ok and isinstance(path, str) and outside:
                unknown.append(f"read of {path[:200]!r}: not a workspace file ({outside}); not kept")
            elif intent["toolName"] == "read" and ok and isinstance(path, str) and path not in files:
                files[path] = WorkspaceFile(str(body["message"]["content"]))
                inferred.append(f"file {path!r}: what read returned")
            elif intent["toolName"] not in ("read", "write", "edit"):
                unknown.append(
                    f"{intent['toolName']} call {intent['toolCallId']}: what it did depends on the world "
                    "(the scenario replays the call, not its output)"
                )
    if not turns:
        turns.append(Turn(text="done"))
        unknown.append("no model answer settled: the script answers 'done'")
    inferred.append(f"{len(turns)} model turn(s), one per settled attempt")
    for path, file in (workspace or {}).items():
        files[path] = file
    if workspace:
        inferred.append(f"{len(workspace)} workspace file(s) as they are now")

    crash = None
    tail = reading.facts[first:]
    aborted = next((i for i, f in enumerate(tail) if kind_of(f)[0] == "abortRequested"), None)
    if aborted is not None and aborted > 0:
        before = kind_of(tail[aborted - 1])[0]
        nth = sum(1 for f in tail[:aborted] if kind_of(f)[0] == before)
        ends_there = not reading.idle and aborted == len(tail) - 1
        crash = Strike(Boundary(before, {}, nth), "abort-then-kill" if ends_there else "abort")
        inferred.append(f"an abort at {crash.boundary} (where it became durable), as {crash.fault_name}")
        if not reading.idle and not ends_there:
            unknown.append("the crash after the abort is not replayed (one crash per scenario)")
    elif not reading.idle and tail:
        last = tail[-1]
        what = kind_of(last)[0]
        nth = sum(1 for f in tail if kind_of(f)[0] == what)
        crash = Strike(Boundary(what, {}, nth), "torn" if reading.torn else "kill")
        inferred.append(
            f"crash: {crash}, where the log ends" + (" (with a torn tail)" if reading.torn else "")
        )
    finished = [kind_of(f)[1] for f in tail if kind_of(f)[0] == "operationFinished"]
    if crash is None and finished:
        expect = Expect(outcome=finished[-1]["outcome"])
        inferred.append(f"expect: {finished[-1]['outcome']}, as the log finished")
    else:
        expect = Expect(derived=True)
    overrides, declared, doubts = _tools(facts, current)
    inferred += declared
    unknown += doubts
    header = Reducer.of(data[: data.find(b"\n") + 1]).state
    if header is not None:
        unknown.append(f"model {header.header['model']!r}: the target's own model answers in the replay")
    scenario = Scenario(
        prompt=prompt,
        turns=turns,
        files=files,
        crash=crash,
        start=Configuration(tools=overrides),
        expect=expect,
        name=name,
        description=f"Replays a session log ({len(reading.facts)} facts); written by chaos scenario from-log.",
        operation="compaction" if compaction else "run",
        requires=tuple(f"tool:{n}" for n in sorted(called & _declared(facts))),
    )
    return Inferred(scenario, inferred, unknown)
