"""Recorded machines replayed for tests that need only their Hardware."""

from __future__ import annotations

from gpuready.hardware import Hardware
from gpuready.host import ReplayHost
from gpuready.probes import probe_hardware


def replayed_hardware(machine_dir) -> Hardware:
    """The Hardware a recorded machine directory replays to (its problems dropped)."""
    hardware, _ = probe_hardware(ReplayHost(machine_dir))
    return hardware
