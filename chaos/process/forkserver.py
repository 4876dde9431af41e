"""A warm interpreter for a Python target: what it imports is paid once, and every phase is a fork.

chaos runs this file's text as ``PYTHON [OPTIONS] -c SOURCE FD`` with the
target's own interpreter and interpreter options (it uses the standard library
only: that Python need not have chaos installed). ``FD`` is its end of a
socket pair; each message on it carries one more socket, a conversation:

- ``{"op": "import", "modules": [...]}``: import these here, once, and answer
  how many imported and how many threads the interpreter has (a fork is safe
  only with one);
- ``{"op": "run", ...}``: fork a watcher, which forks the target's process and
  answers ``pid N``, then ``exit CODE`` when it is gone. The process makes
  itself what a cold start of the command line would be (its own session, the
  phase's cgroup, stdin from /dev/null, its stdout and stderr files, no other
  descriptor, the working directory, the environment with its time zone, and
  ``/proc/self/environ`` where the kernel lets it be set, default signals), waits
  for ``go`` (chaos's tracer attaches meanwhile), installs the seccomp filter
  it is sent, and runs the module, script or code as ``__main__``. A learning
  run appends to the file it is given each module it imports from outside
  its own code as it is loaded (however it ends: ``os._exit``, a signal), for
  the next ``import`` (it holds no descriptor for it meanwhile). A run given
  ``saves`` wraps the framework's calls that begin a save (``_hold``).

The server stops when chaos's end of the socket pair closes (chaos is gone).
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import gc
import importlib
import io
import json
import os
import runpy
import signal
import socket
import struct
import sys
import sysconfig
import threading
import time
import types
from typing import Any

# The LC_CTYPE this interpreter set itself as it started (PEP 538: the C locale coerced): the server's
# environment is the phase's shaping one, so a cold start of a phase would have set the same.
COERCED = os.environ.get("LC_CTYPE")
LIBRARY = tuple({sysconfig.get_paths()[key] for key in ("stdlib", "platstdlib", "purelib", "platlib")})


def _serve(control: socket.socket) -> tuple[socket.socket, dict[str, Any]]:
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the watchers: the kernel reaps them
    while True:
        try:
            _, fds, _, _ = socket.recv_fds(control, 16, 1)
        except OSError:
            os._exit(0)
        if not fds:
            os._exit(0)  # chaos closed its end: it is gone
        os.set_inheritable(fds[0], False)
        talk = socket.socket(fileno=fds[0])
        request = json.loads(talk.makefile("rb").readline())
        if request["op"] == "import":
            talk.sendall(_preload(request["modules"]))
            talk.close()
            continue
        threads = len(os.listdir("/proc/self/task"))
        if threads > 1:
            talk.sendall(f"refused {threads} threads\n".encode())
            talk.close()
            continue
        sys.stdout.flush()
        sys.stderr.flush()
        gc.freeze()  # the server's objects: never scanned in a fork, so its pages stay shared (its exit is 8x faster)
        if os.fork() == 0:
            control.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            pid = os.fork()
            if pid == 0:
                return talk, request
            talk.sendall(f"pid {pid}\n".encode())
            _, status = os.waitpid(pid, 0)
            talk.sendall(f"exit {os.waitstatus_to_exitcode(status)}\n".encode())
            os._exit(0)
        talk.close()


def _preload(modules: list[str]) -> bytes:
    imported = 0
    for name in modules:
        try:
            importlib.import_module(name)
            imported += 1
        except BaseException:  # a module that will not import here is simply not warm
            continue
    return json.dumps({"imported": imported, "threads": len(os.listdir("/proc/self/task"))}).encode() + b"\n"


def _library(name: str, module: types.ModuleType, own: set[str]) -> bool:
    """A module the server may import ahead: the standard library's or an installed package's, not the
    target's own code (which a cold start would import fresh, with the phase's environment)."""
    if name == "__main__" or name.partition(".")[0] in own:
        return False
    origin = getattr(getattr(module, "__spec__", None), "origin", None) or ""
    return origin in ("built-in", "frozen") or origin.startswith(LIBRARY)


class _Unstarted(Exception):
    """The fork could not make itself the target's process (before any of the target's code ran)."""


def _become(talk: socket.socket, request: dict[str, Any]) -> None:
    """In the fork: be the process a cold start of the command line would make, then run it."""
    try:
        _setup(talk, request)
    except OSError as err:
        raise _Unstarted(err) from None
    _run(request)


def _setup(talk: socket.socket, request: dict[str, Any]) -> None:
    os.setsid()
    if request["cage"]:
        fd = os.open(request["cage"], os.O_WRONLY)
        os.write(fd, b"0")
        os.close(fd)
    null = os.open(os.devnull, os.O_RDONLY)
    out = os.open(request["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    err = os.open(request["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    for fd, std in ((null, 0), (out, 1), (err, 2)):
        os.dup2(fd, std)
    os.closerange(3, talk.fileno())
    os.closerange(talk.fileno() + 1, os.sysconf("SC_OPEN_MAX"))
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    if COERCED and "LC_CTYPE" not in os.environ:  # a cold start in the C locale coerces it too (PEP 538)
        os.environ["LC_CTYPE"] = COERCED
    time.tzset()  # the phase's TZ, not the one the server read as it started
    _environ_block(os.environ)
    for signum in (signal.SIGINT, signal.SIGQUIT, signal.SIGCHLD):
        signal.signal(signum, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # what a Python started afresh installs
    reader = talk.makefile("rb")
    if reader.readline() != b"go\n":
        raise OSError("chaos did not say go")
    reader.close()
    talk.close()
    if request["filter"] is not None and not _filtered(bytes.fromhex(request["filter"])):
        raise OSError("the kernel refused the seccomp filter")
    if request["learn"]:
        _learn(
            request["learn"], {request["what"].partition(".")[0]} if request["kind"] == "module" else set()
        )
    if request.get("saves") and os.environ.get("CHAOS_GATE_DIR"):
        _hold(request["saves"], os.environ["CHAOS_GATE_DIR"])


NESTED = 64  # imports a learning run keeps waiting for at once (one that failed is dropped in time)


def _learn(path: str, own: set[str]) -> None:
    """A learning run: each module it imports from outside its own code is appended to ``path`` as soon
    as it is loaded, not at exit: an agent may import its SDK inside a function, end with ``os._exit``
    or be stopped by a signal, and what it loaded until then is still learned. The file is opened for
    each append and closed again (the process holds no descriptor of chaos's meanwhile)."""
    before = set(sys.modules)
    waiting: list[str] = []
    busy = [False]

    def flush() -> None:
        loaded = [n for n in waiting if n in sys.modules]
        waiting[:] = [n for n in waiting if n not in sys.modules][-NESTED:]
        names = [n for n in loaded if n not in before and _library(n, sys.modules[n], own)]
        before.update(loaded)
        if names:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, (" ".join(names) + " ").encode())
            finally:
                os.close(fd)

    def heard(event: str, args: tuple[Any, ...]) -> None:
        if event != "import" or busy[0]:
            return
        busy[0] = True
        try:
            flush()  # what was being imported before this one is loaded by now (or failed)
            waiting.append(str(args[0]))
        finally:
            busy[0] = False

    sys.addaudithook(heard)
    atexit.register(flush)


