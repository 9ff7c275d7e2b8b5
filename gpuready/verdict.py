"""Judge each catalogue model on a machine: best variant and placement, a level, and plain reasons.

Pure: takes Hardware and the catalogue, returns Verdicts. Levels, best first:
runs-well, runs, slow, too-slow (fits, but below the usable floor), does-not-fit, unknown.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpuready import estimate as est
from gpuready.catalog import Catalog, LanguageModel, Quant
from gpuready.devices import cpu_device, gpu_device, memory_word
from gpuready.hardware import Hardware

LEVELS = ("runs-well", "runs", "slow", "too-slow", "does-not-fit", "unknown")
RUNNABLE = ("runs-well", "runs", "slow")
DEFAULT_CONTEXT_TOKENS = 8192

# Generation speed floors for text generation, tokens/s. Adults read about 238 words a
# minute silently (Brysbaert 2019, "How many words do we read per minute?", J. Memory and
# Language 109), about 5 tokens/s at ~1.3 tokens a word: "runs" keeps ahead of a reader,
# "slow" is usable with patience, below it a model is too slow to use.
TEXT_GENERATION_FLOORS = {"runs-well": 20.0, "runs": 8.0, "slow": 3.0}
# A prompt this long that takes longer than PROMPT_PATIENCE_S to read in caps the level at "runs".
PROMPT_TOKENS_FOR_PATIENCE = 2000
PROMPT_PATIENCE_S = 30.0

# Weakest accepted placement last. "offload" (image models: components take turns on the GPU,
# all compute stays there) ranks above "split" (layers computed by the CPU).
PLACEMENT_ORDER = ("gpu", "offload", "split", "cpu")
RUNTIME_BY_BACKEND = {
    "cuda": "llama.cpp (CUDA)",
    "rocm": "llama.cpp (ROCm/HIP)",
    "metal": "llama.cpp (Metal) or MLX",
    "vulkan": "llama.cpp (Vulkan)",
    "sycl": "llama.cpp (SYCL) or OpenVINO",
    "cpu": "llama.cpp (CPU)",
}


@dataclass(frozen=True)
class VariantVerdict:
    quant: str
    level: str
    placement: str | None
    memory_needed_bytes: int
    generation_tokens_per_s: float | None


@dataclass(frozen=True)
class Verdict:
    task: str
    model_id: str
    model_name: str
    model_params: float
    level: str
    quant: str | None
    context_tokens: int
    placement: str | None  # gpu | split | cpu, None when it does not fit
    runtime: str | None
    memory_needed_bytes: int | None
    memory_available_bytes: int | None
    estimate: est.Estimate | None
    reasons: tuple[str, ...]
    suggestions: tuple[str, ...] = ()
    variants: tuple[VariantVerdict, ...] = field(default=())
    # The headline speed in the task's own unit (text generation: generation tokens/s),
    # and its relative uncertainty, so front ends need not know each task's estimate.
    speed: float | None = None
    speed_unit: str | None = None
    uncertainty: float | None = None
    quality: str | None = None  # of the variant: lossless, near-lossless, good, fair, poor


@dataclass(frozen=True)
class Options:
    """What the user asked for: a context length, a fixed quantisation (or variant), the weakest
    placement accepted, and the other tasks' sizes (documents to index, image resolution)."""

    context_tokens: int | None = None
    quant: str | None = None
    placement: str = "cpu"  # gpu: GPU only; offload: or model offload; split: or GPU+CPU split; cpu: anything
    documents: int | None = None  # document search: size of the collection to index
    resolution: tuple[int, int] | None = None  # image generation: width, height (default: the model's own)
    # Runtime results kept by `gpuready bench` (gpuready.bench.results): llama-bench's ModelSpeed
    # (real tokens/s) and whisper-bench's EncoderTime (real encoder seconds).
    measured_speeds: tuple = ()


def fmt_gb(value: float | None) -> str:
    """Binary gigabytes labelled GB, as RAM and VRAM are sold and as operating systems show them."""
    if value is None:
        return "unknown"
    return f"{value / 1024**3:.1f} GB"


# --- judging one variant ----------------------------------------------------------------


