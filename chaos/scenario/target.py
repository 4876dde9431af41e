"""Target specs (``targets/NAME.toml``): how to start, resume and question an agent under test.

chaos assumes nothing about the agent beyond the session contract: argv
templates, an environment, a glob for its session logs, exit codes per
outcome, and a way to learn its current configuration (a command that prints
the planner's ``current`` JSON, or derived from the log and the tool
declarations). A Go or TypeScript agent is driven by writing one of these.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.util
import string
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from chaos.bundled import frameworks_folder, targets_folder
from chaos.errors import SpecError
from chaos.fault import FAULTS, Fault
from chaos.scenario.model import OUTCOMES, Scenario
from chaos.scenario.strict_toml import MISSING, Table
from chaos.store.base import known, store_named, unknown_kind

GUIDE = "docs/own-agent.md"
PROTOCOL_NAMES = ("openai-chat", "anthropic", "openai-responses")  # chaos.world.protocols serves each
MCP_TRANSPORTS = ("http", "stdio")  # how the world serves a target's tools over MCP (chaos.world.mcp_server)
PLACEHOLDERS = {
    "python": "the Python running chaos",
    "prompt": "the scenario's prompt (start only)",
    "session_id": "the session's id, read from its log header (resume only)",
    "workspace": "the sandbox workspace",
    "target_dir": "the folder holding this target spec",
    "model_url": "the scripted model server's base URL (http://127.0.0.1:PORT/.../v1), for clients given a URL ending in /v1 (OpenAI's)",
    "model_root": "the same URL without its /v1, for clients that add /v1 themselves (Anthropic's SDK)",
    "model": "the model name of the phase",
    "environment_identity": "the environment identity of the phase",
    "tools_json": "the phase's tool overrides as a JSON object (name -> description/replay/replayKey)",
    "request_deadline": "the agent's deadline for one model answer, in seconds: the target's request_deadline, "
    "or a short one (SHORT_DEADLINE) in a case whose fault withholds the answer (hang, trickle)",
    "mcp_url": 'the URL of the world\'s MCP server of the workspace tools (Streamable HTTP; with mcp = "http")',
    "mcp_command": "the command that starts the world's MCP server of the workspace tools over stdio, as a "
    'JSON list (with mcp = "stdio")',
    "postgres_url": "the URL of the world's PostgreSQL server, through the relay that sees each commit "
    "(postgresql://chaos@127.0.0.1:PORT/chaos?sslmode=disable; with a [store] kind on PostgreSQL)",
    "temporal_address": "the address of the world's Temporal server (127.0.0.1:PORT, its namespace "
    "default; with a [store] kind on Temporal)",
}
MCP_PLACEHOLDER = {"http": "mcp_url", "stdio": "mcp_command"}
# The deadline a case whose fault withholds an answer gives an agent that takes ``{request_deadline}``: the
# case then costs about two of these (an attempt and its retry), not the agent's everyday deadline.
SHORT_DEADLINE = 2.0


@dataclass(frozen=True)
class Capabilities:
    """What a target can do beyond the contract, declared in its ``[capabilities]`` table.

    The contract asks for a log, a resume and exit codes per outcome; chaos can
    exercise more where an agent offers it. Defaults are the contract's minimum:
    no abort on a signal, no streaming, compaction only with a ``compact``
    command. A case that needs what a target lacks is skipped with the reason,
    never failed."""

    abort: str | None = None  # the signal the agent turns into abortRequested (SIGINT), or None
    streaming: bool = False  # it streams model answers (model-stream boundaries need it)
    compaction: bool = False  # it has a compact command
    mcp: str | None = None  # how the world serves its tools over MCP (the target's ``mcp``), or None

    def lacks(self, need: str, tools: list[str]) -> str | None:
        """Why a case that needs ``need`` cannot run against this target, or None when it can."""
        if need == "abort" and self.abort is None:
            return 'an abort on a signal (the target declares no [capabilities] abort = "SIGINT")'
        if need == "streaming" and not self.streaming:
            return "a streamed model answer (the target declares no [capabilities] streaming = true)"
        if need == "compaction" and not self.compaction:
            return "a compaction (the target has no compact command)"
        if need == "mcp-server" and self.mcp != "http":
            return 'an MCP server the world runs over HTTP (the target declares no mcp = "http")'
        if need == "mcp-tools" and self.mcp is None:
            return 'tools on the world\'s MCP server (the target declares no mcp = "http" or "stdio")'
        if need.startswith("tool:") and need[5:] not in tools:
            return f"the tool {need[5:]!r} (the target declares {', '.join(tools) or 'no tools'})"
        return None


SEMANTICS = ("at-most-once", "at-least-once")


@dataclass(frozen=True)
class StoreSpec:
    """The agent's durable store, and what recovery must guarantee of effects. Every target has one: a
    framework agent's ``[store]`` table, else the session log its ``sessions`` glob names.

    ``facts``: the store holds the session contract's facts (a target without ``[store]``): the planner
    reads the agent's configuration in it, a crash lands at a fact, a person may pause the writer there
    and a second writer may share it. A store without them is judged by what its adapter reads
    (``chaos.store.View``), as the framework promises it.

    ``at-most-once`` (the default, what a non-idempotent tool needs): an effect
    runs once or not at all, whatever crashes. ``at-least-once``: an effect may
    run again after a crash, but every run carries the same tool call id, so an
    idempotency key can make it one (LangGraph's documented promise with
    ``durability="sync"``)."""

    kind: str  # a chaos.store adapter: session-log, langgraph, openai-agents
    path: str  # the store's main file, a glob relative to the workspace
    semantics: str = "at-most-once"
    state: str | None = None  # where a run parked for approval saves itself (a glob), read with the store
    facts: bool = False
    # at least once, and its framework documents that a step may run again after its output was durable
    # (a weaker promise than durable execution's: ``output-once`` is then not judged)
    rerun_after_output: bool = False


@dataclass(frozen=True)
class ToolDeclaration:
    name: str
    replay: str
    replay_key: str


@dataclass(frozen=True)
class Upgrade:
    """The next version of the agent, as a deploy while runs are in flight brings it: every resume after
    the run that crashed is this version's (its resume command, its environment over the target's)."""

    resume: list[str]
    env: dict[str, str]


@dataclass(frozen=True)
class Target:
    path: Path
    name: str
    start: list[str]
    resume: list[str]
    cwd: str
    sessions: str  # glob relative to the workspace
    env: dict[str, str]
    model: str
    environment_identity: str
    exit_codes: dict[str, int]
    configuration_command: list[str] | None  # None: derive from the log and ``tools``
    tools: list[ToolDeclaration]
    store_spec: StoreSpec  # its ``[store]``, else its session log (``sessions``): judged on its facts
    compact: list[str] | None = None  # starts a compaction of {session_id}, for compaction scenarios
    approve: list[str] | None = None  # approves a run of {session_id} that exited parked (a person, later)
    protocol: str = "openai-chat"  # what the agent speaks to its model (chaos.world.protocols)
    capabilities: Capabilities = Capabilities()
    fixtures: Path | None = None  # where its sweeps mine crash prefixes by default (``fixtures = "DIR"``)
    request_deadline: float | None = None  # the agent's own deadline for one model answer, in seconds
    takes_deadline: bool = False  # a command or [env] passes {request_deadline}: chaos may shorten it
    warm: bool = True  # a sweep may start its Python processes warm (chaos.case.starts); false: always cold
    mcp_trusted: tuple[str, ...] = ()  # the MCP tools the host (not the server) declares safe to replay
    upgrade: Upgrade | None = None  # ``[upgrade]``: the crashed run is resumed by the next version

    def upgraded(self) -> Target:
        """The target its resumes run as: the next version where it names one (``[upgrade]``)."""
        if self.upgrade is None:
            return self
        env = {**self.env, **self.upgrade.env}
        return replace(self, resume=self.upgrade.resume, env=env, upgrade=None)

    @property
    def mcp(self) -> str | None:
        """How its tools are on an MCP server the world serves (chaos.world.mcp_server): "http"
        ({mcp_url}) or "stdio" ({mcp_command}); None: its tools are its own."""
        return self.capabilities.mcp

    def deadline(self, withheld: bool) -> float | None:
        """The agent's deadline for one model answer in a case: short where the case's fault withholds an
        answer and the agent takes its deadline from chaos (a hang then costs seconds, not the phase's
        timeout); else what the target declares (None: it declares none)."""
        if withheld and self.takes_deadline and self.request_deadline is not None:
            return min(self.request_deadline, SHORT_DEADLINE)
        return self.request_deadline

    def outcome_of(self, returncode: int | None) -> str | None:
        for outcome, code in self.exit_codes.items():
            if code == returncode:
                return outcome
        return None

    @property
    def facts(self) -> bool:
        """Its store holds the session contract's facts (``StoreSpec.facts``)."""
        return self.store_spec.facts

    @property
    def tools_in_code(self) -> bool:
        """Its tools, and the effects they perform, are its own code (a framework agent), not declared in
        the target file nor performed by a workspace file: an agent that keeps no contract facts declares
        no contract tools."""
        return not self.facts

    @property
    def default_scenarios(self) -> Path | None:
        """What a sweep of this target runs when given no scenario: the bundled framework worlds for a
        framework agent (None: ``./scenarios``, else the bundled contract scenarios)."""
        return None if self.facts else frameworks_folder()

    @property
    def reference(self) -> str:
        """How ``--target`` names this target from any directory: the name of a bundled target, else the
        spec's absolute path."""
        bundled = targets_folder() / f"{self.name}.toml"
        return (
            self.name
            if bundled.is_file() and bundled.resolve() == self.path.resolve()
            else str(self.path.resolve())
        )


