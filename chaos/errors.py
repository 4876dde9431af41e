"""What can stop chaos short of a verdict, and the exit status each means.

Exit statuses are a contract with CI (like pytest's ``ExitCode``): 0 nothing
found, 1 a finding against the agent, 2 unusable input, 3 chaos itself failed,
130 interrupted. A user's mistake is never a finding: everything here that is
the user's to fix is a ``UsageError`` and says what to change. ``InternalError``
is chaos's own failure (a tracer that broke, the model server, a report it
could not write): exit 3, with its cause, and never blamed on the agent, so a
nightly job tells a regression from a typo from a bug in chaos.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """chaos's exit statuses, a contract with CI."""

    OK = 0  # nothing found
    FINDING = 1  # a finding against the agent
    USAGE = 2  # unusable input: a file, a line, a field, an option; or what chaos cannot see
    INTERNAL = 3  # chaos's own fault
    INTERRUPTED = 130  # interrupted (Ctrl-C, SIGTERM)


class UsageError(Exception):
    """Input chaos cannot use (exit 2): the message names the file, line and field, or the option."""


class SpecError(UsageError):
    """An unusable scenario or target file; the message says where and what is allowed."""


class TargetUnusable(UsageError):
    """The target cannot be driven at all: a missing program, a working directory outside its sandbox,
    a session glob that matches nothing the agent wrote."""


class ConfigurationUnusable(TargetUnusable):
    """The target's configuration command failed or printed what the planner cannot use."""


class Skipped(Exception):
    """A case that needs what the target does not declare (an abort on a signal, compaction, a tool):
    not run, and not a finding; the message says what it needs and what the target declares."""


class InternalError(Exception):
    """chaos itself failed (exit 3): not a finding against the agent; the message gives the cause."""


class Interrupted(Exception):
    """chaos was interrupted (Ctrl-C, SIGTERM, quit at a pause); every agent it started is dead (exit 130)."""
