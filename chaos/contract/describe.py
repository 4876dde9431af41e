"""One-line descriptions of facts and plans: the fields recovery depends on, as ``key=value`` text.

Checks word their findings with these, and timelines, diffs and reports show
them. The text comes from a log an untrusted agent wrote: whoever prints it
escapes it first (``chaos.report.text.printable``).
"""

from __future__ import annotations

from typing import Any

from chaos.contract.kinds import kind_of


def detail(fact: dict[str, Any]) -> str:
    """The fields of one fact that recovery depends on, as ``key=value`` text."""
    name, body = kind_of(fact)
    parts: list[str] = []
    if name == "stepAttempt":
        parts += [f"attempt={body['attempt']}", f"stepKind={body['stepKind']}"]
    elif name == "toolStarted":
        parts += [f"tool={body['toolName']}", f"replay={body['replay']}", f"index={body['toolIndex']}"]
    elif name in ("entry:stop", "entry:toolUse", "entry:length"):
        calls = body.get("message", {}).get("tool_calls") or []
        parts += [f"calls={','.join(c['function']['name'] for c in calls)}"] if calls else []
    elif name == "entry:tool":
        result = body.get("result", {})
        parts += [f"tool={body.get('toolName')}", f"result={result.get('reason') or result.get('type')}"]
    elif name == "stepFailed":
        parts += [f"error={body['error']['code']}"]
    elif name == "abortRequested":
        parts += [f"phase={body.get('phase')}"]
    elif name == "operationFinished":
        parts += [f"outcome={body['outcome']}"] + (
            [f"completion={body['completion']}"] if "completion" in body else []
        )
    elif name in ("runStarted", "compactionStarted"):
        parts += [f"operation={body.get('operationKind')}"]
    elif name == "usage":
        parts += [f"for={'attempt' if 'attemptId' in fact else 'tool'}"]
    elif name == "header":
        parts += [f"model={fact.get('model')}", f"identity={fact.get('environmentIdentity')}"]
    return " ".join(parts)


def plan_text(plan: dict[str, Any]) -> str:
    """A plan as ``type key=value ...``: what recovery will do next."""
    keys = ("mode", "attempt", "toolName", "outcome", "completion", "reason")
    parts = [f"{k}={plan[k]}" for k in keys if k in plan]
    if "results" in plan:
        parts.append("results=" + ",".join(f"{r['toolName']}:{r['reason']}" for r in plan["results"]))
    return f"{plan['type']} " + " ".join(parts)
