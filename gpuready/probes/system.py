"""Operating system probe: a one-line OS name (WSL noted) and whether we run in a container.

Sources: Linux ``/proc/sys/kernel/osrelease``, ``/.dockerenv``, ``/run/.containerenv``;
macOS ``sysctl kern.osproductversion``; Windows the ``windows`` readout's ``os``.
"""

from __future__ import annotations

from gpuready.hardware import Problem
from gpuready.host import Host
from gpuready.probes import macos


def is_wsl(host: Host) -> bool:
    """WSL kernels carry "microsoft" in their release string (e.g. 5.15.153.1-microsoft-standard-WSL2)."""
    release = host.read_text("/proc/sys/kernel/osrelease") or ""
    return "microsoft" in release.lower()


def probe(host: Host) -> tuple[tuple[str | None, bool], list[Problem]]:
    if host.platform == "darwin":
        version = macos.sysctl(host).get("kern.osproductversion")
        return (f"macOS {version}" if version else "macOS", False), []
    if host.platform == "windows":
        readout = host.library("windows") or {}
        return (readout.get("os") or "Windows", False), []
    release = (host.read_text("/proc/sys/kernel/osrelease") or "").strip()
    name = f"Linux {release.split('-')[0]}" if release else "Linux"
    if is_wsl(host):
        name += " (WSL2)" if "wsl2" in release.lower() else " (WSL)"
    in_container = host.read_text("/.dockerenv") is not None or host.read_text("/run/.containerenv") is not None
    return (name, in_container), []
