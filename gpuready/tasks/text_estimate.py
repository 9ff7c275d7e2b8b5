"""A language model as the catalogue describes it, and estimates of its memory and speed on a
device: pure functions, no I/O.

Memory is a breakdown (weights, KV cache, compute buffers, runtime overhead). Speed
follows the roofline of token generation: every generated token reads every active
weight once (bandwidth bound); prompt tokens are processed in batches and are compute
bound (2 x active parameters FLOPs a token). Each number carries its basis and an
uncertainty band, and the efficiency constants cite where they come from.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from gpuready.catalog.loader import Quant
from gpuready.tasks.base import Headline
from gpuready.tasks.devices import RUNTIME_OVERHEAD_BYTES, Device

# llama.cpp's default micro-batch (n_ubatch = 512): compute buffers scale with it.
UBATCH_TOKENS = 512
# Bytes per KV-cache element: llama.cpp caches K and V in f16 by default (--cache-type-k f16).
KV_BYTES_PER_ELEMENT = 2
# Vocabulary assumed when a model does not state one (Llama 2 / Mistral 7B size).
DEFAULT_VOCAB = 32000

# Share of peak memory bandwidth that llama.cpp's token generation reaches, per backend,
# and share of peak FP16 (GPU) or estimated peak (CPU) throughput its prompt processing
# reaches. Each is the median of measured / theoretical-at-100% over the rows of
# benchmarks/validation/text-generation.toml whose hardware is in catalog/gpus.toml (CPU
# rows: benchmarks/score_estimator.py CPU_SPECS + catalog/cpus.toml), computed by
# benchmarks/score_estimator.py (results in benchmarks/ACCURACY.md). Sources of those rows:
# XiongjieDai/GPU-Benchmarks-on-LLM-Inference (CUDA and Apple, Llama 3 8B/70B), llama.cpp
# discussion #4167 (Apple silicon, Llama 2 7B) and #15013 (CUDA), llama.cpp Vulkan/ROCm
# pull-request tables (RX 6700 XT, RX 9070 XT, RTX 3090 Vulkan), and CPU llama-bench posts.
# Rows fitted: generation cuda 45, metal 30, vulkan 12, rocm 5, cpu 18; prompt cuda 45,
# metal 21, vulkan 10, rocm 4, cpu 12. sycl has no rows: its values are unfitted guesses
# (kept from the first draft) and its estimates carry the "assumed" uncertainty.
# CPU (mainline llama.cpp only; ik_llama.cpp and llamafile rows are scored but not fitted):
# EPYC 9554 on 12-channel DDR5-4800 (ahelpme.com/?p=6685, Phi-4 14B, four quants), a
# 32-vCPU Graviton3 instance (llama.cpp PR #29256's NEON baseline, Llama 3.2 3B Q6_K); Ryzen 9
# 7950X and 5900X on DDR5/DDR4-3600 (llama.cpp issue #4716, Mixtral Q8_0) and the 7950X
# mainline figures in ik_llama.cpp PRs #54 and #533 (Llama 3.1 8B Q4_0/Q8_0); Ryzen 7 8840U,
# i3-14100, i5-9500 (brand-o/normiebench issues #8, #36, #34, Llama 3.1 8B Q4_K_M); i3-1315U
# (geerlingguy/sbc-reviews #107); Apple M1 Max / M3 / M3 Max (XiongjieDai) and M2 Ultra
# (justine.lol/matmul) CPU-only rows. Rows with a stated memory configuration use its
# bandwidth, the rest catalog/cpus.toml's. x86 desktops and the servers imply 0.51-0.85 of peak
# bandwidth, the two x86 laptops 0.29 (2 threads) and 0.39 (table LPDDR5X speed assumed);
# the Apple rows 0.26-0.50: their CPU clusters cannot draw the whole unified-memory
# bandwidth the table lists.
BANDWIDTH_EFFICIENCY = {
    "cuda": 0.68,
    "rocm": 0.49,
    "vulkan": 0.60,
    "sycl": 0.50,
    "metal": 0.73,
    "cpu": 0.57,
}
COMPUTE_EFFICIENCY = {
    "cuda": 0.35,
    "rocm": 0.55,
    "vulkan": 0.47,
    "sycl": 0.30,
    "metal": 0.63,
    "cpu": 0.73,
}
# Relative uncertainty of a speed estimate: the spread of the validation set's errors,
# wider where the bandwidth itself was assumed rather than known.
SPEED_UNCERTAINTY = {"measured": 0.25, "table": 0.25, "assumed": 0.5}
MEMORY_UNCERTAINTY = 0.10


@dataclass(frozen=True)
class LanguageModel:
    """A text-generation model's architecture, as its config.json gives it."""

    id: str
    name: str
    params: float
    active_params: float
    layers: int
    hidden_size: int
    attention_heads: int
    kv_heads: int
    head_dim: int
    context_length: int
    quants: tuple[str, ...]
    source: str
    family: str | None = None
    publisher: str | None = None
    released: str | None = None
    license: str | None = None
    hf_repo: str | None = None
    vocab_size: int | None = None
    sliding_window: int | None = None
    sliding_window_layers: int = 0
    experts: int | None = None
    experts_per_token: int | None = None
    gguf_sizes: Mapping[str, float] = field(default_factory=dict)
    gguf_source: str | None = None
    mlx: bool = False
    notes: str | None = None
    origin: str = ""
    task: str = "text-generation"

    @property
    def is_moe(self) -> bool:
        return self.active_params < self.params


