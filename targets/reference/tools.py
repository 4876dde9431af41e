"""The reference agent's tools: model-facing definitions, replay declarations, and execution.

Only ``read`` is safe to replay (``builtin:read:v1``); every other tool is
``never``. Paths are resolved and must stay inside the workspace. ``bash`` runs
in its own process group so a timeout or an abort kills everything it started.
``TINY_REFERENCE_TOOLS`` (a JSON object of tool name -> {description, replay,
replayKey}) overrides declarations, which is how a scenario changes a tool
definition or a replay declaration between a crash and the resume.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

from chaos.contract.digest import digest

OUTPUT_CAP = 32_000


def _schema(**props: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {name: {"type": "string", "description": text} for name, text in props.items()},
        "required": list(props),
        "additionalProperties": False,
    }


DEFINITIONS: dict[str, dict[str, Any]] = {
    "read": {
        "description": "Read a UTF-8 text file in the workspace.",
        "parameters": _schema(path="file path"),
    },
    "write": {
        "description": "Create or overwrite a text file in the workspace.",
        "parameters": _schema(path="file path", content="the whole new content"),
    },
    "edit": {
        "description": "Replace exactly one occurrence of a text in a workspace file.",
        "parameters": _schema(path="file path", old="text to replace", new="replacement"),
    },
    "bash": {
        "description": "Run a bash command in the workspace; returns exit status and output.",
        "parameters": _schema(command="the command line"),
    },
}


class ToolFailure(Exception):
    """The tool ran (or refused) and the model should see an error result."""


def declarations(
    served: list[dict[str, Any]] | None = None, trust_hints: bool = False
) -> list[dict[str, Any]]:
    """Each tool's model-facing definition, its definitionDigest and replay declaration: the built-in tools,
    or those ``served`` by an MCP server (``mcp_client``), ``never`` unless the host names them safe in
    ``TINY_MCP_SAFE`` (with ``trust_hints``, the mcp-trusts-hints bug: the server's hints are believed)."""
    overrides = json.loads(os.environ.get("TINY_REFERENCE_TOOLS") or "{}")
    trusted = {name.strip() for name in os.environ.get("TINY_MCP_SAFE", "").split(",") if name.strip()}
    tools = served if served is not None else [{"name": n, **spec} for n, spec in DEFINITIONS.items()]
    out = []
    for tool in tools:
        name = tool["name"]
        extra = overrides.get(name, {})
        definition = {
            "name": name,
            "description": extra.get("description", tool["description"]),
            "parameters": tool["parameters"],
        }
        if served is None:
            safe, origin = name == "read", "builtin"
        else:
            hints = tool.get("hints", {})
            believed = trust_hints and (hints.get("read_only_hint") or hints.get("idempotent_hint"))
            safe, origin = name in trusted or bool(believed), "mcp"
        out.append(
            {
                "definition": definition,
                "definitionDigest": digest(definition),
                "replay": extra.get("replay", "safe" if safe else "never"),
                "replayKey": extra.get(
                    "replayKey", f"{origin}:{name}:v1" if safe else f"{origin}:{name}:never:v1"
                ),
            }
        )
    return out


def _inside(workspace: Path, path: Any) -> Path:
    if not isinstance(path, str) or not path:
        raise ToolFailure("path must be a non-empty string")
    resolved = (workspace / path).resolve()
    if resolved != workspace and workspace not in resolved.parents:
        raise ToolFailure(f"path {path!r} is outside the workspace")
    return resolved


def _text(arguments: dict[str, Any], key: str) -> str:
    value = arguments.get(key)
    if not isinstance(value, str):
        raise ToolFailure(f"argument {key!r} must be a string")
    return value


def run_tool(
    name: str, arguments: dict[str, Any], workspace: Path, timeout: float, env: dict[str, str] | None = None
) -> str:
    """Run one tool; return its output or raise ToolFailure with what the model should read. ``env``: what
    a command the tool runs (``bash``) has in its environment besides this process's."""
    if name == "read":
        path = _inside(workspace, arguments.get("path"))
        try:
            return path.read_text()[:OUTPUT_CAP]
        except (OSError, UnicodeDecodeError) as err:
            raise ToolFailure(f"cannot read {arguments['path']}: {err}") from None
    if name == "write":
        path = _inside(workspace, arguments.get("path"))
        content = _text(arguments, "content")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
        return f"wrote {len(content.encode())} bytes to {arguments['path']}"
    if name == "edit":
        path = _inside(workspace, arguments.get("path"))
        old, new = _text(arguments, "old"), _text(arguments, "new")
        try:
            text = path.read_text()
        except OSError as err:
            raise ToolFailure(f"cannot edit {arguments['path']}: {err.strerror}") from None
        if text.count(old) != 1:
            raise ToolFailure(f"expected exactly one occurrence of the old text, found {text.count(old)}")
        path.write_text(text.replace(old, new))
        return f"edited {arguments['path']}"
    if name == "bash":
        return _bash(_text(arguments, "command"), workspace, timeout, env)
    raise ToolFailure(f"unknown tool {name!r}")


def _kill_group(pgid: int) -> None:
    """SIGKILL a tool's process group; it may have ended on its own a moment ago."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)


def _bash(command: str, workspace: Path, timeout: float, env: dict[str, str] | None = None) -> str:
    proc = subprocess.Popen(
        ["bash", "-c", command],
        cwd=workspace,
        env={**os.environ, **env} if env else None,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc.pid)
        proc.communicate()
        raise ToolFailure(f"command timed out after {timeout:g}s") from None
    except BaseException:
        _kill_group(proc.pid)  # an abort: nothing the tool started may survive it
        proc.wait()
        raise
    text = out.decode("utf-8", "replace")[:OUTPUT_CAP]
    if proc.returncode != 0:
        raise ToolFailure(f"exit status {proc.returncode}\n{text}")
    return f"exit status 0\n{text}"