def fill(template: str, values: dict[str, str]) -> str:
    return string.Formatter().vformat(template, (), values)


def _check_template(table: Table, key: str, template: str, allowed: set[str]) -> None:
    try:
        names = {name for _, name, _, _ in string.Formatter().parse(template) if name is not None}
    except ValueError as err:
        table.fail(key, f"bad template {template!r}: {err}")
    unknown = names - allowed
    if unknown:
        table.fail(
            key, f"unknown placeholder {{{sorted(unknown)[0]}}}; allowed here: {', '.join(sorted(allowed))}"
        )


def cwd_problem(cwd: Path, workspace: Path) -> str | None:
    """Why the agent may not run in ``cwd``: it must be the workspace or inside it."""
    resolved, inside = cwd.resolve(), workspace.resolve()
    if resolved != inside and inside not in resolved.parents:
        return f"resolves to {resolved}, outside the sandbox workspace; a target runs only inside it"
    return None


def _fixtures(top: Table, path: Path) -> Path | None:
    """``fixtures = "DIR"``: the target's own fixture corpus, relative to the target file."""
    folder: str | None = top.take("fixtures", str, None)
    if folder is None:
        return None
    if not folder or "\0" in folder:
        top.fail("fixtures", "must name a folder, relative to the target file")
    return (path.parent / folder).resolve()


