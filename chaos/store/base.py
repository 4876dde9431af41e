"""The adapter interface (``Store``), what it reads (``View``), and the registry (``STORES``)."""

from __future__ import annotations

import glob
import threading
from abc import ABC, abstractmethod
from collections import Counter
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, ClassVar


def text_of(content: Any) -> str:
    """A message's text as frameworks keep it: a string, or a list of parts whose text is joined (a
    multimodal message; the other parts have none)."""
    if isinstance(content, str):
        return content
    return "".join(str(part.get("text", "")) for part in content or [] if isinstance(part, dict))


@dataclass(frozen=True)
class Call:
    """A tool call the store holds: the framework will run it (or has)."""

    id: str
    name: str
    arguments: str = ""


@dataclass(frozen=True)
class Output:
    """A tool call's output, as the store holds it."""

    call_id: str
    text: str


@dataclass(frozen=True)
class View:
    """What one copy of a store makes durable. ``items`` counts everything it holds (rows, lines): a
    resume that changes nothing leaves it, and the rest, as they were."""

    calls: tuple[Call, ...] = ()
    outputs: tuple[Output, ...] = ()
    final: str | None = None  # the run's final answer, once the store holds it
    items: int = 0
    unreadable: str | None = None  # why the copy could not be read (a finding of its own)
    blind: str | None = None  # why chaos cannot read what the framework could (no verdict: exit 2)
    waiting: tuple[str, ...] = field(default=())  # calls a saved run state holds for approval
    started: bool = False  # the run's input is durable: there is a run to resume
    held: frozenset[str] = frozenset()  # call ids the store keeps outside a call (a graph's own work item)
    inputs: tuple[str, ...] = ()  # the user inputs it holds, in order, each as its text
    # where the framework replays the run's code from the store after a restart (Temporal): each replay
    # it recorded as non-deterministic (its error), in order; None where the store records no replay
    replays: tuple[str, ...] | None = None

    @property
    def call_ids(self) -> frozenset[str]:
        """The calls the framework will resume from: those the store holds whole, and those it names by
        their id alone (a graph that keeps ``pending=[call id]`` in a channel of its own)."""
        return frozenset(c.id for c in self.calls) | self.held

    def orphan_calls(self) -> list[Call]:
        """Calls without an output: a finished run must not leave one (the next request is refused)."""
        answered = {o.call_id for o in self.outputs}
        return [c for c in self.calls if c.id not in answered and c.id not in self.waiting]

    def orphan_outputs(self) -> list[Output]:
        """Outputs whose call the store does not hold."""
        return [o for o in self.outputs if o.call_id not in self.call_ids]

    def normalized(self) -> dict[str, Any]:
        """The view as JSON with its tool call ids renamed in the order they appear (``call-1``, ...): a
        real provider (and chaos's model server) gives fresh ids every run, so two runs that made the
        same things durable read alike. What a mined store fixture expects its files to read as."""
        names: dict[str, str] = {}

        def rename(call_id: str) -> str:
            return names.setdefault(call_id, f"call-{len(names) + 1}")

        out = {
            "calls": [{"id": rename(c.id), "name": c.name, "arguments": c.arguments} for c in self.calls],
            "outputs": [{"callId": rename(o.call_id), "text": o.text} for o in self.outputs],
            "final": self.final,
            "items": self.items,
            "unreadable": self.unreadable,
            "waiting": [rename(w) for w in self.waiting],
            "started": self.started,
            "inputs": list(self.inputs),
        }
        if self.held:  # (older fixtures have none)
            out["held"] = [rename(h) for h in sorted(self.held)]
        return out

    def lines(self) -> list[str]:
        """What the store holds, one line an item a person reads (the report's crash prefix)."""
        names = {c.id: c.name for c in self.calls}
        out = [f"input: {text}" for text in self.inputs]
        out += [f"call {c.name} ({c.id}) {c.arguments}".rstrip() for c in self.calls]
        out += [f"call id {h}, held apart from its call" for h in sorted(self.held - set(names))]
        out += [f"output of {names.get(o.call_id, '?')} ({o.call_id}): {o.text}" for o in self.outputs]
        out += [f"final answer: {self.final}"] if self.final is not None else []
        out += [f"unreadable: {self.unreadable}"] if self.unreadable else []
        return out or ["(nothing durable)"]

    def duplicated_outputs(self) -> list[str]:
        """Call ids with more than one output."""
        return sorted(i for i, n in Counter(o.call_id for o in self.outputs).items() if n > 1)


