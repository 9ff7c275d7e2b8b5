"""Text generation (LLMs): the catalogue entry, its floors, and the task's hooks for the one judge.

The memory and speed formulas live in ``text_estimate``; this module says which variants
are worth judging (weight formats a runtime here can load), how a speed is levelled (the
reading-speed floors, and a prompt that keeps the reader waiting), and what would change
the answer (a smaller quantisation, a shorter context).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from gpuready.catalog.loader import CatalogError, Entry, Quant
from gpuready.hardware import Hardware
from gpuready.tasks import concurrency
from gpuready.tasks import judge as one_judge
from gpuready.tasks import text_estimate as est
from gpuready.tasks.text_estimate import LanguageModel
from gpuready.tasks.base import Task, band_words, level_at_least
from gpuready.tasks.devices import UNIFIED_MEMORY_MARGIN_BYTES, Device
from gpuready.tasks.measured import with_measured_speed
from gpuready.tasks.verdict import LEVELS, level_words
from gpuready.units import fmt_figures, fmt_gb

DEFAULT_CONTEXT_TOKENS = 8192
# Generation speed floors for text generation, tokens/s. Adults read about 238 words a
# minute silently (Brysbaert 2019, "How many words do we read per minute?", J. Memory and
# Language 109), about 5 tokens/s at ~1.3 tokens a word: "runs" keeps ahead of a reader,
# "slow" is usable with patience, below it a model is too slow to use.
TEXT_GENERATION_FLOORS = {"runs-well": 20.0, "runs": 8.0, "slow": 3.0}
# A prompt this long that takes longer than PROMPT_PATIENCE_S to read in caps the level at "runs".
PROMPT_TOKENS_FOR_PATIENCE = 2000
PROMPT_PATIENCE_S = 30.0
RUNTIME_BY_BACKEND = {
    "cuda": "llama.cpp (CUDA)",
    "rocm": "llama.cpp (ROCm/HIP)",
    "metal": "llama.cpp (Metal) or MLX",
    "vulkan": "llama.cpp (Vulkan)",
    "sycl": "llama.cpp (SYCL) or OpenVINO",
    "cpu": "llama.cpp (CPU)",
}
# Which runtimes load each weight format: GGUF (and gpt-oss's native MXFP4, also published
# as GGUF) run in llama.cpp on every backend; MLX only on Apple silicon; AWQ and FP8
# checkpoints in vLLM-class servers on CUDA or ROCm GPUs, whole on the GPU.
GPU_ONLY_FORMATS = {"mlx": ("metal",), "awq": ("cuda", "rocm"), "fp8": ("cuda", "rocm")}
FORMAT_RUNTIMES = {"mlx": "MLX", "awq": "vLLM (AWQ)", "fp8": "vLLM (FP8)"}
BACKEND_GPUS = {"metal": "Apple Silicon (Metal)", "cuda": "an NVIDIA GPU (CUDA)", "rocm": "an AMD GPU (ROCm)"}
# Which of those GPUs vLLM loads each format on (vLLM v0.30.0). CUDA: AWQ's kernels need Turing
# or newer (AWQConfig.get_min_capability: 75); FP8 runs natively from Ada (8.9) and as weight-only
# FP8 through Marlin from 7.5 (marlin_utils_fp8.is_fp8_marlin_supported: has_device_capability(75)).
# ROCm: vLLM takes FP8 on CDNA and RDNA4 only (platforms/rocm.py supports_fp8: on_cdna() or
# on_rdna4(); Marlin is off on ROCm), so not on RDNA2/3/3.5 (gfx10, gfx11: RX 7900, Radeon 8060S);
# of CDNA, only CDNA 3 and 4 (gfx94x MI300, gfx95x MI350) have FP8 matrix instructions (AMD CDNA 3
# ISA: V_MFMA_F32_*_FP8), so an MI100/MI200 (gfx908, gfx90a) or a Vega iGPU (gfx90c) is not offered it.
# A GPU whose capability or target is not known is given the benefit of the doubt.
MIN_CUDA_CAPABILITY = {"awq": (7, 5), "fp8": (7, 5)}
ROCM_TARGET_PREFIXES = {"fp8": ("gfx94", "gfx95", "gfx12")}
ROCM_TARGET_WORDS = {"fp8": "an AMD CDNA 3/4 (gfx94x, gfx95x) or RDNA4 (gfx12) GPU"}
# What runs LLMs on each NPU today, outside llama.cpp-class runtimes (catalog/npus.toml runtimes).
NPU_LLM_RUNTIMES = {
    "intel": "OpenVINO GenAI runs some exported LLMs on it",
    "amd": "AMD's Ryzen AI Software runs some ONNX LLMs on it",
    "qualcomm": "ONNX Runtime with QNN runs some prepared LLMs on it",
    "apple": "only Core ML models converted for it use it",
}


def parse_language_model(entry: Entry, quants: Mapping[str, Quant]) -> LanguageModel:
    """One [[models]] entry of text-generation.toml."""
    params = entry.number("params")
    active = entry.number("active_params", required=False) or params
    if active > params:
        raise CatalogError(f"{entry.where}: 'active_params' must not exceed 'params'")
    layers = entry.integer("layers")
    attention_heads = entry.integer("attention_heads")
    kv_heads = entry.integer("kv_heads")
    if kv_heads > attention_heads:
        raise CatalogError(f"{entry.where}: 'kv_heads' must not exceed 'attention_heads'")
    hidden = entry.integer("hidden_size")
    head_dim = entry.integer("head_dim", required=False) or hidden // attention_heads
    model_quants = entry.known_names("quants", quants, "quantisation", sort=True)
    window_layers = entry.integer("sliding_window_layers", required=False, positive=False) or 0
    if window_layers > layers:
        raise CatalogError(f"{entry.where}: 'sliding_window_layers' must not exceed 'layers'")
    window = entry.integer("sliding_window", required=False)
    if window_layers and not window:
        raise CatalogError(f"{entry.where}: 'sliding_window_layers' needs 'sliding_window'")
    mlx = entry.data.get("mlx", False)
    if not isinstance(mlx, bool):
        raise CatalogError(f"{entry.where}: 'mlx' must be true or false")
    tied = entry.data.get("tied_embeddings")
    if tied is not None and not isinstance(tied, bool):
        raise CatalogError(f"{entry.where}: 'tied_embeddings' must be true or false")
    return LanguageModel(
        params=params,
        active_params=active,
        layers=layers,
        hidden_size=hidden,
        attention_heads=attention_heads,
        kv_heads=kv_heads,
        head_dim=head_dim,
        context_length=entry.integer("context_length"),
        quants=model_quants,
        family=entry.text("family", required=False),
        released=entry.text("released", required=False),
        vocab_size=entry.integer("vocab_size", required=False),
        tied_embeddings=tied,
        sliding_window=window,
        sliding_window_layers=window_layers,
        experts=entry.integer("experts", required=False),
        experts_per_token=entry.integer("experts_per_token", required=False),
        gguf_sizes=entry.mapping("gguf_sizes"),
        gguf_source=entry.text("gguf_source", required=False),
        mlx=mlx,
        **entry.card(),
    )


# --- hooks for the one judge -------------------------------------------------------------


def context_tokens(model: LanguageModel, options) -> int:
    """The context judged: the user's (default 8,192 tokens), capped at the model's maximum."""
    return min(options.context_tokens or DEFAULT_CONTEXT_TOKENS, model.context_length)


def format_unsupported(quant: Quant, gpu: Device | None) -> str | None:
    """Why no runtime here can load this weight format, or None when one can."""
    backends = GPU_ONLY_FORMATS.get(quant.format)
    if backends is None:
        return None
    if gpu is None or gpu.backend not in backends:
        return f"{quant.id} weights need {FORMAT_RUNTIMES[quant.format]} on {' or '.join(BACKEND_GPUS[b] for b in backends)}"
    return _architecture_unsupported(quant, gpu)


def _architecture_unsupported(quant: Quant, gpu: Device) -> str | None:
    """Why this GPU's architecture is too old (or not one vLLM loads the format on), or None."""
    runtime = FORMAT_RUNTIMES[quant.format]
    minimum = MIN_CUDA_CAPABILITY.get(quant.format)
    if gpu.backend == "cuda" and minimum and gpu.compute_capability:
        capability = _capability(gpu.compute_capability)
        if capability is not None and capability < minimum:
            return (f"{quant.id} weights need {runtime} on an NVIDIA GPU of compute capability "
                    f"{minimum[0]}.{minimum[1]} or newer; {gpu.name} is {gpu.compute_capability}")
    prefixes = ROCM_TARGET_PREFIXES.get(quant.format)
    if gpu.backend == "rocm" and prefixes and gpu.gfx_target and not gpu.gfx_target.startswith(prefixes):
        return f"{quant.id} weights need {runtime} on {ROCM_TARGET_WORDS[quant.format]}; {gpu.name} is {gpu.gfx_target}"
    return None


