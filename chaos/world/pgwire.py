"""A PostgreSQL wire-protocol relay: where a server store's commit becomes durable, seen from outside.

With a store on a database server the durable point is the server's answer to
a commit, not a local sync: once the server sends it, the transaction is
committed whatever happens to the agent; until the agent has read it, the agent
does not know. The relay sits between the agent and the server (the agent's
``{postgres_url}`` points at it) and reads the server's side of each
connection (protocol 3, the one every client speaks): ``CommandComplete``
tags and ``ReadyForQuery`` transaction states. A transaction that wrote
(``INSERT``, ``UPDATE``, ``DELETE``, ``MERGE``, ``COPY``, DDL) commits at
the ``CommandComplete`` of its ``COMMIT`` (an explicit transaction: the server
committed before it sent that) or at the ``ReadyForQuery`` that ends an
implicit one (autocommit: the extended protocol commits at ``Sync``). Those
messages are held until ``on_commit`` said what to do: called with the agent
still waiting for its answer, it may kill the agent there, which then never
learns its commit happened (``commit#k``, exactly). Everything else passes as
it comes, byte for byte.

``Commits`` (the state of one connection) is pure over the bytes it is fed,
and holds at most one small message (a ``CommandComplete``, a ``ReadyForQuery``):
every other message passes as its bytes come, so a 300 MB row costs the relay
no more than a small one. The sockets are ``Relay``'s, which serves at most
``MAX_CONNECTIONS`` clients at once, gives each ``STARTUP_WAIT`` seconds and
``MAX_STARTUP`` bytes (PostgreSQL's own limit) to say who it is, and keeps
accepting when the process runs out of descriptors for a moment. The agent connects over TCP on 127.0.0.1 without
TLS (the relay answers a TLS request "no", as a server without TLS does); the
relay reaches the server on its Unix socket.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

# CommandComplete tags (their first word) of statements that change what the database holds
WRITES = frozenset(
    [
        "INSERT",
        "UPDATE",
        "DELETE",
        "MERGE",
        "COPY",
        "CREATE",
        "ALTER",
        "DROP",
        "TRUNCATE",
        "GRANT",
        "REVOKE",
        "COMMENT",
        "REFRESH",
    ]
)
# Requests a client may send before its startup message, answered with one byte ("N": not supported)
SSL_REQUEST, GSS_REQUEST = 80877103, 80877104
# Backend messages after which the server waits for the client (flushed at once, never held)
WAITS = frozenset(b"GWR")
# The only messages the relay reads whole (the rest pass as they come): CommandComplete, ReadyForQuery
READ = frozenset(b"CZ")
MAX_READ = 1024  # bytes such a message may claim (a tag, a transaction state): more is no PostgreSQL
MAX_STARTUP = 10_000  # bytes a startup packet may claim (the server's own MAX_STARTUP_PACKET_LENGTH)
STARTUP_WAIT = 10.0  # seconds a client has to send it
MAX_CONNECTIONS = 64  # clients served at once (the server itself takes 40)


@dataclass
class Piece:
    """Bytes to pass on to the client; ``commit``: they tell it a transaction that wrote committed."""

    data: bytes
    commit: bool = False
    write: bool = False  # they tell it a statement wrote, its transaction still open (not committed)


@dataclass
class Commits:
    """The server's side of one connection, message by message: what may pass now, and the commits."""

    _buffer: bytearray = field(default_factory=bytearray)
    _held: bytearray = field(default_factory=bytearray)
    _passing: int = 0  # bytes still to come of a message passed on as it comes
    wrote: bool = False  # the open transaction (or the statement running outside one) wrote
    statement_wrote: bool = False  # the statements since the last ReadyForQuery wrote

    def startup(self, client: socket.socket) -> bytes:
        return _startup(client)

    def asked(self, data: bytes) -> None:
        """The client's side passes unread: the server's answers say what committed."""

    def feed(self, data: bytes) -> list[Piece]:
        """The pieces ``data`` completes, in order; a partial message the relay reads waits for the rest,
        any other passes as it comes. ``ValueError``: the server's side is no PostgreSQL."""
        out: list[Piece] = []
        passing = bytearray(data[: self._passing])
        self._passing -= len(passing)
        self._buffer += data[len(passing) :]
        if self._passing:
            return [Piece(bytes(passing))] if passing else []
        while len(self._buffer) >= 5:
            kind = self._buffer[0]
            length = struct.unpack("!I", self._buffer[1:5])[0]
            if kind not in READ and not self._held:  # not read: on its way at once, whole or not
                whole = min(len(self._buffer), 1 + length)
                passing += self._buffer[:whole]
                del self._buffer[:whole]
                self._passing = 1 + length - whole
                if not self._passing and kind in WAITS:
                    out.append(Piece(bytes(passing)))
                    passing.clear()
                continue
            if length > MAX_READ:
                raise ValueError(f"a message of type {chr(kind)!r} claims {length} bytes")
            if len(self._buffer) < 1 + length:
                break
            message = bytes(self._buffer[: 1 + length])
            del self._buffer[: 1 + length]
            body = message[5:]
            if kind == ord("C"):
                tag = body.rstrip(b"\0").decode("ascii", "replace")
                word = tag.split(" ", 1)[0]
                if word in WRITES:
                    self.wrote = self.statement_wrote = True
                elif tag == "ROLLBACK":
                    self.wrote = False
                elif tag == "COMMIT" and self.wrote:
                    self._held += message  # the transaction is committed: the client must not know yet
                    continue
            if self._held or (kind == ord("Z") and body[:1] == b"I" and self.wrote):
                if kind == ord("Z"):
                    if passing:
                        out.append(Piece(bytes(passing)))
                        passing.clear()
                    out.append(Piece(bytes(self._held) + message, commit=True))
                    self._held.clear()
                    self.wrote = self.statement_wrote = False
                    continue
                self._held += message
                continue
            if kind == ord("Z"):
                state, wrote_here, self.statement_wrote = body[:1], self.statement_wrote, False
                if state == b"E":
                    self.wrote = False  # a failed transaction ends in a rollback, whatever the client says
                if state == b"T" and wrote_here:  # a write answered inside an open transaction: held too
                    if passing:
                        out.append(Piece(bytes(passing)))
                        passing.clear()
                    out.append(Piece(message, write=True))
                    continue
            passing += message
            if kind in WAITS:
                out.append(Piece(bytes(passing)))
                passing.clear()
        if passing:
            out.append(Piece(bytes(passing)))
        return out


