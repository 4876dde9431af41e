"""The scenario language as data: one world, one crash, and what recovery must end in.

A ``Scenario`` is what a scenario file holds and what ``chaos explore``
generates; it can be built in code with defaults for everything but the
prompt and the model script::

    Scenario(prompt="Read the README.", turns=[Turn(tool_calls=[call("read", path="README.md")])],
             files={"README.md": "hello\\n"}, crash=Strike("toolStarted[toolName=read]"))

Everything here is plain data; the world, the run and the checks read it.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Any

from chaos.contract import shapes
from chaos.contract.kinds import ENTRIES, RECORDS, kind_of
from chaos.contract.shapes import USAGE_KEYS
from chaos.fault import IN_FLIGHT, Fault
from chaos.fault import fault as fault_named

# Boundaries in a framework's store (chaos.store): the n-th commit of a phase, the commit that makes
# the n-th tool call durable, the commit that makes the n-th output durable ([tool=NAME] narrows both);
# on a database server, the n-th statement that wrote inside a transaction still open (not committed).
STORE_KINDS = ("commit", "call-durable", "output-durable", "write")
KINDS = ("header", "any", *RECORDS, *ENTRIES, "usage", *IN_FLIGHT, *STORE_KINDS)
OUTCOMES = ("completed", "blocked", "failed", "aborted")
BLOCKED_REASONS = (
    "configuration_changed",
    "environment_changed",
    "replay_declaration_changed",
    "attempts_exhausted",
)
FINISH = ("stop", "tool_calls", "length")
OPERATIONS = ("run", "compaction")
NEEDS = ("abort", "streaming", "compaction", "mcp-tools")  # and tool:NAME
# What a power cut keeps of a file created since its directory was last synced: nothing (posix: its
# directory entry is not durable), or the entry with the file's synced data (ext4's ordered journal).
PERSISTENCE = ("posix", "ext4-ordered")
MAX_STORE_DELAY = 10.0  # seconds a commit of a framework's store may be made to take
_SYNTAX = re.compile(r"^(?P<what>[A-Za-z:-]+)(?P<filters>(\[[^\]=]+=[^\]]*\])*)(#(?P<nth>\d+))?$")


def _fields(kind: str) -> dict[str, shapes.Check]:
    """The fields a fact of boundary kind ``kind`` has (what a ``where`` filter may name)."""
    if kind == "operationFinished":
        return {k: c for shape in shapes.FINISHED.values() for k, c in shape.fields.items()}
    if kind in shapes.RECORDS:
        return shapes.RECORDS[kind].fields
    entries = {
        "entry:user": [shapes.user_entry],
        "entry:tool": [shapes.started_tool_entry, shapes.synthetic_tool_entry],
        "entry:compaction": [shapes.compaction_entry],
        "usage": [shapes.usage_fact],
        "header": [shapes.header_shape],
    }.get(kind, [shapes.assistant_entry] if kind.startswith("entry:") else [])
    if kind == "any":
        return {k: c for other in (*RECORDS, *ENTRIES, "usage") for k, c in _fields(other).items()}
    return {k: c for shape in entries for k, c in shape.fields.items()}


def _value(text: str) -> Any:
    return int(text) if text.isdigit() else text


@dataclass(frozen=True)
class Boundary:
    """A point in a run to crash at: the ``nth`` fact of kind ``what`` whose fields match ``where``.

    ``what`` is a record type (``toolStarted``), an entry (``entry:<stopReason>``,
    ``entry:user``, ``entry:tool`` for a tool result, ``entry:compaction``), ``usage``,
    ``header`` (the log exists, no transaction yet), ``any`` (the n-th fact, whatever it is),
    or an in-flight boundary (``model-request``; ``model-stream[chunks=K]``, a streamed answer held
    after its first K events, 1 when not given; ``effect-running[effect=deploy]``; ``save[kind=writes]``,
    a save a framework's store begins, held in its interpreter: ``chaos.store.Save``).
    Written as text: ``toolStarted[toolName=bash]#2``.
    """

    what: str
    where: dict[str, Any] = field(default_factory=dict)  # e.g. {"toolName": "read"}
    nth: int = 1

    def __post_init__(self) -> None:
        if self.what not in KINDS:
            raise ValueError(f"{self.what!r} is not a boundary; use one of: {', '.join(KINDS)}")
        if type(self.nth) is not int or self.nth < 1:
            raise ValueError(f"occurrence must be 1 or more, got {self.nth!r}")
        if self.what.startswith("effect-"):
            if set(self.where) != {"effect"} or not isinstance(self.where["effect"], str):
                raise ValueError(
                    f"{self.what} needs exactly the filter [effect=NAME], e.g. {self.what}[effect=deploy]"
                )
            return
        if self.what == "save":
            if set(self.where) != {"kind"} or not str(self.where["kind"]).isidentifier():
                raise ValueError("save needs exactly the filter [kind=NAME], e.g. save[kind=writes]")
            return
        if self.what in STORE_KINDS:
            filters = set() if self.what in ("commit", "write") else {"tool"}
            if set(self.where) - filters or not all(isinstance(v, str) for v in self.where.values()):
                raise ValueError(
                    f"{self.what} takes no filter" if not filters else f"{self.what} takes only [tool=NAME]"
                )
            return
        if self.what == "model-stream":
            chunks = self.where.get("chunks", 1)
            if set(self.where) - {"chunks"} or type(chunks) is not int or chunks < 1:
                raise ValueError(
                    "model-stream takes only the filter [chunks=K], K events sent before the hold (1 or more)"
                )
            return
        fields = _fields(self.what)
        for key, value in self.where.items():
            if key not in fields:
                allowed = ", ".join(sorted(fields)) or "none"
                raise ValueError(f"no {self.what} fact has a field {key!r} (its fields: {allowed})")
            if isinstance(value, dict | list) or not fields[key](value):
                raise ValueError(f"no {self.what} fact can have {key} = {value!r}")

    @classmethod
    def parse(cls, text: str, nth: int | None = None) -> Boundary:
        """Read ``what[key=value]...#n``; an explicit ``nth`` wins over ``#n``."""
        match = _SYNTAX.match(text.strip())
        if not match:
            raise ValueError(
                f"{text!r} is not a boundary; write it as kind[field=value]#n, e.g. toolStarted[toolName=bash]#2"
            )
        where = {
            key.strip(): _value(value.strip())
            for key, value in re.findall(r"\[([^\]=]+)=([^\]]*)\]", match.group("filters"))
        }
        count = nth if nth is not None else int(match.group("nth") or 1)
        if not 1 <= count <= MAX_NTH:
            raise ValueError(f"{text!r}: the occurrence #{count} must be from 1 to {MAX_NTH:,}")
        return cls(match.group("what"), where, count)

    @property
    def in_flight(self) -> bool:
        return self.what in IN_FLIGHT

    @property
    def in_store(self) -> bool:
        """A commit of a framework's store (``chaos.store``), not a fact of a session log."""
        return self.what in STORE_KINDS

    def matches(self, fact: dict[str, Any]) -> bool:
        name, body = kind_of(fact)
        if self.what == "any":
            return name != "header" and all(body.get(k) == v for k, v in self.where.items())
        return name == self.what and all(body.get(k) == v for k, v in self.where.items())

    def __str__(self) -> str:
        filters = "".join(f"[{k}={v}]" for k, v in self.where.items())
        return f"{self.what}{filters}#{self.nth}"


@dataclass(frozen=True)
class Strike:
    """Where a case strikes, and how: ``fault`` names a fault of ``chaos.fault.FAULTS`` (``kill``, the
    default, a SIGKILL; ``abort``; ``torn``; ``power-loss``; ``paused-writer``; disk and network faults)."""

    boundary: Boundary
    fault_name: str = "kill"  # the fault's registry name, as a scenario file spells it

    def __post_init__(self) -> None:
        if isinstance(self.boundary, str):
            object.__setattr__(self, "boundary", Boundary.parse(self.boundary))
        why = fault_named(self.fault_name).applies_to(self.boundary.what)
        if why:
            raise ValueError(why)

    @property
    def fault(self) -> Fault:
        return fault_named(self.fault_name)

    def __str__(self) -> str:
        return str(self.boundary) if self.fault_name == "kill" else f"{self.boundary} ({self.fault_name})"

    @classmethod
    def parse(cls, text: str) -> Strike:
        """Read what ``str`` writes: ``boundary`` (a kill) or ``boundary (fault)``."""
        head, _, fault = text[:-1].rpartition(" (") if text.endswith(")") else ("", "", "")
        return cls(Boundary.parse(head), fault) if head else cls(Boundary.parse(text))


def call(name: str, arguments: dict[str, Any] | str | None = None, **fields: Any) -> dict[str, Any]:
    """A scripted tool call: ``call("read", path="README.md")``; a str ``arguments`` is sent verbatim."""
    return {"name": name, "arguments": fields if arguments is None else arguments}


@dataclass(frozen=True)
class Turn:
    """One scripted model answer; ``error`` (an HTTP status) or ``timeout`` replace the answer."""

    text: str | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)  # {name, arguments (object or raw str)}
    finish: str | None = None  # stop | tool_calls | length; derived when None
    error: int | None = None  # an HTTP error status, 400 to 599
    timeout: bool = False  # never answer (the agent's own timeout fires)
    delay: float = 0.0  # seconds before answering
    hold: bool = False  # answer only once the world releases it (tests drive this)
    usage: dict[str, int] | None = None  # what the answer bills: input, output, cacheRead, cacheWrite

    def __post_init__(self) -> None:
        if self.finish is not None and self.finish not in FINISH:
            raise ValueError(f"finish {self.finish!r} is not one of {', '.join(FINISH)}")
        if self.error is not None and not 400 <= self.error <= 599:
            raise ValueError(f"error {self.error} is not an HTTP error status (400 to 599)")
        if not (math.isfinite(self.delay) and self.delay >= 0):
            raise ValueError(f"delay {self.delay} must be a finite number of seconds, 0 or more")
        if self.usage is not None:
            unknown = set(self.usage) - set(USAGE_KEYS)
            if unknown:
                raise ValueError(
                    f"usage: unknown counter {sorted(unknown)[0]!r}; use {', '.join(USAGE_KEYS)}"
                )
            if any(type(v) is not int or v < 0 for v in self.usage.values()):
                raise ValueError("usage: every counter is a whole number, 0 or more")
            object.__setattr__(self, "usage", {k: self.usage.get(k, 0) for k in USAGE_KEYS})