def speed_level(tokens_per_s: float | None) -> str:
    if tokens_per_s is None:
        return "unknown"
    for level in ("runs-well", "runs", "slow"):
        if tokens_per_s >= TEXT_GENERATION_FLOORS[level]:
            return level
    return "too-slow"


# Which runtimes load each weight format: GGUF (and gpt-oss's native MXFP4, also published
# as GGUF) run in llama.cpp on every backend; MLX only on Apple silicon; AWQ and FP8
# checkpoints in vLLM-class servers on CUDA or ROCm GPUs, whole on the GPU.
GPU_ONLY_FORMATS = {"mlx": ("metal",), "awq": ("cuda", "rocm"), "fp8": ("cuda", "rocm")}
FORMAT_RUNTIMES = {"mlx": "MLX", "awq": "vLLM (AWQ)", "fp8": "vLLM (FP8)"}


def format_unsupported(quant: Quant, gpu: est.Device | None) -> str | None:
    """Why no runtime here can load this weight format, or None when one can."""
    backends = GPU_ONLY_FORMATS.get(quant.format)
    if backends is None or (gpu is not None and gpu.backend in backends):
        return None
    return f"{quant.id} weights need {FORMAT_RUNTIMES[quant.format]} on a {' or '.join(backends).upper()} GPU"


def judge_variant(
    model: LanguageModel, quant: Quant, context: int, gpu: est.Device | None, cpu: est.Device, options: Options
) -> tuple[str, est.Estimate, list[str]]:
    """Level, estimate and reasons for one quantisation of one model."""
    system_usable = cpu.usable_memory_bytes
    unsupported = format_unsupported(quant, gpu)
    if quant.format in GPU_ONLY_FORMATS:
        estimate = est.estimate(model, quant, context, gpu if not unsupported else None, cpu, 0)
        if unsupported or estimate.placement != "gpu":
            reason = unsupported or f"{quant.id} must fit whole in GPU memory: needs {fmt_gb(estimate.memory.total_bytes)}"
            return "does-not-fit", estimate, [reason]
    else:
        estimate = est.estimate(model, quant, context, gpu, cpu, system_usable)
    if options.measured_speeds:
        from gpuready.bench.apply import with_measured_speed

        estimate = with_measured_speed(estimate, model, options.measured_speeds)
    reasons: list[str] = []
    allowed = PLACEMENT_ORDER[: PLACEMENT_ORDER.index(options.placement) + 1]
    if estimate.placement == "gpu":
        spare = gpu.usable_memory_bytes - estimate.gpu_memory_bytes
        reasons.append(f"fits in {fmt_gb(gpu.usable_memory_bytes)} {memory_word(gpu)} with {fmt_gb(spare)} to spare")
    elif estimate.placement == "split":
        needed = estimate.memory.total_bytes
        reasons.append(
            f"needs {fmt_gb(needed)}, {'GPUs have' if gpu.count > 1 else 'GPU has'} {fmt_gb(gpu.usable_memory_bytes)} free: "
            f"{estimate.gpu_fraction:.0%} of layers on GPU, the rest from system memory"
        )
    else:
        if system_usable is None:
            return "unknown", estimate, ["system memory could not be read, so fit is unknown"]
        if estimate.system_memory_bytes > system_usable:
            where = "GPU or system memory" if gpu else "system memory"
            reasons.append(
                f"needs {fmt_gb(estimate.memory.total_bytes)}, only {fmt_gb(system_usable)} of {where} is available"
            )
            return "does-not-fit", estimate, reasons
        prefix = f"too big for {gpu.name} ({fmt_gb(gpu.usable_memory_bytes)} usable); " if gpu else ""
        reasons.append(f"{prefix}runs on the CPU from system memory ({fmt_gb(system_usable)} available)")
    if estimate.placement not in allowed:
        reasons.append(f"placement '{estimate.placement}' is not accepted (only {', '.join(allowed)})")
        return "does-not-fit", estimate, reasons
    if estimate.speed is None:
        reasons.append("memory bandwidth unknown: speed not estimated")
        return "unknown", estimate, reasons
    level = speed_level(estimate.speed.generation_tokens_per_s)
    if level == "too-slow":
        reasons.append(
            f"about {estimate.speed.generation_tokens_per_s:.1f} tokens/s: below the {TEXT_GENERATION_FLOORS['slow']:.0f} tokens/s floor of usable"
        )
    prompt = estimate.speed.prompt_tokens_per_s
    if prompt and PROMPT_TOKENS_FOR_PATIENCE / prompt > PROMPT_PATIENCE_S and level == "runs-well":
        level = "runs"
        reasons.append(
            f"a {PROMPT_TOKENS_FOR_PATIENCE:,}-token prompt takes about {PROMPT_TOKENS_FOR_PATIENCE / prompt:.0f} s to read before the first word"
        )
    return level, estimate, reasons