@dataclass(frozen=True)
class MemoryBreakdown:
    weights_bytes: int
    kv_cache_bytes: int
    compute_bytes: int
    overhead_bytes: int

    @property
    def total_bytes(self) -> int:
        return self.weights_bytes + self.kv_cache_bytes + self.compute_bytes + self.overhead_bytes


@dataclass(frozen=True)
class Speed:
    generation_tokens_per_s: float
    generation_tokens_per_s_full_context: float
    prompt_tokens_per_s: float
    uncertainty: float  # relative, e.g. 0.25 = +/-25%


@dataclass(frozen=True)
class Estimate:
    """Memory and speed of one model variant at one context on one placement."""

    model_id: str
    quant: str
    context_tokens: int
    placement: str  # gpu | split | cpu
    memory: MemoryBreakdown
    gpu_fraction: float  # share of layers on the GPU(s)
    gpu_memory_bytes: int  # what lands in GPU memory
    system_memory_bytes: int  # what lands in system memory
    speed: Speed | None
    basis: tuple[str, ...]

    @property
    def headline(self) -> Headline | None:
        """Generation speed at an empty context: the figure a text-generation verdict leads with."""
        if self.speed is None:
            return None
        return Headline(self.speed.generation_tokens_per_s, "tokens/s", self.speed.uncertainty)


def weights_bytes(model: LanguageModel, quant: Quant) -> tuple[int, str]:
    """Size of the weights in this quantisation: the real file size when known, else parameters x bits."""
    if quant.id in model.gguf_sizes:
        return int(model.gguf_sizes[quant.id]), f"weights: real {quant.id} file size"
    size = int(model.params * quant.bits_per_weight / 8)
    return size, f"weights: {model.params / 1e9:.2f}B parameters x {quant.bits_per_weight:.2f} bits ({quant.id})"


def kv_cache_bytes(model: LanguageModel, context_tokens: int) -> int:
    """K and V for every layer at this context; sliding-window layers hold at most their window."""
    per_token_per_layer = 2 * model.kv_heads * model.head_dim * KV_BYTES_PER_ELEMENT
    window_layers = model.sliding_window_layers
    full_layers = model.layers - window_layers
    window_tokens = min(context_tokens, model.sliding_window or context_tokens)
    return per_token_per_layer * (full_layers * context_tokens + window_layers * window_tokens)


def compute_bytes(model: LanguageModel) -> int:
    """llama.cpp's compute buffer with flash attention: f32 logits of one micro-batch plus its activations.

    Calibration: a 3.9B model with a 50,688-token vocabulary and 3,072 hidden size logs
    "CUDA0 compute buffer size = 105.00 MiB" at n_ubatch 512
    (https://github.com/mozilla-ai/llamafile/pull/552); this formula gives 111 MiB.
    """
    vocab = model.vocab_size or DEFAULT_VOCAB
    return UBATCH_TOKENS * 4 * (vocab + 4 * model.hidden_size)


def memory_breakdown(model: LanguageModel, quant: Quant, context_tokens: int, backend: str) -> MemoryBreakdown:
    weights, _ = weights_bytes(model, quant)
    return MemoryBreakdown(
        weights_bytes=weights,
        kv_cache_bytes=kv_cache_bytes(model, context_tokens),
        compute_bytes=compute_bytes(model),
        overhead_bytes=RUNTIME_OVERHEAD_BYTES.get(backend, RUNTIME_OVERHEAD_BYTES["cpu"]),
    )


def _seconds_per_token(bytes_read: float, device: Device) -> float:
    efficiency = BANDWIDTH_EFFICIENCY.get(device.backend, BANDWIDTH_EFFICIENCY["cpu"])
    return bytes_read / (device.bandwidth_bytes_per_s * efficiency)


def _prompt_seconds_per_token(model: LanguageModel, device: Device) -> float:
    efficiency = COMPUTE_EFFICIENCY.get(device.backend, COMPUTE_EFFICIENCY["cpu"])
    return 2 * model.active_params / (device.flops * efficiency)


