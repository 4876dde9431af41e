"""A scripted OpenAI-compatible chat-completions server on 127.0.0.1.

The answer to a request is chosen from the request itself (how many assistant
turns its conversation already holds), never from a request counter, so a
retried attempt or the request after a replay gets the answer the script means
even across crashes and resumes. Every request is recorded, and a turn can be
*held*: the server keeps the response until ``release`` so a kill lands while
the model request is in flight.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from chaos.scenario.model import Turn

COMPACTION_MARKER = "Summarize the conversation"


def completion_body(turn: Turn, index: int, model: str) -> dict[str, Any]:
    """A scripted turn as an OpenAI chat completion (``index``: the turn's place in the script)."""
    message: dict[str, Any] = {"role": "assistant", "content": turn.text}
    if turn.tool_calls:
        message["tool_calls"] = [
            {
                "id": f"call_{index}_{i}",
                "type": "function",
                "function": {
                    "name": call["name"],
                    "arguments": call["arguments"]
                    if isinstance(call.get("arguments"), str)
                    else json.dumps(call.get("arguments", {})),
                },
            }
            for i, call in enumerate(turn.tool_calls)
        ]
    finish = turn.finish or ("tool_calls" if turn.tool_calls else "stop")
    return {
        "id": f"chatcmpl-{index}",
        "object": "chat.completion",
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {
            "prompt_tokens": 10 * (index + 1),
            "completion_tokens": 5,
            "total_tokens": 10 * index + 15,
        },
    }


@dataclass
class Request:
    turn: int
    step_key: str  # identical conversations are attempts of one step
    compaction: bool
    received: float
    body: dict[str, Any]


def _turn_of(messages: list[dict[str, Any]]) -> int:
    return sum(1 for m in messages if m.get("role") == "assistant")


class _Hub:
    """One HTTP server on 127.0.0.1 per chaos process; each world's script is mounted at its own path.

    Opening and closing a world is then free (a server per world cost a thread,
    a socket and a shutdown wait per crash cycle). The path holds a random
    token, so a world only ever answers requests meant for it.
    """

    _instance: _Hub | None = None
    _guard = threading.Lock()

    def __init__(self) -> None:
        self.worlds: dict[str, ModelServer] = {}
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                _, _, token, rest = [*self.path.split("/", 3), "", "", "", ""][:4]
                world = hub.worlds.get(token)
                if world is None:
                    ModelServer.send(self, 404, {"error": {"message": "no such world (closed?)"}})
                    return
                world.handle(self, "/" + rest)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True, name="chaos-model-server").start()

    @classmethod
    def get(cls) -> _Hub:
        with cls._guard:
            if cls._instance is None:
                cls._instance = cls()
            return cls._instance


class ModelServer:
    """Serve ``script`` on 127.0.0.1 (at ``url``, a path of its own) until ``close``."""

    def __init__(self, script: list[Turn], summary: str = "summary of the work so far") -> None:
        self.script = script
        self.summary = summary
        self.requests: list[Request] = []
        self._lock = threading.Condition()
        self._released: set[int] = set()
        self._held_numbers: set[int] = set()  # request numbers (1-based) held until released
        self._released_numbers: set[int] = set()
        self._answered: set[int] = set()  # request numbers whose response was sent
        self._closing = False
        self._token = secrets.token_hex(8)
        self._hub = _Hub.get()
        self._hub.worlds[self._token] = self

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._hub.httpd.server_address[1]}/w/{self._token}/v1"

    def close(self) -> None:
        self._hub.worlds.pop(self._token, None)
        with self._lock:
            self._closing = True
            self._lock.notify_all()

    def __enter__(self) -> ModelServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- control ---------------------------------------------------------------------------------
    def release(self, turn: int) -> None:
        with self._lock:
            self._released.add(turn)
            self._lock.notify_all()

    def hold_request(self, number: int) -> None:
        """Keep the ``number``-th request (1-based, over the server's life) in flight until released."""
        with self._lock:
            self._held_numbers.add(number)

    def still_held(self, number: int) -> bool:
        """The ``number``-th request arrived, is held, and no response to it was sent."""
        with self._lock:
            return (
                number <= len(self.requests)
                and number in self._held_numbers - self._released_numbers
                and number not in self._answered
            )

    def release_requests(self) -> None:
        with self._lock:
            self._released_numbers |= self._held_numbers
            self._lock.notify_all()

    def wait_for_request(self, count: int = 1, timeout: float = 10.0, turn: int | None = None) -> bool:
        """Block until ``count`` requests (of ``turn``, when given) have arrived."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while sum(1 for r in self.requests if turn is None or r.turn == turn) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._lock.wait(left)
            return True

    def attempts_per_step(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for r in self.requests:
            counts[r.step_key] = counts.get(r.step_key, 0) + 1
        return counts

    def request_log(self) -> list[dict[str, Any]]:
        return [
            {"turn": r.turn, "stepKey": r.step_key, "compaction": r.compaction, "received": r.received}
            for r in self.requests
        ]

    # -- serving ---------------------------------------------------------------------------------
    def handle(self, handler: BaseHTTPRequestHandler, path: str) -> None:
        if not path.rstrip("/").endswith("/chat/completions"):
            self.send(handler, 404, {"error": {"message": "only /chat/completions is served"}})
            return
        try:
            body = json.loads(handler.rfile.read(int(handler.headers.get("Content-Length", "0"))))
            messages = body["messages"]
        except (ValueError, KeyError, TypeError):
            self.send(handler, 400, {"error": {"message": "request body is not a chat completion"}})
            return
        compaction = any(
            COMPACTION_MARKER in str(m.get("content")) for m in messages if m.get("role") == "system"
        )
        turn = _turn_of(messages)
        key = hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest()[:16]
        with self._lock:
            self.requests.append(Request(turn, key, compaction, time.time(), body))
            number = len(self.requests)
            self._lock.notify_all()
            while number in self._held_numbers - self._released_numbers and not self._closing:
                self._lock.wait(0.5)
        model = str(body.get("model", "scripted"))
        if compaction:
            self.answer(handler, 200, completion_body(Turn(text=self.summary), turn, model), number)
            return
        scripted = self.script[turn] if turn < len(self.script) else Turn(text="done")
        if scripted.hold or scripted.timeout:
            with self._lock:
                while turn not in self._released and not self._closing:
                    self._lock.wait(0.5)
            if scripted.timeout:
                return
        if scripted.delay:
            time.sleep(scripted.delay)
        if scripted.error is not None:
            error = {"error": {"message": f"scripted HTTP {scripted.error}"}}
            self.answer(handler, scripted.error, error, number)
            return
        self.answer(handler, 200, completion_body(scripted, turn, model), number)

    def answer(
        self, handler: BaseHTTPRequestHandler, status: int, payload: dict[str, Any], number: int
    ) -> None:
        """Send the answer to the ``number``-th request (from then on it is no longer held)."""
        with self._lock:
            self._answered.add(number)
        self.send(handler, status, payload)

    @staticmethod
    def send(handler: BaseHTTPRequestHandler, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        try:
            handler.send_response(status)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(data)))
            handler.end_headers()
            handler.wfile.write(data)
        except OSError:
            pass  # the agent was killed mid-request: nothing to answer
