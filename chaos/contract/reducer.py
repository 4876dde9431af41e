"""The strict session reducer (contract sections 2-4), pure and incremental.

A transaction is validated against the live state while every mutation is
written to an undo journal; a violation replays the journal backwards. So a
rejected transaction costs time proportional to itself, never a copy of the
state, and a whole log reduces in linear time. ``Reducer.feed`` accepts bytes in
any chunking: only complete (LF-terminated) lines are committed, the rest is the
torn tail.

The state keeps only what a later fact can be checked against: the transcript
and active context, and the open operation in full. A finished operation leaves
behind just its ids (entry kinds, operation ids, the owners of attempts and tool
calls, all strings). So a long log's state is about its transcript, and Python's
cyclic collector, which rescans every container the state holds, has little to
scan: keeping finished operations whole gave it five times as many containers,
and the collector's scans of it pushed 16x the bytes past 18x the time.
"""

from __future__ import annotations

import hashlib
from collections.abc import MutableSet
from dataclasses import dataclass, field
from typing import Any

from chaos.contract import shapes
from chaos.contract.digest import canonical_closed, digest_closed
from chaos.contract.framing import FramingError, parse_json, parse_line
from chaos.contract.shapes import USAGE_KEYS

SYNTHETIC_CONTENT = {
    "invalidArguments": "Error: Tool arguments were invalid; the tool was not executed.",
    "unknownTool": "Error: Unknown tool; the tool was not executed.",
    "truncated": "Error: Tool call arguments were truncated by the model token limit; the tool was not executed.",
    "aborted": "Operation aborted before execution.",
    "interrupted": "Operation interrupted after execution status became unknown; the tool was not replayed.",
}
COMPACTED_PREFIX = "[Compacted history]\n"


class ContractError(Exception):
    """A committed line breaks the contract: ``code`` and 1-based ``line``, ``seq`` when known, and
    ``detail``: which fact and field broke which rule, what was expected and what was found. The
    golden ``to_json`` shape carries only code, line and seq; ``detail`` is for people."""

    def __init__(self, code: str, line: int, seq: int | None = None, detail: str = "") -> None:
        where = f"line {line}" + (f", seq {seq}" if seq is not None else "")
        super().__init__(f"{code} at {where}" + (f": {detail}" if detail else ""))
        self.code, self.line, self.seq, self.detail = code, line, seq, detail

    def to_json(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "line": self.line}
        if self.seq is not None:
            error["seq"] = self.seq
        return error


class _Violation(Exception):
    def __init__(self, code: str, detail: str = "") -> None:
        super().__init__(code)
        self.code, self.detail = code, detail


@dataclass(slots=True)
class Step:
    operation_id: str
    step_id: str
    attempt_id: str
    attempt: int
    step_kind: str
    context_through: str
    snapshot: dict[str, Any]
    digest: str
    status: str = "attempting"
    settled_entry_id: str | None = None
    stop_reason: str | None = None
    error: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "operationId": self.operation_id,
            "stepId": self.step_id,
            "attemptId": self.attempt_id,
            "attempt": self.attempt,
            "stepKind": self.step_kind,
            "status": self.status,
            "contextThroughEntryId": self.context_through,
            "configurationSnapshot": self.snapshot,
            "configurationDigest": self.digest,
        }
        if self.settled_entry_id is not None:
            out["settledEntryId"] = self.settled_entry_id
        if self.stop_reason is not None:
            out["stopReason"] = self.stop_reason
        return out


@dataclass(slots=True)
class ToolCall:
    """A ``toolStarted`` intent and whether its result is durable."""

    tool_started_id: str
    record: dict[str, Any]
    status: str = "pending"

    def __getitem__(self, key: str) -> Any:
        return self.record[key]

    def to_json(self) -> dict[str, Any]:
        out = {k: v for k, v in self.record.items() if k != "type"}
        out["toolStartedId"] = self.tool_started_id
        out["status"] = self.status
        return out


@dataclass(slots=True)
class Assistant:
    """A settled assistant entry and the resolution of each of its tool calls."""

    entry_id: str
    operation_id: str
    step_id: str
    message: dict[str, Any]
    stop_reason: str
    calls: list[dict[str, Any]]
    results: dict[int, str] = field(default_factory=dict)
    started: dict[int, ToolCall] = field(default_factory=dict)

    def unresolved(self) -> list[int]:
        return [i for i in range(len(self.calls)) if i not in self.results]