@dataclass(frozen=True)
class Save:
    """A call in the agent's interpreter where the framework begins a save off its main line (a
    checkpointer's write, run by a background thread), or parallel work that takes its place in the store
    as it begins (``passes``: a tool's DBOS step, numbered as it starts): chaos can hold a thread there and
    see which saves begin meanwhile (``chaos.process.forkserver``: it wraps the call where its module is
    loaded). Only a start chaos makes itself can be held (a warm start: chaos's bootstrap runs the target's
    Python)."""

    call: str  # "module:Class.method"
    kind: str  # its name in boundaries (``save[kind=writes]#2``) and reports
    key: tuple[str, ...] = ()  # the path to the record it is about (keys or attributes), in argument ``arg``
    after: tuple[str, ...] = ()  # kinds of save about the same record the framework finishes before this one
    promise: str = ""  # where the framework says so, and the bug that breaks it
    arg: int = 0  # the positional argument (after the method's own object) the key is read from
    # Parallel work that takes its place in the store as it begins (DBOS numbers a workflow's steps as they
    # start): held, it lets the others go on, and the recovery after the crash begins it first
    passes: bool = False

    def request(self) -> dict[str, object]:
        """What the interpreter's bootstrap is told (JSON)."""
        return {
            "call": self.call,
            "kind": self.kind,
            "key": list(self.key),
            "arg": self.arg,
            "passes": self.passes,
        }


class Store(ABC):
    """One kind of durable store. ``path`` is the target's ``[store] path``: the store's main file,
    relative to the workspace; ``files`` are every file that makes up its durable state there."""

    name: ClassVar[str]
    # How a commit shows at the tracer: "sqlite" (a SQLite database in any journal mode that keeps a file:
    # the write that completes a WAL commit frame, or the rollback journal deleted, truncated or its header
    # zeroed), "line" (a write that ends with a newline to the store's file), "rename" (files written
    # whole: a file renamed over one of the store's names, as a checkpoint written atomically is), or
    # "wire" (a server store: the answer to a commit, seen by the world's relay, ``chaos.world.pgwire``).
    commit: ClassVar[str]
    # The server the world runs for it (``chaos.world.engine``: "postgres", "temporal"), or None, and the
    # placeholder that gives the agent its address
    server: ClassVar[str | None] = None
    server_placeholder: ClassVar[str] = ""
    description: ClassVar[str]

    # It reads a run's saved state beside its store (``[store] state``: a run parked for approval)
    reads_state: ClassVar[bool] = False
    # Where the framework begins its saves in the agent's interpreter (``Save``): none, or the calls whose
    # order ``--fault overtaken`` explores
    saves: ClassVar[tuple[Save, ...]] = ()

    def files(self, workspace: Path, path: str, state: str | None = None) -> list[Path]:
        """The files that hold the store now: the main file's matches and, for SQLite, what it keeps beside
        each (its WAL, or its rollback journal: a hot journal after a crash is part of the state)."""
        found = matches(workspace, path)
        sides = SQLITE_SIDES if self.commit == "sqlite" else ()
        return [f for main in found for f in (main, *(Path(f"{main}{s}") for s in sides)) if f.is_file()]

    def snapshot(self, workspace: Path, path: str, state: str | None = None) -> dict[str, bytes]:
        """A copy of the store's files (``state``: the glob of a saved run state the target names), by
        path relative to the workspace; of each at most one byte more than ``MAX_FILE`` (a larger file,
        sparse or not, costs no more, and ``oversized`` names it)."""
        out = {}
        for file in self.files(workspace, path, state):
            try:
                with file.open("rb") as opened:
                    out[str(file.relative_to(workspace))] = opened.read(MAX_FILE + 1)
            except FileNotFoundError:
                continue  # removed meanwhile (SQLite deletes its WAL on a clean close)
        return out

    @abstractmethod
    def read(self, files: dict[str, bytes]) -> View:
        """What the copied files make durable. Pure over the bytes: no file of the target is touched."""

    def session_id(self, files: dict[str, bytes]) -> str | None:
        """The id a resume names the run by, when the store chose it (None: the one chaos started it
        with, ``{session_id}`` in the target's start command)."""
        return None

    def view(self, workspace: Path, path: str, state: str | None = None) -> View:
        return self.read(self.snapshot(workspace, path, state))


