"""System memory probe: total, available, and any container limit.

Sources:
* Linux: ``/proc/meminfo`` (MemTotal, MemAvailable, SwapTotal); ``/proc/self/cgroup`` then,
  for cgroup v2, ``memory.max`` / ``memory.current`` / ``memory.stat`` of the process's cgroup
  and every ancestor under ``/sys/fs/cgroup`` (nested limits: the smallest wins); for
  cgroup v1, ``memory.limit_in_bytes`` / ``memory.usage_in_bytes`` / ``memory.stat`` under
  ``/sys/fs/cgroup/memory``.
* macOS: ``sysctl hw.memsize`` and ``vm_stat``.
* Windows: the ``windows`` readout (GlobalMemoryStatusEx).
"""

from __future__ import annotations

import posixpath

from gpuready.hardware import Memory, Problem
from gpuready.host import Host
from gpuready.probes import fields, macos
from gpuready.probes.failure import ProbeFailure

# cgroup v1 reports "no limit" as a huge page-aligned number (PAGE_COUNTER_MAX * page size).
_UNLIMITED = 1 << 60


def parse_meminfo(text: str) -> dict[str, int]:
    """/proc/meminfo as bytes by key (values are in kB)."""
    values = {}
    for line in text.splitlines():
        key, sep, rest = line.partition(":")
        fields = rest.split()
        if not sep or not fields:
            continue
        try:
            number = int(fields[0])
        except ValueError:
            continue
        number = number * 1024 if len(fields) > 1 and fields[1] == "kB" else number
        if 0 <= number <= _UNLIMITED:  # a garbled line's 400-digit number is not a size
            values[key.strip()] = number
    return values


def _read_int(host: Host, path: str) -> int | None:
    text = host.read_text(path)
    if text is None:
        return None
    text = text.strip()
    if text == "max":
        return None
    try:
        value = int(text)
    except ValueError:
        return None
    return value if value < _UNLIMITED else None


def _stat_value(host: Host, path: str, key: str) -> int:
    text = host.read_text(path) or ""
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name == key:
            try:
                return int(value)
            except ValueError:
                return 0
    return 0


def cgroup_limit(host: Host) -> tuple[int | None, int | None, str | None]:
    """The tightest cgroup memory limit on this process, its reclaim-aware usage, and where it was read."""
    text = host.read_text("/proc/self/cgroup")
    if not text:
        return None, None, None
    best: tuple[int, int, str] | None = None
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        if controllers == "" and parts[0] == "0":
            base, limit_file, usage_file, inactive_key, version = "/sys/fs/cgroup", "memory.max", "memory.current", "inactive_file", "v2"
        elif "memory" in controllers.split(","):
            base, limit_file, usage_file, inactive_key, version = (
                "/sys/fs/cgroup/memory",
                "memory.limit_in_bytes",
                "memory.usage_in_bytes",
                "total_inactive_file",
                "v1",
            )
        else:
            continue
        # Walk from the process's own cgroup up to the root: a parent's limit binds too.
        # Inside a container the cgroup path may not exist under the mount (its namespace
        # starts at the mount root), so the root directory is always checked as well.
        candidates = []
        # normpath keeps a leading "//" (POSIX allows it), so strip slashes before joining.
        current = posixpath.normpath("/" + path.strip().lstrip("/"))
        while True:
            candidates.append(current)
            parent = posixpath.dirname(current)
            if parent == current:
                break
            current = parent
        for candidate in candidates:
            directory = posixpath.normpath(base + candidate)
            limit = _read_int(host, f"{directory}/{limit_file}")
            if limit is None:
                continue
            usage = _read_int(host, f"{directory}/{usage_file}") or 0
            inactive = _stat_value(host, f"{directory}/memory.stat", inactive_key)
            usage = max(0, usage - inactive)
            if best is None or limit - usage < best[0] - best[1]:
                best = (limit, usage, f"cgroup {version} {fields.without_path_ids(directory)}/{limit_file}")  # a report carries no pod UIDs or container ids
    if best is None:
        return None, None, None
    return best


