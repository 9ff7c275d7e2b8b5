"""Judge a non-LLM model: estimate each variant, check it fits and is accepted, level its speed.

The per-task modules supply the estimate and the level; this module turns them into the
same :class:`gpuready.verdict.Verdict` text generation produces, so front ends need no
task-specific code beyond a column formatter.
"""

from __future__ import annotations

from collections.abc import Callable

from gpuready import estimate as est
from gpuready.devices import cpu_device, gpu_device
from gpuready.hardware import Hardware
from gpuready.tasks.common import TaskEstimate
from gpuready.verdict import (
    LEVELS,
    PLACEMENT_ORDER,
    RUNNABLE,
    Options,
    VariantVerdict,
    Verdict,
    fmt_gb,
)

# Bits per weight a variant name stands for, to prefer the highest-quality variant that
# runs (16 bits preferred over 32: same results, half the memory).
VARIANT_BITS = {"fp32": 32, "fp16": 16, "bf16": 16, "fp8": 8, "int8": 8, "q8_0": 8.5, "q6_k": 6.5625,
                "q5_k_s": 5.5, "q5_0": 5.5, "q5_1": 6.0, "nf4": 4.5, "q4_k_s": 4.5, "q4_0": 4.5}


def quality_key(variant: str) -> float:
    bits = VARIANT_BITS.get(variant, 8)
    return bits if bits <= 16 else 16 - bits / 100


def judge_variant(estimate: TaskEstimate, gpu: est.Device | None, cpu: est.Device, options: Options,
                  level_of: Callable[[float | None], str]) -> tuple[str, list[str]]:
    """Level and reasons for one estimated variant."""
    allowed = PLACEMENT_ORDER[: PLACEMENT_ORDER.index(options.placement) + 1]
    reasons: list[str] = []
    if estimate.placement == "gpu":
        spare = gpu.usable_memory_bytes - estimate.gpu_memory_bytes
        reasons.append(f"fits in {gpu.name}'s {fmt_gb(gpu.usable_memory_bytes)} usable memory with {fmt_gb(spare)} to spare")
    elif estimate.placement == "offload":
        reasons.append(
            f"needs {fmt_gb(estimate.memory.total_bytes)} in all, {gpu.name} has {fmt_gb(gpu.usable_memory_bytes)} usable: "
            f"components take turns on the GPU ({fmt_gb(estimate.gpu_memory_bytes)} at the peak)"
        )
    if estimate.system_memory_bytes:
        if cpu.usable_memory_bytes is None:
            return "unknown", reasons + ["system memory could not be read, so fit is unknown"]
        if estimate.system_memory_bytes > cpu.usable_memory_bytes:
            where = "GPU or system memory" if gpu and estimate.placement == "cpu" else "system memory"
            reasons.append(f"needs {fmt_gb(estimate.system_memory_bytes)} of {where}, only {fmt_gb(cpu.usable_memory_bytes)} is available")
            return "does-not-fit", reasons
        if estimate.placement == "cpu":
            prefix = f"too big for {gpu.name} ({fmt_gb(gpu.usable_memory_bytes)} usable); " if gpu and gpu.usable_memory_bytes else ""
            reasons.append(f"{prefix}runs on the CPU from system memory ({fmt_gb(cpu.usable_memory_bytes)} available)")
    if estimate.placement not in allowed:
        reasons.append(f"placement '{estimate.placement}' is not accepted (only {', '.join(allowed)})")
        return "does-not-fit", reasons
    if estimate.speed is None:
        reasons.append("device throughput unknown: speed not estimated")
        return "unknown", reasons
    return level_of(estimate.speed), reasons


def judge(
    model,
    hardware: Hardware,
    options: Options,
    estimate_variant: Callable[[str, est.Device | None, est.Device], TaskEstimate],
    level_of: Callable[[float | None], str],
    describe: Callable[[TaskEstimate], str],
    runtime_of: Callable[[TaskEstimate, est.Device | None], str],
) -> Verdict:
    """The best variant of one model on this machine, as a Verdict."""
    gpu, cpu = gpu_device(hardware), cpu_device(hardware)
    variants = [options.quant] if options.quant in model.quants else list(model.quants)
    results = []
    for variant in variants:
        estimate = estimate_variant(variant, gpu, cpu)
        level, reasons = judge_variant(estimate, gpu, cpu, options, level_of)
        results.append((variant, level, estimate, reasons))
    variant, level, estimate, reasons = min(
        results,
        key=lambda r: (LEVELS.index(r[1]), -quality_key(r[0]) if r[1] in RUNNABLE else r[2].memory.total_bytes, r[2].memory.total_bytes),
    )
    fits = level in RUNNABLE or level == "too-slow"
    if fits and estimate.speed is not None:
        reasons = [f"{variant}: {describe(estimate)} (+/-{estimate.uncertainty:.0%})", *reasons]
    suggestions = []
    if level not in ("runs-well", "unknown"):
        better = [r for r in results if LEVELS.index(r[1]) < LEVELS.index(level)]
        if better:
            best = min(better, key=lambda r: LEVELS.index(r[1]))
            suggestions.append(f"--quant {best[0]} would make it '{best[1]}' ({fmt_gb(best[2].memory.total_bytes)})")
        if level == "does-not-fit" and not reasons[-1].startswith("placement"):
            smallest = min(results, key=lambda r: r[2].memory.total_bytes)[2]
            suggestions.append(f"at least {fmt_gb(smallest.memory.total_bytes)} of free memory is needed even at {smallest.quant}")
    on_gpu = estimate.placement in ("gpu", "offload")
    return Verdict(
        task=model.task,
        model_id=model.id,
        model_name=model.name,
        model_params=model.params,
        level=level,
        quant=variant,
        context_tokens=None,
        placement=estimate.placement if fits else None,
        runtime=runtime_of(estimate, gpu) if fits else None,
        memory_needed_bytes=estimate.memory.total_bytes,
        memory_available_bytes=(gpu.usable_memory_bytes if on_gpu and gpu else cpu.usable_memory_bytes),
        estimate=estimate,
        reasons=tuple(reasons),
        suggestions=tuple(suggestions),
        variants=tuple(
            VariantVerdict(v, lv, e.placement if lv in RUNNABLE or lv == "too-slow" else None, e.memory.total_bytes,
                           None)
            for v, lv, e, _ in results
        ),
        speed=estimate.speed if fits else None,
        speed_unit=estimate.speed_unit if fits and estimate.speed is not None else None,
        uncertainty=estimate.uncertainty if fits and estimate.speed is not None else None,
    )
