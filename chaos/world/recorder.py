"""A recording proxy: the model server forwards an agent's requests to a real provider and keeps each answer
as the scripted turn that gives it back (``chaos record``).

The agent talks to the world's server as always; the server passes the request
on to the upstream (the provider's base URL, e.g. ``https://api.openai.com/v1``)
with the agent's own headers, relays the answer as it comes (a stream event by
event), and reads it back into a ``Turn`` through its protocol. Credentials
travel through and are never kept: no header is recorded, a turn holds only
what the model said and billed, and a credential an upstream echoes back is
scrubbed from the answer before it becomes a turn.
"""

from __future__ import annotations

import http.client
import json
import ssl
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import urlsplit

from chaos.scenario.model import Turn
from chaos.secrets import register, scrub
from chaos.world.protocols import Protocol, Rejected

CREDENTIALS = ("authorization", "x-api-key")  # secrets: passed on, never recorded (chaos.secrets)
# The request headers passed on (what providers authenticate and version by); every other is dropped.
PASSED = (
    "authorization",
    "x-api-key",
    "anthropic-version",
    "anthropic-beta",
    "openai-organization",
    "openai-project",
    "content-type",
    "accept",
)


class UpstreamFailed(Exception):
    """The upstream could not be reached, or answered what its protocol cannot read."""


@dataclass(frozen=True)
class Upstream:
    """A provider's base URL (``https://api.anthropic.com/v1``): a request to ``/v1/PATH`` goes to
    ``URL/PATH``."""

    url: str
    timeout: float = 300.0

    def _connection(self) -> tuple[http.client.HTTPConnection, str]:
        parts = urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise UpstreamFailed(f"--upstream {self.url!r} is not an http(s) URL")
        if parts.scheme == "https":
            context = ssl.create_default_context()
            return (
                http.client.HTTPSConnection(
                    parts.hostname, parts.port, timeout=self.timeout, context=context
                ),
                parts.path.rstrip("/"),
            )
        return http.client.HTTPConnection(
            parts.hostname, parts.port, timeout=self.timeout
        ), parts.path.rstrip("/")

    def forward(self, handler: BaseHTTPRequestHandler, protocol: Protocol, path: str, raw: bytes) -> Turn:
        """Pass the request on, relay the answer, and read it back as a turn (an error status as the
        scripted error it was)."""
        connection, base = self._connection()
        headers = {k: v for k, v in handler.headers.items() if k.lower() in PASSED}
        for key, value in headers.items():
            if key.lower() in CREDENTIALS:  # an upstream that echoes it must not get it recorded
                register(key.lower(), value)
                register(key.lower(), value.partition(" ")[2] or value)  # the token of "Bearer TOKEN"
        try:
            connection.request("POST", base + path.removeprefix("/v1"), body=raw, headers=headers)
            response = connection.getresponse()
            handler.send_response(response.status)
            for key in ("Content-Type", "Cache-Control"):
                if response.getheader(key):
                    handler.send_header(key, str(response.getheader(key)))
            streamed = "text/event-stream" in (response.getheader("Content-Type") or "")
            if streamed:
                handler.end_headers()
                events = _relay_events(response, handler)
            else:
                data = response.read()
                handler.send_header("Content-Length", str(len(data)))
                handler.end_headers()
                handler.wfile.write(data)
        except OSError as err:
            raise UpstreamFailed(f"{self.url}: {err}") from None
        finally:
            connection.close()
        if response.status >= 400:
            return Turn(error=response.status if response.status <= 599 else 500)
        try:
            return protocol.read_stream(events) if streamed else protocol.read_answer(json.loads(scrub(data)))
        except (KeyError, TypeError, ValueError, IndexError, Rejected) as err:
            raise UpstreamFailed(f"{self.url}: an answer {protocol.name} cannot read ({err!r})") from None


def _relay_events(
    response: http.client.HTTPResponse, handler: BaseHTTPRequestHandler
) -> list[dict[str, Any]]:
    """Relay a server-sent event stream line by line; return each event's JSON data, in order."""
    events: list[dict[str, Any]] = []
    while True:
        line = response.readline()
        if not line:
            return events
        handler.wfile.write(line)
        handler.wfile.flush()
        text = scrub(line).decode("utf-8", "replace").strip()
        if text.startswith("data:") and text[5:].strip() != "[DONE]":
            try:
                value = json.loads(text[5:].strip())
            except ValueError:
                continue
            if isinstance(value, dict):
                events.append(value)