def load_target(path: Path) -> Target:
    top = Table.top(path)
    mcp = top.choice("mcp", MCP_TRANSPORTS, None)
    # a server's placeholder (its store adapter's) only with a [store] kind on that server
    servers = {store_named(kind).server_placeholder for kind in known() if store_named(kind).server}
    common = set(PLACEHOLDERS) - {"prompt", "session_id", *servers, *MCP_PLACEHOLDER.values()}
    if mcp is not None:
        common.add(MCP_PLACEHOLDER[mcp])
    start = top.strings("start")
    resume = top.strings("resume")
    compact = top.strings("compact", None)
    approve = top.strings("approve", None)
    declared = _store(top)
    if declared is not None and store_named(declared.kind).server is not None:
        common.add(store_named(declared.kind).server_placeholder)
    for key, argv, extra in (
        ("start", start, {"prompt", "session_id"} if declared else {"prompt"}),
        ("resume", resume, {"session_id"}),
        ("compact", compact or ["-"], {"session_id"}),
        ("approve", approve or ["-"], {"session_id"}),
    ):
        if not argv:
            top.fail(key, "must name a program to run")
        for part in argv:
            _check_template(top, key, part, common | extra)
    cwd = top.take("cwd", str, "{workspace}")
    _check_template(top, "cwd", cwd, common)
    sample = Path("/chaos-sandbox/workspace")
    problem = cwd_problem(Path(fill(cwd, dict.fromkeys(common, "x") | {"workspace": str(sample)})), sample)
    if problem:
        top.fail("cwd", f"{cwd!r} {problem}; use {{workspace}} or a folder inside it")
    sessions = top.take("sessions", str, declared.path if declared else MISSING)
    if sessions.startswith("/") or ".." in Path(sessions).parts:
        top.fail("sessions", "must be a glob relative to the workspace, e.g. .tiny-agent/sessions/*.jsonl")
    env = _env(top, common)
    upgrade = _upgrade(top, common | {"session_id"})
    codes_table = top.table("exit", required=True)
    codes = {outcome: codes_table.take(outcome, int) for outcome in OUTCOMES}
    if approve is not None:  # a run that parks for approval exits so, and the approve command goes on
        if declared is None:
            top.fail("approve", "a run approved by a separate command is judged on its [store]: declare one")
        codes["parked"] = codes_table.take("parked", int)
    codes_table.done(GUIDE)
    if len(set(codes.values())) != len(codes):
        codes_table.fail(None, "each outcome needs its own exit status")
    config = top.table("configuration", required=declared is None)
    command = config.strings("command", None)
    derive = config.take("derive", bool, False)
    if (command is None) == (not derive) and declared is None:
        config.fail(
            "command", "give either command = [...] (prints the current configuration) or derive = true"
        )
    for part in command or []:
        _check_template(config, "command", part, common)
    config.done(GUIDE)
    tools = []
    for tool in top.tables("tools"):
        name = tool.take("name", str)
        replay = tool.choice("replay", ("safe", "never"), "never")
        tools.append(ToolDeclaration(name, replay, tool.take("replay_key", str, f"{name}:{replay}")))
        tool.done(GUIDE)
    if derive and not tools:
        top.fail("tools", "a derived configuration needs the target's [[tools]] declarations")
    able = top.table("capabilities")
    abort = able.choice("abort", ("SIGINT", "SIGTERM", "SIGHUP", "none"), "none")
    capabilities = Capabilities(
        abort=None if abort == "none" else abort,
        streaming=able.take("streaming", bool, False),
        compaction=compact is not None,
        mcp=mcp,
    )
    able.done(GUIDE)
    takes_deadline = _takes_deadline(start, resume, compact, env)
    target = Target(
        path=path,
        name=top.take("name", str, path.stem),
        start=start,
        resume=resume,
        cwd=cwd,
        sessions=sessions,
        env=env,
        model=top.take("model", str, "scripted/model"),
        environment_identity=top.take("environment_identity", str, "chaos-sandbox"),
        exit_codes=codes,
        configuration_command=command,
        tools=tools,
        compact=compact,
        approve=approve,
        protocol=top.choice("protocol", PROTOCOL_NAMES, "openai-chat"),
        capabilities=capabilities,
        store_spec=declared or StoreSpec("session-log", sessions, facts=True),
        fixtures=_fixtures(top, path),
        request_deadline=_deadline(top, takes_deadline),
        takes_deadline=takes_deadline,
        warm=top.take("warm", bool, True),
        mcp_trusted=tuple(top.strings("mcp_trusted", [])),
        upgrade=upgrade,
    )
    top.take("description", str, "")
    top.done(GUIDE)
    return target


