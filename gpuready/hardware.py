"""What the probes found: frozen dataclasses, with units in field names.

Unknown is ``None``, never 0. Every accelerator says where its numbers came from
(``source``: nvml, sysfs, registry, system_profiler, table, measured, user).
``to_dict``/``from_dict`` give the JSON shape used by the report's ``hardware``
section and by ``--hardware FILE``.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from dataclasses import dataclass

GIB = 1024**3
GB = 1000**3
MIB = 1024**2


@dataclass(frozen=True)
class Problem:
    """Something a probe could not do or found wrong; ``severity`` error means the probe failed."""

    probe: str
    message: str
    hint: str | None = None
    severity: str = "warning"  # error | warning | info


@dataclass(frozen=True)
class CPU:
    name: str | None
    arch: str
    vendor: str | None = None
    physical_cores: int | None = None
    logical_cores: int | None = None
    performance_cores: int | None = None
    efficiency_cores: int | None = None
    # Normalised ISA features that matter for local inference (avx2, avx512f, avx_vnni,
    # amx_int8, neon, dotprod, i8mm, sve, ...), sorted.
    features: tuple[str, ...] = ()
    memory_bandwidth_bytes_per_s: int | None = None
    bandwidth_source: str | None = None
    source: str = "unknown"


@dataclass(frozen=True)
class Memory:
    total_bytes: int | None
    available_bytes: int | None
    # A container / cgroup limit below the machine's memory, with its current usage.
    limit_bytes: int | None = None
    limit_usage_bytes: int | None = None
    limit_source: str | None = None
    swap_total_bytes: int | None = None
    source: str = "unknown"

    @property
    def usable_bytes(self) -> int | None:
        """What a new process may still allocate: available memory, capped by a container limit."""
        candidates = []
        if self.available_bytes is not None:
            candidates.append(self.available_bytes)
        if self.limit_bytes is not None:
            candidates.append(max(0, self.limit_bytes - (self.limit_usage_bytes or 0)))
        if not candidates and self.total_bytes is not None:
            return None
        return min(candidates) if candidates else None

    @property
    def capacity_bytes(self) -> int | None:
        """Total memory this process could ever have: the machine's total, capped by a limit."""
        values = [v for v in (self.total_bytes, self.limit_bytes) if v is not None]
        return min(values) if values else None


# PCIe generations by their transfer rate a lane (PCI-SIG), and the widths a link trains to: what GPU.pcie_link_gt_s and
# GPU.pcie_link_width may hold.
PCIE_GENERATION_GT_S = {1: 2.5, 2: 5.0, 3: 8.0, 4: 16.0, 5: 32.0, 6: 64.0}
PCIE_WIDTHS = (1, 2, 4, 8, 12, 16, 32)


def pcie_words(gt_s: float | None, width: int | None) -> str | None:
    """'PCIe 4.0 x16' for a link's rate a lane and lanes, None where either is unknown."""
    if not gt_s or not width:
        return None
    generation = next((g for g, rate in PCIE_GENERATION_GT_S.items() if rate == gt_s), None)
    return f"PCIe {generation}.0 x{width}" if generation else f"{gt_s:g} GT/s x{width}"


@dataclass(frozen=True)
class GPU:
    vendor: str  # nvidia | amd | intel | apple
    name: str
    kind: str = "discrete"  # discrete | integrated | unified
    index: int | None = None
    memory_total_bytes: int | None = None
    memory_free_bytes: int | None = None
    # What an AI runtime may actually allocate on it now (free VRAM, Metal's working-set
    # limit on Apple silicon, the unified pool on an APU).
    memory_usable_bytes: int | None = None
    # The part of memory_usable_bytes that is the GPU's own on a shared-memory chip (an AMD APU's free
    # BIOS carve-out, which the OS never sees): only the rest is system memory, capped by what is free.
    memory_carveout_free_bytes: int | None = None
    bandwidth_bytes_per_s: int | None = None
    bandwidth_source: str | None = None
    fp16_flops: float | None = None
    flops_source: str | None = None
    architecture: str | None = None
    compute_capability: str | None = None
    gfx_target: str | None = None
    driver: str | None = None
    driver_version: str | None = None
    pci_id: str | None = None  # vendor:device, e.g. 10de:2684
    # The PCIe link to the host: transfer rate a lane in GT/s (2.5, 5, 8, 16, 32, 64 for PCIe 1.0-6.0) and lanes, as
    # NVML reports the most "possible with this device and system" (an x16 card in an x8 slot: 8). None: not read
    # (AMD and Intel cards sit behind a switch on the card, whose endpoint's sysfs link is not the slot's).
    pcie_link_gt_s: float | None = None
    pcie_link_width: int | None = None
    pcie_link_source: str | None = None  # nvml
    # Highest CUDA version the NVIDIA driver supports (nvmlSystemGetCudaDriverVersion_v2), e.g. "12.4".
    cuda_version: str | None = None
    # A MIG instance's profile (e.g. "3g.40gb"): one CUDA process can use one instance, so
    # instances are never pooled like identical GPUs.
    mig_profile: str | None = None
    table_id: str | None = None  # row of catalog/gpus.toml used
    # The power limit the driver enforces now (NVML nvmlDeviceGetEnforcedPowerLimit), watts.
    power_limit_w: float | None = None
    # Average watts NVML's energy counter saw during `gpuready bench`'s device-to-device copy
    # (memory-bound) and matmul (compute-bound) phases; their +/- share; when they were measured.
    measured_power_memory_bound_w: float | None = None
    measured_power_compute_bound_w: float | None = None
    measured_power_spread: float | None = None
    measured_power_source: str | None = None
    # False for graphics that no AI runtime can use (old iGPUs, software renderers).
    counted: bool = True
    not_counted_reason: str | None = None
    backends: tuple[str, ...] = ()  # cuda, rocm, metal, vulkan, sycl, directml
    source: str = "unknown"