def speed(
    model: LanguageModel,
    memory: MemoryBreakdown,
    context_tokens: int,
    gpu: Device | None,
    cpu: Device,
    gpu_fraction: float,
) -> Speed | None:
    """Tokens per second for generation (bandwidth bound) and prompt (compute bound); time on each device adds up."""
    active_share = model.active_params / model.params
    weights_read = memory.weights_bytes * active_share
    devices = [(gpu, gpu_fraction), (cpu, 1.0 - gpu_fraction)]
    if any(fraction > 0 and (device is None or not device.bandwidth_bytes_per_s) for device, fraction in devices):
        return None
    empty = full = prompt = 0.0
    for device, fraction in devices:
        if fraction <= 0:
            continue
        empty += _seconds_per_token(weights_read * fraction, device)
        full += _seconds_per_token((weights_read + memory.kv_cache_bytes) * fraction, device)
        if device.flops:
            prompt += _prompt_seconds_per_token(model, device) * fraction
    sources = [device.bandwidth_source for device, fraction in devices if fraction > 0]
    uncertainty = max(SPEED_UNCERTAINTY.get(source, 0.5) for source in sources)
    return Speed(
        generation_tokens_per_s=1.0 / empty,
        generation_tokens_per_s_full_context=1.0 / full,
        prompt_tokens_per_s=(1.0 / prompt) if prompt else 0.0,
        uncertainty=uncertainty,
    )


def estimate(
    model: LanguageModel,
    quant: Quant,
    context_tokens: int,
    gpu: Device | None,
    cpu: Device,
    system_usable_bytes: int | None,
) -> Estimate:
    """The best placement for this variant: all on the GPU, split GPU + CPU, or CPU only."""
    _, weights_basis = weights_bytes(model, quant)
    basis = [weights_basis, f"KV cache: {model.layers} layers x {model.kv_heads} KV heads x {model.head_dim} dims x {context_tokens:,} tokens x 2 (K,V) x f16"]
    if model.sliding_window_layers:
        basis[-1] += f"; {model.sliding_window_layers} sliding-window layers hold {min(context_tokens, model.sliding_window or 0):,} tokens"
    if model.is_moe:
        basis.append(f"mixture of experts: memory for all {model.params / 1e9:.1f}B parameters, speed from the {model.active_params / 1e9:.1f}B active")
    if gpu is not None and gpu.usable_memory_bytes:
        memory = memory_breakdown(model, quant, context_tokens, gpu.backend)
        overhead = memory.overhead_bytes * gpu.count
        memory = MemoryBreakdown(memory.weights_bytes, memory.kv_cache_bytes, memory.compute_bytes, overhead)
        if memory.total_bytes <= gpu.usable_memory_bytes:
            basis.append(f"all layers on {gpu.name} ({gpu.backend})")
            return Estimate(model.id, quant.id, context_tokens, "gpu", memory, 1.0, memory.total_bytes, 0,
                            speed(model, memory, context_tokens, gpu, cpu, 1.0), _with_speed_basis(basis, gpu, cpu, 1.0))
        if not gpu.unified:
            layer_bytes = memory.weights_bytes + memory.kv_cache_bytes
            room = gpu.usable_memory_bytes - memory.compute_bytes - memory.overhead_bytes
            fraction = max(0.0, min(1.0, room / layer_bytes)) if layer_bytes else 0.0
            # Whole layers only: llama.cpp offloads an integer number of layers (-ngl).
            fraction = int(fraction * model.layers) / model.layers
            system_part = int(layer_bytes * (1 - fraction)) + RUNTIME_OVERHEAD_BYTES["cpu"]
            if fraction > 0 and (system_usable_bytes is None or system_part <= system_usable_bytes):
                gpu_part = int(layer_bytes * fraction) + memory.compute_bytes + memory.overhead_bytes
                basis.append(
                    f"{int(fraction * model.layers)} of {model.layers} layers on {gpu.name}, the rest in system memory "
                    "(each token's time is the sum of both parts)"
                )
                return Estimate(model.id, quant.id, context_tokens, "split", memory, fraction, gpu_part, system_part,
                                speed(model, memory, context_tokens, gpu, cpu, fraction), _with_speed_basis(basis, gpu, cpu, fraction))
    memory = memory_breakdown(model, quant, context_tokens, "cpu")
    basis.append("all layers on the CPU, weights in system memory")
    return Estimate(model.id, quant.id, context_tokens, "cpu", memory, 0.0, 0, memory.total_bytes,
                    speed(model, memory, context_tokens, None, cpu, 0.0), _with_speed_basis(basis, None, cpu, 0.0))


def _with_speed_basis(basis: list[str], gpu: Device | None, cpu: Device, gpu_fraction: float) -> tuple[str, ...]:
    lines = list(basis)
    for device, fraction in ((gpu, gpu_fraction), (cpu, 1 - gpu_fraction)):
        if device is None or fraction <= 0:
            continue
        if device.bandwidth_bytes_per_s:
            lines.append(
                f"generation: {device.name} bandwidth {device.bandwidth_bytes_per_s / 1e9:.0f} GB/s ({device.bandwidth_source})"
                f" x {BANDWIDTH_EFFICIENCY.get(device.backend, 0.5):.0%} {device.backend} efficiency"
            )
        else:
            lines.append(f"generation: bandwidth of {device.name} unknown, speed not estimated")
        if device.flops:
            lines.append(
                f"prompt: {device.flops / 1e12:.1f} TFLOPS peak x {COMPUTE_EFFICIENCY.get(device.backend, 0.3):.0%} {device.backend} efficiency"
            )
    return tuple(lines)