def _capability(text: str) -> tuple[int, int] | None:
    """'8.9' -> (8, 9); None for anything else."""
    major, _, minor = text.partition(".")
    return (int(major), int(minor or 0)) if major.isdigit() and (minor or "0").isdigit() else None


def variants(model: LanguageModel, catalog, gpu: Device | None, options) -> list[str]:
    """The user's quantisation, else every one whose weight format a runtime here can load."""
    if options.quant:
        return [options.quant]
    return [q for q in model.quants if not format_unsupported(catalog.quants[q], gpu)] or list(model.quants)


def estimate(model: LanguageModel, variant: str, catalog, gpu: Device | None, cpu: Device, options) -> est.Estimate:
    """The best placement of this quantisation; GPU-only formats are estimated on the GPU alone.
    With several users (``options.users``), a KV cache for each and batched decoding speeds."""
    quant = catalog.quants[variant]
    context = context_tokens(model, options)
    users = getattr(options, "users", None) or 1
    if quant.format in GPU_ONLY_FORMATS:
        gpu = gpu if not format_unsupported(quant, gpu) else None
        found = est.estimate(model, quant, context, gpu, cpu, 0, users)
    else:
        found = est.estimate(model, quant, context, gpu, cpu, cpu.usable_memory_bytes, users)
    if options.measured_speeds:
        found = with_measured_speed(found, model, options.measured_speeds)
    return with_users(model, found, gpu, cpu, users)


