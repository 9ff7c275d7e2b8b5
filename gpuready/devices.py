"""Where a model can run: the best GPU group and the CPU as estimator Devices, from Hardware.

Pure. A group is identical accelerators that llama.cpp can split layers across; MIG
instances are never pooled, integrated graphics count only when nothing better exists,
and unified memory is capped by what the system has free.
"""

from __future__ import annotations

import re

from gpuready import estimate as est
from gpuready.hardware import GPU, Hardware

# How gpuready.bench.apply marks a figure it measured: "measured on this machine, DATE, ±N%".
MEASURED_HERE = "measured on this machine"
_SPREAD = re.compile(r"±(\d+(?:\.\d+)?)%")

BACKEND_BY_VENDOR = {"nvidia": "cuda", "amd": "rocm", "apple": "metal", "intel": "sycl"}


def backend_for(gpu: GPU) -> str:
    """The backend llama.cpp would use for this GPU: what the probe found usable, else the vendor's."""
    for preferred in ("cuda", "metal", "rocm", "sycl", "vulkan"):
        if preferred in gpu.backends:
            return preferred
    return BACKEND_BY_VENDOR.get(gpu.vendor, "vulkan")


def gpu_usable_bytes(gpu: GPU) -> int | None:
    for value in (gpu.memory_usable_bytes, gpu.memory_free_bytes, gpu.memory_total_bytes):
        if value:
            return value
    return None


def gpu_device(hardware: Hardware) -> est.Device | None:
    """The best GPU for a model: the group of identical accelerators with the most usable memory."""
    groups: dict[tuple, list[GPU]] = {}
    for position, gpu in enumerate(hardware.accelerators):
        # A CUDA process uses one MIG instance, so instances are never pooled.
        key = (gpu.name, position) if gpu.mig_profile else (gpu.name,)
        groups.setdefault(key, []).append(gpu)
    # Integrated graphics only when nothing better exists: a discrete card (or a unified
    # system) always wins, and an iGPU's shared memory is never added to system memory.
    dedicated = {key: gpus for key, gpus in groups.items() if gpus[0].kind != "integrated"}
    groups = dedicated or groups
    best: est.Device | None = None
    for (name, *_), gpus in groups.items():
        first = gpus[0]
        usable = [gpu_usable_bytes(g) for g in gpus]
        total_usable = sum(u for u in usable if u) if all(usable) else None
        unified = first.kind in ("unified", "integrated") or first.vendor == "apple"
        system_free = hardware.memory.usable_bytes
        if unified and total_usable and system_free is not None:
            # Unified memory is shared with everything else running: the GPU gets at most
            # its own limit (e.g. Metal's working set) and at most what is free right now.
            total_usable = min(total_usable, system_free)
        label = f"{len(gpus)} x {name}" if len(gpus) > 1 else name
        device = est.Device(
            kind="gpu",
            name=label,
            backend=backend_for(first),
            usable_memory_bytes=total_usable,
            bandwidth_bytes_per_s=first.bandwidth_bytes_per_s,
            flops=(first.fp16_flops or 0) * len(gpus) or None,
            bandwidth_source=_source_kind(first.bandwidth_source),
            count=len(gpus),
            unified=unified,
            **_measured(first.bandwidth_source),
        )
        if best is None or (device.usable_memory_bytes or 0) > (best.usable_memory_bytes or 0):
            best = device
    return best


def memory_word(gpu: est.Device) -> str:
    """How a reason names GPU memory: free VRAM, or the unified pool the GPU may use."""
    if gpu.unified:
        return "of memory the GPU may use"
    return f"free VRAM across {gpu.count} GPUs" if gpu.count > 1 else "free VRAM"


def _source_kind(source: str | None) -> str:
    if not source:
        return "assumed"
    if source.startswith(MEASURED_HERE):
        return "this-machine"
    if source.startswith("table"):
        return "table"
    if source == "assumed":
        return "assumed"
    return "measured"


# On Apple silicon the table's bandwidth is the whole SoC's; the CPU cores alone reach about
# half of it (AnandTech, "Apple's M1 Pro, M1 Max SoCs Investigated", section "Huge Memory
# Bandwidth, but not for every Block": the M1 Max's CPU clusters cannot use its 400 GB/s).
APPLE_CPU_BANDWIDTH_SHARE = 0.5


def _measured(source: str | None) -> dict:
    """The Device fields of a figure measured on this machine: its source text and relative spread."""
    if not source or not source.startswith(MEASURED_HERE):
        return {}
    match = _SPREAD.search(source)
    return {"bandwidth_detail": source, "bandwidth_spread": float(match[1]) / 100 if match else None}


def cpu_device(hardware: Hardware) -> est.Device:
    cpu = hardware.cpu
    bandwidth = cpu.memory_bandwidth_bytes_per_s
    measured = _measured(cpu.bandwidth_source)
    if bandwidth and not measured and hardware.platform == "darwin" and hardware.arch == "arm64":
        bandwidth = int(bandwidth * APPLE_CPU_BANDWIDTH_SHARE)
    return est.Device(
        kind="cpu",
        name=cpu.name or "CPU",
        backend="cpu",
        usable_memory_bytes=hardware.memory.usable_bytes,
        bandwidth_bytes_per_s=bandwidth,
        flops=est.cpu_peak_flops(cpu.physical_cores, cpu.features),
        bandwidth_source=_source_kind(cpu.bandwidth_source),
        **measured,
    )