MAX_FILE = 256 * 1024 * 1024  # bytes of one store file chaos copies and reads
SQLITE_SIDES = ("-wal", "-journal")  # what SQLite keeps beside a database: its WAL, its rollback journal


def beside(name: str) -> bool:
    """A SQLite database's side file (its WAL or rollback journal), not a database of its own."""
    return name.endswith(SQLITE_SIDES)


def matches(workspace: Path, pattern: str) -> list[Path]:
    """The files ``pattern`` matches in the workspace, each inside it once links are followed: a link out
    of the workspace (to a host file) is not the agent's store, and is never copied into results."""
    root = workspace.resolve()
    found = [Path(p) for p in sorted(glob.glob(str(workspace / pattern)))]
    return [f for f in found if f.resolve().is_relative_to(root) and f.is_file()]


def oversized(files: dict[str, bytes]) -> str | None:
    """Why chaos reads none of ``files`` (one is larger than it reads), or None."""
    large = sorted(name for name, data in files.items() if len(data) > MAX_FILE)
    if not large:
        return None
    return f"{large[0]} is larger than {MAX_FILE} bytes, the most chaos reads of one store file"


STORES: dict[str, Store] = {}


def register(store: Store) -> Store:
    """Make ``store`` available to target files as ``[store] kind = NAME``."""
    STORES[store.name] = store
    return store


def store_named(name: str) -> Store:
    _load_plugins()
    return STORES[name]


def known() -> list[str]:
    _load_plugins()
    return sorted(STORES)


# The entry-point group of store adapters: each entry names a module that registers its stores when
# imported. chaos's own adapters are entries of this group too (pyproject.toml), as a user's are.
GROUP = "chaos.stores"
BROKEN: dict[str, str] = {}  # an entry that failed to load -> why (said where a kind is unknown)
_LOADED: list[bool] = []
_LOADING = threading.RLock()  # a sweep's cases ask from several threads: none reads a half-filled registry


def _load_plugins() -> None:
    with _LOADING:
        if _LOADED:
            return
        for entry in entry_points(group=GROUP):
            try:
                entry.load()
            except Exception as err:  # a user's adapter that does not import: said, never a traceback
                BROKEN[entry.name] = f"{entry.value}: {type(err).__name__}: {err}"
        _LOADED.append(True)


def server_folder(workspace: Path, server: str) -> Path:
    """Where the world keeps the server a store lives on (its data, its socket or its address): beside the
    workspace in the sandbox, named by the server (``Store.server``)."""
    return workspace.parent / server


def servers() -> frozenset[str]:
    """The servers the registered stores live on (each a folder of the sandbox: ``server_folder``)."""
    _load_plugins()
    return frozenset(s.server for s in STORES.values() if s.server is not None)


def unknown_kind(kind: str) -> str:
    """What to say of a ``[store] kind`` no adapter registered: the kinds there are, and how to add one."""
    broken = "".join(f"; the adapter {name} did not load ({why})" for name, why in sorted(BROKEN.items()))
    return (
        f"{kind!r} is no store adapter here; use one of: {', '.join(known())}{broken}. An adapter of your "
        "own registers itself when its module is imported: name the module in [store] module, or install "
        f"it with a {GROUP!r} entry point (docs/extending.md)"
    )