def _exactly(sock: socket.socket, count: int) -> bytes:
    data = b""
    while len(data) < count:
        chunk = sock.recv(count - len(data))
        if not chunk:
            raise ConnectionError("closed during the startup")
        data += chunk
    return data


def _startup(client: socket.socket) -> bytes:
    """The client's startup message, TLS and GSS requests refused on the way, as a server without them;
    within ``STARTUP_WAIT`` seconds and ``MAX_STARTUP`` bytes."""
    client.settimeout(STARTUP_WAIT)
    while True:
        head = _exactly(client, 8)
        length, code = struct.unpack("!II", head)
        if code in (SSL_REQUEST, GSS_REQUEST) and length == 8:
            client.sendall(b"N")
            continue
        if not 8 <= length <= MAX_STARTUP:
            raise ConnectionError(f"a startup packet of {length} bytes")
        startup = head + _exactly(client, length - 8)
        client.settimeout(None)
        return startup


class Wire(Protocol):
    """One connection's protocol, as the relay reads it: PostgreSQL's (``Commits``), gRPC's
    (``chaos.world.grpcwire.Calls``)."""

    def startup(self, client: socket.socket) -> bytes:
        """What the client says before the server may hear it (read here, within bounds)."""
        return b""

    def asked(self, data: bytes) -> None:
        """The client's bytes, before they go on to the server."""

    def feed(self, data: bytes) -> list[Piece]:
        """The server's bytes, as pieces to pass on (a commit's answer a piece of its own)."""
        ...


