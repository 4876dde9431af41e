"""Stopping a target exactly between two durable writes, whatever language it is written in.

Watching the log and then sending SIGKILL lands late: by the time the poll sees
transaction *k*, the agent may have written *k+1* and started a tool. Instead
the target runs under ``ptrace`` with a seccomp filter that traps only the
system calls that can make or follow a durable write (``write`` family at
entry, ``fsync``/``fdatasync`` at exit, ``unlink`` and ``ftruncate``, with which
a SQLite rollback journal commits, process creation and ``exit_group``).
At each trap the trapping process is stopped, the log is judged, and the
kill (or a pause) happens before the next byte is written. The target needs no
cooperation: a Go or Node agent is stopped the same way.

ptrace requests must come from the thread that started the tracee, so each
traced process owns a thread that spawns it and runs the wait loop. Where
ptrace or seccomp is unavailable (a container, Yama ``ptrace_scope`` 3,
``CHAOS_NO_PTRACE=1``), the run falls back to polling the log and says so:
kills are then reported as possibly late. Nothing is assumed: ``probe``
traces a tiny child through one trapped write, once per chaos process.
"""

from __future__ import annotations

import ctypes
import os
import platform
import signal
import struct
import subprocess
import sys
import time
from collections.abc import Callable
from functools import cache
from typing import Protocol

PTRACE_TRACEME, PTRACE_CONT, PTRACE_SYSCALL = 0, 7, 24
PTRACE_SETOPTIONS, PTRACE_GETEVENTMSG, PTRACE_SEIZE, PTRACE_LISTEN = 0x4200, 0x4201, 0x4206, 0x4208
OPTIONS = 0x1 | 0x2 | 0x4 | 0x8 | 0x10 | 0x80 | 0x100000  # SYSGOOD FORK VFORK CLONE EXEC SECCOMP EXITKILL
EVENT_FORK, EVENT_VFORK, EVENT_CLONE, EVENT_SECCOMP, EVENT_STOP = 1, 2, 3, 7, 128
STOPS = (signal.SIGSTOP, signal.SIGTSTP, signal.SIGTTIN, signal.SIGTTOU)
WALL, WNOTHREAD = 0x40000000, 0x20000000
# Seccomp return data, telling which kind of call trapped; AFTER marks a syscall-exit stop we asked for.
# SYNC: fsync/fdatasync of one file; RANGE: sync_file_range; ALL: sync/syncfs. Each is judged when it
# returns (SYNC_ENTRY is its entry, where its arguments can still be read on every architecture).
# UNLINK and TRUNCATE: a file removed or cut (unlink/unlinkat, ftruncate): SQLite's rollback journal commits so.
# RENAME: a file renamed over another (rename/renameat/renameat2): a store of files written whole commits so.
WRITE, SYNC, EXIT, WRITEV, AFTER, RANGE, ALL, SYNC_ENTRY, UNLINK, TRUNCATE, RENAME = range(1, 12)
SYNCS = (SYNC, RANGE, ALL)
PTRACE_GETREGSET, PTRACE_SETREGSET, NT_PRSTATUS = 0x4204, 0x4205, 1

# (audit arch, {syscall number: tag}) for the architectures chaos knows
SYSCALLS = {
    "x86_64": (
        0xC000003E,
        {1: WRITE, 18: WRITE, 20: WRITEV, 296: WRITEV, 328: WRITEV, 74: SYNC, 75: SYNC, 277: RANGE}
        | {162: ALL, 306: ALL, 231: EXIT, 87: UNLINK, 263: UNLINK, 77: TRUNCATE}
        | {82: RENAME, 264: RENAME, 316: RENAME},
    ),
    "aarch64": (
        0xC00000B7,
        {64: WRITE, 66: WRITEV, 68: WRITE, 70: WRITEV, 287: WRITEV, 82: SYNC, 83: SYNC, 84: RANGE}
        | {81: ALL, 267: ALL, 94: EXIT, 35: UNLINK, 46: TRUNCATE, 38: RENAME, 276: RENAME},
    ),
}
UNLINKAT = {"x86_64": 263, "aarch64": 35}  # unlinkat(dirfd, path, flags); x86_64's unlink(path) has no dirfd
RENAME_PLAIN = {"x86_64": 82}  # rename(old, new); renameat and renameat2 are (olddirfd, old, newdirfd, new)
NUMBER = {"x86_64": 15, "aarch64": 8}  # the register slot of the call's number at its entry (orig_rax; x8)
AT_FDCWD = -100
PATH_MAX = 4096  # Linux's: the longest path a call names, its terminating NUL included