def effective_rank(level: str, quality: str | None) -> int:
    """A level's rank, one step worse for a variant of poor quality: a good 4-bit variant
    that runs beats a 2-bit one that runs well, and a 24B at 4 bits beats a 32B at 2 bits."""
    rank = LEVELS.index(level)
    return rank + 1 if level in RUNNABLE and quality == "poor" else rank


def _quality_key(quant: Quant) -> float:
    """Prefer more bits up to 8-bit; 16-bit weights cost twice the memory for no visible gain."""
    return quant.bits_per_weight if quant.bits_per_weight <= 8.6 else 8.6 - quant.bits_per_weight / 100


def judge_model(model: LanguageModel, catalog: Catalog, hardware: Hardware, options: Options) -> Verdict:
    context = min(options.context_tokens or DEFAULT_CONTEXT_TOKENS, model.context_length)
    gpu = gpu_device(hardware)
    cpu = cpu_device(hardware)
    quant_ids = [options.quant] if options.quant else [
        q for q in model.quants if not format_unsupported(catalog.quants[q], gpu)
    ] or list(model.quants)
    results = []
    for quant_id in quant_ids:
        quant = catalog.quants[quant_id]
        level, estimate, reasons = judge_variant(model, quant, context, gpu, cpu, options)
        results.append((quant, level, estimate, reasons))
    variants = tuple(
        VariantVerdict(
            quant=q.id,
            level=level,
            placement=e.placement if level in RUNNABLE or level == "too-slow" else None,
            memory_needed_bytes=e.memory.total_bytes,
            generation_tokens_per_s=e.speed.generation_tokens_per_s if e.speed else None,
        )
        for q, level, e, _ in results
    )
    # Best level first; among runnable variants the fullest GPU placement, then the highest
    # quality; among the others the smallest (the one closest to fitting).
    quant, level, estimate, reasons = min(
        results,
        key=lambda r: (
            effective_rank(r[1], r[0].quality),
            PLACEMENT_ORDER.index(r[2].placement) if r[1] in RUNNABLE else 0,  # GPU before split before CPU
            -_quality_key(r[0]) if r[1] in RUNNABLE else r[2].memory.total_bytes,
            r[2].memory.total_bytes,
        ),
    )
    fits = level in RUNNABLE or level == "too-slow"
    available = gpu.usable_memory_bytes if (estimate.placement in ("gpu", "split") and gpu) else cpu.usable_memory_bytes
    speed = estimate.speed
    if fits and speed:
        reasons = [
            f"{quant.id}: about {speed.generation_tokens_per_s:.0f} tokens/s generation, "
            f"{speed.prompt_tokens_per_s:.0f} tokens/s prompt (+/-{speed.uncertainty:.0%})"
            if speed.prompt_tokens_per_s
            else f"{quant.id}: about {speed.generation_tokens_per_s:.0f} tokens/s generation (+/-{speed.uncertainty:.0%})",
            *reasons,
        ]
    runtime = None
    if fits:
        runtime = FORMAT_RUNTIMES.get(quant.format) or RUNTIME_BY_BACKEND.get(
            gpu.backend if gpu and estimate.placement != "cpu" else "cpu"
        )
    reasons += device_notes(hardware, gpu if estimate.placement in ("gpu", "split") else None)
    return Verdict(
        task="text-generation",
        model_id=model.id,
        model_name=model.name,
        model_params=model.params,
        level=level,
        quant=quant.id,
        context_tokens=context,
        placement=estimate.placement if fits else None,
        runtime=runtime,
        memory_needed_bytes=estimate.memory.total_bytes,
        memory_available_bytes=available,
        estimate=estimate,
        reasons=tuple(reasons),
        suggestions=tuple(suggestions(model, catalog, gpu, cpu, options, context, level, quant)),
        variants=variants,
        quality=quant.quality,
        speed=speed.generation_tokens_per_s if fits and speed else None,
        speed_unit="tokens/s" if fits and speed else None,
        uncertainty=speed.uncertainty if fits and speed else None,
    )


