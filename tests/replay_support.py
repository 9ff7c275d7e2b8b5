"""Recorded machines replayed for tests that need only their Hardware."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from gpuready.hardware import Hardware
from gpuready.host import ReplayHost
from gpuready.probes import probe_hardware


def replayed_hardware(machine_dir) -> Hardware:
    """The Hardware a recorded machine directory replays to (its problems dropped)."""
    hardware, _ = probe_hardware(ReplayHost(machine_dir))
    return hardware


def with_pcie_link(machine_dir, copy_dir, generation: int, width: int):
    """A copy of a recorded NVIDIA machine (in ``copy_dir``) whose first GPU's NVML readout reports this PCIe link
    (nvmlDeviceGetMaxPcieLinkGeneration / Width): the recordings predate the calls. Returns the copy's directory."""
    shutil.copytree(machine_dir, copy_dir)
    nvml = Path(copy_dir) / "libraries" / "nvml.json"
    readout = json.loads(nvml.read_text())
    readout["devices"][0].update(pcie_max_link_generation=generation, pcie_max_link_width=width)
    nvml.write_text(json.dumps(readout))
    return Path(copy_dir)