def with_users(model: LanguageModel, found: est.Estimate, gpu: Device | None, cpu: Device, users: int) -> est.Estimate:
    """The estimate with its users, and for more than one the batched speeds (gpuready.tasks.concurrency)."""
    if users <= 1 or found.speed is None:
        return replace(found, users=users)
    kv_per_user = found.memory.kv_cache_bytes // users
    result = concurrency.batched(model, found.memory.weights_bytes, kv_per_user, users,
                                 gpu if found.gpu_fraction > 0 else None, cpu, found.gpu_fraction, found.quant,
                                 found.cpu_expert_layers)
    if result is None:
        return replace(found, users=users)
    return replace(found, users=users, batched=result, basis=found.basis + (concurrency.basis(result, found.context_tokens, model),))


def refuse(model: LanguageModel, variant: str, estimate: est.Estimate, gpu: Device | None, catalog) -> str | None:
    """GPU-only formats (MLX, AWQ, FP8) need their runtime's GPU and all of the model on it."""
    quant = catalog.quants[variant]
    if quant.format not in GPU_ONLY_FORMATS:
        return None
    unsupported = format_unsupported(quant, gpu)
    if unsupported or estimate.placement != "gpu":
        return unsupported or f"{variant} must fit whole in GPU memory: needs {fmt_gb(estimate.memory.total_bytes)}"
    return None


