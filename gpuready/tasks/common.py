"""What the task judges share: efficiency constants fitted on published measurements,
speed levels from floors, and the placement and memory reasons every task gives."""

from __future__ import annotations

from dataclasses import dataclass

from gpuready import estimate as est

# Share of peak FP16 (GPU) or estimated peak FP32 (CPU) throughput that a compute-bound
# encoder forward pass reaches, per backend. Fitted by benchmarks/score_estimator.py as
# the median measured/theoretical ratio of the whisper.cpp `bench` encoder rows in
# benchmarks/validation/speech.toml (whisper.cpp issue #89 and the bench tables quoted
# there; one 30 s window, encoder only) whose hardware is in the tables: cuda 36 rows
# (Tesla V100 19, RTX 2060 11, RTX 5090 6), cpu 10 rows (Raspberry Pi 5 8, Core i7-8700 2).
# Backends without rows of their own scale CUDA's figure by their text-generation prompt
# efficiency relative to CUDA's (same regime: batches of tokens through dense matrix
# multiplies), said so in each basis.
# Embedding models and text to speech use these too (no measurements of their own yet).
ENCODER_EFFICIENCY = {"cuda": 0.11, "cpu": 0.11}


def encoder_efficiency(backend: str) -> tuple[float, str]:
    """The fitted encoder efficiency; other backends scale CUDA's by their prompt efficiency relative to CUDA's."""
    if backend in ENCODER_EFFICIENCY:
        return ENCODER_EFFICIENCY[backend], f"{ENCODER_EFFICIENCY[backend]:.0%} {backend} efficiency (fitted on whisper.cpp encoder benchmarks)"
    relative = est.COMPUTE_EFFICIENCY.get(backend, est.COMPUTE_EFFICIENCY["cpu"]) / est.COMPUTE_EFFICIENCY["cuda"]
    value = ENCODER_EFFICIENCY["cuda"] * relative
    return value, (f"{value:.0%} {backend} efficiency (no encoder benchmark for {backend}: CUDA's fit x {backend}'s "
                   "text-generation prompt efficiency relative to CUDA's)")


def level_at_least(value: float | None, floors: dict[str, float]) -> str:
    """Level for a higher-is-better speed against floors {runs-well, runs, slow}."""
    if value is None:
        return "unknown"
    for level in ("runs-well", "runs", "slow"):
        if value >= floors[level]:
            return level
    return "too-slow"


def level_at_most(value: float | None, ceilings: dict[str, float]) -> str:
    """Level for a lower-is-better time (seconds per image) against ceilings."""
    if value is None:
        return "unknown"
    for level in ("runs-well", "runs", "slow"):
        if value <= ceilings[level]:
            return level
    return "too-slow"


@dataclass(frozen=True)
class Fit:
    """Where a model's memory lands and what it has to fit in."""

    placement: str | None  # gpu | offload | cpu; None: does not fit
    device: est.Device | None
    available_bytes: int | None
    reason: str


def fit_gpu_or_cpu(
    needed_gpu_bytes: int, needed_cpu_bytes: int, gpu: est.Device | None, cpu: est.Device, fmt
) -> Fit:
    """All on the GPU when it fits there, else on the CPU from system memory, else nowhere."""
    if gpu is not None and gpu.usable_memory_bytes and needed_gpu_bytes <= gpu.usable_memory_bytes:
        spare = gpu.usable_memory_bytes - needed_gpu_bytes
        return Fit("gpu", gpu, gpu.usable_memory_bytes,
                   f"fits in {gpu.name}'s {fmt(gpu.usable_memory_bytes)} usable memory with {fmt(spare)} to spare")
    if cpu.usable_memory_bytes is None:
        return Fit(None, None, None, "system memory could not be read, so fit is unknown")
    if needed_cpu_bytes <= cpu.usable_memory_bytes:
        prefix = f"too big for {gpu.name} ({fmt(gpu.usable_memory_bytes)} usable); " if gpu and gpu.usable_memory_bytes else ""
        return Fit("cpu", cpu, cpu.usable_memory_bytes, f"{prefix}runs on the CPU from system memory ({fmt(cpu.usable_memory_bytes)} available)")
    where = "GPU or system memory" if gpu else "system memory"
    return Fit(None, None, cpu.usable_memory_bytes, f"needs {fmt(needed_cpu_bytes)}, only {fmt(cpu.usable_memory_bytes)} of {where} is available")


@dataclass(frozen=True)
class MemoryPart:
    label: str  # e.g. "denoiser (fp8)", "text encoders", "index"
    bytes: int
    where: str  # gpu | system


@dataclass(frozen=True)
class MemoryParts:
    parts: tuple[MemoryPart, ...]

    @property
    def total_bytes(self) -> int:
        return sum(part.bytes for part in self.parts)

    def on(self, where: str) -> int:
        return sum(part.bytes for part in self.parts if part.where == where)


@dataclass(frozen=True)
class TaskEstimate:
    """Memory and speed of one variant of a non-LLM model on one placement, in the task's unit."""

    model_id: str
    quant: str  # the variant: fp16, int8, q5_0, nf4 ...
    placement: str  # gpu | offload | cpu
    memory: MemoryParts
    gpu_memory_bytes: int
    system_memory_bytes: int
    speed: float | None  # in speed_unit, higher is better except seconds/image
    speed_unit: str
    uncertainty: float  # relative, e.g. 0.3 = +/-30%
    details: tuple[tuple[str, float], ...]  # named intermediate figures, e.g. ("encoder_s_per_window", 0.05)
    basis: tuple[str, ...]


def device_flops_basis(device: est.Device) -> str:
    if device.kind == "cpu":
        return f"{device.name}: {device.flops / 1e12:.2f} TFLOPS estimated peak (cores x {est.ASSUMED_CPU_CLOCK_HZ / 1e9:.0f} GHz assumed x FMA width)"
    return f"{device.name}: {device.flops / 1e12:.1f} TFLOPS FP16 peak"
