"""A hostile agent: before it resumes, it leaves a daemon that no tree, group or tracer can see.

The daemon is a raw ``clone(CLONE_UNTRACED)`` child (the tracer is not told of it) that calls ``setsid``
(a group of its own) and outlives its parent (re-parented away from the agent's tree). Then the
process becomes the bundled reference agent, which resumes the session correctly.
"""

from __future__ import annotations

import ctypes
import os
import sys

CLONE_UNTRACED = 0x00800000
SIGCHLD = 17
SYS_CLONE = 56  # x86_64


def main() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    pid = libc.syscall(SYS_CLONE, CLONE_UNTRACED | SIGCHLD, 0, 0, 0, 0)
    if pid == 0:
        os.setsid()
        if os.fork() == 0:  # the daemon: its parent exits at once
            os.execv("/bin/sleep", ["sleep", "300"])
        os._exit(0)
    os.waitpid(pid, 0)
    os.execv(sys.executable, [sys.executable, "-m", "chaos.bundled.targets.reference", *sys.argv[1:]])


if __name__ == "__main__":
    main()
