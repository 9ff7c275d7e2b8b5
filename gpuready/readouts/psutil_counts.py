"""The psutil readout: the CPU counts psutil reports on the live host, as a plain dict.

One more witness for the CPU probe's counts (``/proc/cpuinfo``, ``siblings``/``cpu cores``,
``/sys/devices/system/cpu/{online,present}``). ``read()`` never raises::

    {"logical": 32, "physical": 16}

psutil's ``cpu_count()`` is the kernel's online CPUs (sysconf, then /proc/cpuinfo and
/proc/stat); ``cpu_count(logical=False)`` counts distinct cores from sysfs topology, else
cpuinfo's ``core id``s (https://psutil.readthedocs.io/en/latest/#psutil.cpu_count). Either may
be None when psutil cannot tell.
"""

from __future__ import annotations


def read() -> dict:
    """Logical and physical CPU counts from psutil; a missing psutil or an error becomes data."""
    try:
        import psutil
    except ImportError as error:
        return {"error": "PSUTIL_NOT_INSTALLED", "detail": str(error)}
    counts: dict = {"version": getattr(psutil, "__version__", None)}
    for key, logical in (("logical", True), ("physical", False)):
        try:
            counts[key] = psutil.cpu_count(logical=logical)
        except Exception as error:  # noqa: BLE001 - an OSError or psutil's own errors alike
            counts[key] = None
            counts.setdefault("errors", {})[key] = f"{type(error).__name__}: {error}"
    return counts
