"""The reference agent: one loop for live runs and for resumeSession.

``drive`` asks the chaos planner for the next effect, performs exactly that one
effect, commits it, and asks again until ``finish`` or ``blocked``. A live run is
the same loop started right after the prompt's transaction; a resume is the
same loop started from whatever prefix a crash left. SIGINT turns into an
``abortRequested`` and the planner then drives the abort path.

``TINY_REFERENCE_BUG`` turns on deliberately broken behaviours (see
docs/internals.md; several at once as ``a,b,c``) so chaos can prove it catches each class
of recovery bug, and tell several bugs apart in one run.
``TINY_REFERENCE_VARIANT`` turns on *legal* designs other agents choose (an
abort left to the resume, a lock that waits, one fact per transaction, usage
recorded before the answer, its own exit code for a refused session, no abort
on SIGINT at all), so chaos can prove it blames none of them.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

from chaos.contract import SYNTHETIC_CONTENT, SessionState, plan_recovery
from chaos.contract import facts as F
from chaos.contract.digest import digest

from .mcp_client import McpTools
from .provider import PROTOCOLS, ProviderError, complete
from .session import SessionFile
from .tools import ToolFailure, declarations, run_tool

SYSTEM_PROMPT = "You are a careful coding agent. Work only inside the current workspace."
COMPACTION_PROMPT = "Summarize the conversation so far for a continuation; keep every fact needed later."
OUTPUT_OPTIONS = {"max_tokens": 4096}
BUGS = (
    "stale-assistant-calls",
    "replay-never-tools",
    "intent-after-effect",
    "no-torn-tail-repair",
    "unbounded-retry",
    "skip-finish-on-resume",
    "double-usage",
    "client-retries",
    "no-fsync",
    "no-directory-sync",
    "unsynced-parents",  # mkdir -p of the session directories without syncing their parents
    "old-gate-order",
    "no-session-lock",
    "synthetic-missing-field",
    "ignore-log-errors",
    "resume-ignores-abort",
    "abort-shortcut",
    "results-reordered",
    "undigested-definition",
    "compaction-wrong-range",
    "hide-synthetic-results",
    "truncated-as-normal",
    "finish-other-error",
    "abort-other-message",
    "give-up-on-replay",
    "stale-replay-key",
    "retry-forgets-step",
    "abort-runs-planned",  # after an abort is durable, still runs the next planned call that had not started
    "resume-no-sync",  # a resume opens the log without syncing what it appends
    "full-disk-in-memory",  # a write that fails with ENOSPC is tried once more, then kept in memory only
    "unreadable-as-empty",  # an answer that is not JSON taken as an empty final reply
    "no-request-deadline",  # only the socket's per-read timeout: an answer that trickles in never ends
    "mcp-trusts-hints",  # an MCP tool the server hints read-only or idempotent is declared safe to replay
    "mcp-call-again",  # an MCP call whose answer was lost (the server restarted) is made once more
    "mcp-cut-call-again",  # an MCP call whose answer's stream was cut is made once more, on the same session
    "mcp-error-call-again",  # an MCP call answered by a JSON-RPC error is made once more
    "sigterm-aborts",  # a supervisor's SIGTERM taken for the user's abort: the run is finished aborted
    "corrupt-as-torn",  # a complete last line that does not reduce is dropped as if it were a torn tail
)
VARIANTS = (
    "deferred-abort",  # on SIGINT: make abortRequested durable and exit at once; the resume finishes it
    "blocking-lock",  # a second writer waits for the session lock instead of refusing
    "one-fact-per-transaction",  # every fact its own line (user message, then runStarted; answer, then usage)
    "usage-first",  # an answer's usage in its own transaction, before the answer's entry
    "refusal-exit",  # a session held by another writer: exit 75 (EX_TEMPFAIL), not 1
    "repair-on-write",  # a torn tail is truncated just before the first write, so a resume that stops leaves it
    "no-abort",  # SIGINT is not an abort: the default action ends the process (declare no abort capability)
)
EXIT = {"completed": 0, "failed": 4, "aborted": 5, "blocked": 3}
DEFERRED_ABORT_EXIT = 130  # the abort is durable, not finished: the resume finishes it


class Agent:
    def __init__(self, workspace: Path, env: dict[str, str]) -> None:
        self.workspace = workspace
        self.bugs = _switches(env, "TINY_REFERENCE_BUG", BUGS)
        self.variants = _switches(env, "TINY_REFERENCE_VARIANT", VARIANTS)
        self.base_url = env.get("TINY_BASE_URL", "")
        self.model = env.get("TINY_MODEL", "")
        self.protocol = env.get("TINY_PROTOCOL") or "openai-chat"
        if self.protocol not in PROTOCOLS:
            raise ValueError(f"TINY_PROTOCOL: {self.protocol} is not one of {', '.join(PROTOCOLS)}")
        self.api_key = env.get("TINY_API_KEY") or None
        self.environment_identity = env.get("TINY_AGENT_ENVIRONMENT_IDENTITY") or str(workspace)
        self.timeout = float(env.get("TINY_TIMEOUT", "60"))
        self.bash_timeout = float(env.get("TINY_BASH_TIMEOUT", "30"))
        # its tools on an MCP server (TINY_MCP_URL, TINY_MCP_COMMAND), or its own
        self.mcp = McpTools.from_env(env, self.timeout, frozenset(self.bugs))
        served = self.mcp.listing() if self.mcp is not None else None
        trust_hints = "mcp-trusts-hints" in self.bugs
        self.tools = {d["definition"]["name"]: d for d in declarations(served, trust_hints)}
        self.snapshot = {
            "model": self.model or "unset",
            "systemPromptDigest": digest(SYSTEM_PROMPT),
            "tools": [{"name": n, "definitionDigest": d["definitionDigest"]} for n, d in self.tools.items()],
            "adapterIdentity": f"{self.protocol}:v1",
            "routingIdentity": f"{self.protocol}:{self.model or 'unset'}",
            "outputOptionsDigest": digest(OUTPUT_OPTIONS),
        }
        self.recovering = False

    def current(self) -> dict[str, Any]:
        """The planner's ``current`` configuration."""
        return {
            "configurationDigest": digest(self.snapshot),
            "environmentIdentity": self.environment_identity,
            "tools": [
                {
                    "name": n,
                    "definitionDigest": d["definitionDigest"],
                    "replay": d["replay"],
                    "replayKey": d["replayKey"],
                }
                for n, d in self.tools.items()
            ],
        }

    # -- the loop ----------------------------------------------------------------------------------
    def drive(self, session: SessionFile) -> tuple[str, str | None]:
        """Run plans until finish or blocked: (outcome, blocked reason)."""
        while True:
            st = session.state
            plan = self._plan(st)
            kind = plan["type"]
            finishing = plan["outcome"] if kind == "finish" and st.operation is not None else None
            try:
                if kind == "blocked":
                    if plan["reason"] == "attempts_exhausted" and "unbounded-retry" in self.bugs:
                        self._answer(session)  # bills a third request for one step
                        continue
                    return "blocked", plan["reason"]
                if kind == "finish":
                    if st.operation is not None and not (
                        (self.recovering and "skip-finish-on-resume" in self.bugs) or plan.get("ignored")
                    ):
                        session.commit(*F.plan_facts(st, plan))
                    return plan["outcome"], None
                if kind == "startStep":
                    if plan.get("stale"):
                        op = st.operation
                        assert op is not None
                        session.write_unchecked(
                            F.step_attempt(
                                op, plan, session.writer.new_id(), session.writer.new_id(), self.snapshot
                            )
                        )
                        return "completed", None  # the port believed the session went on
                    self._step(session, plan)
                elif kind == "startTool":
                    self._tool(session, plan)
                elif kind == "appendSynthetic" and self._replays_never_tool(session, plan):
                    continue
                elif (
                    kind == "appendSynthetic"
                    and "synthetic-missing-field" in self.bugs
                    and _pre_execution(plan)
                ):
                    facts = F.plan_facts(st, plan)
                    for _, body, _ in facts:
                        body.pop("assistantEntryId", None)  # a pre-execution result that names no answer
                    session.write_unchecked(*facts)
                    return "completed", None  # the port believed the session went on
                else:
                    session.commit(*F.plan_facts(st, plan))
            except KeyboardInterrupt:
                if finishing is not None and session.state.operation is None:
                    return finishing, None  # SIGINT just after operationFinished: the outcome stands
                if self._abort(session) and "deferred-abort" in self.variants:
                    raise DeferredAbort() from None

    def _plan(self, st: SessionState) -> dict[str, Any]:
        plan = plan_recovery(st, self.current())
        if (
            self.recovering
            and "resume-ignores-abort" in self.bugs
            and st.operation
            and st.operation.abort_requested
        ):
            return {"type": "finish", "outcome": "completed", "ignored": True}  # an abort it did not start
        plan = self._misread(st, plan)
        step = st.operation.step if st.operation else None
        if "old-gate-order" in self.bugs and step is not None and step.status == "failed":
            return {"type": "finish", "outcome": "failed", "error": step.error}  # failure before the gates
        if (
            self.recovering
            and "stale-assistant-calls" in self.bugs
            and plan["type"] == "finish"
            and st.operation
        ):
            stale = _stale_boundary(st)
            if stale is not None:
                return {
                    "type": "startStep",
                    "stepKind": "assistant",
                    "attempt": 1,
                    "contextThroughEntryId": stale,
                    "stale": True,
                }
        return plan

    def _misread(self, st: SessionState, plan: dict[str, Any]) -> dict[str, Any]:
        """Bug switches that carry out a plan with a field of their own: each passes the reducer."""
        kind = plan["type"]
        if kind == "finish" and plan.get("completion") == "truncated" and "truncated-as-normal" in self.bugs:
            return {**plan, "completion": "normal"}
        if kind == "finish" and plan["outcome"] == "failed" and "finish-other-error" in self.bugs:
            return {**plan, "error": {"code": "failed", "message": "the step failed"}}
        if kind == "startStep" and plan["attempt"] == 2 and "retry-forgets-step" in self.bugs:
            return {k: v for k, v in plan.items() if k != "stepId"}  # the retry gets a step of its own
        if kind == "closeAttempt" and "abort-other-message" in self.bugs:
            return {**plan, "error": {**plan["error"], "message": "Cancelled by the user"}}
        replaying = kind == "startTool" and plan["mode"] == "replay" and st.operation is not None
        if replaying and self.recovering and "give-up-on-replay" in self.bugs:
            call = st.operation.tool_calls[plan["toolStartedId"]]  # type: ignore[union-attr]
            synthetic = {k: call[k] for k in ("assistantEntryId", "toolIndex", "toolCallId", "toolName")}
            synthetic |= {"toolStartedId": call.tool_started_id, "resultEntryId": call["resultEntryId"]}
            synthetic |= {"reason": "interrupted", "content": SYNTHETIC_CONTENT["interrupted"]}
            return {"type": "appendSynthetic", "results": [synthetic]}  # gives up on a safe read
        return plan

    def _sent(self, st: SessionState, kind: str) -> list[dict[str, Any]]:
        """The conversation a request carries: the active context, or what a bug switch makes of it."""
        messages = [m for _, m in st.active]
        if "hide-synthetic-results" in self.bugs:  # as if synthetic results were the agent's own business
            synthetic = set(SYNTHETIC_CONTENT.values())
            messages = [m for m in messages if not (m["role"] == "tool" and m["content"] in synthetic)]
        if "results-reordered" in self.bugs:  # each run of tool results, last call first
            out: list[dict[str, Any]] = []
            for m in messages:
                run = 0
                while m["role"] == "tool" and run < len(out) and out[len(out) - 1 - run]["role"] == "tool":
                    run += 1
                out.insert(len(out) - run, m)
            messages = out
        if kind == "compaction" and self.recovering and "compaction-wrong-range" in self.bugs:
            messages = messages[1:]  # a resumed compaction that summarises from the second entry on
        return messages

    def _abort(self, session: SessionFile) -> bool:
        """Make an abort durable (True), unless nothing is left to abort."""
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # one abort; the planner finishes it
        op = session.state.operation
        if op is None or op.abort_requested:
            return False
        if (
            "abort-shortcut" in self.bugs
        ):  # aborted at once, the open attempt and pending calls left as they are
            finished = F.operation_finished(op, {"type": "finish", "outcome": "aborted"})
            session.write_unchecked(F.abort_requested(op, "model"), finished)
            raise DeferredAbort()
        pending = [tc for tc in op.tool_calls.values() if tc.status == "pending"]
        if op.kind == "compaction":
            session.commit(F.abort_requested(op, "compact"))
        elif pending:
            session.commit(F.abort_requested(op, "tool", pending[0]["toolCallId"]))
        else:
            session.commit(F.abort_requested(op, "model"))
        if "abort-runs-planned" in self.bugs:
            self._run_next_planned(session)
        return True

    def _run_next_planned(self, session: SessionFile) -> None:
        """The abort-runs-planned bug: the answer's next call that had not started runs anyway."""
        assistant = session.state.last_assistant
        waiting = [i for i in assistant.unresolved() if i not in assistant.started] if assistant else []
        if assistant is not None and waiting:
            function = assistant.calls[waiting[0]]["function"]
            self._execute(function["name"], json.loads(function["arguments"] or "{}"))

    # -- effects -------------------------------------------------------------------------------------
    def _step(self, session: SessionFile, plan: dict[str, Any]) -> None:
        op = session.state.operation
        assert op is not None
        w = session.writer
        session.commit(F.step_attempt(op, plan, plan.get("stepId") or w.new_id(), w.new_id(), self.snapshot))
        self._answer(session)

    def _answer(self, session: SessionFile) -> None:
        """Send the open attempt's request and settle it, or record the live failure."""
        st = session.state
        op = st.operation
        assert op is not None and op.step is not None
        system = COMPACTION_PROMPT if op.kind == "compaction" else SYSTEM_PROMPT
        body: dict[str, Any] = {"messages": [{"role": "system", "content": system}, *self._sent(st, op.kind)]}
        if op.kind == "run":
            definitions = [d["definition"] for d in self.tools.values()]
            if "undigested-definition" in self.bugs:  # a description edited after its digest was taken
                definitions = [{**d, "description": d["description"] + " Prefer it."} for d in definitions]
            body["tools"] = [{"type": "function", "function": d} for d in definitions]
        body.update(OUTPUT_OPTIONS)
        attempt_id = op.step.attempt_id
        try:
            retries = 1 if "client-retries" in self.bugs else 0  # like SDKs that retry a 429 by default
            answer = complete(
                self.base_url,
                self.model,
                self.api_key,
                body,
                self.timeout,
                retries,
                self.protocol,
                self.bugs,
            )
        except ProviderError as err:
            session.commit(F.step_failed(op, err.code, err.message))
            return
        usage = [F.usage(op, "attemptId", attempt_id, answer.usage)]
        if self.recovering and "double-usage" in self.bugs:
            usage *= 2  # counts the answer's usage twice (a usage fact per retry path)
        if "usage-first" in self.variants:
            session.commit(*usage)
            usage = []
        if op.kind == "compaction":
            session.commit(F.compaction_entry(st, answer.message.get("content") or ""), *usage)
        else:
            session.commit(F.assistant_message(op, answer.message, answer.stop_reason), *usage)

    def _execute(self, name: str, arguments: dict[str, Any]) -> tuple[str, bool]:
        if self.mcp is not None:
            return self.mcp.call(name, arguments)
        try:
            return run_tool(name, arguments, self.workspace, self.bash_timeout), True
        except ToolFailure as err:
            return str(err), False

    def _tool(self, session: SessionFile, plan: dict[str, Any]) -> None:
        st = session.state
        op, assistant = st.operation, st.last_assistant
        assert op is not None and assistant is not None
        index, name = plan["toolIndex"], plan["toolName"]
        if plan["mode"] == "start":
            declared = self.tools[name]
            if self.recovering and "stale-replay-key" in self.bugs:  # the key of the tool's older version
                declared = {**declared, "replayKey": declared["replayKey"].rsplit(":", 1)[0] + ":v0"}
            intent = F.tool_started(
                op,
                assistant,
                index,
                plan["arguments"],
                declared,
                session.writer.new_id(),
                self.environment_identity,
            )
            if "intent-after-effect" in self.bugs:
                output, ok = self._execute(name, plan["arguments"])
                session.commit(intent)
                session.commit(F.tool_result(assistant.started[index], output, ok))
                return
            session.commit(intent)
        output, ok = self._execute(name, plan["arguments"])
        session.commit(F.tool_result(assistant.started[index], output, ok))

    def _replays_never_tool(self, session: SessionFile, plan: dict[str, Any]) -> bool:
        """The replay-never-tools bug: run an interrupted ``never`` tool again instead of a synthetic result."""
        if not (self.recovering and "replay-never-tools" in self.bugs):
            return False
        st = session.state
        started = [r for r in plan["results"] if r["reason"] == "interrupted"]
        op = st.operation
        if not started or op is None or op.abort_requested:
            return False
        call = op.tool_calls[started[0]["toolStartedId"]]
        output, ok = self._execute(call["toolName"], call["arguments"])
        session.commit(F.tool_result(call, output, ok))
        return True


class DeferredAbort(Exception):
    """The deferred-abort variant: the abort is durable; this process leaves its finishing to a resume."""


def _pre_execution(plan: dict[str, Any]) -> bool:
    """An appendSynthetic plan with a result for a call that never started (no toolStartedId)."""
    return any("toolStartedId" not in result for result in plan["results"])


def _switches(env: dict[str, str], name: str, known: tuple[str, ...]) -> frozenset[str]:
    chosen = frozenset(b.strip() for b in env.get(name, "").split(",") if b.strip())
    unknown = sorted(chosen - set(known))
    if unknown:
        raise ValueError(f"{name}: {', '.join(unknown)} is not one of {', '.join(known)}")
    return chosen


def _stale_boundary(st: SessionState) -> str | None:
    """What the section-8 port planned from: the last result of the last assistant that has tool calls.

    A result always follows the assistant entry that called the tool, so that is the last result entry.
    """
    last = st.last_assistant
    if last is None or last.calls:
        return None
    return next((e for e, kind in reversed(st.entries.items()) if kind in ("tool", "synthetic")), None)
