"""A scripted model provider on 127.0.0.1, speaking the protocols agents speak (``chaos.world.protocols``).

The answer to a request is chosen from the request itself (how many assistant
turns its conversation already holds), never from a request counter, so a
retried attempt or the request after a replay gets the answer the script means
even across crashes and resumes. Every request is recorded with what the world
knew when it arrived: the ``stepAttempt`` that was durable and open in the log
(an agent must record an attempt before it sends), and the usage the answer
billed. A request the real provider would refuse (``chaos.world.strict``) is refused
the same way, with its status and error body, and recorded with the reason. A
request can be *held* (the server keeps the response until released,
so a kill lands while the model request is in flight), and so can a streamed
answer after a number of its chunks.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from chaos.fault.base import Misbehaviour
from chaos.scenario.model import Turn
from chaos.world.misbehave import answer_badly
from chaos.world.protocols import PROTOCOLS, Answer, Conversation, Protocol, Rejected
from chaos.world.recorder import Upstream, UpstreamFailed
from chaos.world.strict import refusal

COMPACTION_MARKER = "Summarize the conversation"


def default_usage(turn: int) -> dict[str, int]:
    """What a turn bills when its script does not say."""
    return {"input": 10 * (turn + 1), "output": 5, "cacheRead": 0, "cacheWrite": 0}


@dataclass
class Request:
    turn: int
    step_key: str  # identical conversations are attempts of one step
    compaction: bool
    received: float
    body: dict[str, Any]
    attempt: str | None = None  # the stepAttempt durable and open in the log when the request arrived
    rejected: int | None = None  # the line the reducer rejected in the log then (nothing after it counts)
    status: int | None = None  # the answer's HTTP status (None: never answered)
    billed: dict[str, int] | None = None  # the usage a successful answer carried, in the contract's terms
    protocol: str = ""
    fault: Misbehaviour | None = None  # how a network fault made the server answer it
    refused: str | None = None  # why the real provider would refuse it (chaos.world.strict): answered so
    refused_rule: str | None = None  # the rule it broke, in words that are the same for every protocol

    def to_json(self) -> dict[str, Any]:
        return {
            "turn": self.turn,
            "stepKey": self.step_key,
            "compaction": self.compaction,
            "received": self.received,
            "attempt": self.attempt,
            "rejected": self.rejected,
            "status": self.status,
            "billed": self.billed,
            "protocol": self.protocol,
            "fault": self.fault.name if self.fault else None,
            "refused": self.refused,
            "refusedRule": self.refused_rule,
            "body": self.body,
        }


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
                    send_json(self, 404, {"error": {"message": "no such world (closed?)"}})
                    return
                try:
                    world.handle(self, "/" + rest)
                except Exception as err:  # a bug in chaos's server: the world's fault, never the agent's
                    world.fault = world.fault or err
                    send_json(self, 500, {"error": {"message": "chaos's model server failed"}})

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True, name="chaos-model-server").start()

    @classmethod
    def get(cls) -> _Hub:
        with cls._guard:
            if cls._instance is None:
                cls._instance = cls()
            return cls._instance


def not_found(protocol: str, route: str) -> dict[str, Any]:
    """The body a real provider answers a path it does not serve with (a base URL with /v1 twice)."""
    if protocol == "anthropic":
        return {"type": "error", "error": {"type": "not_found_error", "message": "Not Found"}}
    message = f"Invalid URL (POST {route})"
    return {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": None}}


def send_json(handler: BaseHTTPRequestHandler, status: int, payload: dict[str, Any]) -> None:
    data = json.dumps(payload).encode()
    try:
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)
    except OSError:
        pass  # the agent was killed mid-request: nothing to answer


class ModelServer:
    """Serve ``script`` on 127.0.0.1 (at ``url``, a path of its own) until ``close``."""

    def __init__(
        self,
        script: list[Turn],
        summary: str = "summary of the work so far",
        attempt_of: Callable[[], tuple[str | None, int | None]] | None = None,
        protocol: str | None = None,
    ) -> None:
        self.script = script
        self.summary = summary
        # the stepAttempt durable and open in the log now (if any), and the line the log is rejected at
        self.attempt_of = attempt_of
        # a new tool call id in every answer, as a real provider gives (a framework's store is judged on
        # them); off for session-log agents, whose mined fixtures keep the ids they were mined with
        self.fresh_ids = False
        # the one the target speaks (every one when none is named)
        self.protocols = {protocol: PROTOCOLS[protocol]} if protocol else PROTOCOLS
        self.requests: list[Request] = []
        self._lock = threading.Condition()
        self._released: set[int] = set()
        self._held_numbers: set[int] = set()  # request numbers (1-based) held until released
        self._misbehave: dict[int, Misbehaviour] = {}  # request number -> how a network fault answers it
        self._released_numbers: set[int] = set()
        self._answered: set[int] = set()  # request numbers whose answer started
        # streamed answer number (1-based) -> chunks sent before holding
        self._stream_holds: dict[int, int] = {}
        self._streams = 0  # streamed answers started
        self._held_streams: set[int] = set()  # streamed answers now held mid-stream
        self._closing = False
        self.fault: Exception | None = None  # the server itself failed while answering (chaos's own bug)
        self.upstream: Upstream | None = None  # forward to a real provider instead (chaos record)
        self._recorded: list[tuple[int, bool, Turn]] = []  # (turn index, compaction, the answer as a turn)
        self._recording = 0  # forwarded requests whose answer is not yet kept as a turn
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

    def misbehave(self, number: int, how: Misbehaviour) -> None:
        """Answer the ``number``-th request (1-based) ``how`` (a network fault's ``Misbehaviour``), not held."""
        with self._lock:
            self._held_numbers.discard(number)
            self._misbehave[number] = how

    def misbehaved(self, number: int) -> bool:
        """The ``number``-th request arrived and was answered the way a network fault armed."""
        with self._lock:
            return number <= len(self.requests) and self.requests[number - 1].fault is not None

    def hold_stream(self, number: int, chunks: int) -> None:
        """Hold the ``number``-th streamed answer (1-based) after its first ``chunks`` chunks."""
        with self._lock:
            self._stream_holds[number] = chunks

    def stream_held(self, number: int) -> bool:
        """The ``number``-th streamed answer is held mid-stream now (its rest unsent)."""
        with self._lock:
            return number in self._held_streams

    @property
    def streams(self) -> int:
        return self._streams

    def still_held(self, number: int) -> bool:
        """The ``number``-th request arrived, is held, and no response to it was sent."""
        with self._lock:
            return (
                number <= len(self.requests)
                and number in self._held_numbers - self._released_numbers
                and number not in self._answered
            )

    def in_flight(self) -> int:
        """Requests received and not answered yet (held, slow, or never to be answered)."""
        with self._lock:
            return len(self.requests) - len(self._answered)

    def release_requests(self) -> None:
        with self._lock:
            self._released_numbers |= self._held_numbers
            self._stream_holds.clear()
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
        return [r.to_json() for r in self.requests]

    # -- serving ---------------------------------------------------------------------------------
    def handle(self, handler: BaseHTTPRequestHandler, path: str) -> None:
        route = path.split("?", 1)[0].rstrip("/")
        protocol = next((p for p in self.protocols.values() if route == "/v1" + p.path), None)
        if protocol is None:  # a doubled /v1 or another wrong path: the real provider's 404
            near = next((p for p in self.protocols.values() if route.endswith(p.path)), None)
            send_json(handler, 404, not_found(near.name if near else "openai-chat", route))
            return
        try:
            raw = handler.rfile.read(int(handler.headers.get("Content-Length", "0")))
            body = json.loads(raw)
            if self.upstream is not None:
                self._record(handler, protocol, path, raw, protocol.conversation(body), body)
                return
            refused = refusal(protocol.name, body) if isinstance(body, dict) else None
            conversation = None if refused else protocol.conversation(body)
        except (ValueError, KeyError, TypeError, AttributeError, Rejected) as err:
            send_json(handler, 400, protocol.error(400, f"not a {protocol.name} request: {err}"))
            return
        attempt, rejected = self.attempt_of() if self.attempt_of else (None, None)
        if conversation is None:  # what the real provider refuses is refused here, before any script
            assert refused is not None
            key = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:16]
            request = Request(-1, key, False, time.time(), body, attempt, rejected, protocol=protocol.name)
            request.status, request.refused, request.refused_rule = (
                refused.status,
                refused.reason,
                refused.rule,
            )
            with self._lock:
                self.requests.append(request)
                self._answered.add(len(self.requests))
                self._lock.notify_all()
            send_json(handler, refused.status, refused.body)
            return
        compaction = COMPACTION_MARKER in conversation.system
        turn = conversation.assistant_turns
        key = hashlib.sha256(json.dumps(conversation.messages, sort_keys=True).encode()).hexdigest()[:16]
        request = Request(
            turn, key, compaction, time.time(), body, attempt, rejected=rejected, protocol=protocol.name
        )
        with self._lock:
            self.requests.append(request)
            number = len(self.requests)
            request.fault = self._misbehave.get(number)  # how a network fault will answer it, if one does
            self._lock.notify_all()
            while number in self._held_numbers - self._released_numbers and not self._closing:
                self._lock.wait(0.5)
        scripted = (
            Turn(text=self.summary)
            if compaction
            else self.script[turn]
            if turn < len(self.script)
            else Turn(text="done")
        )
        if not compaction and (scripted.hold or scripted.timeout):
            with self._lock:
                while turn not in self._released and not self._closing:
                    self._lock.wait(0.5)
            if scripted.timeout:
                return
        if scripted.delay:
            time.sleep(scripted.delay)
        with self._lock:
            self._answered.add(number)
        if scripted.error is not None:
            request.status = scripted.error
            send_json(
                handler, scripted.error, protocol.error(scripted.error, f"scripted HTTP {scripted.error}")
            )
            return
        usage = scripted.usage or default_usage(turn)
        answer = protocol.answer(scripted, turn, conversation, usage, f"_r{number}" if self.fresh_ids else "")
        request.status, request.billed = 200, protocol.billed(usage)
        if request.fault is not None:
            if not answer_badly(handler, request.fault, answer, conversation.stream, lambda: self._closing):
                request.status, request.billed = None, None  # never delivered whole: nothing billed
            return
        if conversation.stream:
            self._stream(handler, protocol, answer)
        else:
            send_json(handler, 200, answer.body)

    def _record(
        self,
        handler: BaseHTTPRequestHandler,
        protocol: Protocol,
        path: str,
        raw: bytes,
        conversation: Conversation,
        body: dict[str, Any],
    ) -> None:
        """Forwarding (``chaos record``): the upstream answers; its answer is kept as the turn it was."""
        assert self.upstream is not None
        compaction = COMPACTION_MARKER in conversation.system
        attempt, rejected = self.attempt_of() if self.attempt_of else (None, None)
        key = hashlib.sha256(json.dumps(conversation.messages, sort_keys=True).encode()).hexdigest()[:16]
        request = Request(conversation.assistant_turns, key, compaction, time.time(), body, attempt, rejected)
        request.protocol = protocol.name
        with self._lock:
            self.requests.append(request)
            self._recording += 1
        try:
            turn = self.upstream.forward(handler, protocol, path, raw)
            request.status = turn.error or 200
            with self._lock:
                self._answered.add(len(self.requests))
                self._recorded.append((conversation.assistant_turns, compaction, turn))
        except UpstreamFailed as err:
            self.fault = self.fault or err
            send_json(handler, 502, protocol.error(502, f"chaos record: {err}"))
        finally:
            with self._lock:
                self._recording -= 1
                self._lock.notify_all()

    def recorded(self, timeout: float = 10.0) -> list[tuple[int, bool, Turn]]:
        """The answers forwarded so far, each kept as a turn: (turn index, compaction, the turn). The
        agent has each answer before the server has read it back as a turn, so this waits (``timeout``)
        for every forwarded request to be kept: an agent that exits on its last answer loses none."""
        with self._lock:
            self._lock.wait_for(lambda: self._recording == 0, timeout)
            return list(self._recorded)

    def _stream(self, handler: BaseHTTPRequestHandler, protocol: Protocol, answer: Answer) -> None:
        """Send the answer as server-sent events, holding it mid-stream when a boundary asks."""
        with self._lock:
            self._streams += 1
            number = self._streams
            hold_after = self._stream_holds.get(number)
        try:
            handler.send_response(200)
            handler.send_header("Content-Type", "text/event-stream")
            handler.send_header("Cache-Control", "no-cache")
            handler.end_headers()
            for index, event in enumerate(answer.events):
                if hold_after is not None and index == hold_after:
                    with self._lock:
                        self._held_streams.add(number)
                        while number in self._stream_holds and not self._closing:
                            self._lock.wait(0.5)
                        self._held_streams.discard(number)
                handler.wfile.write(event)
                handler.wfile.flush()
        except OSError:
            pass  # the agent was killed mid-stream
