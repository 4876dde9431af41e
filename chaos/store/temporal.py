"""A Temporal workflow's event history as a store: what the world's Temporal server made durable.

Temporal makes a workflow durable as events in its history: the workflow started with its input, each
activity scheduled, completed with its result, and the workflow completed with its own. After a worker
dies, a new worker replays the history and goes on; a completed activity is not run again, one in
flight when its worker died runs again (at least once, the same activity id). So a call is durable
once a completed activity's result holds it, and its output once a completed activity's result answers
it: activities are read as chat messages in OpenAI's format, as DBOS's steps are (``chaos.store.dbos``):
a model activity's assistant message holds calls, a tool activity's tool message answers one. A local
activity (run in the worker, within its workflow task) is read from the marker its task records when it
completes: its type and its result, as a completed activity's. The run's input is the workflow's, its
answer the workflow's result once it completed. An adapter whose activities return no call id keeps it
from their input (``kept_input``; Pydantic AI's, ``chaos.store.pydantic_temporal``).

chaos reads the histories from the server with Temporal's own client (``temporalio``), never by running
the workflow's code, and keeps them as one JSON document (the store's ``path``: each workflow's id and
its history as Temporal's JSON writes it), read again later without a server. Payloads are decoded
only where their encoding is ``json/plain`` (Temporal's default converter for plain values); another
(protobuf, a codec's encryption) makes chaos blind. The server is the world's (``chaos.world.temporal``):
its address is in the sandbox beside the workspace (``SERVER_DIR``). ``pip install 'durable-chaos[temporal]'``.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar, NamedTuple

from chaos.store.base import MAX_FILE, Call, Output, Store, View, oversized, register, server_folder
from chaos.store.dbos import chat_steps
from chaos.store.inert import Blind, json_value
from chaos.store.sqlite import unreadable

SERVER_DIR = "temporal"  # the server's folder in the sandbox, beside the workspace: its database, its address
ADDRESS = "address"  # the file in it that names where the server listens (host:port)
NAMESPACE = "default"
MAX_WORKFLOWS = 100  # workflows of one case's server read
READ_TIMEOUT = 10.0  # seconds a snapshot of every history may take
JSON_PLAIN = "json/plain"
NULL = "binary/null"


def server_dir(workspace: Path) -> Path:
    return server_folder(workspace, SERVER_DIR)


# What a copy keeps of each event: its kind and, for the kinds the view reads, the payloads it reads. The
# rest (a worker's identity, pid@hostname; times; task queues) is the machine's, never written to results.
READ = {
    "EVENT_TYPE_WORKFLOW_EXECUTION_STARTED": ("workflowExecutionStartedEventAttributes", "input"),
    "EVENT_TYPE_ACTIVITY_TASK_COMPLETED": ("activityTaskCompletedEventAttributes", "result"),
    "EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED": ("workflowExecutionCompletedEventAttributes", "result"),
}


# The failures a copy keeps: a workflow task's, and the workflow's own (its cause and message)
FAILED = {
    "EVENT_TYPE_WORKFLOW_TASK_FAILED": "workflowTaskFailedEventAttributes",
    "EVENT_TYPE_WORKFLOW_EXECUTION_FAILED": "workflowExecutionFailedEventAttributes",
}
NONDETERMINISM = ("TMPRL1100", "Nondeterminism", "NON_DETERMINISTIC")  # how Temporal names one
MAX_MESSAGE = 500  # characters of a failure's message kept


SCHEDULED = ("EVENT_TYPE_ACTIVITY_TASK_SCHEDULED", "activityTaskScheduledEventAttributes")
DONE = "EVENT_TYPE_ACTIVITY_TASK_COMPLETED"
# A local activity runs in the worker, within its workflow task, and is recorded as a marker when the task
# completes: its type in the marker's data, its result beside it (none where it failed)
MARKER = ("EVENT_TYPE_MARKER_RECORDED", "markerRecordedEventAttributes")
LOCAL = "core_local_activity"
# What a store keeps of an activity's input (``TemporalStore.kept_input``): a few plain values it plucked
Kept = dict[str, str] | None


def _payloads_kept(payloads: list[Any]) -> list[dict[str, Any]]:
    return [
        {"metadata": {"encoding": (p.get("metadata") or {}).get("encoding", "")}, "data": p.get("data", "")}
        for p in payloads
    ]


def _kept(event: dict[str, Any], keep: Callable[[str, list[Any]], Kept]) -> dict[str, Any]:
    kind = str(event.get("eventType", ""))
    out: dict[str, Any] = {"eventId": event.get("eventId"), "eventType": kind}
    if kind in FAILED:
        attributes = event.get(FAILED[kind]) or {}
        message = str((attributes.get("failure") or {}).get("message", ""))[:MAX_MESSAGE]
        out[FAILED[kind]] = {"cause": str(attributes.get("cause", "")), "failure": {"message": message}}
    if kind == SCHEDULED[0]:
        attributes = event.get(SCHEDULED[1]) or {}
        name = str((attributes.get("activityType") or {}).get("name", ""))
        given = (attributes.get("input") or {}).get("payloads") or []
        out[SCHEDULED[1]] = {"activityType": {"name": name}, "kept": keep(name, given)}
    if kind == MARKER[0] and (marker := _local(event.get(MARKER[1]) or {})) is not None:
        out[MARKER[1]] = marker
    if kind in READ:
        attributes, field = READ[kind]
        found = event.get(attributes) or {}
        out[attributes] = {
            field: {"payloads": _payloads_kept((found.get(field) or {}).get("payloads") or [])}
        }
        if kind == DONE:
            out[attributes]["scheduledEventId"] = str(found.get("scheduledEventId", ""))
    return out


def _local(attributes: dict[str, Any]) -> dict[str, Any] | None:
    """What a copy keeps of a completed local activity's marker: its type and its result (None: another
    marker, or a local activity that failed)."""
    details = attributes.get("details") or {}
    if attributes.get("markerName") != LOCAL or "result" not in details:
        return None
    try:
        data = payload(
            ((details.get("data") or {}).get("payloads") or [None])[0], "a local activity's marker"
        )
        name = str(data.get("activity_type", "")) if isinstance(data, dict) else ""
    except (Blind, ValueError):
        name = ""
    return {
        "activityType": {"name": name},
        "result": {"payloads": _payloads_kept(details["result"].get("payloads") or [])},
    }


async def _histories(address: str, keep: Callable[[str, list[Any]], Kept]) -> list[dict[str, Any]]:
    from temporalio.client import Client

    client = await Client.connect(address, namespace=NAMESPACE)
    out: list[dict[str, Any]] = []
    async for found in client.list_workflows(limit=MAX_WORKFLOWS):
        history = await client.get_workflow_handle(found.id, run_id=found.run_id).fetch_history()
        events = [_kept(event, keep) for event in history.to_json_dict().get("events", [])]
        out.append({"id": found.id, "history": {"events": events}})
    return out


def payload(data: Any, what: str) -> Any:
    """One of Temporal's payloads as a plain value: JSON (``json/plain``), None (``binary/null``); any
    other encoding makes chaos blind."""
    if not isinstance(data, dict):
        raise ValueError(f"{what}: a payload that is no object")
    try:
        encoding = base64.b64decode(str((data.get("metadata") or {}).get("encoding", ""))).decode()
        raw = base64.b64decode(str(data.get("data", "")))
    except (binascii.Error, UnicodeDecodeError) as err:
        raise ValueError(f"{what}: a payload that is no base64: {err}") from None
    if encoding == NULL:
        return None
    if encoding != JSON_PLAIN:
        raise Blind(
            f"Temporal kept {what} encoded as {encoding!r}, which chaos does not decode: let activities "
            "and workflows take and return plain values (Temporal's default JSON converter), no codec"
        )
    return json_value(raw, what)


def _payloads(container: dict[str, Any], what: str) -> list[Any]:
    return [payload(p, what) for p in container["payloads"]]


class Activity(NamedTuple):
    """A completed activity as a copy keeps it: its type's name, what the store kept of its input, and
    its result's values."""

    name: str
    kept: Kept
    result: list[Any]


