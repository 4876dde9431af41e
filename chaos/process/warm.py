"""Warm starts: a Python target pays for its imports once, and every phase is a fresh fork.

An agent on a real SDK or framework imports it in every process (the
``anthropic`` SDK takes seconds on a busy machine), and a case starts three
or four of them. Where a target's command line is a Python interpreter
(``PYTHON [OPTIONS] -m MODULE | SCRIPT | -c CODE ...``), a ``WarmStarts`` keeps
one server per interpreter, options and interpreter-shaping environment
(``PYTHON*``, ``LC_*``, ``LANG``): the target's own Python running
``chaos.process.forkserver``. Its first run teaches it what the target imports
from the standard library and installed packages (never the target's own code,
which each phase imports afresh under its own environment); it imports those
once, and each later phase is a fork that makes itself what a cold start would
be: its own pid and session, the phase's cgroup, stdio, no other descriptor,
working directory, environment and default signals, then the tracer attached
(``PTRACE_SEIZE``) and the seccomp filter installed before the target's first
line runs. A real process still takes a real SIGKILL.

What a fork cannot give back is said where warm starts are chosen
(``chaos.sweep.starts``): a cold and a warm run of the same clean case must
agree before a sweep goes warm.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from chaos.errors import InternalError
from chaos.process import forkserver, ptrace

SOURCE = Path(forkserver.__file__).read_text()
INTERPRETER = re.compile(r"(python|pypy)[0-9.]*$")
FLAGS = re.compile(r"-[bBdEIOqsSuv]+$")  # options without an argument a warm start can pass on
SHAPING = re.compile(r"PYTHON|LC_|LANG$|LANGUAGE$")  # read by the interpreter as it starts
LEARNED = 4 * 1024 * 1024  # bytes of a learning run's module names read
ANSWER = 30.0  # seconds the server may take to answer (a fork, an import of what the target imports)


class WarmUnavailable(InternalError):
    """A warm start could not be made (the server refused or died, the tracer could not attach): the
    phase starts cold instead (``chaos.process.tree``)."""


@dataclass(frozen=True)
class Command:
    """A Python command line, as a warm start runs it."""

    python: str  # the interpreter, resolved on the phase's PATH
    options: tuple[str, ...]  # interpreter options before the module, script or code
    kind: str  # module, script or code
    what: str  # the module's name, the script's path or the code
    args: tuple[str, ...]

    @property
    def unbuffered(self) -> bool:
        return any(o.startswith("-") and not o.startswith(("-X", "-W")) and "u" in o for o in self.options)


def command_of(argv: list[str], env: dict[str, str]) -> Command | str:
    """``argv`` as a warm start runs it, or why it cannot be started warm."""
    python = shutil.which(argv[0], path=env.get("PATH")) if argv else None
    if python is None or not INTERPRETER.match(Path(python).name):
        return f"{argv[0] if argv else 'an empty command'} is not a Python interpreter"
    options: list[str] = []
    rest = argv[1:]
    while rest:
        part = rest.pop(0)
        if part in ("-m", "-c") and rest:
            kind = "module" if part == "-m" else "code"
            return Command(python, tuple(options), kind, rest[0], tuple(rest[1:]))
        if part in ("-X", "-W") and rest:
            options += [part, rest.pop(0)]
        elif part.startswith(("-X", "-W")) or FLAGS.match(part):
            options.append(part)
        elif part.startswith("-"):
            return f"the interpreter option {part} (a warm start passes on -X, -W and flags such as -u, -B)"
        else:
            return Command(python, tuple(options), "script", part, tuple(rest))
    return "the command runs no module, script or code"


class _Lines:
    """Lines from a socket, read with a timeout that may be zero (a poll) without losing any."""

    def __init__(self, talk: socket.socket) -> None:
        self.talk, self._buffer, self.ended = talk, b"", False

    def next(self, timeout: float | None) -> str | None:
        """The next line (without its end), "" at the end, None when none came within ``timeout``."""
        while b"\n" not in self._buffer and not self.ended:
            self.talk.settimeout(timeout)
            try:
                data = self.talk.recv(4096)
            except (TimeoutError, BlockingIOError):
                return None
            except OSError:
                data = b""
            self.ended = not data
            self._buffer += data
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line.decode(errors="replace")


class Child:
    """A target process a server forked: what ``subprocess.Popen`` would say of it (its pid, its exit),
    read from the server's watcher; and, from a learning run, what it imported."""

    def __init__(self, lines: _Lines, pid: int, server: Server, learn: Path | None) -> None:
        self.pid: int = pid
        self.returncode: int | None = None
        self._lines, self._server, self._learn = lines, server, learn

    def _read(self, timeout: float | None) -> bool:
        """Read one answer; False when none came within ``timeout``, or the watcher has said all."""
        line = self._lines.next(timeout)
        if line is None:
            return False
        word, _, value = line.partition(" ")
        if word == "exit":
            self.returncode = int(value)
        elif self._lines.ended and self.returncode is None:
            self.returncode = -signal.SIGKILL  # its watcher was killed with it (chaos's own kill of a cage)
        return not self._lines.ended

    def poll(self) -> int | None:
        while self.returncode is None and self._read(0.0):
            pass
        return self.returncode

    def wait(self) -> int:
        while self.returncode is None:
            self._read(None)
        assert self.returncode is not None
        return self.returncode

    def finish(self) -> None:
        """Once the process is gone: read what its watcher still has to say; the modules of a learning run
        that ended by itself (an exit, ``os._exit``, a signal of its own) go to the server, to import
        before its next fork."""
        while self._read(5.0):
            pass
        self._lines.talk.close()
        if self._learn is not None and self._learn.exists():
            with self._learn.open("rb") as learned:  # (the target's process wrote it: read so much only)
                names = learned.read(LEARNED).decode(errors="replace").split()
            self._learn.unlink()
            if self.returncode != -signal.SIGKILL:  # a crash cut it short: the next run teaches it all
                self._server.preload(list(dict.fromkeys(names)))


