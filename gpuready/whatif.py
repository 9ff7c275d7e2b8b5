"""What-if hardware: the same machine with a GPU from the table instead of its own, or
with more memory, or a whole Mac for an Apple chip.

Pure: takes a Hardware and a row of catalog/gpus.toml, returns a new Hardware. The CLI's
``--gpu NAME`` / ``--memory SIZE`` (through gpuready.app) and the terminal UI's what-if
picker all use it.
"""

from __future__ import annotations

import dataclasses
import re

from gpuready.hardware import CPU, GPU, Hardware, Memory, Problem
from gpuready.probes import GPU_PROBES
from gpuready.probes.apple import apple_hardware
from gpuready.catalog.tables import GPUSpec, closest_gpu_names, find_gpus

# "2x RTX 3090", "2 x A100": a count, an x, then a space (so "7900 XTX" stays a name).
_COUNT = re.compile(r"^\s*(\d{1,2})\s*[x×]\s+(.+)$", re.IGNORECASE)


class WhatIfError(ValueError):
    """A GPU name that matches no table row, or several."""


def gpu_from_spec(spec: GPUSpec, index: int = 0) -> GPU:
    """A GPU as the table describes it, with all of its memory free."""
    return GPU(
        vendor=spec.vendor,
        name=spec.name,
        kind="unified" if spec.kind == "unified" else ("integrated" if spec.kind == "integrated" else "discrete"),
        index=index,
        memory_total_bytes=spec.memory_bytes or None,
        memory_free_bytes=spec.memory_bytes or None,
        memory_usable_bytes=spec.memory_bytes or None,
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
    return dataclasses.replace(hardware, gpus=tuple(gpu_from_spec(spec, i) for i in range(count)))


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


def resolve_gpu(query: str) -> tuple[GPUSpec, int]:
    """'RTX 4090', '2x RTX 3090', 'A100 80GB' -> the one table row meant, and how many."""
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
        hint = f"; closest: {', '.join(close)}" if close else ""
        raise WhatIfError(f"--gpu: no GPU in the table matches '{query}'{hint}")
    names = ", ".join(sorted(f"{spec.name} ({spec.id})" for spec in matches[:8]))
    raise WhatIfError(f"--gpu: '{query}' matches several GPUs: {names}; be more specific")


def with_memory(hardware: Hardware, size_bytes: int) -> Hardware:
    """The same machine with this much system memory, all of it free."""
    memory = Memory(total_bytes=size_bytes, available_bytes=size_bytes, source="user")
    return dataclasses.replace(hardware, memory=memory)


def compose(
    hardware: Hardware, problems: list[Problem], gpu: str | None = None, memory_bytes: int | None = None
) -> tuple[Hardware, list[Problem]]:
    """Apply ``--gpu`` and ``--memory``: a table GPU replaces the machine's own (and its GPU
    probes' problems); an Apple chip is a whole Mac, whose unified memory ``memory_bytes`` sets."""
    if gpu:
        spec, count = resolve_gpu(gpu)
        problems = [p for p in problems if p.probe not in GPU_PROBES]
        if spec.vendor == "apple":
            return apple_machine(hardware, spec, memory_bytes), problems
        hardware = with_gpu(hardware, spec, count)
    if memory_bytes:
        hardware = with_memory(hardware, memory_bytes)
    return hardware, problems