@dataclass(slots=True)
class Operation:
    kind: str
    operation_id: str
    input_entry_id: str  # the run's input entry, or the compaction's inputThroughEntryId
    result_entry_id: str | None = None
    compacted: list[str] = field(default_factory=list)
    retained: list[str] = field(default_factory=list)
    tool_calls: dict[str, ToolCall] = field(default_factory=dict)  # by toolStartedId, in log order
    abort_requested: bool = False
    step: Step | None = None
    assistant: Assistant | None = None
    finished: bool = False

    def open_attempt(self) -> bool:
        return self.step is not None and self.step.status == "attempting"

    def unresolved(self) -> list[int]:
        return self.assistant.unresolved() if self.assistant is not None else []

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "operationId": self.operation_id}
        if self.kind == "run":
            out["inputEntryId"] = self.input_entry_id
            out["toolCalls"] = [tc.to_json() for tc in self.tool_calls.values()]
        else:
            out["inputThroughEntryId"] = self.input_entry_id
            out["resultEntryId"] = self.result_entry_id
        out["abortRequested"] = self.abort_requested
        if self.step is not None:
            out["step"] = self.step.to_json()
        return out


class _Journal:
    """Undo log of the transaction being applied."""

    __slots__ = ("undo",)

    def __init__(self) -> None:
        self.undo: list[tuple[Any, ...]] = []

    def set(self, obj: Any, attr: str, value: Any) -> None:
        self.undo.append((setattr, obj, attr, getattr(obj, attr)))
        setattr(obj, attr, value)

    def put(self, mapping: dict[Any, Any], key: Any, value: Any) -> None:
        if key in mapping:
            self.undo.append((mapping.__setitem__, key, mapping[key]))
        else:
            self.undo.append((mapping.__delitem__, key))
        mapping[key] = value

    def delete(self, mapping: dict[Any, Any], key: Any) -> None:
        self.undo.append((mapping.__setitem__, key, mapping.pop(key)))

    def add(self, items: MutableSet[Any], value: Any) -> None:
        items.add(value)
        self.undo.append((items.discard, value))

    def append(self, items: list[Any], value: Any) -> None:
        items.append(value)
        self.undo.append((items.pop,))

    def rollback(self) -> None:
        while self.undo:
            fn, *args = self.undo.pop()
            fn(*args)

    def commit(self) -> None:
        self.undo.clear()


FRAMING = {
    "CRLF_NOT_ALLOWED": "the line ends with CR LF; lines end with LF alone",
    "BLANK_LINE": "a blank committed line",
    "INVALID_UTF8": "the line is not UTF-8",
    "MALFORMED_JSON": "the line is not one strict JSON value",
}


def _no_new_step(op: Operation, step: Step) -> str | None:
    """Why ``op`` cannot start a new step after ``step`` now, or None when it can."""
    if step.status != "settled":
        return f"step {step.step_id} is {step.status}"
    if op.kind == "compaction":
        return "a compaction takes one step"
    assistant = op.assistant
    if assistant is None or not assistant.calls:
        return "the last answer has no tool calls (the run is to finish)"
    if assistant.stop_reason == "length":
        return "the last answer stopped at its length (the run is to finish)"
    if op.unresolved():
        return f"call(s) {op.unresolved()} of the last answer have no result"
    return None


def _seq_of(fact: Any) -> int | None:
    seq = fact.get("seq") if type(fact) is dict else None
    return int(seq) if seq is not None and shapes.positive_int(seq) else None


def parse_arguments(arguments: str) -> dict[str, Any] | None:
    """The tool-call arguments as an object, or None when they are not a strict JSON object."""
    try:
        value = parse_json(arguments.encode("utf-8"))
    except (FramingError, UnicodeEncodeError):
        return None
    return value if type(value) is dict else None


