"""A framework-less agent on a store of its own (``store.jsonl``: one item per line, each synced), for
the test that a third store adapter needs no change to the cycle, and for the store checks' fail
table: ``STORE_AGENT_BUG`` switches on one known bug at a time (``failed-then-done``: a run a provider's
error failed is recorded failed, its first resume says so, and the next resume runs it on to the end).
With ``STORE_AGENT_FILES=1`` the store is one JSON file written whole (``state/run.json``): each change
written to a temporary file beside it, synced, renamed over it, and the directory synced, as an atomic
checkpoint is written (``unsynced-rename``: the same with no sync at all, the rename alone;
``unreadable-as-empty``: a file it cannot read taken for no run at all).

Correct, it is at most once: the call is durable before its effect, and a call found without its
output on resume gets a synthetic "interrupted" output instead of running again.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.request
from pathlib import Path
from typing import Any

from chaos.ledger import effect

STORE = Path("store.jsonl")
STREAM = os.environ.get("STORE_AGENT_STREAM") == "1"  # ask for streamed answers
BUG = os.environ.get("STORE_AGENT_BUG", "")
WHOLE = Path("state/run.json") if os.environ.get("STORE_AGENT_FILES") == "1" else None


def _items() -> list[dict[str, Any]]:
    if WHOLE is not None:
        try:
            return json.loads(WHOLE.read_text()) if WHOLE.exists() else []  # type: ignore[no-any-return]
        except ValueError:
            if BUG == "unreadable-as-empty":  # the bug: a store it cannot read taken for no run at all
                return []
            raise
    if not STORE.exists():
        return []
    return [json.loads(line) for line in STORE.read_text().splitlines() if line.endswith("}")]


def _write_whole(whole: Path, items: list[dict[str, Any]]) -> None:
    """The store written whole: a temporary file beside it, renamed over it (each synced first, and the
    directory after, unless the bug leaves every sync out)."""
    whole.parent.mkdir(exist_ok=True)
    temporary = whole.parent / f".{whole.name}.tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, json.dumps(items).encode())
        if BUG != "unsynced-rename":
            os.fsync(fd)
    finally:
        os.close(fd)
    os.rename(temporary, whole)
    if BUG != "unsynced-rename":
        folder = os.open(whole.parent, os.O_RDONLY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)


def _write(item: dict[str, Any]) -> None:
    if WHOLE is not None:
        _write_whole(WHOLE, [*_items(), item])
        return
    fd = os.open(STORE, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, json.dumps(item).encode() + b"\n")
        os.fsync(fd)
    except OSError:
        if BUG != "ignore-write-errors":  # the bug: a write the disk refused is taken as made
            raise
    finally:
        os.close(fd)


def _messages(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for item in items:
        if item["type"] == "input":
            out.append({"role": "user", "content": item["text"]})
        elif item["type"] == "call":
            call = {
                "id": item["id"],
                "type": "function",
                "function": {"name": item["name"], "arguments": item["arguments"]},
            }
            out.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif item["type"] == "output":
            out.append({"role": "tool", "tool_call_id": item["callId"], "content": item["text"]})
    return out


def _ask(items: list[dict[str, Any]]) -> dict[str, Any]:
    body = {
        "model": os.environ.get("CHAOS_MODEL", "scripted/model"),
        "messages": _messages(items),
        "tools": [{"type": "function", "function": {"name": "deploy", "parameters": {"type": "object"}}}],
    }
    request = urllib.request.Request(
        os.environ["OPENAI_BASE_URL"] + "/chat/completions",
        json.dumps(body).encode(),
        {"Content-Type": "application/json", "Authorization": "Bearer chaos"},
    )
    if STREAM:
        return _streamed(request)
    with urllib.request.urlopen(request, timeout=20) as answer:
        return json.loads(answer.read())["choices"][0]["message"]  # type: ignore[no-any-return]


def _streamed(request: urllib.request.Request) -> dict[str, Any]:
    """The answer streamed (server-sent events), put together from its deltas as an SDK does."""
    body = json.loads(request.data or b"{}")
    request.data = json.dumps({**body, "stream": True}).encode()
    text, calls = "", {}  # type: ignore[var-annotated]
    with urllib.request.urlopen(request, timeout=20) as answer:
        for line in answer:
            data = line.decode().strip().removeprefix("data:").strip()
            if not data or data == "[DONE]":
                continue
            delta = json.loads(data)["choices"][0].get("delta") or {}
            text += delta.get("content") or ""
            for piece in delta.get("tool_calls") or []:
                call = calls.setdefault(
                    piece["index"], {"id": "", "type": "function", "function": {"name": "", "arguments": ""}}
                )
                call["id"] = piece.get("id") or call["id"]
                function = piece.get("function") or {}
                call["function"]["name"] += function.get("name") or ""
                call["function"]["arguments"] += function.get("arguments") or ""
    return {"content": text or None, "tool_calls": [calls[i] for i in sorted(calls)]}


def _deploy(call: dict[str, Any]) -> None:
    effect("deploy", json.loads(call["arguments"]).get("service", ""), call_id=call["id"])
    _write({"type": "output", "callId": call["id"], "text": "deployed"})
    if BUG == "duplicate-output":
        _write({"type": "output", "callId": call["id"], "text": "deployed"})


def run() -> int:
    while True:
        message = _ask(_items())
        calls = message.get("tool_calls") or []
        if not calls:
            if BUG != "no-final":
                _write({"type": "final", "text": message.get("content") or ""})
            return 0
        for raw in calls:
            call = {
                "type": "call",
                "id": raw["id"],
                "name": raw["function"]["name"],
                "arguments": raw["function"]["arguments"],
            }
            if call["name"] != "deploy":  # its one tool: any other is answered as a framework does
                _write(call)
                _write(
                    {
                        "type": "output",
                        "callId": call["id"],
                        "text": f"Error: {call['name']} is not a valid tool",
                    }
                )
                continue
            if BUG == "effect-first":
                effect("deploy", json.loads(call["arguments"]).get("service", ""), call_id=call["id"])
            _write(call)
            _deploy(call)


def resume() -> int:
    items = _items()
    if not items:
        return 0  # the input never became durable: there is no run
    if BUG == "failed-then-done" and items[-1]["type"] == "failed":  # a failed run stays failed, once
        _write({"type": "failure-reported"})
        return 1
    if items[-1]["type"] == "final" and BUG != "again-asks":
        return 0
    if BUG == "prompt-again":  # a retry that starts the run over: the prompt is held twice
        _write({"type": "input", "text": items[0]["text"]})
    answered = {i["callId"] for i in items if i["type"] == "output"}
    if BUG == "rerun-answered":  # a recovery that replays every step, reading no output it recorded
        for call in [i for i in items if i["type"] == "call" and i["id"] in answered]:
            effect("deploy", json.loads(call["arguments"]).get("service", ""), call_id=call["id"])
    for call in [i for i in items if i["type"] == "call" and i["id"] not in answered]:
        if BUG == "rerun":
            _deploy(call)
        elif BUG != "orphan-request":
            _write({"type": "output", "callId": call["id"], "text": "interrupted"})
    try:
        return run()
    except OSError as err:  # (a refused request: HTTPError is an OSError)
        print(f"store agent: {err}", file=sys.stderr)
        return 1


def main(argv: list[str]) -> int:
    if argv[:1] == ["--resume"]:
        return resume()
    _write({"type": "input", "text": argv[0]})
    if os.environ.get("STORE_AGENT_NOTE"):  # a value of the user's environment kept in the store
        _write({"type": "note", "text": os.environ["STORE_AGENT_NOTE"]})
    if BUG != "failed-then-done":
        return run()
    try:  # the bug's run records its failure (and its first resume keeps it; the second does not)
        return run()
    except OSError as err:
        _write({"type": "failed", "text": str(err)})
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
