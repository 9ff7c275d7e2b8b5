"""What-if hardware: the probed machine with a GPU from the hardware table added.

Pure: takes a Hardware and a row of catalog/gpus.toml, returns a new Hardware. Used by
the terminal UI's what-if picker and reusable by the CLI's ``--gpu NAME``.
"""

from __future__ import annotations

import dataclasses

from gpuready.hardware import GPU, Hardware
from gpuready.tables import GPUSpec


def gpu_from_spec(spec: GPUSpec, index: int | None = None) -> GPU:
    """A hypothetical GPU with the table row's memory, all of it free, and its bandwidth and FP16 rate."""
    return GPU(
        vendor=spec.vendor,
        name=spec.name,
        kind=spec.kind,
        index=index,
        memory_total_bytes=spec.memory_bytes,
        memory_usable_bytes=spec.memory_bytes,
        bandwidth_bytes_per_s=spec.bandwidth_bytes_per_s,
        bandwidth_source=f"table:{spec.id}",
        fp16_flops=spec.fp16_flops,
        flops_source=f"table:{spec.id}" if spec.fp16_flops else None,
        architecture=spec.architecture,
        compute_capability=spec.compute_capability,
        gfx_target=spec.gfx_target,
        table_id=spec.id,
        source="user",
    )


def with_gpu(hardware: Hardware, spec: GPUSpec, count: int = 1) -> Hardware:
    """The same machine with ``count`` more of this GPU (source "user")."""
    if count < 1:
        raise ValueError("count must be at least 1")
    start = len(hardware.gpus)
    added = tuple(gpu_from_spec(spec, start + i) for i in range(count))
    return dataclasses.replace(hardware, gpus=hardware.gpus + added)


def is_hypothetical(hardware: Hardware) -> bool:
    """True when some accelerator was added by the user rather than probed."""
    return any(gpu.source == "user" for gpu in hardware.gpus)