class SessionState:
    """The reduced state of a valid log prefix; ``to_json`` gives the golden ``state`` shape."""

    def __init__(self, header: dict[str, Any]) -> None:
        self.header = {
            k: header[k] for k in ("id", "createdAt", "cwd", "provider", "model", "environmentIdentity")
        }
        self.seq = 0
        self.ids: set[str] = {header["id"]}
        self.reservations: dict[str, Any] = {}
        self.entries: dict[str, str] = {}  # entry id -> user | assistant | tool | synthetic | compaction
        self.transcript: list[dict[str, Any]] = []
        self.active: list[tuple[str, dict[str, Any]]] = []
        self.active_hash = (hashlib.sha256(b"["), 0)  # running JCS digest over active[:n]
        self.boundary: str | None = None
        self.usage = (0, 0, 0, 0)
        self.operation_ids: set[str] = set()
        self.attempts: dict[str, str] = {}
        self.tool_owners: dict[str, str] = {}  # toolStartedId -> operation id
        self.used_inputs: set[str] = set()
        self.operation: Operation | None = None
        self.last_assistant: Assistant | None = None

    def to_json(self, repaired_length: int) -> dict[str, Any]:
        return {
            "header": dict(self.header),
            "transcript": list(self.transcript),
            "activeContext": [m for _, m in self.active],
            "usage": dict(zip(USAGE_KEYS, self.usage, strict=True)),
            "operation": self.operation.to_json() if self.operation is not None else {"kind": "idle"},
            "repairedLength": repaired_length,
        }


def _header(value: Any) -> SessionState:
    if type(value) is list or (type(value) is dict and value.get("kind") in shapes.FACTS):
        raise _Violation("MISSING_HEADER", "line 1 is a transaction; a log begins with its header")
    if type(value) is dict and value.get("kind") == "header" and "version" in value and value["version"] != 2:
        raise _Violation(
            "UNSUPPORTED_VERSION", f"header version {shapes.found(value['version'])}; this is v2"
        )
    if not shapes.header_shape(value):
        raise _Violation("INVALID_HEADER", f"header: {shapes.header_shape.why(value)}")
    return SessionState(value)


