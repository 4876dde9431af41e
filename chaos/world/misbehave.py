"""How the world's model server answers a request that a network fault armed (``chaos.fault.network``):
the fault describes it (``chaos.fault.Misbehaviour``), the server carries it out.

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

from chaos.fault.base import Misbehaviour
from chaos.world.protocols import Answer


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


NOT_JSON = b"<html><body>502 Bad Gateway</body></html>"


def answer_badly(
    handler: BaseHTTPRequestHandler,
    how: Misbehaviour,
    answer: Answer,
    stream: bool,
    closing: Callable[[], bool],
) -> bool:
    """Answer as ``how`` says (the fault's own description); True when the whole answer was delivered
    (it bills)."""
    body = json.dumps(answer.body).encode()
    whole = b"".join(answer.events) if stream else body
    try:
        if how.sends == "nothing":
            while not closing():
                time.sleep(0.05)
            return False
        if how.sends == "not-json":
            payload = NOT_JSON
            _head(handler, False, len(payload))
        else:
            payload = {"half": whole[: len(whole) // 2], "whole": whole, "twice": whole + whole}[how.sends]
            times = 2 if how.sends == "twice" else 1  # a body shorter than declared, when cut
            _head(handler, stream, None if stream else times * len(body))
        if how.seconds_per_byte:
            for byte in payload:
                if closing():
                    return False
                handler.wfile.write(bytes([byte]))
                handler.wfile.flush()
                time.sleep(how.seconds_per_byte)
        else:
            handler.wfile.write(payload)
        if how.ends == "close":
            handler.close_connection = True
        elif how.ends == "reset":
            _reset(handler)
        return how.sends in ("whole", "twice")
    except OSError:
        return False  # the agent went away meanwhile
