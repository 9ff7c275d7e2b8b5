"""What the NVIDIA probe and its fallbacks share: hints for NVML's errors, nvidia-smi's query, and a GPU with its UUIDs.

Kept apart so that :mod:`gpuready.probes.nvidia` and :mod:`gpuready.probes.nvidia_fallback`
both import it and neither imports the other's module at load time.
"""

from __future__ import annotations

import dataclasses
import re

from gpuready.hardware import GPU

MIB = 1024**2

# Names of NVIDIA systems whose GPU shares the CPU's memory (NVML reports no framebuffer
# on GB10: https://github.com/XuehaiPan/nvitop/pull/208, fixture nvidia-gb10-dgx-spark).
UNIFIED_NAMES = re.compile(r"\b(GB10|Orin|Thor|Xavier|Tegra)\b|nvgpu", re.IGNORECASE)

SMI_FIELDS = ("index", "name", "memory.total", "memory.free", "driver_version", "pci.device_id")
SMI_ARGV = ("nvidia-smi", f"--query-gpu={','.join(SMI_FIELDS)}", "--format=csv,noheader,nounits")

# NVML errors that mean "the driver is there but not usable now", with what to do.
NVML_HINTS = {
    "NVML_ERROR_DRIVER_NOT_LOADED": "The NVIDIA kernel driver is not loaded: install the driver (or run `sudo modprobe nvidia`) and reboot.",
    "NVML_ERROR_LIB_RM_VERSION_MISMATCH": "The NVIDIA driver was upgraded but the old kernel module is still loaded: reboot.",
    "NVML_ERROR_NO_PERMISSION": "This user may not open /dev/nvidia*: check the device permissions (or the container's GPU access).",
    "NVML_ERROR_LIBRARY_NOT_FOUND": "libnvidia-ml.so was not found: install the NVIDIA driver's user-space libraries.",
    "PYNVML_NOT_INSTALLED": "Install nvidia-ml-py (`pip install nvidia-ml-py`) for exact free-memory figures.",
}
CONTAINER_HINT = (
    "This looks like a container without GPU access: start it with `--gpus all` (Docker with the NVIDIA "
    "Container Toolkit) or the equivalent device options of your runtime."
)
WSL_HINT = (
    "On WSL2 the GPU driver lives in Windows: install or update the NVIDIA Windows driver, and do not install "
    "a Linux driver inside WSL (it has no libnvidia-ml under /usr/lib/wsl/lib yet)."
)
WSL_LIBRARY_HINT = (
    "libnvidia-ml.so.1 is in /usr/lib/wsl/lib but could not be loaded: make sure /usr/lib/wsl/lib is on the "
    "library path (`sudo ldconfig`, or LD_LIBRARY_PATH) and that no Linux NVIDIA driver shadows it."
)


def pci_id(pci_device_id: int | None) -> str | None:
    """NVML's combined id 0x268410DE -> "10de:2684"."""
    if not isinstance(pci_device_id, int) or pci_device_id <= 0:
        return None
    return f"{pci_device_id & 0xFFFF:04x}:{pci_device_id >> 16:04x}"


@dataclasses.dataclass(frozen=True)
class Seen:
    """A GPU with the UUIDs that decide CUDA_VISIBLE_DEVICES matches (never reported)."""

    gpu: GPU
    uuid: str | None = None
    parent_uuid: str | None = None
