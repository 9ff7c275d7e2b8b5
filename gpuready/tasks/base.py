"""The shape every task has: a ``Task`` (what the one judge needs from it), the estimate a
task returns for one variant (memory parts, a headline speed in the task's unit, basis,
uncertainty), and levels from a task's floors.

A task is a module under ``gpuready/tasks/`` that builds one ``Task`` and is listed in
``gpuready.tasks.registry``; docs/architecture.md has the recipe."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from gpuready.tasks.devices import RUNTIME_OVERHEAD_BYTES, Device, one_card


@dataclass(frozen=True)
class Headline:
    """The one speed a verdict leads with, in its task's unit (tokens/s, s/image, x realtime, chunks/s)."""

    value: float
    unit: str
    uncertainty: float  # relative, e.g. 0.25 = +/-25%


def band_words(uncertainty: float, plus_minus: str = "+/-", within: str = "within ") -> str:
    """A speed's band as a person reads it: '+/-25%', or 'within 4.5x' from 100% up ('4.5x' with within='').

    A band is the 80th percentile of held-out errors |estimate - measured| / measured, and errors of 100% or more are
    all over-estimates (the measured speed was a fraction of the estimate): '+/-345%' read as if a speed could be
    negative, where it means the measured speed may be as low as the estimate / 4.45."""
    if uncertainty < 1:
        return f"{plus_minus}{uncertainty:.0%}"
    return f"{within}{1 + uncertainty:.1f}x"


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


@dataclass(frozen=True, kw_only=True)
class ModelEntry:
    """What every catalogue entry of image generation, speech and search has: its id and name,
    its variants (precisions), and where its figures come from (``Entry.card``)."""

    id: str
    name: str
    variants: tuple[str, ...]
    source: str
    publisher: str | None = None
    license: str | None = None
    hf_repo: str | None = None
    notes: str | None = None
    origin: str = ""

    @property
    def quants(self) -> tuple[str, ...]:
        return self.variants

    @property
    def active_params(self) -> float:
        return self.params


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

    @property
    def headline(self) -> Headline | None:
        return None if self.speed is None else Headline(self.speed, self.speed_unit, self.uncertainty)


# The judge's view of an estimate, whatever the task: ``placement`` (gpu | offload | split |
# cpu), ``memory.total_bytes``, ``gpu_memory_bytes``, ``system_memory_bytes``, ``headline``
# and ``basis``. TaskEstimate above has them; text generation's Estimate adds its own fields.
AnyEstimate = Any


@dataclass(frozen=True)
class Group:
    """A part of a task a person asks about on its own (speech to text within speech): the models
    whose entry has this ``kind``. It gets its own best model, table and ``check --task NAME``."""

    name: str  # "speech-to-text"
    title: str  # "Speech to text"
    kind: str  # the entries' kind: "stt"
    verb: str = ""  # what a person does with it, for short labels: "transcribe"

    def has(self, model) -> bool:
        return getattr(model, "kind", None) == self.kind


def never(*_args) -> None:
    """A task hook that has nothing to say."""
    return None


def no_notes(*_args) -> list[str]:
    return []


def no_words(*_args) -> str:
    return ""


