"""What can stop chaos short of a verdict, and the exit status each means.

Exit statuses are a contract with CI: 0 nothing found, 1 a finding against the
agent, 2 unusable input, 130 interrupted. A user's mistake is never a finding:
everything here that is the user's to fix is a ``UsageError`` and says what
to change. ``ChaosFault`` is chaos's own failure (a tracer that broke, say):
also exit 2, with its cause, and never blamed on the agent.
"""

from __future__ import annotations

EXIT_OK, EXIT_FINDING, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


class UsageError(Exception):
    """Input chaos cannot use (exit 2): the message names the file, line and field, or the option."""


class SpecError(UsageError):
    """An unusable scenario or target file; the message says where and what is allowed."""


class TargetUnusable(UsageError):
    """The target cannot be driven at all: a missing program, a working directory outside its sandbox,
    a session glob that matches nothing the agent wrote."""


class ConfigurationUnusable(TargetUnusable):
    """The target's configuration command failed or printed what the planner cannot use."""


class ChaosFault(Exception):
    """chaos itself failed (exit 2): not a finding against the agent; the message gives the cause."""


class Interrupted(Exception):
    """chaos was interrupted (Ctrl-C, SIGTERM, quit at a pause); every agent it started is dead (exit 130)."""
