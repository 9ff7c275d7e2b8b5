"""What-if hardware: the same machine with a GPU from the table instead of its own, or
with more memory, or a whole Mac for an Apple chip.

Pure: takes a Hardware and a row of catalog/gpus.toml, returns a new Hardware. The CLI's
``--gpu NAME`` / ``--memory SIZE`` (through gpuready.app) and the terminal UI's what-if
picker all use it.
"""

from __future__ import annotations

import dataclasses
import re

from gpuready.hardware import CPU, GIB, GPU, MIB, Hardware, Memory, Problem
from gpuready.probes import GPU_PROBLEM_PROBES
from gpuready.probes.apple import apple_hardware, metal_working_set_bytes
from gpuready.units import fmt_gb
from gpuready.catalog.tables import (GPUSpec, closest_gpu_names, find_gpus, gpu_table, integrated_within_system_memory,
                                     other_memory_sizes, typeable)

# "2x RTX 3090", "2 x A100": a count, an x, then a space (so "7900 XTX" stays a name).
_COUNT = re.compile(r"^\s*(\d+)\s*[x×]\s+(.+)$", re.IGNORECASE)


class WhatIfError(ValueError):
    """A GPU name that matches no table row, or several."""


# What an NVIDIA driver keeps of an idle card's memory for itself, outside any process: NVML's
# nvmlMemory_v2_t "reserved" (nvidia-smi -q "FB Memory Usage: Reserved"), which free memory excludes.
# Recorded: H200 615 MiB, RTX 4090 324 MiB, RTX 4060 Laptop 368 MiB (tests/fixtures/machines/nvidia-h200,
# nvidia-rtx4090, laptop-rtx4060-iris-xe libraries/nvml.json), and 569 MiB on a 48 GB card's published
# nvidia-smi -q. A what-if card is judged on its total less the median of the four, as a probed idle card
# is judged on its free memory; the driver's CUDA context is counted apart, in each estimate.
NVIDIA_DRIVER_RESERVED_BYTES = 468 * MIB


def driver_reserved_bytes(spec: GPUSpec) -> int:
    """Memory a what-if card's driver keeps for itself: NVIDIA's discrete and datacenter cards (a GPU with its
    own memory, whose NVML reports a reservation); 0 for shared memory and other vendors (nothing recorded)."""
    own_memory = spec.kind not in ("integrated", "unified") or (spec.kind == "unified" and spec.vendor == "nvidia"
                                                                  and not is_soc_memory(spec))
    return NVIDIA_DRIVER_RESERVED_BYTES if spec.vendor == "nvidia" and own_memory else 0


def gpu_from_spec(spec: GPUSpec, index: int = 0, shared_bytes: int | None = None, memory_bytes: int | None = None) -> GPU:
    """A GPU as the table describes it, idle: all of its memory free but what its driver keeps (the driver's total
    where the table gives one, less driver_reserved_bytes); integrated graphics (no
    memory of its own) get ``shared_bytes`` of system memory, as a probed APU gets through GTT;
    ``memory_bytes``, where given, is the memory of a chip sold with several sizes."""
    if spec.driver_total_bytes and memory_bytes in (None, spec.memory_bytes):
        memory = spec.driver_total_bytes  # what the driver reports, not the marketed size
    else:
        memory = memory_bytes or spec.memory_bytes or (shared_bytes if spec.kind == "integrated" else None) or None
    reserved = driver_reserved_bytes(spec) if memory else 0
    return GPU(
        vendor=spec.vendor,
        name=display_name(spec),
        # GH200's table row is "unified" (NVLink-C2C), but its GPU has HBM of its own and NVML reports that,
        # as the probe then says: a discrete GPU. Unified is memory the machine shares (Apple, LPDDR SoCs).
        kind=("unified" if spec.vendor == "apple" or is_soc_memory(spec) else "discrete") if spec.kind == "unified"
        else ("integrated" if spec.kind == "integrated" else "discrete"),
        index=index,
        memory_total_bytes=memory,
        memory_free_bytes=memory - reserved if memory else memory,
        memory_usable_bytes=memory - reserved if memory else memory,
        bandwidth_bytes_per_s=spec.bandwidth_bytes_per_s,
        bandwidth_source=f"table:{spec.id}",
        fp16_flops=spec.fp16_flops or spec.fp32_flops,
        flops_source=f"table:{spec.id}" if (spec.fp16_flops or spec.fp32_flops) else None,
        architecture=spec.architecture,
        compute_capability=spec.compute_capability,
        gfx_target=spec.gfx_target,
        table_id=spec.id,
        source="user",
    )


