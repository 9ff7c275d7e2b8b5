"""Exit codes and the error every front end turns into exit code 2.

0 ready (every requirement met), 1 not ready (one is not met), 2 usage or bad input,
3 could not tell (a probe a requirement depends on failed, and nothing else failed).
"""

from __future__ import annotations

import enum


class ExitCode(enum.IntEnum):
    READY = 0
    NOT_READY = 1
    USAGE = 2
    UNKNOWN = 3


class UsageError(ValueError):
    """Bad input from the user: exit code 2."""