def _upgrade(top: Table, names: set[str]) -> Upgrade | None:
    """``[upgrade]``: the next version's ``resume`` command and the ``env`` it adds (a run crashed under
    this version is resumed by that one)."""
    if "upgrade" not in top.data:
        return None
    table = top.table("upgrade")
    resume = table.strings("resume")
    if not resume:
        table.fail("resume", "must name a program to run: the next version's resume command")
    for part in resume:
        _check_template(table, "resume", part, names)
    env = _env(table, names - {"session_id"})
    table.done(GUIDE)
    return Upgrade(resume, env)


def _env(table: Table, names: set[str]) -> dict[str, str]:
    """An ``[env]`` table: variables the agent gets, their values templates of ``names``."""
    env_table = table.table("env")
    env = {key: env_table.take(key, str) for key in list(env_table.data)}
    for key, value in env.items():
        if not key or "=" in key or "\0" in key:
            env_table.fail(key, "an environment variable's name cannot be empty or hold '=' or NUL")
        if "\0" in value:
            env_table.fail(key, "an environment value cannot hold a NUL character")
        _check_template(env_table, key, value, names)
    return env


def phase_limit(scenario: Scenario, target: Target) -> float:
    """Seconds a phase of ``scenario`` may take against ``target``: the scenario's, and where its fault
    withholds an answer, long enough for the agent's declared deadline to end the attempt and its retry
    (never a timeout blamed on an agent that waits as long as it says)."""
    withheld = scenario.withholds_answer()
    deadline = target.deadline(withheld)
    if deadline is None or not withheld:
        return scenario.timeout
    return max(scenario.timeout, 2 * deadline + 10)