# What runs LLMs on each NPU today, outside llama.cpp-class runtimes (catalog/npus.toml runtimes).
NPU_LLM_RUNTIMES = {
    "intel": "OpenVINO GenAI runs some exported LLMs on it",
    "amd": "AMD's Ryzen AI Software runs some ONNX LLMs on it",
    "qualcomm": "ONNX Runtime with QNN runs some prepared LLMs on it",
    "apple": "only Core ML models converted for it use it",
}


def device_notes(hardware: Hardware, gpu: est.Device | None) -> list[str]:
    """Why an NPU is listed but not used, and what the usable memory of a Metal GPU means."""
    notes = []
    if gpu is not None and gpu.backend == "metal" and gpu.unified:
        notes.append(
            "usable GPU memory is Metal's working-set limit (about 2/3 of unified memory up to 32 GB, "
            "3/4 above), or iogpu.wired_limit_mb when raised"
        )
    for npu in hardware.npus:
        tops = f", {npu.tops_int8:g} TOPS" if npu.tops_int8 else ""
        notes.append(
            f"{npu.name}{tops}: not used, llama.cpp-class runtimes have no NPU backend; "
            + NPU_LLM_RUNTIMES.get(npu.vendor, "no LLM runtime targets it")
        )
    return notes


def suggestions(
    model: LanguageModel,
    catalog: Catalog,
    gpu: est.Device | None,
    cpu: est.Device,
    options: Options,
    context: int,
    level: str,
    quant: Quant,
) -> list[str]:
    """What would change the answer: a smaller quantisation, a shorter context, more memory."""
    if level in ("runs-well", "unknown"):
        return []
    found = []
    smaller = [catalog.quants[q] for q in model.quants if catalog.quants[q].bits_per_weight < quant.bits_per_weight]
    for candidate in sorted(smaller, key=lambda q: -q.bits_per_weight):
        candidate_level, estimate, _ = judge_variant(model, candidate, context, gpu, cpu, options)
        if LEVELS.index(candidate_level) < LEVELS.index(level):
            found.append(f"--quant {candidate.id} would make it '{candidate_level}' ({fmt_gb(estimate.memory.total_bytes)})")
            break
    for shorter in (4096, 2048):
        if shorter < context:
            shorter_level, estimate, _ = judge_variant(model, quant, shorter, gpu, cpu, options)
            if LEVELS.index(shorter_level) < LEVELS.index(level):
                found.append(f"--context {shorter} would make it '{shorter_level}' ({fmt_gb(estimate.memory.total_bytes)})")
                break
    if level == "does-not-fit":
        smallest = min((catalog.quants[q] for q in model.quants), key=lambda q: q.bits_per_weight)
        need = est.estimate(model, smallest, min(context, 2048), None, cpu, None).memory.total_bytes
        found.append(f"at least {fmt_gb(need)} of free memory is needed even at {smallest.id} with a 2,048-token context")
    return found


def judge_any(model, catalog: Catalog, hardware: Hardware, options: Options) -> Verdict:
    """A verdict for a model of any task: language models here, the other tasks in gpuready.tasks."""
    if isinstance(model, LanguageModel):
        return judge_model(model, catalog, hardware, options)
    from gpuready.tasks import judge_task

    return judge_task(model, catalog, hardware, options)


def judge_all(catalog: Catalog, hardware: Hardware, options: Options, task: str | None = None) -> list[Verdict]:
    """A verdict for every model in the catalogue (or one task), best first."""
    verdicts = [
        judge_any(model, catalog, hardware, options)
        for model in catalog.models.values()
        if task is None or model.task == task
    ]
    return sorted(verdicts, key=rank_key)


def rank_key(verdict: Verdict):
    """Best level first; within a level, the most capable (largest) model first."""
    return (effective_rank(verdict.level, verdict.quality), -verdict.model_params, verdict.model_id)