@dataclass(frozen=True)
class WorkspaceFile:
    content: str
    executable: bool = False


NAME_MAX = 255  # bytes of one name, on every Linux file system
WORKSPACE_PATH_MAX = 3800  # bytes: PATH_MAX (4096) less room for the sandbox's own path before it


MAX_NTH = 1_000_000  # the highest occurrence a boundary can name (a scenario file's cap too)


def workspace_path_problem(name: str) -> str | None:
    """Why ``name`` cannot be a workspace file path, or None when it can."""
    if "\0" in name:
        return "a path cannot hold a NUL character"
    parts = PurePosixPath(name).parts
    if name.startswith("/") or ".." in parts:
        return "workspace file paths must be relative and stay inside the workspace"
    if not name or name.endswith("/") or any(p in ("", ".") for p in name.split("/")):
        return "a workspace file path needs a file name (no empty, '.' or trailing '/' parts)"
    longest = max(name.split("/"), key=lambda part: len(part.encode()))
    if len(longest.encode()) > NAME_MAX:
        return f"a file or folder name is at most {NAME_MAX} bytes; {longest[:20]!r}... has {len(longest.encode())}"
    if len(name.encode()) > WORKSPACE_PATH_MAX:
        return f"a workspace file path is at most {WORKSPACE_PATH_MAX} bytes (the sandbox's own path comes first); this one has {len(name.encode())}"
    return None