def _takes_deadline(*templates: list[str] | dict[str, str] | None) -> bool:
    parts = [p for t in templates if t for p in (t.values() if isinstance(t, dict) else t)]
    return any("{request_deadline}" in part for part in parts)


def _deadline(top: Table, passed: bool) -> float | None:
    """``request_deadline``: how long the agent waits for one model answer. Declared, chaos knows what a
    withheld answer costs; passed as ``{request_deadline}`` (``passed``), chaos shortens it where a fault
    withholds one."""
    if "request_deadline" not in top.data:
        if passed:
            top.fail(
                "request_deadline",
                "is missing: the target passes {request_deadline}, so declare the agent's everyday deadline "
                "for one model answer (request_deadline = 60, in seconds)",
            )
        return None
    return top.number("request_deadline", 0, 0, exclusive=True)


def _adapter(table: Table, module: str, near: Path) -> None:
    """Import the module of a store adapter of the user's own (it registers itself), looked for beside the
    target file first."""
    sys.path.insert(0, str(near))
    try:
        importlib.import_module(module)
    except Exception as err:
        table.fail("module", f"{module!r} could not be imported ({type(err).__name__}: {err})")
    finally:
        sys.path.remove(str(near))


def _store(top: Table) -> StoreSpec | None:
    """The ``[store]`` table of a framework agent's target, or None (a session-log agent)."""
    if "store" not in top.data:
        return None
    table = top.table("store")
    module = table.take("module", str, None)
    if module is not None:  # the user's own adapter, beside the target file or importable
        _adapter(table, module, top.file.parent)
    kind = table.take("kind", str)
    if kind not in known():
        table.fail("kind", unknown_kind(kind))
    spec = StoreSpec(
        kind=kind,
        path=table.take("path", str),
        semantics=table.choice("semantics", SEMANTICS, "at-most-once"),
        state=table.take("state", str, None),
        rerun_after_output=table.take("rerun_after_output", bool, False),
    )
    if spec.rerun_after_output and spec.semantics != "at-least-once":
        table.fail(
            "rerun_after_output", 'declares a weaker at-least-once: it needs semantics = "at-least-once"'
        )
    for key, value in (("path", spec.path), ("state", spec.state or "")):
        if value.startswith("/") or ".." in Path(value).parts:
            table.fail(key, "must be a path (or glob) relative to the workspace, e.g. state.db")
    if spec.state is not None and not store_named(spec.kind).reads_state:
        table.fail("state", f"the {spec.kind} store reads no saved run state beside it; leave state out")
    table.done(GUIDE)
    return spec


def _folders(near: Path | None) -> list[Path]:
    folders = [Path.cwd() / "targets", targets_folder()]
    if near is not None:
        folders.insert(0, near.resolve().parent.parent / "targets")
    return folders


