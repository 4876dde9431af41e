"""How the world's model server answers a request that a network fault armed (``chaos.fault.network``).

Each way is what providers and networks really do: a connection reset in the middle of the answer, a
stream (or a body) cut short of its end, an answer that arrives twice, no answer at all, a 200 that is
not JSON, an answer one byte a second. The agent's answer to each must be a ``stepFailed`` or a crash
unknown attempt: never a third request, never a corrupt log, never a duplicated assistant message.
"""

from __future__ import annotations

import json
import socket
import struct
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler

from chaos.world.protocols import Answer

WAYS = ("reset", "cut-stream", "duplicate", "hang", "invalid-json", "trickle")


def _head(handler: BaseHTTPRequestHandler, stream: bool, length: int | None) -> None:
    handler.send_response(200)
    handler.send_header("Content-Type", "text/event-stream" if stream else "application/json")
    if length is not None:
        handler.send_header("Content-Length", str(length))
    handler.end_headers()


def _reset(handler: BaseHTTPRequestHandler) -> None:
    """Close with a TCP reset (SO_LINGER 0), as a dropped connection does."""
    handler.wfile.flush()
    handler.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    handler.connection.close()
    handler.close_connection = True


def answer_badly(
    handler: BaseHTTPRequestHandler, how: str, answer: Answer, stream: bool, closing: Callable[[], bool]
) -> bool:
    """Answer ``how``; True when the whole answer was delivered (it bills)."""
    body = json.dumps(answer.body).encode()
    whole = b"".join(answer.events) if stream else body
    try:
        if how == "hang":
            while not closing():
                time.sleep(0.05)
            return False
        if how == "invalid-json":
            text = b"<html><body>502 Bad Gateway</body></html>"
            _head(handler, False, len(text))
            handler.wfile.write(text)
            return False
        if how == "duplicate":  # two documents in one body; a stream sent again after its end
            _head(handler, stream, None if stream else 2 * len(body))
            handler.wfile.write(whole + whole)
            return True
        if how == "trickle":
            _head(handler, stream, None if stream else len(body))
            for byte in whole:
                if closing():
                    return False
                handler.wfile.write(bytes([byte]))
                handler.wfile.flush()
                time.sleep(1.0)
            return True
        half = whole[: len(whole) // 2]
        if how == "cut-stream":  # the body is shorter than declared, the stream ends without its final events
            _head(handler, stream, None if stream else len(body))
            handler.wfile.write(half)
            handler.close_connection = True
            return False
        assert how == "reset", how
        _head(handler, stream, None if stream else len(body))
        handler.wfile.write(half)
        _reset(handler)
        return False
    except OSError:
        return False  # the agent went away meanwhile