class Relay:
    """Listens on 127.0.0.1 for the agent's connections and carries each to the server (its Unix socket, or
    its TCP port on 127.0.0.1), read as ``wire`` says (PostgreSQL's protocol unless told).

    ``on_commit`` (set per phase) is called in the relay's thread each time a connection's transaction
    that wrote has committed, before the client hears of it; it returns whether the answer may go on (no:
    the agent was killed there). ``commits`` counts them all. ``on_write`` is the same for each statement
    that wrote inside a transaction still open (its answer held: not committed yet)."""

    def __init__(self, upstream: str | tuple[str, int], wire: Callable[[], Wire] = Commits) -> None:
        self.upstream, self.wire = upstream, wire
        self.listener = socket.create_server(("127.0.0.1", 0), backlog=64)
        self.on_commit: Callable[[], bool] | None = None
        self.on_write: Callable[[], bool] | None = None
        self.commits = 0
        self.fault: Exception | None = None  # chaos's own hook failed at a commit (raised after the phase)
        self._lock = threading.Lock()
        self._sockets: set[socket.socket] = set()
        self._serving = threading.BoundedSemaphore(MAX_CONNECTIONS)
        self._closed = False
        self._thread = threading.Thread(target=self._accept, name="chaos-pgwire", daemon=True)
        self._thread.start()

    @property
    def port(self) -> int:
        return int(self.listener.getsockname()[1])

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                with self._lock:
                    if self._closed:
                        return
                time.sleep(0.05)  # out of descriptors for a moment: the relay goes on once some close
                continue
            if not self._serving.acquire(blocking=False):
                client.close()  # as many clients as it serves: the server would refuse this one too
                continue
            threading.Thread(
                target=self._serve, args=(client,), name="chaos-pgwire-conn", daemon=True
            ).start()

    def _track(self, *socks: socket.socket) -> bool:
        with self._lock:
            if self._closed:
                return False
            self._sockets.update(socks)
            return True

    def _serve(self, client: socket.socket) -> None:
        server = socket.socket(socket.AF_UNIX if isinstance(self.upstream, str) else socket.AF_INET)
        wire = self.wire()
        try:
            if not self._track(client, server):
                return
            # each held answer goes on as its own small send once decided: without this, the kernel holds
            # it until the client acknowledges the last one (Nagle's rule against its delayed ACK, ~40 ms)
            client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            startup = wire.startup(client)
            server.connect(self.upstream)
            server.sendall(startup)
            threading.Thread(target=self._pump, args=(client, server, wire), daemon=True).start()
            self._answers(server, client, wire)
        except (OSError, ValueError):
            pass
        finally:
            self._drop(client, server)
            self._serving.release()

    def _pump(self, client: socket.socket, server: socket.socket, wire: Wire) -> None:
        """The client's side, byte for byte (read first where its protocol names what commits)."""
        with contextlib.suppress(OSError, ValueError):
            while data := client.recv(65536):
                wire.asked(data)
                server.sendall(data)
        self._drop(client, server)

    def _answers(self, server: socket.socket, client: socket.socket, wire: Wire) -> None:
        """The server's side, each commit held until ``on_commit`` says it may go on."""
        while data := server.recv(65536):
            for piece in wire.feed(data):
                if piece.commit or piece.write:
                    with self._lock:
                        self.commits += piece.commit
                    hook = self.on_commit if piece.commit else self.on_write
                    try:
                        goes_on = hook is None or hook()
                    except Exception as err:  # chaos's own: never taken for a connection the world cut
                        self.fault = self.fault or err
                        return
                    if not goes_on:
                        return  # the agent is gone: its answer with it
                client.sendall(piece.data)

    def _drop(self, *socks: socket.socket) -> None:
        for sock in socks:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
            with self._lock:
                self._sockets.discard(sock)

    def cut(self) -> None:
        """Every connection dropped (the server went away under them)."""
        with self._lock:
            live = list(self._sockets)
        self._drop(*live)

    def close(self) -> None:
        with self._lock:
            self._closed = True
        with contextlib.suppress(OSError):
            self.listener.shutdown(socket.SHUT_RDWR)
        self.listener.close()
        self.cut()
        self._thread.join(5)