@dataclass(frozen=True)
class NPU:
    vendor: str  # intel | amd | apple | qualcomm
    name: str
    generation: str | None = None
    tops_int8: float | None = None
    driver: str | None = None
    driver_loaded: bool | None = None
    runtimes: tuple[str, ...] = ()
    table_id: str | None = None
    source: str = "unknown"


@dataclass(frozen=True)
class Backend:
    name: str  # cuda, rocm, metal, vulkan, directml, openvino, torch
    available: bool
    version: str | None = None
    detail: str | None = None
    source: str = "unknown"


@dataclass(frozen=True)
class Hardware:
    platform: str  # linux | darwin | windows
    arch: str  # x86_64 | arm64
    cpu: CPU
    memory: Memory
    gpus: tuple[GPU, ...] = ()
    npus: tuple[NPU, ...] = ()
    backends: tuple[Backend, ...] = ()
    os: str | None = None  # e.g. "Linux 6.8 (WSL2)", "macOS 14.5"
    in_container: bool = False

    @property
    def accelerators(self) -> tuple[GPU, ...]:
        """GPUs that an AI runtime could use."""
        return tuple(gpu for gpu in self.gpus if gpu.counted)


# --- JSON conversion ---------------------------------------------------------


class HardwareFormatError(ValueError):
    """A hardware description does not have the report's ``hardware`` shape."""


def to_dict(value) -> dict:
    """A dataclass as JSON-ready data (tuples become lists)."""

    def convert(item):
        if dataclasses.is_dataclass(item):
            return {f.name: convert(getattr(item, f.name)) for f in dataclasses.fields(item)}
        if isinstance(item, (tuple, list)):
            return [convert(element) for element in item]
        return item

    return convert(value)


# No count, size (an exabyte is 2^60 bytes) or rate of a real machine comes near this; a bigger
# number is a typo or fuzzed input, and would overflow the float arithmetic of the estimates.
MAX_QUANTITY = 2**60


def _check(value, annotation, where: str):
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        errors = []
        for option in (a for a in args if a is not type(None)):
            try:
                return _check(value, option, where)
            except HardwareFormatError as error:
                errors.append(error)
        raise errors[0] if errors else HardwareFormatError(f"{where}: must not be null")
    if origin is tuple:
        if not isinstance(value, list):
            raise HardwareFormatError(f"{where}: expected a list")
        return tuple(_check(element, args[0], f"{where}[{i}]") for i, element in enumerate(value))
    if dataclasses.is_dataclass(annotation):
        return from_dict(annotation, value, where)
    if annotation is bool:
        if not isinstance(value, bool):
            raise HardwareFormatError(f"{where}: expected true or false")
        return value
    if annotation is int:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or (isinstance(value, float) and not math.isfinite(value)) \
                or value != int(value):
            raise HardwareFormatError(f"{where}: expected an integer")
        if value < 0:
            raise HardwareFormatError(f"{where}: must not be negative")
        if value > MAX_QUANTITY:
            raise HardwareFormatError(f"{where}: implausibly large (at most 2^60)")
        return int(value)
    if annotation is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or abs(value) > MAX_QUANTITY or not math.isfinite(value):
            raise HardwareFormatError(f"{where}: expected a finite number")
        return float(value)
    if annotation is str:
        if not isinstance(value, str):
            raise HardwareFormatError(f"{where}: expected a string")
        return value
    raise HardwareFormatError(f"{where}: unsupported type {annotation!r}")  # pragma: no cover


def from_dict(cls, data, where: str = "hardware"):
    """Build a dataclass from JSON data, naming the exact key that is wrong."""
    if not isinstance(data, dict):
        raise HardwareFormatError(f"{where}: expected an object")
    hints = typing.get_type_hints(cls)
    known = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise HardwareFormatError(f"{where}: unknown key {unknown[0]!r}")
    values = {}
    for name, spec in known.items():
        if name not in data:
            has_default = spec.default is not dataclasses.MISSING or spec.default_factory is not dataclasses.MISSING
            if not has_default:
                raise HardwareFormatError(f"{where}: missing key '{name}'")
            continue
        values[name] = _check(data[name], hints[name], f"{where}.{name}")
    return cls(**values)


def hardware_from_dict(data) -> Hardware:
    return from_dict(Hardware, data)


__all__ = [
    "CPU",
    "GB",
    "GIB",
    "GPU",
    "NPU",
    "Backend",
    "Hardware",
    "HardwareFormatError",
    "Memory",
    "Problem",
    "from_dict",
    "hardware_from_dict",
    "to_dict",
]