class Server:
    """One warm interpreter (``chaos.process.forkserver``), started with the target's interpreter and options."""

    def __init__(self, python: str, options: tuple[str, ...], env: dict[str, str]) -> None:
        self._control, theirs = socket.socketpair()
        self._lock = threading.Lock()
        self._errors = tempfile.TemporaryFile()  # noqa: SIM115 (kept open for the server's life)
        self.learned, self.preloaded = False, 0
        self._folder, self._runs = Path(tempfile.mkdtemp(prefix="chaos-warm-")), itertools.count(1)
        argv = [python, *options, "-c", SOURCE, str(theirs.fileno())]
        self.proc = subprocess.Popen(
            argv,
            cwd="/",
            env={**env, "HOME": str(self._folder)},  # its own: no case's sandbox
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self._errors,
            pass_fds=(theirs.fileno(),),
            start_new_session=True,
        )
        theirs.close()

    def _talk(self, request: dict[str, object]) -> socket.socket:
        ours, theirs = socket.socketpair()
        try:
            with self._lock:
                socket.send_fds(self._control, [b"r"], [theirs.fileno()])
            ours.sendall(json.dumps(request).encode() + b"\n")
        except OSError as err:
            ours.close()
            raise WarmUnavailable(f"the warm interpreter is gone: {self._said() or err}") from err
        finally:
            theirs.close()
        ours.settimeout(ANSWER)
        return ours

    def _said(self) -> str:
        self._errors.seek(0)
        return self._errors.read().decode(errors="replace").strip()[-500:]

    def spawn(
        self,
        command: Command,
        cwd: Path,
        env: dict[str, str],
        out: Path,
        err: Path,
        cage: str,
        trace: str,
        saves: tuple[dict[str, object], ...] = (),
    ) -> Child:
        """Fork the target's process: ``trace`` is "syscalls" (the tracer attached and the seccomp filter
        installed), "events" (the tracer only) or "" (neither); ``saves``: the framework's calls that begin
        a save, wrapped in it (``chaos.store.Save``). Called from the thread that traces it."""
        learn = None  # until a run that ended by itself (however: os._exit too) said what it loaded
        if not self.learned:
            learn = self._folder / f"learn-{next(self._runs)}"
        request = {
            "op": "run",
            "kind": command.kind,
            "what": command.what,
            "args": list(command.args),
            "unbuffered": command.unbuffered,
            "cwd": str(cwd.absolute()),
            "env": env,
            "stdout": str(out.absolute()),
            "stderr": str(err.absolute()),
            "cage": cage,
            "filter": ptrace.filter_code().hex() if trace == "syscalls" else None,
            "learn": str(learn) if learn else None,
            "saves": list(saves),
        }
        lines = _Lines(self._talk(request))
        line = (lines.next(ANSWER) or "").split()
        if line[:1] != ["pid"]:
            lines.talk.close()
            why = " ".join(line) or self._said() or "no answer"
            raise WarmUnavailable(f"the warm interpreter could not fork the target: {why}")
        child = Child(lines, int(line[1]), self, learn)
        if trace:
            try:
                ptrace.seize(child.pid)
            except OSError as error:
                os.kill(child.pid, signal.SIGKILL)
                child.finish()
                raise WarmUnavailable(f"the tracer could not attach to a warm start: {error}") from error
        lines.talk.sendall(b"go\n")
        return child

    def preload(self, modules: list[str]) -> None:
        """Import what a learning run imported, once, before the next fork."""
        with self._lock:
            if self.learned:
                return
            self.learned = True
        with self._talk({"op": "import", "modules": modules}) as talk:
            try:
                answer = json.loads(_Lines(talk).next(ANSWER * 4) or "{}")
            except ValueError:
                answer = {}
        self.preloaded = answer.get("imported", 0)

    def close(self) -> None:
        self._control.close()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._errors.close()
        shutil.rmtree(self._folder, ignore_errors=True)