def speed_level(tokens_per_s: float | None) -> str:
    """Generation tokens/s against the reading-speed floors."""
    return level_at_least(tokens_per_s, TEXT_GENERATION_FLOORS)


def level(model: LanguageModel, estimate: est.Estimate, options) -> tuple[str, list[str]]:
    """Generation speed against the reading-speed floors; a long wait for the prompt caps it at 'runs'."""
    generation = estimate.headline.value
    reasons = []
    result = speed_level(generation)
    if result == "too-slow":
        reasons.append(f"about {generation:.1f} tokens/s: below the {TEXT_GENERATION_FLOORS['slow']:.0f} tokens/s floor of usable")
    prompt = estimate.speed.prompt_tokens_per_s
    if prompt and PROMPT_TOKENS_FOR_PATIENCE / prompt > PROMPT_PATIENCE_S and result == "runs-well":
        result = "runs"
        reasons.append(
            f"a {PROMPT_TOKENS_FOR_PATIENCE:,}-token prompt takes about {PROMPT_TOKENS_FOR_PATIENCE / prompt:.0f} s to read before the first word"
        )
    return result, reasons


def describe(model: LanguageModel, estimate: est.Estimate, options) -> str:
    speed = estimate.speed
    if estimate.batched is not None:
        batched = estimate.batched
        return (f"about {fmt_figures(batched.per_user_tokens_per_s)} tokens/s for each of {batched.users} users, "
                f"{fmt_figures(batched.aggregate_tokens_per_s)} tokens/s in all")
    return f"about {fmt_figures(speed.generation_tokens_per_s)} tokens/s generation"


def prompt_words(model: LanguageModel, estimate: est.Estimate, options) -> str:
    """The prompt speed after the generation figure's band, with its own, wider band (PROMPT_BAND)."""
    speed = estimate.speed
    if estimate.batched is not None or not speed.prompt_tokens_per_s:
        return ""
    band = f" ({band_words(speed.prompt_uncertainty)})" if speed.prompt_uncertainty else ""
    return f", {fmt_figures(speed.prompt_tokens_per_s)} tokens/s prompt{band}"


def runtime(model: LanguageModel, estimate: est.Estimate, gpu: Device | None, catalog) -> str:
    return FORMAT_RUNTIMES.get(catalog.quants[estimate.quant].format) or RUNTIME_BY_BACKEND.get(
        gpu.backend if gpu and estimate.placement != "cpu" else "cpu"
    )


def quality(model: LanguageModel, variant: str, catalog) -> tuple[float, str | None]:
    """Prefer more bits up to 8-bit; 16-bit weights cost twice the memory for no visible gain."""
    quant = catalog.quants[variant]
    bits = quant.bits_per_weight
    return (bits if bits <= 8.6 else 8.6 - bits / 100), quant.quality


# The shortest context a hint names, and the step its search moves in.
SHORTEST_HINTED_CONTEXT = 2048
CONTEXT_HINT_STEP = 1024


