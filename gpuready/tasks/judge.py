"""The one judge: for a model of any task, estimate each variant, check where it fits and
whether that placement is accepted, level its speed against the task's floors, pick the
best variant, and say why and what would change the answer.

Pure. The task supplies the estimate, the floors and its wording through its ``Task``
hooks (gpuready.tasks.base); everything that is the same for every task lives here.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from gpuready.hardware import Hardware
from gpuready.tasks.base import Task, band_words
from gpuready.tasks.devices import FIT_MARGIN_BYTES, Device, cpu_device, gpu_device, memory_word, one_card
from gpuready.tasks.verdict import LEVELS, PLACEMENT_ORDER, RUNNABLE, Options, VariantVerdict, Verdict, level_words, quality_adjusted
from gpuready.units import fmt_gb


@dataclass(frozen=True)
class Judged:
    """One variant of a model, judged: its level, estimate, reasons and quality."""

    variant: str
    level: str
    estimate: Any
    reasons: tuple[str, ...]
    preference: float  # higher is picked first among variants at the same level
    quality: str | None  # lossless | near-lossless | good | fair | poor | None
    supported: bool = True  # False: no runtime here runs this variant, wherever it is placed (judged does-not-fit)
    at_risk: bool = False  # fits at its estimate but may run out of memory (Task.at_risk): a safe one goes first

    @property
    def fits(self) -> bool:
        return self.level in RUNNABLE or self.level == "too-slow"


def placement_reason(estimate, gpu: Device | None, cpu: Device) -> str | None:
    """Where the estimate puts the model, in words."""
    if estimate.placement == "gpu":
        spare = gpu.usable_memory_bytes - estimate.gpu_memory_bytes
        tight = (spare < FIT_MARGIN_BYTES and not gpu.unified and getattr(estimate, "placed_by_llama_cpp", False))
        return (f"fits in {fmt_gb(gpu.usable_memory_bytes)} {memory_word(gpu)} with {fmt_gb(spare)} to spare"
                + (f", under the {fmt_gb(FIT_MARGIN_BYTES)} llama.cpp's --fit keeps free: left to choose the layers "
                   "(-ngl unset), it moves some to system memory; pass -ngl 99 (or --fit off) to keep it all on the GPU"
                   if tight else ""))
    if estimate.placement == "split":
        return (
            f"needs {fmt_gb(estimate.memory.total_bytes)}, {'GPUs have' if gpu.count > 1 else 'GPU has'} "
            f"{fmt_gb(gpu.usable_memory_bytes)} free: "
            + (f"{estimate.split_words}" if getattr(estimate, "cpu_expert_layers", 0)
               else f"{estimate.split_words}, the rest from system memory")
        )
    if estimate.placement == "offload":
        return (
            f"needs {fmt_gb(estimate.memory.total_bytes)} in all, {gpu.name} has {fmt_gb(gpu.usable_memory_bytes)} usable: "
            f"components take turns on the GPU ({fmt_gb(estimate.gpu_memory_bytes)} at the peak)"
        )
    return None


def fit_unread(task: Task, model, variant: str, estimate, gpu: Device | None, catalog) -> bool:
    """A refusal that only the placement makes (a GPU-only format or precision the estimate put on the CPU) where
    the GPU's free memory is unknown: whether the variant fits there is unknown, not "does not fit"."""
    return (gpu is not None and gpu.usable_memory_bytes is None and estimate.placement != "gpu"
            and not task.refuse(model, variant, replace(estimate, placement="gpu"), gpu, catalog))


def cpu_prefix(estimate, gpu: Device | None) -> str:
    """Why a variant the estimate put on the CPU is not on the GPU: too big for one card of it, or small enough but
    its runtime does not drive that GPU (Piper's ONNX Runtime session on a Radeon, PyTorch on a GPU reached only
    through Vulkan)."""
    card = one_card(gpu)
    if card is None or not card.usable_memory_bytes:
        return ""
    if estimate.memory.total_bytes > card.usable_memory_bytes:
        return f"too big for {gpu.name} ({fmt_gb(gpu.usable_memory_bytes)} usable); "
    return f"its runtime does not drive {gpu.name} ({gpu.backend}); "


