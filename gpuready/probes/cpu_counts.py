"""Cross-check the Linux CPU counts against psutil's, and say which source won.

The CPU probe counts logical CPUs from ``/sys/devices/system/cpu/{online,present}``, else
``/proc/cpuinfo`` (its blocks or ``siblings`` x packages), and cores from cpuinfo's
``core id`` / ``cpu cores``. The optional ``psutil`` readout (``host.library("psutil")``,
``libraries/psutil.json`` in a recording; absent in older ones) is one more witness:

* logical: the kernel's own list in sysfs wins; otherwise psutil's count, which asks the kernel
  for its online CPUs (sysconf), wins over what cpuinfo's text implies;
* physical: psutil's count of distinct cores (sysfs topology) wins over cpuinfo's ids.

A psutil count that is not a plausible number (0, above 65536, more cores than CPUs) is ignored.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuready.hardware import Problem
from gpuready.probes import fields

LARGEST_CPU_COUNT = 65536


@dataclass(frozen=True)
class Counts:
    logical: int
    physical: int | None
    # Which source each count came from, in words, or None when psutil gave nothing to check against.
    source: str | None
    problems: tuple[Problem, ...] = ()


def _plausible(value) -> int | None:
    number = fields.whole(value)
    return number if number is not None and 1 <= number <= LARGEST_CPU_COUNT else None


def cross_check(logical: int, physical: int | None, counted_by: str, readout: dict | None) -> Counts:
    """The counts after comparing with psutil's ``{"logical": n, "physical": m}``."""
    values = fields.mapping(readout)
    ps_logical = _plausible(values.get("logical"))
    ps_physical = _plausible(values.get("physical"))
    if ps_physical is not None and ps_logical is not None and ps_physical > ps_logical:
        ps_physical = None
    if ps_logical is None and ps_physical is None:
        return Counts(logical, physical, None)
    problems = []
    logical_from = counted_by
    if ps_logical is not None and ps_logical != logical:
        if counted_by.startswith("/sys/"):
            problems.append(Problem("cpu", f"psutil counts {ps_logical} logical CPUs but {counted_by} lists {logical}; using {counted_by}", severity="info"))
        else:
            problems.append(Problem("cpu", f"{counted_by} implies {logical} logical CPUs but psutil counts {ps_logical}; using psutil", severity="info"))
            logical, logical_from = ps_logical, "psutil"
    physical_from = "/proc/cpuinfo"
    if ps_physical is not None and ps_physical != physical and ps_physical <= logical:
        if physical is not None:
            problems.append(Problem("cpu", f"/proc/cpuinfo implies {physical} cores but psutil counts {ps_physical}; using psutil", severity="info"))
        physical, physical_from = ps_physical, "psutil"
    agrees = (ps_logical is None or ps_logical == logical) and (ps_physical is None or ps_physical == physical)
    if logical_from == physical_from == "psutil":
        source = "psutil"
    elif agrees and logical_from != "psutil" and physical_from != "psutil":
        source = f"{logical_from}, psutil agrees" if logical_from == physical_from else f"logical from {logical_from}, cores from {physical_from}, psutil agrees"
    else:
        source = f"logical from {logical_from}, cores from {physical_from}"
    return Counts(logical, physical, source, tuple(problems))