def suggest(model: LanguageModel, chosen, catalog, gpu: Device | None, cpu: Device, options) -> list[str]:
    """The longest shorter context (in steps of 1,024 tokens, at least 2,048) that would reach a better level.
    A shorter context never needs more memory or runs slower, so "better than now" holds up to some length and
    a binary search finds it: asking for 32k where 24k fits named 4,096 when only 4,096 and 2,048 were tried."""
    context = context_tokens(model, options)

    def better(tokens: int):
        judged = one_judge.judge_variant(TASK, model, chosen.variant, catalog, gpu, cpu, replace(options, context_tokens=tokens))
        return judged if LEVELS.index(judged.level) < LEVELS.index(chosen.level) else None

    if context <= SHORTEST_HINTED_CONTEXT or not (found := better(SHORTEST_HINTED_CONTEXT)):
        return []
    best = (SHORTEST_HINTED_CONTEXT, found)
    low, high = SHORTEST_HINTED_CONTEXT // CONTEXT_HINT_STEP, (context - 1) // CONTEXT_HINT_STEP
    while low < high:
        middle = (low + high + 1) // 2
        judged = better(middle * CONTEXT_HINT_STEP)
        if judged:
            low, best = middle, (middle * CONTEXT_HINT_STEP, judged)
        else:
            high = middle - 1
    tokens, judged = best
    return [f"--context {tokens} would make it '{level_words(judged.level)}' ({fmt_gb(judged.estimate.memory.total_bytes)})"]


def least_memory(model: LanguageModel, chosen, candidates, catalog, cpu: Device, options) -> str:
    """The memory the smallest quantisation needs at a 2,048-token context."""
    smallest = min((catalog.quants[q] for q in model.quants), key=lambda q: q.bits_per_weight)
    context = min(context_tokens(model, options), 2048)
    need = est.estimate(model, smallest, context, None, cpu, None).memory.total_bytes
    return f"at least {fmt_gb(need)} of free memory is needed even at {smallest.id} with a 2,048-token context"


def notes(model: LanguageModel, hardware: Hardware, gpu: Device | None) -> list[str]:
    """Why an NPU is listed but not used, and what the usable memory of a Metal GPU means."""
    found = []
    if gpu is not None and gpu.backend == "metal" and gpu.unified:
        found.append(
            "usable GPU memory is Metal's working-set limit (about 2/3 of unified memory up to 32 GB, "
            "3/4 above), or iogpu.wired_limit_mb when raised"
        )
    elif gpu is not None and gpu.unified:
        found.append(
            f"{UNIFIED_MEMORY_MARGIN_BYTES / 1024**3:g} GiB of the shared memory is kept free (llama.cpp's --fit keeps the same "
            "margin): on unified memory an exact fit can still run out"
        )
    for npu in hardware.npus:
        tops = f", {npu.tops_int8:g} TOPS" if npu.tops_int8 else ""
        found.append(
            f"{npu.name}{tops}: not used, llama.cpp-class runtimes have no NPU backend; "
            + NPU_LLM_RUNTIMES.get(npu.vendor, "no LLM runtime targets it")
        )
    return found


def at_risk(model, estimate, gpu, cpu) -> str | None:
    """A variant whose system-memory part leaves less than llama.cpp's per-device fit margin free
    (devices.UNIFIED_MEMORY_MARGIN_BYTES, 1 GiB: common/common.h fit_params_target): it fits at its estimate, but the
    system and every other program share what is left, and a model paged out to swap generates at disk speed."""
    usable = cpu.usable_memory_bytes
    if estimate.placement not in ("cpu", "split") or usable is None or not estimate.system_memory_bytes:
        return None
    left = usable - estimate.system_memory_bytes
    if left >= UNIFIED_MEMORY_MARGIN_BYTES:
        return None
    return (f"it leaves {fmt_gb(max(0, left))} of system memory free, under the {fmt_gb(UNIFIED_MEMORY_MARGIN_BYTES)} "
            "llama.cpp's --fit keeps free on every device, so the system may swap it out")


TASK = Task(
    name="text-generation",
    title="Text generation",
    parse=parse_language_model,
    variants=variants,
    estimate=estimate,
    level=level,
    describe=describe,
    describe_after_band=prompt_words,
    runtime=runtime,
    quality=quality,
    refuse=refuse,
    suggest=suggest,
    notes=notes,
    context=context_tokens,
    least_memory=least_memory,
    at_risk=at_risk,
    placement_first=True,
    speed_unknown="memory bandwidth unknown: speed not estimated",
)