def with_gpu(hardware: Hardware, spec: GPUSpec, count: int = 1) -> Hardware:
    """The machine with ``count`` of this GPU instead of the GPUs it has (an Apple chip: a whole Mac)."""
    if count < 1:
        raise ValueError("count must be at least 1")
    if spec.vendor == "apple":
        return apple_machine(hardware, spec, None)
    if is_soc_memory(spec):
        return soc_machine(hardware, spec, None, count)
    shared = hardware.memory.usable_bytes if spec.kind == "integrated" else None
    # integrated graphics read this machine's memory, so no faster than its CPU platform's (as a probed one)
    gpus = tuple(integrated_within_system_memory(gpu_from_spec(spec, i, shared), hardware.cpu) for i in range(count))
    return dataclasses.replace(hardware, gpus=gpus)


def apple_machine(hardware: Hardware, spec: GPUSpec, memory_bytes: int | None) -> Hardware:
    """A Mac with this chip and this much unified memory (default: the chip's smallest), all of it free."""
    gpu, npu = apple_hardware(spec, memory_bytes)
    chip = spec.name
    cpu = CPU(
        name=chip,
        arch="arm64",
        vendor="Apple",
        features=("dotprod", "neon"),
        memory_bandwidth_bytes_per_s=spec.bandwidth_bytes_per_s,
        bandwidth_source=f"table:{spec.id}",
        source="user",
    )
    memory = Memory(total_bytes=gpu.memory_total_bytes, available_bytes=gpu.memory_total_bytes, source="user")
    return dataclasses.replace(
        hardware, platform="darwin", arch="arm64", os="macOS", cpu=cpu, memory=memory,
        gpus=(gpu,), npus=(npu,) if npu else (), backends=(), in_container=False,
    )


def is_soc_memory(spec: GPUSpec) -> bool:
    """A chip whose GPU memory is the machine's own LPDDR (Strix Halo, DGX Spark's GB10, Jetson):
    choosing it chooses the machine's memory too. Not Apple (a whole Mac) and not GH200, whose
    HBM is the GPU's own beside the CPU's LPDDR5X."""
    return spec.kind == "unified" and spec.vendor != "apple" and (spec.memory_type or "").upper().startswith("LPDDR")


def soc_machine(hardware: Hardware, spec: GPUSpec, memory_bytes: int | None, count: int = 1) -> Hardware:
    """The machine built on this chip, with ``memory_bytes`` of memory (default: the chip's smallest),
    all of it free: system memory and the GPU's pool are the same memory, as a probed APU's GTT is."""
    memory = memory_bytes or spec.smallest_memory_bytes
    hardware = with_memory(hardware, memory)
    return dataclasses.replace(hardware, gpus=tuple(gpu_from_spec(spec, i, memory, memory) for i in range(count)))


def _soc_notes(spec: GPUSpec, memory_bytes: int | None) -> list[Problem]:
    """A memory size the chip is not sold with is estimated as asked, and said."""
    sizes = sorted({spec.memory_bytes, *spec.memory_options_bytes} - {0, None})
    if not memory_bytes or not sizes or any(abs(memory_bytes - size) < GIB for size in sizes):
        return []
    sold = ", ".join(f"{round(size / GIB)}" for size in sizes[:-1]) + (" or " if len(sizes) > 1 else "") + f"{round(sizes[-1] / GIB)}"
    return [Problem("whatif", f"{display_name(spec)} is sold with {sold} GB of memory; estimated with "
                    f"{fmt_gb(memory_bytes)} as asked", None, "info")]


def resolve_gpu(query: str) -> tuple[GPUSpec, int]:
    """'RTX 4090', '2x RTX 3090', 'A100 80GB' -> the one table row meant, and how many.

    Rows that are bins of one chip (Apple's GPU core counts, a card sold with two memory
    sizes) resolve to the full bin; ``assumption`` says so. Different chips stay an error."""
    count = 1
    match = _COUNT.match(query)
    if match:
        count, query = int(match.group(1)), match.group(2)
    if not 1 <= count <= 16:
        raise WhatIfError(f"--gpu: {count} GPUs? Give between 1 and 16.")
    matches = find_gpus(query)
    if len(matches) == 1:
        return matches[0], count
    if not matches:
        close = closest_gpu_names(query)
        hint = f"; closest: {', '.join(close)}" if close else "; see `gpuready models --gpus` for the names it knows"
        raise WhatIfError(f"--gpu: no GPU in the table matches '{query}'{hint}")
    if _bins_of_one_chip(matches):
        return _full_bin(matches), count
    names = ", ".join(sorted(f"'{typeable(spec)}' ({display_name(spec)})" for spec in matches[:8]))
    raise WhatIfError(f"--gpu: '{query}' matches several GPUs: {names}; type one of the quoted names")