class Reducer:
    """Incremental reducer: ``feed`` bytes as the log grows; ``result`` is what ``reduce`` returns."""

    def __init__(self) -> None:
        self.state: SessionState | None = None
        self.error: ContractError | None = None
        self.line = 0  # committed lines
        self.repaired_length = 0  # committed bytes
        self._tail: list[bytes] = []
        self._j = _Journal()
        self._error_seq: int | None = None  # seq of the fact being checked, for error reports

    @classmethod
    def of(cls, data: bytes) -> Reducer:
        """A reducer that has read ``data``: its state, error and tail, to inspect or feed further."""
        reducer = cls()
        reducer.feed(data)
        return reducer

    # -- framing -------------------------------------------------------------------------------
    def feed(self, data: bytes) -> None:
        if self.error is not None:
            return
        start, size = 0, len(data)
        while start < size:
            nl = data.find(b"\n", start)
            if nl < 0:
                self._tail.append(data[start:])
                return
            line = data[start:nl]
            if self._tail:
                line = b"".join(self._tail) + line
                self._tail.clear()
            try:
                self.append_line(line)
            except ContractError as err:
                self.error = err
                return
            start = nl + 1

    @property
    def tail(self) -> bytes:
        """Bytes after the last LF: the torn tail, never committed."""
        return b"".join(self._tail)

    def append_line(self, line: bytes) -> None:
        """Commit one complete line (without LF) atomically, or raise ContractError and change nothing."""
        number = self.line + 1
        try:
            value = parse_line(line)
            if self.state is None:
                self.state = _header(value)
            else:
                self._transaction(value)
        except FramingError as err:
            raise ContractError(err.code, number, detail=err.detail or FRAMING.get(err.code, "")) from None
        except _Violation as err:
            raise ContractError(err.code, number, self._error_seq, err.detail) from None
        self.line = number
        self.repaired_length += len(line) + 1

    def result(self) -> dict[str, Any]:
        if self.error is not None:
            return {"ok": False, "error": self.error.to_json()}
        if self.state is None:
            return {"ok": False, "error": {"code": "MISSING_HEADER", "line": 1}}
        return {"ok": True, "state": self.state.to_json(self.repaired_length)}

    # -- transactions --------------------------------------------------------------------------
    def _transaction(self, value: Any) -> None:
        self._error_seq = None
        facts = value if type(value) is list else [value]
        if not facts:
            raise _Violation("EMPTY_TRANSACTION", "a transaction is a fact or a non-empty array of facts")
        kinds = []
        for fact in facts:
            self._error_seq = _seq_of(fact)
            kinds.append(self._shape(fact))
        j = self._j
        try:
            for fact, kind in zip(facts, kinds, strict=True):
                self._error_seq = _seq_of(fact)
                self._fact(fact, kind)
        except _Violation:
            j.rollback()
            raise
        j.commit()
        self._error_seq = None

    @staticmethod
    def _shape(fact: Any) -> str:
        kind = fact.get("kind") if type(fact) is dict else None
        shape = shapes.FACTS.get(kind) if isinstance(kind, str) else None
        if shape is None or not shape(fact):
            raise _Violation("INVALID_FACT", shapes.explain(fact))
        if kind == "entry":
            entry_kind = shapes.entry_kind(fact["entry"])
            if entry_kind is None:
                raise _Violation("INVALID_FACT", shapes.explain(fact))
            return entry_kind
        if kind == "usage":
            if ("attemptId" in fact) == ("toolStartedId" in fact):
                raise _Violation("INVALID_FACT", shapes.explain(fact))
            return "usage"
        record = fact["record"]
        if record["type"] == "stepAttempt":
            computed = digest_closed(record["configurationSnapshot"])
            if computed != record["configurationDigest"]:
                raise _Violation(
                    "INVALID_FACT",
                    f"stepAttempt: configurationDigest {record['configurationDigest']} is not the digest of "
                    f"its configurationSnapshot ({computed})",
                )
        return str(record["type"])

    def _fact(self, fact: dict[str, Any], kind: str) -> None:
        st, j = self.state, self._j
        assert st is not None
        seq = fact["seq"]
        if seq != st.seq + 1:
            raise _Violation("SEQ_MISMATCH", f"{kind}: seq {seq}, expected {st.seq + 1}")
        j.set(st, "seq", seq)
        fid = fact["id"]
        if fid in st.ids:
            if fid not in st.reservations or kind not in ("tool", "compaction"):
                raise _Violation("DUPLICATE_ID", f"{kind}: id {fid} is already used in this log")
        else:
            j.add(st.ids, fid)
        if kind == "usage":
            self._usage(st, fact)
        elif fact["kind"] == "entry":
            getattr(self, "_entry_" + kind)(st, fact, fact["entry"])
        else:
            getattr(self, "_record_" + kind)(st, fact, fact["record"])

    # -- helpers -------------------------------------------------------------------------------
    def _fresh(self, st: SessionState, value: str, what: str = "id") -> None:
        if value in st.ids:
            raise _Violation("DUPLICATE_ID", f"{what} {value} is already used in this log")
        self._j.add(st.ids, value)

    @staticmethod
    def _current(st: SessionState, operation_id: str, kind: str | None = None) -> Operation:
        op = st.operation
        if op is None or op.operation_id != operation_id:
            if operation_id in st.operation_ids:
                raise _Violation("INVALID_TRANSITION", f"operation {operation_id} is already finished")
            now = f"the open operation is {op.operation_id}" if op else "no operation is open"
            raise _Violation("INVALID_REFERENCE", f"operationId {operation_id} names no operation ({now})")
        if kind is not None and op.kind != kind:
            raise _Violation("INVALID_TRANSITION", f"the open operation is a {op.kind}, not a {kind}")
        return op

    def _model_visible(self, st: SessionState, fid: str, kind: str, message: dict[str, Any]) -> None:
        j = self._j
        j.put(st.entries, fid, kind)
        j.append(st.transcript, message)
        j.append(st.active, (fid, message))
        j.set(st, "boundary", fid)

    @staticmethod
    def _named_call(st: SessionState, op: Operation, body: dict[str, Any]) -> tuple[Assistant, int]:
        """The current assistant entry and call index that ``body`` names (assistantEntryId, toolIndex)."""
        if st.entries.get(body["assistantEntryId"]) != "assistant":
            raise _Violation(
                "INVALID_REFERENCE", f"assistantEntryId {body['assistantEntryId']} names no assistant entry"
            )
        assistant = op.assistant
        if assistant is None or assistant.entry_id != body["assistantEntryId"]:
            raise _Violation(
                "INVALID_TRANSITION",
                f"assistantEntryId {body['assistantEntryId']} is not the operation's current assistant entry",
            )
        index = body["toolIndex"]
        if body["stepId"] != assistant.step_id:
            raise _Violation(
                "INVALID_REFERENCE", f"stepId {body['stepId']} is not the assistant entry's step"
            )
        if index >= len(assistant.calls):
            raise _Violation(
                "INVALID_REFERENCE",
                f"toolIndex {index}: the assistant entry has {len(assistant.calls)} call(s)",
            )
        return assistant, index

    def _consume(self, st: SessionState, fid: str, owner: Any, what: str) -> None:
        if st.reservations.get(fid) is not owner:
            if fid in st.reservations:
                raise _Violation("DUPLICATE_ID", f"{what}: id {fid} is reserved for another result")
            raise _Violation(
                "INVALID_REFERENCE", f"{what}: id {fid} is not the resultEntryId reserved for it"
            )
        self._j.delete(st.reservations, fid)

    # -- entries -------------------------------------------------------------------------------
    def _entry_user(self, st: SessionState, fact: dict[str, Any], entry: dict[str, Any]) -> None:
        if st.operation is not None:
            raise _Violation("INVALID_TRANSITION", "a user message while an operation is unfinished")
        self._model_visible(st, fact["id"], "user", entry["message"])

    def _entry_assistant(self, st: SessionState, fact: dict[str, Any], entry: dict[str, Any]) -> None:
        op = st.operation
        if op is None or op.kind != "run" or not op.open_attempt():
            raise _Violation("INVALID_TRANSITION", "an assistant message with no run's attempt open")
        step = op.step
        assert step is not None
        if entry["attemptId"] != step.attempt_id:
            if entry["attemptId"] in st.attempts:
                raise _Violation(
                    "INVALID_TRANSITION", f"attemptId {entry['attemptId']} is not the open attempt"
                )
            raise _Violation("INVALID_REFERENCE", f"attemptId {entry['attemptId']} names no stepAttempt")
        if entry["stepId"] != step.step_id:
            raise _Violation("INVALID_REFERENCE", f"stepId {entry['stepId']} is not the open attempt's step")
        message = entry["message"]
        calls = message.get("tool_calls", [])
        if len({c["id"] for c in calls}) != len(calls):
            raise _Violation("INVALID_TRANSCRIPT", "two tool calls of one assistant message share an id")
        j, fid = self._j, fact["id"]
        j.set(step, "status", "settled")
        j.set(step, "settled_entry_id", fid)
        j.set(step, "stop_reason", entry["stopReason"])
        assistant = Assistant(fid, op.operation_id, step.step_id, message, entry["stopReason"], calls)
        j.set(op, "assistant", assistant)
        j.set(st, "last_assistant", assistant)
        self._model_visible(st, fid, "assistant", message)

    def _entry_tool(self, st: SessionState, fact: dict[str, Any], entry: dict[str, Any]) -> None:
        op = st.operation
        if op is None or op.kind != "run":
            raise _Violation("INVALID_TRANSITION", "a tool result with no run open")
        call = op.tool_calls.get(entry["toolStartedId"])
        if call is None:
            raise _Violation(
                "INVALID_REFERENCE",
                f"toolStartedId {entry['toolStartedId']} names no toolStarted of this run",
            )
        assistant = op.assistant
        if call.status != "pending":
            raise _Violation("INVALID_TRANSITION", f"{call['toolName']} already has its result")
        if assistant is None or call["assistantEntryId"] != assistant.entry_id:
            raise _Violation("INVALID_TRANSITION", "a result for a call of an earlier assistant entry")
        fid = fact["id"]
        self._consume(st, fid, call, "tool result")
        if entry["stepId"] != call["stepId"]:
            raise _Violation("INVALID_REFERENCE", f"stepId {entry['stepId']} is not its toolStarted's step")
        message = entry["message"]
        if message["tool_call_id"] != call["toolCallId"]:
            raise _Violation(
                "INVALID_TRANSCRIPT",
                f"tool_call_id {message['tool_call_id']!r} is not its toolStarted's {call['toolCallId']!r}",
            )
        if entry["toolName"] != call["toolName"]:
            raise _Violation(
                "INVALID_TRANSCRIPT",
                f"toolName {entry['toolName']!r} is not its toolStarted's {call['toolName']!r}",
            )
        if entry["result"]["type"] == "synthetic" and message["content"] != SYNTHETIC_CONTENT["interrupted"]:
            raise _Violation(
                "INVALID_TRANSCRIPT", "an interrupted result's content is not the contract's text"
            )
        j = self._j
        j.set(call, "status", "completed")
        j.put(assistant.results, call["toolIndex"], fid)
        self._model_visible(st, fid, "tool", message)

    def _entry_synthetic(self, st: SessionState, fact: dict[str, Any], entry: dict[str, Any]) -> None:
        op = st.operation
        if op is None or op.kind != "run":
            raise _Violation("INVALID_TRANSITION", "a synthetic result with no run open")
        assistant, index = self._named_call(st, op, entry)
        if index in assistant.results:
            raise _Violation("INVALID_TRANSITION", f"call {index} already has its result")
        if index in assistant.started:
            raise _Violation(
                "INVALID_TRANSITION",
                f"call {index} has a toolStarted: its result must carry toolStartedId (reason interrupted)",
            )
        call, message, reason = assistant.calls[index], entry["message"], entry["result"]["reason"]
        if message["tool_call_id"] != call["id"] or entry["toolName"] != call["function"]["name"]:
            raise _Violation("INVALID_TRANSCRIPT", f"the result does not name call {index}'s id and tool")
        if message["content"] != SYNTHETIC_CONTENT[reason]:
            raise _Violation(
                "INVALID_TRANSCRIPT", f"the {reason} result's content is not the contract's text"
            )
        self._j.put(assistant.results, index, fact["id"])
        self._model_visible(st, fact["id"], "synthetic", message)

    def _entry_compaction(self, st: SessionState, fact: dict[str, Any], entry: dict[str, Any]) -> None:
        op = st.operation
        if op is None or op.kind != "compaction" or not op.open_attempt():
            raise _Violation("INVALID_TRANSITION", "a compaction entry with no compaction attempt open")
        if entry["operationId"] != op.operation_id:
            raise _Violation(
                "INVALID_REFERENCE", f"operationId {entry['operationId']} is not the compaction's"
            )
        fid = fact["id"]
        self._consume(st, fid, op, "compaction entry")
        tail = entry["retainedTail"]
        if entry["compactedThroughEntryId"] != op.compacted[-1]:
            raise _Violation(
                "INVALID_REFERENCE",
                "compactedThroughEntryId is not the last entry compactionStarted compacts",
            )
        if [r["sourceEntryId"] for r in tail] != op.retained:
            raise _Violation("INVALID_REFERENCE", "retainedTail is not the entries compactionStarted retains")
        kept = st.active[len(op.compacted) :]
        if any(r["message"] != m for r, (_, m) in zip(tail, kept, strict=True)):
            raise _Violation("INVALID_TRANSCRIPT", "a retained message differs from the one in the context")
        j, step = self._j, op.step
        assert step is not None
        j.set(step, "status", "settled")
        j.set(step, "settled_entry_id", fid)
        summary = {"role": "user", "content": COMPACTED_PREFIX + entry["summary"]}
        j.put(st.entries, fid, "compaction")
        j.set(st, "active", [(fid, summary), *((r["sourceEntryId"], r["message"]) for r in tail)])
        j.set(st, "active_hash", (hashlib.sha256(b"["), 0))

    # -- records -------------------------------------------------------------------------------
    def _record_runStarted(self, st: SessionState, fact: dict[str, Any], record: dict[str, Any]) -> None:
        if st.operation is not None:
            raise _Violation("INVALID_TRANSITION", "runStarted while another operation is unfinished")
        self._fresh(st, record["operationId"], "operationId")
        entry_id = record["inputEntryId"]
        if st.entries.get(entry_id) != "user":
            raise _Violation("INVALID_REFERENCE", f"inputEntryId {entry_id} names no user message")
        if entry_id in st.used_inputs:
            raise _Violation("INVALID_TRANSITION", f"user message {entry_id} already started a run")
        if entry_id != st.boundary:
            raise _Violation("INVALID_TRANSITION", "inputEntryId is not the latest model-visible entry")
        self._open(st, Operation("run", record["operationId"], entry_id))
        self._j.add(st.used_inputs, entry_id)

    def _open(self, st: SessionState, op: Operation) -> None:
        self._j.add(st.operation_ids, op.operation_id)
        self._j.set(st, "operation", op)

    def _active_digest(self, st: SessionState) -> str:
        hasher, hashed = st.active_hash
        if hashed < len(st.active):
            hasher = hasher.copy()
            for source, message in st.active[hashed:]:
                if hashed:
                    hasher.update(b",")
                hasher.update(canonical_closed({"sourceEntryId": source, "message": message}))
                hashed += 1
            self._j.set(st, "active_hash", (hasher, hashed))
        final = hasher.copy()
        final.update(b"]")
        return "sha256:" + final.hexdigest()

    def _record_compactionStarted(
        self, st: SessionState, fact: dict[str, Any], record: dict[str, Any]
    ) -> None:
        if st.operation is not None:
            raise _Violation("INVALID_TRANSITION", "compactionStarted while another operation is unfinished")
        self._fresh(st, record["operationId"], "operationId")
        self._fresh(st, record["resultEntryId"], "resultEntryId")
        through = record["inputThroughEntryId"]
        if through not in st.entries:
            raise _Violation("INVALID_REFERENCE", f"inputThroughEntryId {through} names no entry")
        if through != st.boundary:
            raise _Violation(
                "INVALID_TRANSITION", "inputThroughEntryId is not the latest model-visible entry"
            )
        compacted, retained = record["compactedEntryIds"], record["retainedEntryIds"]
        if [source for source, _ in st.active] != compacted + retained:
            raise _Violation(
                "INVALID_REFERENCE",
                "compactedEntryIds + retainedEntryIds is not the active context, in order",
            )
        if self._active_digest(st) != record["sourceDigest"]:
            raise _Violation("INVALID_REFERENCE", "sourceDigest is not the digest of the active context")
        op = Operation(
            "compaction", record["operationId"], through, record["resultEntryId"], compacted, retained
        )
        self._j.put(st.reservations, record["resultEntryId"], op)
        self._open(st, op)

    def _record_stepAttempt(self, st: SessionState, fact: dict[str, Any], record: dict[str, Any]) -> None:
        op = self._current(st, record["operationId"])
        expected_kind = "assistant" if op.kind == "run" else "compaction"
        if record["stepKind"] != expected_kind:
            raise _Violation("INVALID_TRANSITION", f"stepKind {record['stepKind']} in a {op.kind} operation")
        if op.abort_requested:
            raise _Violation("INVALID_TRANSITION", "a stepAttempt after abortRequested")
        self._fresh(st, record["attemptId"], "attemptId")
        context, step = record["contextThroughEntryId"], op.step
        if record["attempt"] == 1:
            self._fresh(st, record["stepId"], "stepId (of a new step)")
            if step is not None:
                why = _no_new_step(op, step)
                if why:
                    raise _Violation("INVALID_TRANSITION", f"a new step while {why}")
            if context not in st.entries:
                raise _Violation("INVALID_REFERENCE", f"contextThroughEntryId {context} names no entry")
            boundary = op.input_entry_id if op.kind == "compaction" else st.boundary
            if context != boundary:
                raise _Violation(
                    "INVALID_TRANSITION",
                    f"contextThroughEntryId {context} is not the active-context boundary {boundary}",
                )
        else:
            if step is None or step.status != "attempting" or step.attempt != 1:
                raise _Violation("INVALID_TRANSITION", "attempt 2 needs attempt 1 of its step open (crashed)")
            if step.step_id != record["stepId"]:
                raise _Violation("INVALID_TRANSITION", "attempt 2 does not repeat attempt 1's stepId")
            if context != step.context_through:
                raise _Violation("INVALID_FACT", "attempt 2's contextThroughEntryId differs from attempt 1's")
            if record["configurationDigest"] != step.digest:
                raise _Violation("INVALID_FACT", "attempt 2's configurationDigest differs from attempt 1's")
        new_step = Step(
            op.operation_id,
            record["stepId"],
            record["attemptId"],
            record["attempt"],
            record["stepKind"],
            context,
            record["configurationSnapshot"],
            record["configurationDigest"],
        )
        self._j.set(op, "step", new_step)
        self._j.put(st.attempts, record["attemptId"], op.operation_id)

    def _record_stepFailed(self, st: SessionState, fact: dict[str, Any], record: dict[str, Any]) -> None:
        op = self._current(st, record["operationId"])
        step = op.step
        if record["attemptId"] not in st.attempts:
            raise _Violation("INVALID_REFERENCE", f"attemptId {record['attemptId']} names no stepAttempt")
        if step is None or step.status != "attempting" or record["attemptId"] != step.attempt_id:
            raise _Violation("INVALID_TRANSITION", "stepFailed for an attempt that is not open")
        if record["stepId"] != step.step_id:
            raise _Violation("INVALID_REFERENCE", f"stepId {record['stepId']} is not the attempt's step")
        self._j.set(step, "status", "failed")
        self._j.set(step, "error", record["error"])

    def _record_toolStarted(self, st: SessionState, fact: dict[str, Any], record: dict[str, Any]) -> None:
        op = self._current(st, record["operationId"], "run")
        if op.abort_requested:
            raise _Violation("INVALID_TRANSITION", "a toolStarted after abortRequested")
        if op.step is None or op.step.status != "settled":
            raise _Violation("INVALID_TRANSITION", "a toolStarted with no settled assistant step")
        assistant, index = self._named_call(st, op, record)
        call = assistant.calls[index]
        if call["id"] != record["toolCallId"] or call["function"]["name"] != record["toolName"]:
            raise _Violation("INVALID_REFERENCE", f"toolCallId and toolName are not call {index}'s")
        if assistant.stop_reason == "length":
            raise _Violation("INVALID_TRANSITION", "a toolStarted for a call of a length-stopped answer")
        if index in assistant.started or index in assistant.results:
            raise _Violation("INVALID_TRANSITION", f"call {index} already has a toolStarted or a result")
        if parse_arguments(call["function"]["arguments"]) != record["arguments"]:
            raise _Violation("INVALID_FACT", f"arguments are not call {index}'s arguments, parsed")
        self._fresh(st, record["resultEntryId"], "resultEntryId")
        j, tool = self._j, ToolCall(fact["id"], record)
        j.put(st.reservations, record["resultEntryId"], tool)
        j.put(op.tool_calls, fact["id"], tool)
        j.put(st.tool_owners, fact["id"], op.operation_id)
        j.put(assistant.started, index, tool)

    def _record_abortRequested(self, st: SessionState, fact: dict[str, Any], record: dict[str, Any]) -> None:
        op = self._current(st, record["operationId"])
        if record["operationKind"] != op.kind:
            raise _Violation(
                "INVALID_FACT", f"operationKind {record['operationKind']}; the operation is a {op.kind}"
            )
        if op.abort_requested:
            raise _Violation("INVALID_TRANSITION", "a second abortRequested for one operation")
        self._j.set(op, "abort_requested", True)

    def _record_operationFinished(
        self, st: SessionState, fact: dict[str, Any], record: dict[str, Any]
    ) -> None:
        op = self._current(st, record["operationId"])
        if record["operationKind"] != op.kind:
            raise _Violation(
                "INVALID_FACT", f"operationKind {record['operationKind']}; the operation is a {op.kind}"
            )
        if op.open_attempt():
            raise _Violation("INVALID_TRANSITION", "operationFinished with an attempt still open")
        if op.unresolved():
            raise _Violation(
                "INVALID_TRANSITION", f"operationFinished with call(s) {op.unresolved()} unresolved"
            )
        outcome = record["outcome"]
        if outcome == "aborted" and not op.abort_requested:
            raise _Violation("INVALID_TRANSITION", "outcome aborted with no abortRequested")
        if outcome == "completed":
            if op.step is None or op.step.status != "settled":
                raise _Violation("INVALID_TRANSITION", "outcome completed with no settled step")
            if record["finalEntryId"] != op.step.settled_entry_id:
                raise _Violation(
                    "INVALID_REFERENCE", "finalEntryId is not the entry that settled the last step"
                )
        self._j.set(op, "finished", True)
        self._j.set(st, "operation", None)

    def _usage(self, st: SessionState, fact: dict[str, Any]) -> None:
        if "attemptId" in fact:
            owner = st.attempts.get(fact["attemptId"])
        else:
            owner = st.tool_owners.get(fact["toolStartedId"])
        if owner != fact["operationId"]:  # owners are opened operations, so this also checks it exists
            named = fact.get("attemptId") or fact.get("toolStartedId")
            raise _Violation(
                "INVALID_REFERENCE",
                f"usage: {named} is no attempt or tool of operation {fact['operationId']}",
            )
        counters = fact["usage"]
        totals = tuple(a + counters[k] for a, k in zip(st.usage, USAGE_KEYS, strict=True))
        if max(totals) > shapes.MAX_SAFE:
            raise _Violation("INVALID_FACT", "usage: a running total passes 2^53-1")
        self._j.set(st, "usage", totals)


def reduce(data: bytes) -> dict[str, Any]:
    """Reduce a whole session log to the golden ``expected.json`` shape."""
    return Reducer.of(data).result()
