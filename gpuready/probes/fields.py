"""Typed reads of plain-dict readouts (NVML, amdsmi, Windows): a value of the wrong type reads as unknown.

Readouts come from native libraries or from a recording a user sent, so any field may be
missing, null or of another type; probes take values through these instead of trusting them.
"""

from __future__ import annotations

import re

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


def label(value: str | None, limit: int = 120) -> str | None:
    """A name read from a file or a tool, fit to show: its first line, printable characters only, at most ``limit`` long.

    A device-tree model or a cpuinfo line that reads 10 MB of junk must not become a 10 MB CPU name.
    """
    if not isinstance(value, str):
        return None
    line = value.strip("\x00 \t\r\n").split("\n", 1)[0]
    cleaned = "".join(c for c in line[: limit * 4] if c.isprintable()).strip()
    if len(cleaned) > limit:
        cleaned = cleaned[: limit - 1].rstrip() + "…"
    return cleaned or None


# A device UUID in a *_VISIBLE_DEVICES list: NVIDIA's GPU-/MIG- (a whole UUID, CUDA's unique
# prefix of one, or the legacy MIG-GPU-<uuid>/<gi>/<ci> form) or a bare UUID / AMD's 16-hex id.
_PREFIXED_ID = re.compile(r"(?i)\b(MIG-GPU-|GPU-|MIG-)[0-9a-f][0-9a-f-]*")
_BARE_ID = re.compile(r"(?i)(?<![0-9a-z-])[0-9a-f]{8}(?:-?[0-9a-f]{4}){3}-?[0-9a-f]{12}(?![0-9a-z-])|(?<![0-9a-z-])(?=[0-9a-f]*[a-f])[0-9a-f]{16}(?![0-9a-z-])")


def without_device_ids(value: str | None) -> str | None:
    """A device-selection variable's value fit to quote in a report: UUIDs become ``GPU-<uuid>``
    / ``MIG-<uuid>`` / ``<uuid>``; indices and MIG instance numbers are kept (reports carry no UUIDs)."""
    if value is None:
        return None
    value = _PREFIXED_ID.sub(lambda m: m.group(1).upper() + "<uuid>", value)
    return _BARE_ID.sub("<uuid>", value)


def without_path_ids(path: str) -> str:
    """A cgroup path fit to quote in a report: pod UIDs (pod<uuid>/, or systemd's pod<uuid with underscores>.slice)
    become ``<uuid>``, container ids (docker/containerd: 64 hex digits; others 32) ``<id>``: the ids a recording
    scrubs, found by the recording's own patterns."""
    from gpuready.recording import CONTAINER_ID, UUID  # here, not at import: only a container's cgroup limit needs it

    return CONTAINER_ID.sub("<id>", UUID.sub("<uuid>", path))