def file_conflicts(names: list[str]) -> tuple[str, str] | None:
    """Two paths where one would have to be both a file and a folder (``a`` and ``a/b``)."""
    files = set(names)
    for name in names:
        parts = name.split("/")
        for n in range(1, len(parts)):
            folder = "/".join(parts[:n])
            if folder in files:
                return folder, name
    return None


def files_problem(names: list[str]) -> str | None:
    """Why ``names`` cannot be the files of one workspace, or None when they can."""
    for name in names:
        problem = workspace_path_problem(name)
        if problem:
            return f"{name!r}: {problem}"
    conflict = file_conflicts(names)
    if conflict:
        return f"{conflict[0]!r} cannot be both a file and the folder of {conflict[1]!r}"
    return None


@dataclass(frozen=True)
class Configuration:
    """What the agent is told about its configuration; ``None`` keeps the target's default."""

    model: str | None = None
    environment_identity: str | None = None
    tools: dict[str, dict[str, str]] = field(default_factory=dict)  # name -> {description, replay, replayKey}
    env: dict[str, str] = field(default_factory=dict)

    def then(self, change: Configuration) -> Configuration:
        """This configuration with ``change`` applied on top."""
        tools = {name: dict(values) for name, values in self.tools.items()}
        for name, values in change.tools.items():
            tools.setdefault(name, {}).update(values)
        return Configuration(
            change.model or self.model,
            change.environment_identity or self.environment_identity,
            tools,
            {**self.env, **change.env},
        )

    @property
    def changes_anything(self) -> bool:
        return bool(self.model or self.environment_identity or self.tools or self.env)