KEY = 200  # characters of a save's key kept
FIRST_WAIT = 5.0  # seconds parallel work waits for the one chaos begins first (it may never begin)


class _Saves:
    """The framework's calls that begin a save (a checkpointer's background writes), wrapped where their
    module is loaded: each call is counted by its kind and written to the gate directory's ``saves`` file
    (``KIND N KEY``, the key read from the argument the save names: the record it is about) before it runs,
    and waits at its gate ``save.KIND#N`` while chaos holds it there; a save that begins while one is held
    waits until that one goes on. Parallel work that takes its place as it begins (``passes``) is held
    alone, the rest going on; where the gate directory's ``first`` names one (``KIND KEY``: held when the
    last phase crashed), the others of its kind wait until it has run (or ``FIRST_WAIT``)."""

    def __init__(self, saves: list[dict[str, Any]], gates: str) -> None:
        self.gates, self.lock = gates, threading.Lock()
        self.counts: dict[str, int] = {}
        self.waiting: dict[str, list[dict[str, Any]]] = {}
        for save in saves:
            self.waiting.setdefault(save["call"].partition(":")[0], []).append(save)
        try:
            with open(os.path.join(gates, "first")) as first:
                self.first = first.read().split(" ")
        except OSError:
            self.first = []

    def patch(self, module: types.ModuleType) -> None:
        for save in self.waiting.pop(module.__name__, []):
            owner_name, _, method = save["call"].partition(":")[2].rpartition(".")
            owner: Any = module
            for part in owner_name.split(".") if owner_name else ():
                owner = getattr(owner, part, None)
            original = getattr(owner, method, None)
            if original is not None and not getattr(original, "__chaos_save__", False):
                setattr(owner, method, self._wrap(original, save))

    def _begin(self, save: dict[str, Any], args: tuple[Any, ...]) -> tuple[str, str]:
        key: Any = args[save["arg"]] if len(args) > save["arg"] else None
        try:  # (an attribute of the agent's own may be a property that raises: then no key)
            for step in save["key"]:
                key = key.get(step) if isinstance(key, dict) else getattr(key, step, None)
        except Exception:
            key = None
        key = "".join(key.split())[:KEY] if isinstance(key, str) else ""
        with self.lock:
            n = self.counts[save["kind"]] = self.counts.get(save["kind"], 0) + 1
            try:  # (chaos's bookkeeping never fails the agent's save: unwritten, the save is not seen)
                fd = os.open(os.path.join(self.gates, "saves"), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
                try:
                    os.write(fd, f"{save['kind']} {n} {key}\n".encode())
                finally:
                    os.close(fd)
            except OSError:
                pass
        return f"save.{save['kind']}#{n}", key

    def _held(self, gate: str, marked: list[bool], save: dict[str, Any], key: str, since: float) -> bool:
        """Whether the save at ``gate`` waits: chaos holds it, or it began while a save chaos holds waits
        (every later save waits behind it, so none overtakes it unseen), or it is parallel work begun
        before the one chaos begins first has run."""
        path = os.path.join(self.gates, gate)
        if os.path.exists(path + ".release"):
            return False
        held = [g for g in os.environ.get("CHAOS_GATES", "").split(",") if g.startswith("save.")]
        if gate in held:
            if not marked[0]:
                try:
                    with open(path + ".waiting", "w") as mark:
                        mark.write(repr(time.time()))  # when it began to wait (chaos.ledger.gate)
                except OSError:
                    return False  # (the world is gone: nothing holds it)
                marked[0] = True
            return True
        if save["passes"]:
            return (
                self.first[:1] == [save["kind"]]
                and self.first[1:] != [key]
                and not os.path.exists(os.path.join(self.gates, "first.done"))
                and time.monotonic() < since + FIRST_WAIT
            )
        return any(
            os.path.exists(os.path.join(self.gates, g + ".waiting"))
            and not os.path.exists(os.path.join(self.gates, g + ".release"))
            for g in held
        )

    def _ran(self, save: dict[str, Any], key: str) -> None:
        """The save has run: where it is the one begun first, the others go on."""
        if save["passes"] and self.first == [save["kind"], key]:
            with contextlib.suppress(OSError):
                open(os.path.join(self.gates, "first.done"), "w").close()

    def _wrap(self, original: Any, save: dict[str, Any]) -> Any:
        import functools
        import inspect

        if inspect.iscoroutinefunction(original):

            @functools.wraps(original)
            async def waits(this: Any, *args: Any, **kwargs: Any) -> Any:
                import asyncio

                (gate, key), marked, since = self._begin(save, args), [False], time.monotonic()
                while self._held(gate, marked, save, key, since):
                    await asyncio.sleep(0.005)
                try:
                    return await original(this, *args, **kwargs)
                finally:
                    self._ran(save, key)

            wrapper: Any = waits
        else:

            @functools.wraps(original)
            def blocks(this: Any, *args: Any, **kwargs: Any) -> Any:
                (gate, key), marked, since = self._begin(save, args), [False], time.monotonic()
                while self._held(gate, marked, save, key, since):
                    time.sleep(0.005)
                try:
                    return original(this, *args, **kwargs)
                finally:
                    self._ran(save, key)

            wrapper = blocks
        wrapper.__chaos_save__ = True
        return wrapper


def _hold(saves: list[dict[str, Any]], gates: str) -> None:
    """Wrap the calls ``saves`` names (``module:Class.method``) in their modules, now for a module the
    server imported ahead and as it is loaded for the others."""
    held = _Saves(saves, gates)
    for name in list(held.waiting):
        if name in sys.modules:
            held.patch(sys.modules[name])

    class Finder:
        @staticmethod
        def find_spec(name: str, path: Any, target: Any = None) -> Any:
            if name not in held.waiting:
                return None
            for finder in sys.meta_path:
                find = None if finder is Finder else getattr(finder, "find_spec", None)
                spec = find(name, path, target) if find is not None else None
                if spec is not None and spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    run = spec.loader.exec_module

                    def exec_module(module: types.ModuleType, run: Any = run) -> None:
                        run(module)
                        held.patch(module)

                    spec.loader.exec_module = exec_module
                    return spec
            return None

    sys.meta_path.insert(0, Finder)


def _run(request: dict[str, Any]) -> None:
    if request["unbuffered"]:  # -u: text straight to the descriptors, as a cold start under -u writes
        sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), write_through=True)
        sys.stderr = io.TextIOWrapper(
            io.FileIO(2, "w", closefd=False), write_through=True, errors="backslashreplace"
        )
    main = types.ModuleType("__main__")
    main.__dict__["__builtins__"] = __builtins__
    sys.modules["__main__"] = main
    kind, what, args = request["kind"], request["what"], request["args"]
    if kind == "module":
        sys.path[0] = os.getcwd()
        sys.argv = ["-m", *args]
        runpy._run_module_as_main(what)  # type: ignore[attr-defined] # what python -m runs
    elif kind == "code":
        sys.argv = ["-c", *args]
        exec(compile(what, "<string>", "exec"), main.__dict__)
    else:
        sys.path[0] = os.path.dirname(os.path.realpath(what))
        sys.argv = [what, *args]
        main.__file__ = what
        try:
            with open(what, "rb") as source:
                text = source.read()
        except OSError as err:  # what python says of a script it cannot open, and its status
            sys.stderr.write(f"{sys.executable}: can't open file {os.path.abspath(what)!r}: {err}\n")
            sys.exit(2)
        code = compile(text, what, "exec")
        exec(code, main.__dict__)


