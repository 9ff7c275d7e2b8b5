"""Energy per unit of work: the power of the device a verdict runs on times the estimated
time of one unit (1,000 generated tokens, an image, an hour of audio, 10,000 chunks, a
million training tokens). Pure over Hardware, the verdict and the power table.

Power: NVML's enforced power limit where the probe read it, else the cited board power of
catalog/power.toml (GPUs, Apple chips' whole-Mac maximum, CPUs' default TDP). Either is an
upper bound of what the work draws: memory-bound generation draws less than the limit, so
the band reaches down to half of the estimate. Where `gpuready bench` read NVML's energy
counter (gpuready.bench.power_meter), the GPU's measured watts come first: those of the
device-to-device copy for memory-bound work (token generation, speech), those of the matmul
for compute-bound work (images, embeddings, reranking, fine-tuning); the band is then the
measurement's own spread, not the half-power low end.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from gpuready.catalog.power import Power, power_table
from gpuready.hardware import Hardware
from gpuready.tasks.devices import gpu_device
from gpuready.units import fmt_figures, fmt_number

# Per task: how a unit is named, and the seconds one unit takes at a headline speed.
UNITS = {
    "tokens/s": ("Wh per 1,000 tokens", lambda speed: 1000 / speed),
    "s/image": ("Wh per image", lambda speed: speed),
    "x realtime": ("Wh per hour of audio", lambda speed: 3600 / speed),
    "chunks/s": ("Wh per 10,000 chunks", lambda speed: 10_000 / speed),
    "pairs/s": ("Wh per 10,000 pairs", lambda speed: 10_000 / speed),
    "training tokens/s": ("Wh per million training tokens", lambda speed: 1_000_000 / speed),
}
WH_PER_1K_TOKENS = "Wh per 1,000 tokens"
# Headline speeds of memory-bound work: token generation reads every weight per token, and
# Whisper's headline is dominated by its token-by-token decoder. The rest are matmul-bound.
MEMORY_BOUND_UNITS = frozenset({"tokens/s", "x realtime"})
# The low end of the band: work that draws half the power limit (an assumption: memory-bound
# token generation keeps the compute units mostly idle), at the fast end of the speed band.
LOW_POWER_SHARE = 0.5


@dataclass(frozen=True)
class Energy:
    wh: float  # per unit, at the power limit and the estimated speed
    unit: str  # "Wh per 1,000 tokens", "Wh per image", ...
    power_w: float
    power_source: str  # measured (NVML energy counter) | nvml (enforced power limit) | table (catalog/power.toml); "+"-joined when mixed
    seconds: float  # of one unit
    low_wh: float
    high_wh: float
    basis: str


def used_gpus(hardware: Hardware) -> list:
    """The GPUs of the group the verdicts place work on (gpuready.tasks.devices.gpu_device)."""
    device = gpu_device(hardware)
    if device is None:
        return []
    name = device.name.split(" x ", 1)[1] if device.count > 1 else device.name
    return [gpu for gpu in hardware.accelerators if gpu.name == name][: device.count]


def measured_power(gpu, memory_bound: bool) -> float | None:
    """The watts `gpuready bench` measured on this GPU for this kind of work, or None."""
    return gpu.measured_power_memory_bound_w if memory_bound else gpu.measured_power_compute_bound_w


def device_power(hardware: Hardware, placement: str | None,
                 memory_bound: bool = True) -> tuple[float, str, str] | None:
    """Watts drawn where the verdict runs (GPU, CPU, or both for a split): (watts, measured | nvml | table, citation)."""
    table = power_table()
    found: list[tuple[float, str]] = []
    apple = [gpu for gpu in hardware.accelerators if gpu.vendor == "apple" and table.gpu(gpu.table_id)]
    if apple and placement == "cpu":
        power = table.gpu(apple[0].table_id)  # the whole Mac: CPU and GPU are one chip
        return power.watts, "table", power.source
    if placement in ("gpu", "offload", "split"):
        gpus = used_gpus(hardware)
        if not gpus:
            return None
        for gpu in gpus:
            if measured_power(gpu, memory_bound):
                found.append((measured_power(gpu, memory_bound), "measured", gpu.measured_power_source or "measured"))
            elif gpu.power_limit_w:
                found.append((gpu.power_limit_w, "nvml", "NVML's enforced power limit"))
            else:
                power: Power | None = table.gpu(gpu.table_id)
                if power is None:
                    return None
                found.append((power.watts, "table", power.source))
        if gpus[0].vendor == "apple":
            # Apple's figure is the whole Mac: CPU and GPU are one chip.
            return found[0]
    if placement in ("cpu", "split"):
        power = table.cpu(hardware.cpu.name)
        if power is None:
            return None
        found.append((power.watts, "table", power.source))
    if not found:
        return None
    kinds = sorted({kind for _, kind, _ in found})
    citations = sorted({citation for _, _, citation in found})
    return sum(watts for watts, _, _ in found), "+".join(kinds), "; ".join(citations)


def energy(verdict, hardware: Hardware) -> Energy | None:
    """Energy per unit of this verdict's work, or None when its speed or its device's power is unknown."""
    if verdict.speed is None or verdict.speed <= 0 or verdict.speed_unit not in UNITS:
        return None
    memory_bound = verdict.speed_unit in MEMORY_BOUND_UNITS
    power = device_power(hardware, verdict.placement, memory_bound)
    if power is None:
        return None
    watts, source, citation = power
    unit, seconds_of = UNITS[verdict.speed_unit]
    speed = verdict.speed
    batched = getattr(verdict.estimate, "batched", None)
    if batched is not None:
        speed = batched.aggregate_tokens_per_s  # energy is shared by every user's tokens
    seconds = seconds_of(speed)
    wh = watts * seconds / 3600
    uncertainty = verdict.uncertainty or 0.0
    if source == "measured":
        spread = max((gpu.measured_power_spread or 0.0) for gpu in used_gpus(hardware))
        low, high = wh / (1 + uncertainty) * (1 - spread), wh * (1 + uncertainty) * (1 + spread)
        phase = "copy" if memory_bound else "matmul"
        return Energy(wh, unit, watts, source, seconds, low, high,
                      f"{watts:.0f} W during the {phase} ({citation}) x {fmt_figures(seconds)} s a unit = {fmt_number(wh)} {unit}; "
                      f"{fmt_number(low)}-{fmt_number(high)} from the speed's and the power's spread")
    low = wh * LOW_POWER_SHARE / (1 + uncertainty)
    high = wh * (1 + uncertainty)
    basis = (f"{watts:g} W ({citation}) x {fmt_figures(seconds)} s a unit = {fmt_number(wh)} {unit}; "
             f"{fmt_number(low)}-{fmt_number(high)}: the work may draw as little as half the power limit")
    return Energy(wh, unit, watts, source, seconds, low, high, basis)


def low_high(energy: Energy) -> str:
    """The energy's range, both ends to two figures and neither in e-notation: '33-150', not '33-1.5e+02'."""
    return "-".join(f"{value:.2g}" if value < 100 else f"{float(f'{value:.2g}'):,.0f}" for value in (energy.low_wh, energy.high_wh))


def with_energy(verdict, hardware: Hardware):
    """The verdict with its energy per unit attached (None where it cannot be estimated)."""
    return replace(verdict, energy=energy(verdict, hardware))
