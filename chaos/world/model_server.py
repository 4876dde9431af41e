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


class ModelServer:
    """Serve ``script`` on 127.0.0.1 (port chosen by the OS) until ``close``."""

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
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                server._handle(self)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        # serve_forever checks for shutdown every poll_interval: 0.5 s by default made closing
        # a world cost 0.4 s per crash cycle.
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.02,), daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def close(self) -> None:
        with self._lock:
            self._closing = True
            self._lock.notify_all()
        self._httpd.shutdown()
        self._httpd.server_close()

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
    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        if not handler.path.rstrip("/").endswith("/chat/completions"):
            self._send(handler, 404, {"error": {"message": "only /chat/completions is served"}})
            return
        try:
            body = json.loads(handler.rfile.read(int(handler.headers.get("Content-Length", "0"))))
            messages = body["messages"]
        except (ValueError, KeyError, TypeError):
            self._send(handler, 400, {"error": {"message": "request body is not a chat completion"}})
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
            self._send(handler, 200, completion_body(Turn(text=self.summary), turn, model), number)
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
            self._send(handler, scripted.error, error, number)
            return
        self._send(handler, 200, completion_body(scripted, turn, model), number)

    def _send(
        self, handler: BaseHTTPRequestHandler, status: int, payload: dict[str, Any], number: int = 0
    ) -> None:
        data = json.dumps(payload).encode()
        with self._lock:
            self._answered.add(number)
        try:
            handler.send_response(status)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(data)))
            handler.end_headers()
            handler.wfile.write(data)
        except OSError:
            pass  # the agent was killed mid-request: nothing to answer