def linux_memory(host: Host) -> tuple[Memory, list[Problem]]:
    text = host.read_text("/proc/meminfo")
    info = parse_meminfo(text or "")
    total = info.get("MemTotal")
    if not total:
        # Report the cgroup limit even so: a readable 4 GiB container limit is a fact of its own.
        message, hint = (("cannot read /proc/meminfo", "Is /proc mounted? gpuready needs it to size system memory.") if text is None else
                         ("/proc/meminfo has no MemTotal", "The file looks garbled; please report it with `gpuready record`."))
        limit, usage, limit_source = cgroup_limit(host)
        if limit is None:
            raise ProbeFailure(message, hint)
        return (Memory(total_bytes=None, available_bytes=None, limit_bytes=limit, limit_usage_bytes=usage, limit_source=limit_source,
                       source="cgroup"), [Problem("memory", f"{message}; only the container limit is known", hint, "error")])
    problems: list[Problem] = []
    available = info.get("MemAvailable")
    if available is None:  # kernels before 3.14
        available = sum(info.get(key, 0) for key in ("MemFree", "Buffers", "Cached"))
        problems.append(Problem("memory", "MemAvailable missing from /proc/meminfo; estimated from free + buffers + cache", severity="info"))
    limit, usage, limit_source = cgroup_limit(host)
    if limit is not None and limit >= total:
        limit = usage = limit_source = None
    memory = Memory(
        total_bytes=total,
        available_bytes=available,
        limit_bytes=limit,
        limit_usage_bytes=usage,
        limit_source=limit_source,
        swap_total_bytes=info.get("SwapTotal"),
        source="proc_meminfo",
    )
    return memory, problems


def darwin_available_bytes(pages: dict[str, int], total: int, default_page_size: int) -> int | None:
    """Memory a new process can have: total minus what Activity Monitor calls "Memory Used".

    Activity Monitor counts App Memory (anonymous pages that are not purgeable), Wired
    Memory and Compressed as used; Cached Files are handed to apps on demand (Apple,
    "View memory usage in Activity Monitor on Mac", https://support.apple.com/guide/activity-monitor/actmntr1004/mac).
    Counting only free + inactive pages, as some tools do, calls a busy Mac full.
    """
    page_size = pages.get("page size") or default_page_size
    keys = ("Anonymous pages", "Pages purgeable", "Pages wired down", "Pages occupied by compressor")
    if all(key in pages for key in keys):
        used = pages["Anonymous pages"] - pages["Pages purgeable"] + pages["Pages wired down"] + pages["Pages occupied by compressor"]
        return max(0, total - used * page_size)
    # Older macOS without the anonymous/file-backed split: free, inactive and purgeable pages.
    counted = [pages.get(k) for k in ("Pages free", "Pages inactive", "Pages purgeable")]
    if all(c is not None for c in counted):
        return sum(counted) * page_size
    return None


def darwin_memory(host: Host) -> tuple[Memory, list[Problem]]:
    values = macos.sysctl(host)
    try:
        total = int(values["hw.memsize"])
    except (KeyError, ValueError):
        raise ProbeFailure("sysctl hw.memsize is missing", "gpuready reads memory size with `sysctl hw.memsize`.") from None
    problems = []
    available = None
    result = host.run(macos.VM_STAT_ARGV, timeout=5.0)
    if result.ok:
        pages = macos.parse_vm_stat(result.stdout)
        available = darwin_available_bytes(pages, total, int(values.get("hw.pagesize", "16384")))
    if available is None:
        problems.append(
            Problem("memory", "could not read free memory from vm_stat", "Verdicts that depend on free memory are unknown.", "warning")
        )
    return Memory(total_bytes=total, available_bytes=available, source="sysctl+vm_stat"), problems


def windows_memory(host: Host) -> tuple[Memory, list[Problem]]:
    readout = fields.mapping(host.library("windows"))
    info = fields.mapping(readout.get("memory"))
    total = fields.whole(info.get("total_bytes"))
    if not total:
        error = fields.text(readout.get("error"))
        raise ProbeFailure(f"could not read Windows memory status{': ' + error if error else ''}", WINDOWS_HINT)
    return Memory(total_bytes=total, available_bytes=fields.whole(info.get("available_bytes")), source="windows"), []


WINDOWS_HINT = "gpuready reads memory with GlobalMemoryStatusEx; run `gpuready record DIR` and attach it to an issue."


def probe(host: Host) -> tuple[Memory, list[Problem]]:
    """Size system memory on any platform."""
    if host.platform == "darwin":
        return darwin_memory(host)
    if host.platform == "windows":
        return windows_memory(host)
    return linux_memory(host)