_BLOCKS: list[Any] = []  # the environment block /proc/self/environ shows: kept for the process's life


def _environ_block(env: os._Environ[str]) -> None:
    """Point ``/proc/self/environ`` at the phase's environment, as a cold start's shows it (another
    program may read it). The kernel allows it with CAP_SYS_RESOURCE (chaos as root); without, the block
    stays the server's, which holds no case's values (``chaos.process.warm``)."""
    block = b"".join(f"{k}={v}".encode("utf-8", "surrogateescape") + b"\0" for k, v in env.items()) or b"\0"
    buffer = ctypes.create_string_buffer(block, len(block))
    start = ctypes.addressof(buffer)
    libc = ctypes.CDLL(None, use_errno=True)
    # PR_SET_MM (35): ENV_START (10), ENV_END (11); one order or the other keeps start <= end throughout
    for first, second in (((10, start), (11, start + len(block))), ((11, start + len(block)), (10, start))):
        if libc.prctl(35, first[0], first[1], 0, 0) == 0 and libc.prctl(35, second[0], second[1], 0, 0) == 0:
            _BLOCKS.append(buffer)
            return


def _filtered(code: bytes) -> bool:
    """Install the seccomp filter chaos built (``chaos.process.ptrace``): no new privileges, then the
    program; the tracer has attached with ``PTRACE_O_TRACESECCOMP``."""
    libc = ctypes.CDLL(None, use_errno=True)
    program = ctypes.create_string_buffer(code, len(code))
    header = struct.pack("HxxxxxxQ", len(code) // 8, ctypes.addressof(program))
    prog = ctypes.create_string_buffer(header, len(header))
    return bool(libc.prctl(38, 1, 0, 0, 0) == 0 and libc.prctl(22, 2, prog, 0, 0) == 0)


if __name__ == "__main__":
    _talk, _request = _serve(socket.socket(fileno=int(sys.argv[1])))
    del _serve, _preload
    try:
        _become(_talk, _request)
    except _Unstarted as why:  # as a cold start whose exec failed: a status of its own, and why
        os.write(2, f"chaos: a warm start could not become the target's process: {why}\n".encode())
        os._exit(126)