@dataclass(frozen=True)
class Expect:
    """What recovery must end in. ``derived``: nobody wrote it down, the oracle says it.

    A scenario's hand-written expectations belong to its own crash; crashing
    it elsewhere (``--kill-at``, a sweep) derives the outcome from the oracle
    instead, and drops plan and effect counts. ``must_reach``: a crash the run
    never reaches is a finding (generated scenarios say no).
    """

    outcome: str = "completed"
    reason: str | None = None  # the blocked reason
    plan: dict[str, Any] | None = None  # fields the oracle's plan for the crash prefix must have
    effects: dict[str, int] = field(default_factory=dict)  # effect name -> count of runs at the end
    derived: bool = False
    must_reach: bool = True


@dataclass(frozen=True)
class Scenario:
    """One world and one crash (see ``scenarios/README.md``); ``path`` is where it was read from."""

    prompt: str
    turns: list[Turn]
    files: dict[str, WorkspaceFile] = field(default_factory=dict)
    crash: Strike | None = None
    then_crash: Strike | None = None
    start: Configuration = field(default_factory=Configuration)
    change: Configuration = field(default_factory=Configuration)
    expect: Expect = field(default_factory=Expect)
    name: str = "scenario"
    description: str = ""
    target: str = "reference"
    operation: str = "run"  # or "compaction": run the prompt to its end, then crash the target's compact
    timeout: float = 60.0  # seconds per phase
    requires: tuple[str, ...] = ()  # beyond the contract: abort, streaming, compaction, mcp-tools, tool:NAME
    persistence: str = "posix"  # what a power cut keeps of a new file's directory entry (or ext4-ordered)
    # seconds each commit of a framework's store takes (a slow disk, held at the tracer): a framework
    # that writes its store beside its work, not before it, shows the difference only then
    store_delay: float = 0.0
    path: Path | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        files = {k: WorkspaceFile(v) if isinstance(v, str) else v for k, v in self.files.items()}
        object.__setattr__(self, "files", files)
        if not self.turns:
            raise ValueError("a scenario needs at least one turn (the model script)")
        if not (math.isfinite(self.timeout) and self.timeout > 0):
            raise ValueError(f"timeout {self.timeout} must be a finite number of seconds, more than 0")
        if self.operation not in OPERATIONS:
            raise ValueError(f"operation {self.operation!r} is not one of {', '.join(OPERATIONS)}")
        problem = files_problem(list(files))
        if problem:
            raise ValueError(f"files: {problem}")
        object.__setattr__(self, "requires", tuple(self.requires))
        if self.persistence not in PERSISTENCE:
            raise ValueError(f"persistence {self.persistence!r} is not one of {', '.join(PERSISTENCE)}")
        if not (math.isfinite(self.store_delay) and 0 <= self.store_delay <= MAX_STORE_DELAY):
            raise ValueError(f"store_delay {self.store_delay} must be from 0 to {MAX_STORE_DELAY:g} seconds")
        unknown = [need for need in self.requires if need not in NEEDS and not need.startswith("tool:")]
        if unknown:
            raise ValueError(f"requires: {unknown[0]!r} is not one of {', '.join(NEEDS)}, tool:NAME")

    def needs(self) -> list[str]:
        """What running this scenario as it stands asks of a target beyond the contract: what it declares
        it requires, what its faults need (an abort), compaction, a streamed answer to crash in."""
        needs = list(self.requires)
        crashes = [c for c in (self.crash, self.then_crash) if c is not None]
        needs += [need for c in crashes for need in c.fault.needs]
        if any(c.boundary.what == "model-stream" for c in crashes):
            needs.append("streaming")
        if self.operation == "compaction":
            needs.append("compaction")
        return list(dict.fromkeys(needs))

    def withholds_answer(self) -> bool:
        """A fault of this scenario keeps a model answer from arriving in time (``hang``, ``trickle``): the
        agent's own request deadline is what ends the wait."""
        return any(c.fault.withholds for c in (self.crash, self.then_crash) if c is not None)

    def unreachable(self, own_effects: bool = False) -> str | None:
        """Why a crash of this scenario can never be reached, as its own script shows (a tool it never
        calls, a length stop it never makes, an effect no file performs, unless the agent performs effects with
        tools of its own: ``own_effects``, a framework agent), or None when it may be."""
        names = sorted({c["name"] for turn in self.turns for c in turn.tool_calls})
        aborts = any("abort" in c.fault.needs for c in (self.crash, self.then_crash) if c is not None)
        for crash in (self.crash, self.then_crash):
            if crash is None:
                continue
            b, called = crash.boundary, ", ".join(names) or "no tool"
            tool = b.where.get("toolName")
            why = None
            if tool is not None and tool not in names:
                why = f"the script never calls {tool!r} (it calls {called})"
            elif b.what in ("toolStarted", "entry:tool") and not names:
                why = "the script calls no tool"
            elif (
                b.what in ("toolStarted", "entry:tool")
                and crash is self.crash
                and b.nth
                > (calls := sum(1 for t in self.turns for c in t.tool_calls if tool in (None, c["name"])))
            ):
                why = f"the script makes {calls} such call(s), and a first run starts each at most once"
            elif b.what == "entry:length" and not any(t.finish == "length" for t in self.turns):
                why = 'no turn of the script stops at its length (finish = "length")'
            elif b.what == "stepFailed" and not aborts and not any(t.error or t.timeout for t in self.turns):
                why = "no turn of the script fails (error or timeout), and nothing aborts"
            elif b.what in ("compactionStarted", "entry:compaction") and self.operation != "compaction":
                why = 'the scenario compacts nothing (operation = "compaction")'
            elif (
                b.what.startswith("effect-")
                and not own_effects
                and not any(b.where["effect"] in f.content for f in self.files.values())
            ):
                why = f"no workspace file performs the effect {b.where['effect']!r} ($CHAOS_EFFECT NAME)"
            if why:
                return f"{b} can never be reached: {why}"
        return None

    def with_crash(self, crash: Strike | None, then_crash: Strike | None = None) -> Scenario:
        """The same world crashed elsewhere; expectations become derived unless the crashes are the scenario's."""
        if (crash, then_crash) == (self.crash, self.then_crash):
            return self
        return replace(self, crash=crash, then_crash=then_crash, expect=Expect(derived=True))