class TemporalStore(Store):
    name = "temporal"
    commit: ClassVar[str] = "wire"
    server: ClassVar[str] = "temporal"
    server_placeholder: ClassVar[str] = "temporal_address"
    description = "a Temporal server's workflow histories: completed activities' results as chat messages"

    def files(self, workspace: Path, path: str, state: str | None = None) -> list[Path]:
        return []  # nothing of it is a file of the agent's machine: a power cut there keeps it all

    def snapshot(self, workspace: Path, path: str, state: str | None = None) -> dict[str, bytes]:
        try:
            address = (server_dir(workspace) / ADDRESS).read_text()
        except FileNotFoundError:
            return {}
        histories = asyncio.run(asyncio.wait_for(_histories(address, self.kept_input), READ_TIMEOUT))
        if not histories:
            return {}
        return {path: json.dumps({"workflows": histories}, sort_keys=True).encode()[: MAX_FILE + 1]}

    def read(self, files: dict[str, bytes]) -> View:
        """The histories' view; a copy too large, or holding a payload chaos does not decode, makes chaos
        blind; one that is not what ``snapshot`` writes is unreadable (a copy is a file: a fixture)."""
        if not files:
            return View(replays=())
        if (large := oversized(files)) is not None:
            return View(blind=large)
        try:
            return self._view(json_value(next(iter(files.values())), "the workflow histories"))
        except Blind as err:
            return View(blind=str(err))
        except (ValueError, KeyError, TypeError, AttributeError) as err:
            return View(unreadable=unreadable(err))

    def kept_input(self, activity: str, payloads: list[Any]) -> Kept:
        """What a copy keeps of the input of an activity of type ``activity`` (its raw payloads): nothing
        here, the chat messages the activities return hold the calls they answer. An adapter whose tool
        activities return no call id keeps it from their input: a few plain values, never the whole input
        (the app's, not chaos's: written to results)."""
        return None

    def activities(self, done: list[Activity]) -> tuple[dict[str, Call], list[Output]]:
        """The calls and outputs the completed activities hold: here, chat messages in OpenAI's format."""
        return chat_steps(value for activity in done for value in activity.result)

    def _view(self, document: Any) -> View:
        """What the histories (``snapshot``'s document) make durable: the events ``_kept`` keeps, read."""
        read: dict[str, list[Any]] = {kind: [] for kind in READ}
        replays: list[str] = []
        done: list[Activity] = []
        items = 0
        for workflow in document["workflows"]:
            events = workflow["history"]["events"]
            items += len(events)
            scheduled: dict[str, dict[str, Any]] = {}
            for event in events:
                kind = event["eventType"]
                if kind == SCHEDULED[0]:
                    scheduled[str(event["eventId"])] = event[SCHEDULED[1]]
                elif kind == MARKER[0] and MARKER[1] in event:
                    marker = event[MARKER[1]]
                    values = _payloads(marker["result"], "a local activity's result")
                    done.append(Activity(str(marker["activityType"]["name"]), None, values))
                elif kind in READ:
                    attributes, field = READ[kind]
                    values = _payloads(event[attributes][field], f"{kind}'s {field}")
                    read[kind].append(values)
                    if kind == DONE:
                        began = scheduled[str(event[attributes]["scheduledEventId"])]
                        done.append(Activity(str(began["activityType"]["name"]), began["kept"], values))
                elif kind in FAILED:
                    failed = event[FAILED[kind]]
                    message = str(failed["failure"]["message"])[:MAX_MESSAGE]
                    if any(name in f"{failed['cause']} {message}" for name in NONDETERMINISM):
                        replays.append(message)
        inputs = [
            v for given in read["EVENT_TYPE_WORKFLOW_EXECUTION_STARTED"] for v in given if isinstance(v, str)
        ]
        calls, outputs = self.activities(done)
        answers = read["EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED"]
        final = (str(answers[-1][0]) if answers[-1] else "") if answers else None
        return View(
            tuple(calls.values()),
            tuple(outputs),
            final,
            items,
            started=bool(inputs),
            inputs=tuple(inputs),
            replays=tuple(replays),
        )


TEMPORAL_STORE = register(TemporalStore())