@dataclass(frozen=True)
class Launch:
    """One phase's process, to be started warm: its server and its command line."""

    server: Server
    command: Command
    # the framework's calls that begin a save (``chaos.store.Save``)
    saves: tuple[dict[str, object], ...] = ()

    def spawn(self, cwd: Path, env: dict[str, str], out: Path, err: Path, cage: str, trace: str) -> Child:
        return self.server.spawn(self.command, cwd, env, out, err, cage, trace, self.saves)


# What a process can see of the environment it was started in: its time zone, HOME, working directory,
# variables (a warm fork must show the phase's, never the server's or another case's)
PROBE = (
    "import json, os, time; t = time.localtime(0); "
    "print(json.dumps([t.tm_gmtoff, time.strftime('%Z', t), os.path.expanduser('~'), os.getcwd(), "
    "sorted(os.environ.items())]))"
)


def fork_difference(starts: WarmStarts, python: str, options: tuple[str, ...], folder: Path) -> str | None:
    """How a fork of a warm interpreter started for one case differs from a cold start for another, as a
    process sees its environment (``PROBE``), or None. The two cases' time zones and homes differ, so a
    fork that kept the server's (or an earlier case's) shows it."""
    from chaos.world.contain import start_alone

    folder.mkdir(parents=True, exist_ok=True)
    path = os.environ.get("PATH", "")
    first = {"PATH": path, "HOME": str(folder / "first"), "TZ": "UTC", "CHAOS_PROBE": "first"}
    phase = {"PATH": path, "HOME": str(folder / "phase"), "TZ": "Asia/Tokyo", "CHAOS_PROBE": "phase"}
    argv = [python, *options, "-c", PROBE]
    starts.launch(argv, first)  # the server starts for the first case
    seen = []
    for how in ("cold", "warm"):
        out, err = folder / f"{how}.out", folder / f"{how}.err"
        with out.open("wb") as stdout, err.open("wb") as stderr:
            if how == "cold":
                start_alone(argv, folder, phase, stdout, stderr, lambda: None).wait()
            else:
                launch = starts.launch(argv, phase)
                assert launch is not None
                child = launch.spawn(folder, phase, out, err, "", "")
                child.wait()
                child.finish()
        seen.append(out.read_text().strip())
    cold, warm = seen
    return None if cold == warm else f"a cold start sees {cold[:300]!r}, a warm fork {warm[:300]!r}"


class WarmStarts:
    """The warm interpreters of one sweep: one per interpreter, options and shaping environment. Closing
    it stops them all."""

    def __init__(self) -> None:
        self._servers: dict[tuple[str, tuple[str, ...], tuple[tuple[str, str], ...]], Server] = {}
        self._lock = threading.Lock()

    def launch(
        self, argv: list[str], env: dict[str, str], saves: tuple[dict[str, object], ...] = ()
    ) -> Launch | None:
        """How to start ``argv`` warm (None: it is no Python command line a fork can run), with the saves
        its interpreter wraps."""
        command = command_of(argv, env)
        if isinstance(command, str):
            return None
        shaping = tuple(sorted((k, v) for k, v in env.items() if SHAPING.match(k)))
        key = (command.python, command.options, shaping)
        with self._lock:
            if key not in self._servers:  # (no case's HOME or TZ: what it imports ahead sees none of them)
                server_env = dict(shaping) | {k: env[k] for k in ("PATH",) if k in env}
                self._servers[key] = Server(command.python, command.options, server_env)
            return Launch(self._servers[key], command, saves)

    @property
    def preloaded(self) -> int:
        return sum(server.preloaded for server in self._servers.values())

    def close(self) -> None:
        with self._lock:
            servers, self._servers = list(self._servers.values()), {}
        for server in servers:
            with contextlib.suppress(OSError):
                server.close()
