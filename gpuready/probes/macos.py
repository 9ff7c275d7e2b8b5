"""macOS facts read with ``sysctl`` and ``vm_stat``, shared by the CPU, memory and Apple probes.

Sources: ``sysctl <keys>`` (one process for every key; unknown keys are reported on
stderr and skipped), ``vm_stat``.
"""

from __future__ import annotations

import re
import weakref

from gpuready.host import Host

# Every key any probe reads, asked in one `sysctl` call (macOS starts processes slowly).
SYSCTL_KEYS = (
    "hw.memsize",
    "hw.pagesize",
    "hw.ncpu",
    "hw.physicalcpu",
    "hw.logicalcpu",
    "hw.perflevel0.physicalcpu",
    "hw.perflevel1.physicalcpu",
    "machdep.cpu.brand_string",
    "hw.optional.arm64",
    "hw.optional.arm.FEAT_DotProd",
    "hw.optional.arm.FEAT_I8MM",
    "hw.optional.arm.FEAT_BF16",
    "hw.optional.arm.FEAT_FP16",
    "hw.optional.arm.FEAT_SME",
    "hw.optional.avx1_0",
    "hw.optional.avx2_0",
    "hw.optional.fma",
    "hw.optional.avx512f",
    "hw.model",
    "kern.osproductversion",
    "sysctl.proc_translated",
    "iogpu.wired_limit_mb",
)
SYSCTL_ARGV = ("sysctl", *SYSCTL_KEYS)
VM_STAT_ARGV = ("vm_stat",)

_cache: weakref.WeakKeyDictionary[object, dict[str, str]] = weakref.WeakKeyDictionary()


def parse_sysctl(text: str) -> dict[str, str]:
    """Parse ``key: value`` lines as `sysctl` prints them."""
    values = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() and " " not in key.strip():
            values[key.strip()] = value.strip()
    return values


def sysctl(host: Host) -> dict[str, str]:
    """All of :data:`SYSCTL_KEYS` the machine knows, read once per host."""
    try:
        return _cache[host]
    except (KeyError, TypeError):
        pass
    result = host.run(SYSCTL_ARGV, timeout=5.0)
    values = parse_sysctl(result.stdout) if result.status == "ok" else {}
    try:
        _cache[host] = values
    except TypeError:
        pass
    return values


_VM_PAGE = re.compile(r"page size of (\d+) bytes")
_VM_LINE = re.compile(r'^"?([^:"]+)"?:\s+(\d+)\.?\s*$')


def parse_vm_stat(text: str) -> dict[str, int]:
    """Parse `vm_stat` into page counts keyed by label, plus ``page size`` in bytes."""
    values: dict[str, int] = {}
    page = _VM_PAGE.search(text)
    if page:
        values["page size"] = int(page.group(1))
    for line in text.splitlines():
        match = _VM_LINE.match(line.strip())
        if match:
            values[match.group(1).strip()] = int(match.group(2))
    return values