def find_target(name: str, near: Path | None = None) -> Path:
    """A target by path, or by name: in ./targets, beside the scenario, or among chaos's bundled targets."""
    candidate = Path(name)
    if candidate.suffix == ".toml":
        if candidate.is_file():
            return candidate
        raise SpecError(f"{name}: no such target spec")
    for folder in _folders(near):
        if (folder / f"{name}.toml").is_file():
            return folder / f"{name}.toml"
    known = sorted({p.stem for f in _folders(near) if f.is_dir() for p in f.glob("*.toml")})
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    hint = f"did you mean {close[0]!r}? " if close else ""
    raise SpecError(f"unknown target {name!r}; {hint}known targets: {', '.join(known) or 'none'}")


def placeholders(target: Target, workspace: Path, **values: str) -> dict[str, Any]:
    return {
        "python": sys.executable,
        "workspace": str(workspace),
        "target_dir": str(target.path.resolve().parent),
        **values,
    }


def unmet(scenario: Scenario, target: Target, tools: Callable[[], list[str]]) -> str | None:
    """Why ``scenario`` as it stands cannot run against ``target`` (a capability it needs and the target
    lacks), or None when it can. ``tools`` gives the target's declared tools, asked only when needed."""
    if target.mcp is not None and importlib.util.find_spec("mcp") is None:
        return (
            f"{scenario.name} needs the MCP SDK for {target.name}'s tools (pip install 'durable-chaos[mcp]')"
        )
    for need in scenario.needs():
        if need.startswith("tool:") and target.tools_in_code and target.mcp is None:
            continue  # a framework agent's tools are its own code (unless they are the world's MCP server's)
        why = target.capabilities.lacks(need, tools() if need.startswith("tool:") else [])
        if why:
            return f"{scenario.name} needs {why}"
    return None


def fault_unavailable(target: Target, fault: Fault) -> str | None:
    """Why ``fault`` can land nowhere on ``target`` (the fault says so itself), or None when it can."""
    if target.facts:
        why = fault.unavailable_on_log()
        return None if why is None else f"{why} (target {target.name} keeps a session log)"
    store = store_named(target.store_spec.kind)
    why = fault.unavailable_on_store(store.commit, store.server)
    if why is None:
        return None
    lands = ", ".join(
        name for name, f in FAULTS.items() if f.unavailable_on_store(store.commit, store.server) is None
    )
    return f"{why} (target {target.name}); the faults that land on a store: {lands}"


def store_mismatch(scenario: Scenario, target: Target, paused: bool = False) -> str | None:
    """Why ``scenario``'s crashes cannot land on ``target``: a store boundary (a commit) needs a target
    with a ``[store]``, and a framework's store has none of a session log's facts (nor a person's pause
    at a boundary, ``paused``, yet)."""
    if paused and not target.facts:
        return f"--pause is not available for a framework's store ({target.name}) yet"
    for crash in (scenario.crash, scenario.then_crash):
        if crash is None:
            continue
        boundary = crash.boundary
        if boundary.in_store and target.facts:
            return (
                f"{boundary} is a commit of a framework's store, and the target {target.name} has no [store] "
                "table; crash a session-log agent at a fact (toolStarted, entry:tool, ...)"
            )
        if not target.facts and not (boundary.in_store or boundary.in_flight):
            return (
                f"{boundary} is a fact of a session log, and the target {target.name} is judged on its "
                f"{target.store_spec.kind} store; crash it at commit, call-durable[tool=NAME], "
                "output-durable[tool=NAME], model-request, effect-running[effect=NAME] or effect-done[effect=NAME]"
            )
        if boundary.what == "write" and store_named(target.store_spec.kind).commit != "wire":
            return (
                f"{boundary} is a statement inside a transaction a database server holds open, and the "
                f"{target.store_spec.kind} store is no store on a server (crash it at commit#n)"
            )
        kinds = sorted({save.kind for save in store_named(target.store_spec.kind).saves})
        if boundary.what == "save" and boundary.where["kind"] not in kinds:
            return (
                f"{boundary}: the {target.store_spec.kind} store names no save of kind {boundary.where['kind']!r} "
                f"(its saves: {', '.join(kinds) or 'none'})"
            )
        unavailable = fault_unavailable(target, crash.fault)
        if unavailable:
            return unavailable
    return None