def judge_variant(task: Task, model, variant: str, catalog, gpu: Device | None, cpu: Device, options: Options) -> Judged:
    """Estimate one variant and judge it: fit, accepted placement, then speed against the floors."""
    estimate = task.estimate(model, variant, catalog, gpu, cpu, options)
    preference, quality = task.quality(model, variant, catalog)

    def judged(level: str, reasons: list[str], supported: bool = True, at_risk: bool = False) -> Judged:
        return Judged(variant, level, estimate, tuple(reasons), preference, quality, supported, at_risk)

    refusal = task.refuse(model, variant, estimate, gpu, catalog)
    if refusal and fit_unread(task, model, variant, estimate, gpu, catalog):
        return judged("unknown", [f"{variant} runs only on the GPU, and {gpu.name}'s free memory could not be read, "
                                  "so whether it fits is unknown"])
    if refusal:
        # Refused on the GPU too (MLX on a PC, fp8 on a GPU vLLM does not run it): not supported here. Refused only
        # where the estimate placed it (a GPU-only format that is too big for the GPU): it does not fit.
        on_gpu = estimate.placement == "gpu" or task.refuse(model, variant, replace(estimate, placement="gpu"), gpu, catalog)
        return judged("does-not-fit", [refusal], supported=not on_gpu)
    reasons = [reason for reason in (placement_reason(estimate, gpu, cpu),) if reason]
    system_usable = cpu.usable_memory_bytes
    if estimate.placement == "cpu" or estimate.system_memory_bytes:
        if system_usable is None:
            return judged("unknown", ["system memory could not be read, so fit is unknown", *reasons])
        if estimate.system_memory_bytes > system_usable:
            needed = estimate.memory.total_bytes if estimate.placement == "cpu" else estimate.system_memory_bytes
            system = f"{fmt_gb(system_usable)} of system memory is available"
            if gpu and gpu.usable_memory_bytes and estimate.placement == "cpu":
                # too big for the GPU, for system memory, and (where the task splits) for the two together
                available = f"; {fmt_gb(gpu.usable_memory_bytes)} is usable on {gpu.name} and {system}"
            else:
                available = f", only {system}"
            return judged("does-not-fit", reasons + [f"needs {fmt_gb(needed)}{available}"])
    if estimate.placement == "cpu":
        reasons.append(f"{cpu_prefix(estimate, gpu)}runs on the CPU from system memory "
                       f"({fmt_gb(system_usable)} available)")
    allowed = PLACEMENT_ORDER[: PLACEMENT_ORDER.index(options.placement) + 1]
    if estimate.placement not in allowed:
        return judged("does-not-fit", reasons + [f"placement '{estimate.placement}' is not accepted (only {', '.join(allowed)})"])
    if estimate.headline is None:
        return judged("unknown", [task.speed_unknown, *reasons])  # the cause first: summaries quote it
    level, speed_reasons = task.level(model, estimate, options)
    adjusted = quality_adjusted(level, quality)
    if adjusted != level:
        speed_reasons = [*speed_reasons, f"{variant} is of {quality} quality: {LOWERED_FOR_QUALITY} "
                                           f"('{level_words(level)}')"]
    risk = task.at_risk(model, estimate, gpu, cpu)
    if risk and LEVELS.index(adjusted) < LEVELS.index(AT_RISK_BEST):
        adjusted, speed_reasons = AT_RISK_BEST, [*speed_reasons, f"{risk}: {LOWERED_FOR_RISK}"]
    elif risk:
        speed_reasons = [*speed_reasons, risk]
    return judged(adjusted, reasons + list(speed_reasons), at_risk=bool(risk))


# The best level of a variant that may run out of memory (Task.at_risk): it runs, but not "well".
AT_RISK_BEST = "runs"
# What a reason says where a level is lower than the speed alone earns (lowered_level finds them).
LOWERED_FOR_QUALITY = "counted one level lower than its speed"
LOWERED_FOR_RISK = f"counted '{level_words(AT_RISK_BEST)}' at best"


def lowered_level(verdict) -> bool:
    """Whether the verdict's level is lower than its speed alone would earn: a low-quality variant, or one that may
    run out of memory; its reasons say which."""
    return any(LOWERED_FOR_QUALITY in reason or reason.endswith(LOWERED_FOR_RISK) for reason in verdict.reasons)


def choice_key(judged: Judged, placement_first: bool):
    """Best level first (judge_variant already counted a low-quality variant a level lower), a variant no runtime here
    runs after every level, "unknown" too (it may run); at one level, one that may run out of memory last; among runnable variants the fullest GPU placement (where the
    task says so), then the preferred quality; among the others the smallest (the closest to fitting)."""
    runnable = judged.level in RUNNABLE
    return (
        LEVELS.index(judged.level) if judged.supported else len(LEVELS),
        judged.at_risk,  # at the same level, a variant whose whole memory range fits before one that may run out
        PLACEMENT_ORDER.index(judged.estimate.placement) if runnable and placement_first else 0,
        -judged.preference if runnable else judged.estimate.memory.total_bytes,
        judged.estimate.memory.total_bytes,
    )


