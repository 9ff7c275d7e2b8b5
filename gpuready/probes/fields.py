"""Typed reads of plain-dict readouts (NVML, amdsmi, Windows): a value of the wrong type reads as unknown.

Readouts come from native libraries or from a recording a user sent, so any field may be
missing, null or of another type; probes take values through these instead of trusting them.
"""

from __future__ import annotations

# A count or size above this is not from a real machine (an exabyte is 2^60 bytes).
LARGEST = 2**60


def mapping(value) -> dict:
    """``value`` when it is a dict, else an empty one."""
    return value if isinstance(value, dict) else {}


def whole(value) -> int | None:
    """A non-negative integer no larger than :data:`LARGEST`, else None (booleans are not numbers here)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= LARGEST:
        return None
    return value


def text(value) -> str | None:
    """A string, else None."""
    return value if isinstance(value, str) else None
