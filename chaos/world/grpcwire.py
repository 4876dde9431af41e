"""gRPC's side of the world's relay (``chaos.world.pgwire.Relay``): where a workflow engine's history
becomes durable, seen from outside.

A worker (and a starter) make a Temporal workflow's history durable by calls to the server: the server
answers ``StartWorkflowExecution``, ``RespondWorkflowTaskCompleted`` (the workflow's commands: an
activity scheduled, the workflow completed) and ``RespondActivityTaskCompleted`` / ``Failed`` only once
what they record is in its database. The relay reads both sides of the connection as HTTP/2 frames: the
client's header blocks (HPACK, decoded in order with the ``hpack`` library, as the server decodes them)
name each stream's method; on the server's side, the frame that ends such a stream (its trailers, the
call's status) is held until ``on_commit`` said what to do, and everything after it on that connection
with it. Called with the worker still waiting for its answer, it may kill the worker there, which then
never learns its call was recorded (``commit#k``, exactly). Everything else passes as it comes.

``Calls`` (one connection) is pure over the bytes it is fed and reads only frame headers on the
server's side; a client header block is bounded (``MAX_BLOCK``), as the frames are (``MAX_FRAME``).
Heartbeats are not commits here: a worker sends one every few tenths of a second, and they record no
history."""

from __future__ import annotations

import socket
from dataclasses import dataclass, field

from chaos.world.pgwire import Piece

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
HEADERS, CONTINUATION = 0x1, 0x9
END_STREAM, END_HEADERS, PADDED, PRIORITY = 0x1, 0x4, 0x8, 0x20
# bytes a frame may claim (both sides here keep HTTP/2's default, 16 KiB; a frame is read whole)
MAX_FRAME = 1 << 20
MAX_BLOCK = 1 << 20  # bytes of one client header block read
SERVICE = "/temporal.api.workflowservice.v1.WorkflowService/"
COMMITS = frozenset(
    SERVICE + method
    for method in (
        "StartWorkflowExecution",
        "SignalWithStartWorkflowExecution",
        "RespondWorkflowTaskCompleted",
        "RespondActivityTaskCompleted",
        "RespondActivityTaskFailed",
        "RespondActivityTaskCanceled",
    )
)


def _frames(buffer: bytearray) -> list[tuple[int, int, int, bytes]]:
    """The whole frames at the buffer's start (type, flags, stream, payload), taken out of it."""
    out = []
    while len(buffer) >= 9:
        length = int.from_bytes(buffer[:3], "big")
        if length > MAX_FRAME:
            raise ValueError(f"a frame claims {length} bytes")
        if len(buffer) < 9 + length:
            break
        kind, flags = buffer[3], buffer[4]
        stream = int.from_bytes(buffer[5:9], "big") & 0x7FFFFFFF
        out.append((kind, flags, stream, bytes(buffer[9 : 9 + length])))
        del buffer[: 9 + length]
    return out


@dataclass
class Calls:
    """One connection's two sides: the streams that are commits (by the method the client named), and
    the server's frames, each stream's last held until the relay decides."""

    commits: set[int] = field(default_factory=set)
    _asked: bytearray = field(default_factory=bytearray)
    _answers: bytearray = field(default_factory=bytearray)
    _block: dict[int, bytearray] = field(default_factory=dict)
    _preface: bool = False

    def __post_init__(self) -> None:
        import hpack  # (the temporal extra's)

        self._decoder = hpack.Decoder()

    def startup(self, client: socket.socket) -> bytes:
        return b""  # (its preface is read as it passes)

    def asked(self, data: bytes) -> None:
        """The client's bytes: each request's header block decoded, its stream marked if a commit."""
        self._asked += data
        if not self._preface:
            if len(self._asked) < len(PREFACE):
                return
            if self._asked[: len(PREFACE)] != PREFACE:
                raise ValueError("the client's side is no HTTP/2")
            del self._asked[: len(PREFACE)]
            self._preface = True
        for kind, flags, stream, payload in _frames(self._asked):
            if kind == HEADERS:
                start, end = 0, len(payload)
                if flags & PADDED:
                    start, end = 1, end - payload[0]
                if flags & PRIORITY:
                    start += 5
                self._block[stream] = bytearray(payload[start:end])
            elif kind == CONTINUATION and stream in self._block:
                self._block[stream] += payload
            else:
                continue
            if len(self._block[stream]) > MAX_BLOCK:
                raise ValueError("a header block past its bound")
            if flags & END_HEADERS:
                headers = dict(self._decoder.decode(bytes(self._block.pop(stream)), raw=True))
                if headers.get(b":path", b"").decode("ascii", "replace") in COMMITS:
                    self.commits.add(stream)

    def feed(self, data: bytes) -> list[Piece]:
        """The server's bytes as pieces: a frame that ends a commit's stream is a piece of its own
        (``commit``), the rest pass in the order they came."""
        self._answers += data
        out: list[Piece] = []
        passing = bytearray()
        for kind, flags, stream, payload in _frames(self._answers):
            frame = (
                len(payload).to_bytes(3, "big") + bytes([kind, flags]) + stream.to_bytes(4, "big") + payload
            )
            if stream in self.commits and flags & END_STREAM and kind == HEADERS:
                self.commits.discard(stream)
                if passing:
                    out.append(Piece(bytes(passing)))
                    passing.clear()
                out.append(Piece(frame, commit=True))
                continue
            passing += frame
        if passing:
            out.append(Piece(bytes(passing)))
        return out