@dataclass(frozen=True)
class Task:
    """What the one judge (gpuready.tasks.judge) needs from a task. Each hook is a plain function.

    parse(entry, quants) -> model: read one catalogue entry (raise CatalogError naming the key).
    variants(model, catalog, gpu, options) -> [variant id]: the variants worth judging here.
    estimate(model, variant, catalog, gpu, cpu, options) -> estimate of that variant.
    level(model, estimate, options) -> (level, reasons): the speed against the task's floors.
    describe(model, estimate, options) -> the headline speed in words ("about 20 tokens/s generation").
    describe_after_band(model, estimate, options) -> words that follow the headline's band: a second
        figure with its own band (text generation: ", 900 tokens/s prompt (+/-49%)").
    runtime(model, estimate, gpu, catalog) -> the runtime that would run it ("whisper.cpp (CUDA)").
    quality(model, variant, catalog) -> (preference, label): higher preference is picked first
        among variants at the same level; label is lossless | near-lossless | good | fair | poor | None.
    refuse(model, variant, estimate, gpu, catalog) -> why no runtime here can run this variant, or None.
    suggest(model, chosen, catalog, gpu, cpu, options) -> task-specific "what would
        change it" lines (text generation: a shorter context).
    least_memory(model, chosen, candidates, catalog, cpu, options) -> for a model that fits
        nowhere, the memory it needs at its smallest (None: the smallest variant judged).
    notes(model, hardware, gpu) -> lines added to the reasons (an NPU that is not used).
    at_risk(model, estimate, gpu, cpu) -> why a variant that fits at its point estimate may still run out of
        memory (fine-tuning: the high end of its memory range is over what is usable), or None; such a
        variant is judged at most 'runs', so one whose whole range fits is picked before it.
    context(model, options) -> the context length judged, or None where a task has none.
    groups: the parts of the task a person asks about on their own (speech: listening and speaking).
    """

    name: str
    title: str
    parse: Callable[..., Any]
    variants: Callable[..., list[str]]
    estimate: Callable[..., AnyEstimate]
    level: Callable[..., tuple[str, list[str]]]
    describe: Callable[..., str]
    runtime: Callable[..., str]
    quality: Callable[..., tuple[float, str | None]]
    refuse: Callable[..., str | None] = never
    suggest: Callable[..., list[str]] = no_notes
    notes: Callable[..., list[str]] = no_notes
    context: Callable[..., int | None] = never
    least_memory: Callable[..., str] | None = None
    describe_after_band: Callable[..., str] = no_words
    at_risk: Callable[..., str | None] = never
    # Among runnable variants, whether a fuller GPU placement beats quality: for text generation a
    # split GPU+CPU placement is several times slower, so yes; elsewhere the higher quality wins.
    placement_first: bool = False
    groups: tuple[Group, ...] = ()

    def group_of(self, model) -> Group | None:
        return next((group for group in self.groups if group.has(model)), None)
    speed_unknown: str = "device throughput unknown: speed not estimated"
    # A task that judges another task's catalogue entries (fine-tuning judges the text-generation
    # LLMs): it has no catalogue file of its own and its verdicts carry its own name.
    models_from: str | None = None
    # The flag that fixes a variant, for "what would change it" lines.
    variant_flag: str = "--quant"

    @property
    def entries_task(self) -> str:
        """The task whose catalogue entries this task judges."""
        return self.models_from or self.name


def listed_variants(model, catalog, gpu, options) -> list[str]:
    """The variant the user fixed when the model has it, else all the model's variants."""
    return [options.quant] if options.quant in model.quants else list(model.quants)


def without_cpu_fp16(listed: list[str], gpu, options) -> list[str]:
    """With no GPU, fp16 is dropped where fp32 is listed (unless the user asked for it): the PyTorch-class
    runtimes these tasks name run fp32 on a CPU (their default; hexgrad's Kokoro and sentence-transformers'
    models load as fp32, and the CPU rows their speeds are fitted on are fp32)."""
    if gpu is None and not options.quant and "fp32" in listed:
        return [v for v in listed if v != "fp16"]
    return listed


def bits_quality(bits: Mapping[str, float]) -> Callable[..., tuple[float, None]]:
    """Prefer more bits up to 16 (16-bit weights over 32: same results, half the memory)."""

    def quality(model, variant: str, catalog) -> tuple[float, None]:
        value = bits.get(variant, 8)
        return (value if value <= 16 else 16 - value / 100), None

    return quality


def place_whole(components: Mapping[str, int], gpu: Device | None, cpu: Device) -> tuple[str, Device, tuple[MemoryPart, ...]]:
    """All of a model on one GPU when it fits there with the runtime's overhead, else on the CPU:
    (placement, device, memory parts with the overhead added). Of a group of identical GPUs the model
    gets one card: these runtimes put a model on one device."""
    gpu = one_card(gpu)
    needed = sum(components.values())
    placement, device, overhead = "cpu", cpu, RUNTIME_OVERHEAD_BYTES["cpu"]
    if gpu is not None and gpu.usable_memory_bytes:
        gpu_overhead = RUNTIME_OVERHEAD_BYTES.get(gpu.backend, RUNTIME_OVERHEAD_BYTES["cpu"])
        if needed + gpu_overhead <= gpu.usable_memory_bytes:
            placement, device, overhead = "gpu", gpu, gpu_overhead
    where = "gpu" if placement == "gpu" else "system"
    parts = tuple(MemoryPart(label, size, where) for label, size in components.items())
    return placement, device, parts + (MemoryPart("runtime overhead", overhead, where),)