def assumption(query: str) -> str | None:
    """What ``resolve_gpu`` assumed for a name that several bins of one chip share, or that one card sold in
    several memory sizes shares ('RTX 4060 Ti', 'A100'), and how to pick another."""
    match = _COUNT.match(query)
    name = match.group(2) if match else query
    matches = find_gpus(name)
    if len(matches) == 1 and (others := other_memory_sizes(matches[0], name)):
        chosen = matches[0]
        names = " or ".join(f"'{typeable(spec)}' ({round(spec.memory_bytes / GIB)} GB)" for spec in others)
        return (f"--gpu '{name}': assumed {display_name(chosen)} with {round(chosen.memory_bytes / GIB)} GB; "
                f"for another memory size, type {names}")
    if len(matches) < 2 or not _bins_of_one_chip(matches):
        return None
    chosen = _full_bin(matches)
    others = " or ".join(f"'{typeable(spec)}'" for spec in matches if spec is not chosen)
    return f"--gpu '{name}': assumed {display_name(chosen)}, the full chip; for the other, type {others}"


def _bins_of_one_chip(specs: list[GPUSpec]) -> bool:
    return len({(spec.vendor, spec.name) for spec in specs}) == 1


def _full_bin(specs: list[GPUSpec]) -> GPUSpec:
    return max(specs, key=lambda spec: (spec.gpu_cores or 0, spec.memory_bytes, spec.bandwidth_bytes_per_s))


def display_name(spec: GPUSpec) -> str:
    """The row's name, with its bin where another row shares the name: 'Apple M1 Max (32-core GPU)', 'Arc A770 16GB'."""
    siblings = [other for other in gpu_table() if other.name == spec.name and other.vendor == spec.vendor]
    if len(siblings) < 2:
        return spec.name
    if spec.gpu_cores and len({other.gpu_cores for other in siblings}) > 1:
        return f"{spec.name} ({spec.gpu_cores}-core GPU)"
    return f"{spec.name} {round(spec.memory_bytes / 1024**3)}GB"


def with_memory(hardware: Hardware, size_bytes: int) -> Hardware:
    """The same machine with this much system memory, all of it free; a GPU that shares that memory (Apple's unified
    memory, a Jetson's or Strix Halo's pool, integrated graphics) shares the new size, as it would on that machine."""
    memory = Memory(total_bytes=size_bytes, available_bytes=size_bytes, source="user")
    return dataclasses.replace(hardware, memory=memory, gpus=tuple(_sharing(gpu, size_bytes) for gpu in hardware.gpus))


def _sharing(gpu: GPU, size_bytes: int) -> GPU:
    """A GPU whose memory is the system's, on a machine with ``size_bytes`` of it, all free: Metal keeps its default
    working set of it (a raised iogpu.wired_limit_mb was set for the old size), a shared pool or integrated graphics
    may use all of it."""
    if gpu.vendor == "apple":
        usable = metal_working_set_bytes(size_bytes)
    elif gpu.kind in ("unified", "integrated"):
        usable = size_bytes
    else:
        return gpu
    return dataclasses.replace(gpu, memory_total_bytes=size_bytes, memory_free_bytes=size_bytes, memory_usable_bytes=usable,
                               memory_carveout_free_bytes=None)


def compose(
    hardware: Hardware, problems: list[Problem], gpu: str | None = None, memory_bytes: int | None = None
) -> tuple[Hardware, list[Problem]]:
    """Apply ``--gpu`` and ``--memory``: a table GPU replaces the machine's own (and its GPU
    probes' problems); an Apple chip is a whole Mac, whose unified memory ``memory_bytes`` sets."""
    if gpu:
        spec, count = resolve_gpu(gpu)
        problems = [p for p in problems if p.probe not in GPU_PROBLEM_PROBES]  # the machine's GPUs, replaced
        if spec.vendor == "apple":
            return apple_machine(hardware, spec, memory_bytes), problems
        if is_soc_memory(spec):
            return soc_machine(hardware, spec, memory_bytes, count), [*problems, *_soc_notes(spec, memory_bytes)]
    if memory_bytes:
        hardware = with_memory(hardware, memory_bytes)
    if gpu:
        if hardware.platform == "darwin" and spec.vendor == "nvidia":
            problems = [*problems, Problem(
                "whatif", f"macOS has no NVIDIA driver (CUDA's last macOS release, 10.2, ran on macOS 10.13): the "
                f"verdicts describe {display_name(spec)} with this machine's CPU and memory as if it ran Linux or "
                "Windows", None, "warning")]
        hardware = with_gpu(hardware, spec, count)
        if spec.kind == "integrated":
            problems = [*problems, Problem(
                "whatif", f"{display_name(spec)} is integrated graphics: it has no memory of its own and may use the "
                f"machine's {fmt_gb(hardware.memory.usable_bytes)} of free system memory, as amdgpu's GTT or Intel's "
                "shared memory lets a real one", None, "info")]
    return hardware, problems