def variant_suggestions(chosen: Judged, candidates: list[Judged], flag: str = "--quant") -> list[str]:
    """The variant that would reach a better level, the highest-quality one of those."""
    better = [r for r in candidates if LEVELS.index(r.level) < LEVELS.index(chosen.level)]
    if not better:
        return []
    best = max(better, key=lambda r: r.preference)
    return [f"{flag} {best.variant} would make it '{level_words(best.level)}' ({fmt_gb(best.estimate.memory.total_bytes)})"]


def least_memory(chosen: Judged, candidates: list[Judged]) -> str:
    smallest = min(candidates, key=lambda r: r.estimate.memory.total_bytes)
    return f"at least {fmt_gb(smallest.estimate.memory.total_bytes)} of free memory is needed even at {smallest.variant}"


def judge(task: Task, model, catalog, hardware: Hardware, options: Options) -> Verdict:
    """The best variant of one model on this machine, as a Verdict."""
    gpu, cpu = gpu_device(hardware), cpu_device(hardware)
    results = [judge_variant(task, model, variant, catalog, gpu, cpu, options)
               for variant in task.variants(model, catalog, gpu, options)]
    chosen = min(results, key=lambda judged: choice_key(judged, task.placement_first))
    estimate, level = chosen.estimate, chosen.level
    reasons = list(chosen.reasons)
    headline = estimate.headline if chosen.fits else None
    if headline is not None:
        reasons.insert(0, f"{chosen.variant}: {task.describe(model, estimate, options)} ({band_words(headline.uncertainty)})"
                          + task.describe_after_band(model, estimate, options))
    on_gpu = estimate.placement in ("gpu", "split", "offload")
    reasons += task.notes(model, hardware, gpu if on_gpu else None)
    suggestions = []
    if level not in ("runs-well", "unknown"):
        # With a variant fixed by the user, the others are still worth naming.
        candidates = results if not options.quant else [
            judge_variant(task, model, variant, catalog, gpu, cpu, options)
            for variant in task.variants(model, catalog, gpu, replace(options, quant=None))
        ]
        suggestions = variant_suggestions(chosen, candidates, task.variant_flag) + task.suggest(model, chosen, catalog, gpu, cpu, options)
        if level == "does-not-fit" and chosen.supported and not chosen.reasons[-1].startswith("placement"):
            suggestions.append(task.least_memory(model, chosen, candidates, catalog, cpu, options)
                               if task.least_memory else least_memory(chosen, candidates))
    return Verdict(
        task=task.name,
        model_id=model.id,
        model_name=model.name,
        model_params=model.params,
        level=level,
        quant=chosen.variant,
        context_tokens=task.context(model, options),
        placement=estimate.placement if chosen.fits else None,
        runtime=task.runtime(model, estimate, gpu, catalog) if chosen.fits else None,
        memory_needed_bytes=estimate.memory.total_bytes,
        memory_available_bytes=gpu.usable_memory_bytes if on_gpu and gpu else cpu.usable_memory_bytes,
        estimate=estimate,
        reasons=tuple(reasons),
        suggestions=tuple(suggestions),
        variants=tuple(
            VariantVerdict(r.variant, r.level, r.estimate.placement if r.fits else None, r.estimate.memory.total_bytes,
                           _tokens_per_s(r.estimate), r.supported, *_headline(r.estimate))
            for r in results
        ),
        speed=headline.value if headline else None,
        speed_unit=headline.unit if headline else None,
        uncertainty=headline.uncertainty if headline else None,
        quality=chosen.quality,
        supported=chosen.supported,
        group=group.name if (group := task.group_of(model)) else None,
        cause=chosen.reasons[-1] if chosen.reasons else None,
    )


def _headline(estimate) -> tuple[float | None, str | None]:
    """A variant's headline speed and its unit, whatever the task."""
    headline = estimate.headline
    return (headline.value, headline.unit) if headline is not None else (None, None)


def _tokens_per_s(estimate) -> float | None:
    """A variant's generation speed, for tasks that generate tokens."""
    headline = estimate.headline
    return headline.value if headline is not None and headline.unit == "tokens/s" else None
