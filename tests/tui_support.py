"""Recorded machines as TUI inputs, shared by the TUI's pilot and snapshot tests."""

from __future__ import annotations

import functools
from pathlib import Path

from gpuready.tasks.registry import load_catalog
from gpuready.host import ReplayHost
from gpuready.probes import probe_hardware
from gpuready.catalog.tables import gpu_table
from gpuready.frontends.tui.app import GpureadyApp, Inputs
from gpuready.whatif import with_gpu

MACHINES = Path(__file__).parent / "fixtures" / "machines"
CPU_ONLY = "linux-desktop-ryzen-7950x"
MAC = "mac-m2-air-16gb"
GARBLED = "linux-garbled-proc"
NVIDIA_DESKTOP = "what-if: linux-desktop-ryzen-7950x + RTX 4090"


@functools.lru_cache(maxsize=None)
def catalog():
    return load_catalog()


def spec(spec_id: str):
    return next(s for s in gpu_table() if s.id == spec_id)


@functools.lru_cache(maxsize=None)
def inputs(machine: str) -> Inputs:
    """A recorded machine probed by replay; NVIDIA_DESKTOP is the Ryzen desktop with an RTX 4090 added."""
    if machine == NVIDIA_DESKTOP:
        base = inputs(CPU_ONLY)
        return Inputs(with_gpu(base.hardware, spec("rtx-4090")), base.problems, base.catalog)
    hardware, problems = probe_hardware(ReplayHost(MACHINES / machine))
    return Inputs(hardware, tuple(problems), catalog())


def app_for(machine: str) -> GpureadyApp:
    loaded = inputs(machine)
    return GpureadyApp(lambda: loaded)


async def settle(pilot) -> None:
    """Wait until the probe thread has finished and the screen shows its result."""
    for _ in range(500):
        if not pilot.app.probing:
            break
        await pilot.pause(0.01)
    await pilot.pause()
    await pilot.pause()