# The register slots of the first four arguments of a call (rdi rsi rdx r10; x0..x3) in NT_PRSTATUS
ARG_SLOTS = {"x86_64": (14, 13, 12, 7), "aarch64": (0, 1, 2, 3)}
ARGS = {machine: (slots[0], slots[2]) for machine, slots in ARG_SLOTS.items()}  # a call's fd and count
BUFFER = {machine: slots[1] for machine, slots in ARG_SLOTS.items()}  # the second (a write's buffer)
RESULT = {"x86_64": 10, "aarch64": 0}  # the register slot of a system call's return value, at its exit


def _filter_program(arch: int, calls: dict[int, int]) -> bytes:
    """A classic-BPF seccomp program: trace the listed calls (tagged), allow everything else."""
    ld, jeq, ret = 0x20, 0x15, 0x06
    allow, trace = 0x7FFF0000, 0x7FF00000
    program = [(ld, 0, 0, 4), (jeq, 0, len(calls) * 2 + 1, arch), (ld, 0, 0, 0)]
    for number, tag in calls.items():
        program += [(jeq, 0, 1, number), (ret, 0, 0, trace | tag)]
    program.append((ret, 0, 0, allow))
    return b"".join(struct.pack("HBBI", *insn) for insn in program)


class _Seccomp:
    """Everything the forked child needs, built before the fork so the child only makes three calls."""

    def __init__(self) -> None:
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
        self.libc.ptrace.restype = ctypes.c_long
        arch, calls = SYSCALLS[platform.machine()]
        code = _filter_program(arch, calls)
        self.code = ctypes.create_string_buffer(code, len(code))
        self.prog = struct.pack("HxxxxxxQ", len(code) // 8, ctypes.addressof(self.code))
        self.prog_buf = ctypes.create_string_buffer(self.prog, len(self.prog))

    def child(self) -> None:
        self.traced_child()
        if self.libc.prctl(38, 1, 0, 0, 0) != 0 or self.libc.prctl(22, 2, self.prog_buf, 0, 0) != 0:
            os._exit(126)

    def traced_child(self) -> None:
        """Traced for process events only (fork, clone, exec, exit): no system call traps."""
        if self.libc.ptrace(PTRACE_TRACEME, 0, None, None) != 0:
            os._exit(126)

    def request(self, op: int, pid: int, data: int = 0) -> int:
        return int(self.libc.ptrace(op, pid, None, ctypes.c_void_p(data)))

    def registers(self, pid: int) -> ctypes.Array[ctypes.c_ulong]:
        regs = (ctypes.c_ulong * 34)()
        iov = (ctypes.c_void_p * 2)(ctypes.addressof(regs), ctypes.sizeof(regs))
        self.libc.ptrace(PTRACE_GETREGSET, pid, ctypes.c_void_p(NT_PRSTATUS), iov)
        return regs

    def set_registers(self, pid: int, regs: ctypes.Array[ctypes.c_ulong]) -> None:
        iov = (ctypes.c_void_p * 2)(ctypes.addressof(regs), ctypes.sizeof(regs))
        self.libc.ptrace(PTRACE_SETREGSET, pid, ctypes.c_void_p(NT_PRSTATUS), iov)

    def event_message(self, pid: int) -> int:
        value = ctypes.c_ulong()
        self.libc.ptrace(PTRACE_GETEVENTMSG, pid, None, ctypes.byref(value))
        return value.value


_SECCOMP: _Seccomp | None = None


@cache
def _probe() -> str | None:
    global _SECCOMP
    if platform.system() != "Linux" or platform.machine() not in SYSCALLS:
        return f"ptrace and seccomp are not supported on {platform.system()} {platform.machine()}"
    try:
        _SECCOMP = _Seccomp()
    except (OSError, AttributeError) as err:
        return f"cannot load the C library's ptrace: {err}"
    writes: list[int] = []

    def trapped(pid: int, tag: int) -> bool:
        writes.append(tag)
        return False

    argv = [sys.executable, "-S", "-c", "import os; os.write(1, b'.')"]
    try:
        proc = subprocess.Popen(
            argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=_SECCOMP.child
        )
        trace(proc, trapped, lambda pid: None, lambda code, alone: None)
    except OSError as err:
        return f"a traced child could not start: {err}"
    if proc.returncode == 126:
        return "the kernel refused PTRACE_TRACEME or the seccomp filter (a container, or Yama ptrace_scope 3)"
    if WRITE not in writes or proc.returncode != 0:
        return f"a traced child trapped no write (exit {proc.returncode})"
    return None


def unavailable() -> str | None:
    """Why exact kills are unavailable here, or None when a traced child really trapped a write."""
    if os.environ.get("CHAOS_NO_PTRACE") == "1":
        return "CHAOS_NO_PTRACE=1"
    return _probe()


def exact_kills_available() -> bool:
    return unavailable() is None


def seize(pid: int) -> None:
    """Attach to a process that is not a child (a warm start, ``chaos.process.warm``), with the options a
    cold start's tracer sets; it goes on running. From the thread that will run ``trace``."""
    assert _SECCOMP is not None
    if _SECCOMP.request(PTRACE_SEIZE, pid, OPTIONS) != 0:
        raise OSError(ctypes.get_errno(), f"PTRACE_SEIZE of {pid}: {os.strerror(ctypes.get_errno())}")


def filter_code() -> bytes:
    """The seccomp program a traced target runs under (a warm start installs it itself)."""
    assert _SECCOMP is not None
    return _SECCOMP.code.raw


class Tracee(Protocol):
    pid: int
    returncode: int | None


def trace(
    proc: Tracee,
    on_trap: Callable[[int, int], bool],
    on_new: Callable[[int], None],
    on_exit: Callable[[int, bool], None],
    hold: Callable[[int], float] | None = None,
    seized: bool = False,
) -> None:
    """Run the wait loop of a tracee started with ``SECCOMP.child`` (or ``seized``: attached with ``seize``,
    already running), until every traced process is gone.

    ``on_trap(pid, tag)`` runs with the trapping process stopped before it can
    write another byte; returning True asks for one more stop (tag AFTER) when
    the trapped call returns. ``on_new`` is told of every process the target
    creates, ``on_exit`` of the root's exit status and whether it was the last
    of the tree alive. ``hold(pid)``, asked after each trap, may keep the trapped
    thread stopped that many seconds more while the others run (a slow disk's
    write, ``chaos.process.commits``).
    """
    assert _SECCOMP is not None
    tracer = _SECCOMP
    root = proc.pid
    if not seized:
        _, status = os.waitpid(root, WALL)
        if not os.WIFSTOPPED(status):
            proc.returncode = os.waitstatus_to_exitcode(status)
            on_exit(proc.returncode, True)
            return
        tracer.request(PTRACE_SETOPTIONS, root, OPTIONS)
        tracer.request(PTRACE_CONT, root)
    live = {root}
    fresh: set[int] = set()  # announced by a fork event, initial SIGSTOP not yet seen
    exits: dict[int, int] = {}  # pid -> tag of the trapped call whose return we wait for
    held: list[tuple[float, int, int]] = []  # (when, pid, how to resume it): threads kept stopped a while
    while live:
        if held:
            now = time.monotonic()
            for item in [h for h in held if h[0] <= now]:
                held.remove(item)
                tracer.request(item[2], item[1])
        try:
            pid, status = os.waitpid(-1, WALL | WNOTHREAD | (os.WNOHANG if held else 0))
        except ChildProcessError:
            break
        if pid == 0:  # nothing to report while a thread is held: look again shortly
            time.sleep(0.0005)
            continue
        if os.WIFEXITED(status) or os.WIFSIGNALED(status):
            live.discard(pid)
            if pid == root:
                proc.returncode = os.waitstatus_to_exitcode(status)
                on_exit(proc.returncode, not live)
            continue
        if not os.WIFSTOPPED(status):
            continue
        sig, event = os.WSTOPSIG(status), status >> 16
        resume, deliver = PTRACE_CONT, 0
        if pid not in live:
            live.add(pid)
            on_new(pid)
            if sig == signal.SIGSTOP:
                sig = 0
        if sig == signal.SIGTRAP and event in (EVENT_FORK, EVENT_VFORK, EVENT_CLONE):
            child = tracer.event_message(pid)
            if child not in live:
                live.add(child)
                fresh.add(child)
                on_new(child)
            on_trap(pid, 0)
        elif sig == signal.SIGTRAP and event == EVENT_SECCOMP:
            tag = tracer.event_message(pid)
            if tag in SYNCS:
                on_trap(pid, SYNC_ENTRY)
                exits[pid] = tag  # a sync is judged when it returns: the write is then durable
                resume = PTRACE_SYSCALL
            elif on_trap(pid, tag):
                exits[pid] = AFTER
                resume = PTRACE_SYSCALL
        elif sig == signal.SIGTRAP | 0x80:
            on_trap(pid, exits.pop(pid, AFTER))
        elif sig == signal.SIGSTOP and pid in fresh:
            fresh.discard(pid)
        elif event == EVENT_STOP:  # a seized tree's new process, or a group-stop (it stays stopped)
            resume = PTRACE_LISTEN if sig in STOPS and pid not in fresh else PTRACE_CONT
            fresh.discard(pid)
        elif not (sig == signal.SIGTRAP and event):  # exec and other events carry no signal
            deliver = sig
        delay = hold(pid) if hold is not None and not deliver else 0.0
        if delay > 0:
            held.append((time.monotonic() + delay, pid, resume))
            continue
        tracer.request(resume, pid, deliver)


def written_file(pid: int) -> tuple[str, int]:
    """At a WRITE trap: the path of the file being written and the byte count asked for."""
    _, path, count = call_file(pid)
    return path, count


def call_file(pid: int) -> tuple[int, str, int]:
    """At the entry of a call on a file descriptor: the descriptor, its file's path and the third
    argument (a write's byte count)."""
    assert _SECCOMP is not None
    fd_slot, count_slot = ARGS[platform.machine()]
    regs = _SECCOMP.registers(pid)
    try:
        path = os.readlink(f"/proc/{pid}/fd/{regs[fd_slot]}")
    except OSError:
        path = ""
    return regs[fd_slot], path, regs[count_slot]


def written_bytes(pid: int, count: int) -> bytes:
    """At a WRITE trap: the first ``count`` bytes the call is about to write (read from the tracee's
    memory, which the tracer may read while the tracee is stopped)."""
    assert _SECCOMP is not None
    return _memory(pid, _SECCOMP.registers(pid)[BUFFER[platform.machine()]], count)


def _memory(pid: int, address: int, count: int) -> bytes:
    """``count`` bytes of the stopped tracee's memory at ``address`` (as many as are readable)."""
    try:
        with open(f"/proc/{pid}/mem", "rb", buffering=0) as memory:
            memory.seek(address)
            return memory.read(count)
    except (OSError, OverflowError, ValueError):
        return b""


def _path_at(pid: int, regs: ctypes.Array[ctypes.c_ulong], dirfd: int | None, name_slot: int) -> str:
    """The absolute path a call names by the string in ``name_slot``, relative to the descriptor in the
    slot ``dirfd`` (None: the working directory); "" where it cannot be read."""
    name = _memory(pid, regs[name_slot], PATH_MAX).split(b"\0", 1)[0]
    if not name:
        return ""
    path = os.fsdecode(name)
    if os.path.isabs(path):
        return path
    at = AT_FDCWD if dirfd is None else ctypes.c_int(regs[dirfd] & 0xFFFFFFFF).value
    try:
        base = os.readlink(f"/proc/{pid}/cwd" if at == AT_FDCWD else f"/proc/{pid}/fd/{at}")
    except OSError:
        return ""
    return os.path.join(base, path)


def unlinked_path(pid: int) -> str:
    """At an UNLINK trap: the absolute path of the file being removed ("" where it cannot be read)."""
    assert _SECCOMP is not None
    machine = platform.machine()
    regs = _SECCOMP.registers(pid)
    first, second, _, _ = ARG_SLOTS[machine]
    if regs[NUMBER[machine]] == UNLINKAT[machine]:
        return _path_at(pid, regs, first, second)
    return _path_at(pid, regs, None, first)


def renamed_paths(pid: int) -> tuple[str, str]:
    """At a RENAME trap: the absolute paths of the file renamed and of its new name."""
    assert _SECCOMP is not None
    machine = platform.machine()
    regs = _SECCOMP.registers(pid)
    first, second, third, fourth = ARG_SLOTS[machine]
    if regs[NUMBER[machine]] == RENAME_PLAIN.get(machine):
        return _path_at(pid, regs, None, first), _path_at(pid, regs, None, second)
    return _path_at(pid, regs, first, second), _path_at(pid, regs, third, fourth)


def truncated_file(pid: int) -> tuple[str, int]:
    """At a TRUNCATE trap: the path of the file being cut and the length it is cut to."""
    assert _SECCOMP is not None
    _, path, _ = call_file(pid)
    return path, ctypes.c_long(_SECCOMP.registers(pid)[BUFFER[platform.machine()]]).value


def call_result(pid: int) -> int:
    """At a call's exit: its return value (negative: an error)."""
    assert _SECCOMP is not None
    return ctypes.c_long(_SECCOMP.registers(pid)[RESULT[platform.machine()]]).value


NT_ARM_SYSTEM_CALL = 0x404  # how aarch64 sets a call's number (x86_64: orig_rax in NT_PRSTATUS)


def fail_call(pid: int, errno: int) -> None:
    """At a seccomp stop (the call's entry): skip the call and make it return ``-errno`` (seccomp(2): a
    tracer that sets the call number to -1 skips it, and the call returns what the return register
    holds). The agent sees the error; nothing is written or synced."""
    assert _SECCOMP is not None
    machine = platform.machine()
    regs = _SECCOMP.registers(pid)
    if machine == "x86_64":
        regs[NUMBER[machine]] = ctypes.c_ulong(-1).value
    else:
        number = ctypes.c_int(-1)
        iov = (ctypes.c_void_p * 2)(ctypes.addressof(number), ctypes.sizeof(number))
        _SECCOMP.libc.ptrace(PTRACE_SETREGSET, pid, ctypes.c_void_p(NT_ARM_SYSTEM_CALL), iov)
    regs[RESULT[machine]] = ctypes.c_ulong(-errno).value
    _SECCOMP.set_registers(pid, regs)


def shorten_write(pid: int, count: int) -> None:
    """At a WRITE trap: make the call write only ``count`` bytes (a real torn write by the target)."""
    assert _SECCOMP is not None
    _, count_slot = ARGS[platform.machine()]
    regs = _SECCOMP.registers(pid)
    regs[count_slot] = count
    _SECCOMP.set_registers(pid, regs)


def default_signals() -> None:
    """In a target's child, before exec: SIGINT and SIGQUIT to their default actions. A chaos started
    from a process that ignores them (a shell's background job, a CI runner) would pass that on, and
    an agent that ignores SIGINT can never be asked to abort; SIGPIPE and SIGXFSZ subprocess restores."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)


def child_setup(exact: bool, filtered: bool = True) -> Callable[[], None]:
    """The target's setup in its child: default signals and, where exact kills are available, traced
    and (``filtered``) with the seccomp filter that traps the calls a durable boundary is judged at. A
    phase with no boundary to catch needs only the process events, and each trap costs a round trip
    through the tracer."""
    if not exact:
        return default_signals
    assert _SECCOMP is not None
    traced = _SECCOMP.child if filtered else _SECCOMP.traced_child

    def setup() -> None:
        default_signals()
        traced()

    return setup
