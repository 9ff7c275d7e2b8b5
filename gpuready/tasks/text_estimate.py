"""A language model as the catalogue describes it, and estimates of its memory and speed on a
device: pure functions, no I/O.

Memory is a breakdown (weights, KV cache, compute buffers, runtime overhead). Speed
follows the roofline of token generation: every generated token reads every active
weight once (bandwidth bound); prompt tokens are processed in batches and are compute
bound (2 x the parameters a prompt token multiplies, prompt_params, in FLOPs). Each number
carries its basis and an uncertainty band, and the efficiency constants cite where they come
from.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gpuready.catalog.loader import Quant
from gpuready.tasks.base import Headline
from gpuready.tasks.devices import FIT_MARGIN_BYTES, RUNTIME_OVERHEAD_BYTES, Device, host_copy_bytes_per_s

# llama.cpp's default micro-batch (n_ubatch = 512): compute buffers scale with it.
UBATCH_TOKENS = 512
# Bytes per KV-cache element: llama.cpp caches K and V in f16 by default (--cache-type-k f16).
KV_BYTES_PER_ELEMENT = 2
# Vocabulary assumed when a model does not state one (Llama 2 / Mistral 7B size).
DEFAULT_VOCAB = 32000

# Share of peak memory bandwidth that llama.cpp's token generation reaches (K-quants; see
# QUANT_FAMILY_EFFICIENCY), per backend (and "cuda-hbm" for CUDA on HBM GPUs where the held-out
# term choice keeps that class: it dropped it once an H200 measured with a 2026 build joined the
# A100/H100 rows of 2023-24, whose slower per-token overhead the class had absorbed), and
# share of peak FP16 (GPU) or estimated peak (CPU) throughput its prompt processing reaches.
# "vulkan-intel": Intel GPUs under Vulkan (Mesa ANV or Intel's driver), kept by the held-out term
# choice because every Intel GPU measured under Vulkan ran far below the other vendors' share.
# Generation constants are a least-squares fit (with LAYER_SECONDS below) of the rows of
# benchmarks/validation/text-generation.toml whose hardware is in catalog/gpus.toml (CPU rows:
# benchmarks/score_estimator.py CPU_SPECS + catalog/cpus.toml); prompt constants are medians.
# benchmarks/score_estimator.py computes both, with leave-one-device-out errors
# (benchmarks/ACCURACY.md); benchmarks/write_constants.py writes them here. Sources of those rows:
# XiongjieDai/GPU-Benchmarks-on-LLM-Inference (CUDA and Apple, Llama 3 8B/70B), llama.cpp
# discussion #4167 (Apple silicon, Llama 2 7B) and #15013 (CUDA), llama.cpp Vulkan/ROCm
# pull-request tables (RX 6700 XT, RX 9070 XT, RTX 3090 Vulkan), and CPU llama-bench posts.
# sycl: Arc A770, B580, 140V and Meteor Lake rows (llama.cpp PRs and docs/backend/SYCL.md, Intel's
# IPEX-LLM build; benchmarks/validation/text-generation-intel.toml).
# CPU (mainline llama.cpp only; ik_llama.cpp and llamafile rows are scored but not fitted):
# EPYC 9554 on 12-channel DDR5-4800 (ahelpme.com/?p=6685, Phi-4 14B, four quants), a
# 32-vCPU Graviton3 instance (llama.cpp PR #29256's NEON baseline, Llama 3.2 3B Q6_K); Ryzen 9
# 7950X and 5900X on DDR5/DDR4-3600 (llama.cpp issue #4716, Mixtral Q8_0) and the 7950X
# mainline figures in ik_llama.cpp PRs #54 and #533 (Llama 3.1 8B Q4_0/Q8_0); Ryzen 7 8840U,
# i3-14100, i5-9500 (brand-o/normiebench issues #8, #36, #34, Llama 3.1 8B Q4_K_M); i3-1315U
# (geerlingguy/sbc-reviews #107); Apple M1 Max / M3 / M3 Max (XiongjieDai) and M2 Ultra
# (justine.lol/matmul) CPU-only rows. Rows with a stated memory configuration use its
# bandwidth, the rest catalog/cpus.toml's.
BANDWIDTH_EFFICIENCY = {
    "cpu": 0.90,
    "cuda": 0.88,
    "metal": 0.91,
    "rocm": 0.91,
    "sycl": 0.66,
    "vulkan": 0.89,
    "vulkan-intel": 0.46,
}
COMPUTE_EFFICIENCY = {
    "cpu": 0.55,
    "cuda": 0.40,
    "metal": 0.66,
    "rocm": 0.36,
    "sycl": 0.30,
    "vulkan": 0.39,
}
# Relative uncertainty of a speed estimate: the spread of the validation set's errors,
# wider where the bandwidth itself was assumed rather than known.
SPEED_UNCERTAINTY = {"driver": 0.25, "table": 0.25, "assumed": 0.5}

# --- the generation model's further terms (fitted by benchmarks/score_estimator.py) ---------
# Time per generated token = bytes read / (bandwidth x backend efficiency x quant-family
# efficiency) + layers x fixed per-layer cost + active weights x unpacking operations per
# weight / peak FLOPS. The fixed cost is what a token costs beyond reading weights: kernel
# launches and synchronisation, several kernels per layer (norm, attention, matrix-vector
# products), each a few microseconds on CUDA (NVIDIA's Nsight timelines in
# https://github.com/ggml-org/llama.cpp/issues/6763; CUDA graphs, PR #6766, cut it:
# llama-2-7b Q4_K_M on an H100 PCIe from 143 to 164 tokens/s). It is why an 8B Q4_K_M runs
# far below its bandwidth bound on an H100. Each quant family has its own matrix-vector
# kernel: QUANT_FAMILY_EFFICIENCY scales its bytes, UNPACK_OPS_PER_WEIGHT (below) its compute.
# Every value is written by the fit (benchmarks/write_constants.py); a term that did not lower
# the held-out error is dropped there and its constants are neutral (1.0 or 0.0): see
# "Which terms stay" in benchmarks/ACCURACY.md.
QUANT_FAMILY_EFFICIENCY = {
    "float": 1.00,
    "i-quant": 1.00,
    "i-quant-low": 1.00,
    "k-quant": 1.00,
    "k-quant-low": 1.00,
    "legacy": 1.00,
    "mxfp4": 1.00,
}
LAYER_SECONDS = {
    "cpu": 229.2e-6,
    "cuda": 57.1e-6,
    "metal": 127.9e-6,
    "rocm": 94.6e-6,
    "sycl": 147.0e-6,
    "vulkan": 34.0e-6,
    "vulkan-intel": 101.3e-6,
}
# Operations per weight to unpack each quant family inside the matrix-vector kernel, at the
# device's vector (FP32 shader / CUDA-core) rate, where dequantisation runs -- llama.cpp's
# mul_mat_vec and mmvq kernels unpack with integer and FP32 instructions (dp4a on CUDA), not on
# tensor cores -- or its only known rate: a compute cost per weight, not per byte, which is why a 2-bit K-quant
# is not twice as fast as a 4-bit one (llama.cpp PR #4766: on an RTX 3090 Llama 2 7B runs at
# 92 tokens/s in Q2_K and 120 in Q4_0). F16/BF16 need none. Fitted; 0.0 where the fit drops it.
UNPACK_OPS_PER_WEIGHT = {
    "float": 0.00,
    "i-quant": 1.27,
    "i-quant-low": 5.99,
    "k-quant": 3.59,
    "k-quant-low": 14.69,
    "legacy": 2.88,
    "mxfp4": 16.14,
}
# A mixture-of-experts layer's fixed cost in dense layers: routing adds kernels per layer
# (router matmul, top-k selection, gathered expert matmuls, weighted sum), see
# ggml_mul_mat_id in llama.cpp's ggml.h. 1.0 when the fit drops the term.
MOE_LAYER_FACTOR = 1.00
# The KV cache's extra read cost, k: a generated token reads the cache's bytes at 1 / (1 + k) of the weights'
# effective bandwidth. llama.cpp's flash-attention decode kernel reads K and V for one token's query heads over few
# KV heads (8 for Llama 3 8B), so it splits the cache's length over blocks and combines their partial results in a
# second kernel (ggml-cuda fattn: flash_attn_combine_results; PR #12183 raised its occupancy at batch 1), where a
# weight matrix-vector product spreads over every row: an H200 read Llama 3.1 8B's cache at about half the
# weights' rate (benchmarks/validation/text-generation-h200.toml). Taken from the series of rows at several depths
# (benchmarks/validation/text-generation-depth.toml and others): each series' extra time per token from its shallowest
# to its deepest row over the extra cache bytes, less 1 (benchmarks/speedfit.py kv_series); the median over devices.
# 0.0 where the held-out term choice drops it (benchmarks/ACCURACY.md, "Which terms stay").
KV_READ_EXTRA = 0.25
# The columns llama.cpp's Vulkan matrix-matrix shader computes for a mixture-of-experts product of one
# token. ggml_vk_use_mul_mat_vec_id (ggml/src/ggml-vulkan/ggml-vulkan.cpp) sends a MUL_MAT_ID to the
# matrix-vector shader only for F32, F16 and quantised weights -- in the November 2025 source (ggml
# 478023fb) and still in August 2026 (d99724f2) -- so BF16 experts take ggml_vk_mul_mat_id_q_f16, whose
# smallest tile (s_warptile_id, chosen for n <= 32 by ggml_vk_guess_matmul_id_pipeline) is 32 columns wide
# (64 with NV_coopmat2): the one token's product is computed 32 times over. Dense BF16 is not affected:
# ggml_vk_mul_mat lists BF16 for the matrix-vector path. A fact of the source, not fitted.
VULKAN_MOE_TILE_TOKENS = 32
# Prompt processing of a language model: seconds per prompt token = 2 x prompt_params /
# (peak FLOPS x PROMPT_EFFICIENCY x family share) + a second term in one of two forms, each
# backend's own (the one that predicts its held-out rows better, benchmarks/ACCURACY.md, "Which
# terms stay"): 2 x prompt_params in TFLOP x PROMPT_SECONDS_PER_TFLOP, a software ceiling no
# faster GPU lifts (tile shapes, activation quantisation, attention and norms between the matrix
# products), or the power form below. Fitted like generation (benchmarks/score_estimator.py), every efficiency capped at
# 1 (the table's peak). COMPUTE_EFFICIENCY above stays the backend scale the image and speech
# estimators use. A term the held-out fit drops (benchmarks/ACCURACY.md, "Which terms stay") has
# neutral constants: 0 seconds a TFLOP, family share 1.0.
PROMPT_EFFICIENCY = {
    "cpu": 0.70,
    "cuda": 0.93,
    "metal": 0.61,
    "rocm": 0.59,
    "sycl": 0.83,
    "vulkan": 0.42,
    "vulkan-intel": 0.20,
}
PROMPT_SECONDS_PER_TFLOP = {
    "cpu": 102.88e-3,
    "cuda": 0.00e-3,
    "metal": 4.14e-3,
    "rocm": 7.48e-3,
    "sycl": 6.42e-3,
    "vulkan": 2.06e-3,
    "vulkan-intel": 9.99e-3,
}
# The second term's other form, energy per FLOP over the board's power limit: a matrix product at
# full tensor rate draws more than most boards may (an RTX 4090 at its 450 W limit, an RTX 6000 Ada
# at 300 W, an H100 PCIe at 350 W), so sustained prompt throughput is at most power / (joules a
# FLOP). The power is NVML's enforced limit where the probe read one, else catalog/power.toml's board
# power (Apple: the whole Mac). Each backend keeps the form of the second term that predicts its own
# held-out rows better and zeroes the other; a device whose power is unknown pays no power term.
PROMPT_JOULES_PER_FLOP = {
    "cpu": 0.0000e-12,
    "cuda": 2.5989e-12,
    "metal": 0.0000e-12,
    "rocm": 0.0000e-12,
    "sycl": 0.0000e-12,
    "vulkan": 0.0000e-12,
    "vulkan-intel": 0.0000e-12,
}
# The matrix rate llama.cpp's prompt kernels reach on a GeForce RTX card, in multiples of the
# FLOPS catalog/gpus.toml lists for it. That table gives GeForce cards NVIDIA's FP16 tensor rate
# with FP32 accumulate, which GeForce runs at half the FP16-accumulate rate (NVIDIA's Turing, Ampere
# and Ada whitepapers); workstation and data-centre cards list their full rate. llama.cpp's matrix
# kernels do not use the half rate: cuBLAS GEMMs at default precision compute in FP16
# (ggml-cuda, ggml_cuda_op_mul_mat_cublas, CUBLAS_COMPUTE_16F on Volta and newer), the quantised
# MMQ kernels use int8 tensor cores, and Vulkan's cooperative-matrix kernels accumulate in FP16.
# So a GeForce card gets this factor (2.0) and every other card 1.0; 1.0 when the fit drops the
# term (benchmarks/ACCURACY.md, "Which terms stay").
PROMPT_GEFORCE_RATE = 2.00
# A mixture-of-experts model's matrix kernels as a share of a dense model's (in place of its quant
# family's share): ggml_mul_mat_id multiplies each expert by only the tokens routed to it (k of n
# experts: 4 of 32 for gpt-oss-20b, 8 of 128 for Qwen3-30B-A3B), so a 512-token micro-batch becomes
# many small products with the router and a gather between them. 1.0 when the fit drops the term.
PROMPT_MOE_EFFICIENCY = 0.42
# Each quant family's matrix-matrix kernel as a share of K-quants' (1.0 where the fit drops the term).
PROMPT_FAMILY_EFFICIENCY = {
    "float": 1.22,
    "k-quant": 1.00,
    "legacy": 1.14,
    "mxfp4": 1.00,
}
# The relative band each speed carries: the 80th percentile of the leave-one-device-out
# errors of its backend (benchmarks/ACCURACY.md, "Bands"), so about four held-out
# devices in five fall inside it. Backends measured on fewer than 3 devices get at
# least the pooled band and at least +/-50%.
SPEED_BAND = {
    "cpu": 0.28,
    "cuda": 0.16,
    "metal": 0.13,
    "rocm": 0.12,
    "sycl": 0.39,
    "vulkan": 0.16,
    "vulkan-intel": 1.19,
}
# A quant family whose kernels the model predicts worse than the rest widens its backend's band: the
# family's 80th percentile of leave-one-device-out generation errors over that of all rows, where above 1
# (families measured on 3 or more devices; benchmarks/ACCURACY.md, "Bands: generation"), kept only where,
# held out, the factors raise the worst-covered family's coverage. 2- and 3-bit K-quants' unpacking cost
# differs between builds (January 2024 CUDA against 2025 Vulkan), so their speeds carry about 3x the band.
QUANT_FAMILY_BAND = {
    "float": 1.00,
    "i-quant": 1.24,
    "i-quant-low": 1.00,
    "k-quant": 1.00,
    "k-quant-low": 2.42,
    "legacy": 1.00,
    "mxfp4": 1.00,
}
# The prompt's family factor, the same way over prompt rows ("moe": a mixture-of-experts model's prompt);
# 1.00 everywhere while, held out, the factors cover no more of the worst-covered family's rows.
PROMPT_FAMILY_BAND = {
    "float": 1.00,
    "k-quant": 1.78,
    "legacy": 1.00,
    "moe": 2.20,
}
# The same for prompt speed and time to first token: the 80th percentile of each backend's
# leave-one-device-out prompt errors (benchmarks/ACCURACY.md, "Bands: prompt"). Prompt speed is
# harder to predict than generation (software and power limits, not one memory bus), so its band
# is wider, and it is stated apart from the generation band.
PROMPT_BAND = {
    "cpu": 0.54,
    "cuda": 0.42,
    "metal": 0.14,
    "rocm": 0.43,
    "sycl": 2.06,
    "vulkan": 0.46,
    "vulkan-intel": 2.43,
}
# Backends whose constants come from measurements (benchmarks/validation); the others are guesses.
FITTED_BACKENDS = ("cpu", "cuda", "cuda-hbm", "metal", "rocm", "sycl", "vulkan", "vulkan-intel")
# Prompt length that time_to_first_token_s is stated for.
TTFT_PROMPT_TOKENS = 512

# --- split placement: weights left in system memory ------------------------------------------------
# Prompt. Since llama.cpp PR #6083 ("backend : offload large batches to GPU", March 2024) the scheduler runs a
# matrix product whose weights sit in a host buffer on the GPU when the GPU backend's offload_op accepts it: a
# batch of at least 32 tokens (GGML_OP_OFFLOAD_MIN_BATCH) on CUDA (and ROCm, built from the same ggml-cuda source),
# Vulkan and SYCL (ggml_backend_{cuda,vk,sycl}_device_offload_op). The weights are copied to the GPU for every
# micro-batch, before the product that uses them (the copy and the compute do not overlap: llama.cpp issue #25859),
# and from llama.cpp's default memory-mapped file, pageable memory (ibid.: page-locking them alone gave +21%). So a
# prompt token on a split model costs the GPU's compute for every layer plus 1/UBATCH_TOKENS of the system-memory
# weights over PCIe; --no-op-offload (PR #13386) turns it off. Metal shares memory with the CPU and is never split.
OP_OFFLOAD_BACKENDS = ("cuda", "rocm", "sycl", "vulkan")
# The copies' rate: devices.HOST_TO_GPU_BYTES_PER_S and devices.host_copy_bytes_per_s (shared with image offload).


def quant_family(quant_id: str) -> str:
    """The kernel family of a quantisation id: k-quant (k-quant-low for 2 and 3 bits), legacy, float, i-quant
    (i-quant-low for 1 to 3 bits), mxfp4 (else "other")."""
    name = quant_id.upper().split(" ")[0]
    if name.startswith("IQ"):
        # IQ4_NL and IQ4_XS decode a 4-bit index through one 16-entry table (ggml-common.h kvalues_iq4nl), about as
        # cheap as a K-quant's bit fields; IQ1-IQ3 look 4 or 8 weights up at once in 256- to 2,048-entry codebooks
        # (iq2xxs_grid, iq3s_grid, iq1s_grid ...) and apply sign masks: their own, larger unpacking cost.
        return "i-quant" if name.startswith("IQ4") else "i-quant-low"
    if name.startswith("MXFP4"):
        return "mxfp4"
    if name in ("F16", "BF16", "F32", "FP16", "FP32"):
        return "float"
    if name.startswith(("Q2_K", "Q3_K")):
        # 2- and 3-bit K-quants unpack more bit fields per weight (Q3_K: two low bits plus a high-bit
        # mask and 6-bit scales) than Q4_K-Q6_K: their own unpacking cost where the fit keeps it.
        return "k-quant-low"
    if name.startswith("Q") and "_K" in name:
        return "k-quant"
    if name in ("Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0"):
        return "legacy"
    return "other"


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
    # Whether the output projection reuses the input embedding table (config.json
    # tie_word_embeddings; a GGUF without an output.weight tensor). None: not known.
    tied_embeddings: bool | None = None
    sliding_window: int | None = None
    sliding_window_layers: int = 0
    experts: int | None = None
    experts_per_token: int | None = None
    # Bytes of the routed expert tensors in the model's file, where a file was read (a local GGUF); None: the
    # experts' share of the parameters is taken as their share of the bytes (expert_file_bytes).
    expert_bytes: float | None = None
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
    prompt_tokens_per_s: float | None  # None where no device's FLOPS are known (unknown is null, never 0)
    uncertainty: float  # relative, e.g. 0.25 = +/-25%
    # Seconds from sending a TTFT_PROMPT_TOKENS-token prompt to the first generated token:
    # the prompt's processing plus one generated token. None where prompt speed is unknown.
    time_to_first_token_s: float | None = None
    # Relative band of the prompt speed and of time to first token (PROMPT_BAND of the backends used).
    prompt_uncertainty: float | None = None


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
    users: int = 1  # sequences served at once; the KV cache holds one per user
    batched: Any = None  # gpuready.tasks.concurrency.Batched when users > 1
    # Split by experts: every layer on the GPU (gpu_fraction 1.0), the routed experts of this many in system memory.
    cpu_expert_layers: int = 0
    # The model's layers (split_words counts them); 0 where not known.
    layers: int = 0

    @property
    def placed_by_llama_cpp(self) -> bool:
        """Whether llama.cpp runs this variant (a GGUF quantisation; not MLX, AWQ or FP8 weights), so that its --fit
        planner, on by default, decides where the layers go."""
        return quant_family(self.quant) != "other"

    @property
    def split_words(self) -> str:
        """Where a split placement puts the model, in words: "13 of 36 layers on GPU" or "all 36 layers on GPU, the
        experts of 23 in system memory"; "" for any other placement."""
        if self.placement != "split":
            return ""
        if self.cpu_expert_layers:
            return f"all {self.layers} layers on GPU, the experts of {self.cpu_expert_layers} in system memory"
        if self.layers:
            return f"{round(self.gpu_fraction * self.layers)} of {self.layers} layers on GPU"
        return f"{self.gpu_fraction:.0%} of layers on GPU"

    @property
    def headline(self) -> Headline | None:
        """Generation speed at an empty context (with several users: each user's share of a
        batched step): the figure a text-generation verdict leads with."""
        if self.speed is None:
            return None
        if self.batched is not None:
            return Headline(self.batched.per_user_tokens_per_s, "tokens/s", self.speed.uncertainty)
        return Headline(self.speed.generation_tokens_per_s, "tokens/s", self.speed.uncertainty)


def weights_bytes(model: LanguageModel, quant: Quant) -> tuple[int, str]:
    """Size of the weights in this quantisation: the real file size when known, else parameters x bits."""
    if quant.id in model.gguf_sizes:
        return int(model.gguf_sizes[quant.id]), f"weights: real {quant.id} file size"
    size = int(model.params * quant.bits_per_weight / 8)
    return size, f"weights: {model.params / 1e9:.2f}B parameters x {quant.bits_per_weight:.2f} bits ({quant.id})"


def matmul_params(model: LanguageModel) -> float:
    """Parameters one token multiplies through: the active parameters, less an untied input embedding table.

    A token's input embedding is one row gathered from the vocab x hidden table, not a matrix
    product: when the output projection has its own matrix (tie_word_embeddings false), that table
    is neither read whole nor multiplied per token (llama.cpp's get_rows on token_embd.weight, then
    the output.weight matmul). With tied embeddings the output projection reads the shared table,
    so nothing is subtracted. For Llama 3 8B the table is 128,256 x 4,096 = 525M of 8.03B
    parameters (6.5%); for Llama 2 7B 131M of 6.74B (1.9%). Mixture-of-experts models keep their
    stated active count: publishers differ on whether it includes the input embedding (OpenAI's
    gpt-oss counts exclude it, arXiv 2508.10925 table 1; Qwen3's include it).
    """
    active = model.active_params
    if model.tied_embeddings is False and not model.is_moe:
        active -= vocab_matrix_params(model)
    return active


def vocab_matrix_params(model: LanguageModel) -> float:
    """One vocab x hidden matrix (the input embedding table, or the output projection); 0 where the vocabulary is
    not known."""
    return model.vocab_size * model.hidden_size if model.vocab_size else 0


def prompt_params(model: LanguageModel) -> float:
    """Parameters one prompt token multiplies through: matmul_params less what only the output token runs.

    Only the last token of a prompt needs logits, and llama.cpp has computed them for that token
    alone since PR #6122 (merged 2024-03-26, commit 557410b): after the last layer's attention, the
    hidden states go through ggml_get_rows(inp_out_ids) ("skip computing output for unused tokens"),
    so that layer's feed-forward and the vocab x hidden output projection run for the output token
    only (a decode of a batch without a logits array, as llama-bench's pp test and a server's prompt
    are, outputs one token). For Llama 3.2 1B (tied, 128,256 x 2,048) the projection is 263M of its
    1.24B parameters (21%) and the last feed-forward 50M; for Llama 3 8B 525M and 176M of the 7.5B a
    generated token multiplies (9% together). A mixture-of-experts model's stated active count holds
    the output projection in both publishers' conventions (gpt-oss: 3.61B = 2.39B of experts +
    0.64B attention + 0.58B unembedding, arXiv 2508.10925 table 1; Qwen3-30B-A3B's 3.3B adds up
    with embedding and output head), so it is subtracted there too; the last layer's feed-forward
    is not (its routed share is not derivable from the stated counts).
    """
    head = vocab_matrix_params(model)
    if not head:
        return matmul_params(model)
    params = matmul_params(model) - head
    return params if model.is_moe else params - last_feed_forward_params(model, params)


def last_feed_forward_params(model: LanguageModel, body: float) -> float:
    """One layer's feed-forward: of the layers' parameters (body), what attention's projections leave, a layer.

    Attention's Q and O projections hold hidden x heads x head_dim each, K and V hidden x kv_heads x
    head_dim; the rest of a layer (norms aside) is its feed-forward. 0 where the shapes leave nothing.
    """
    attention = model.hidden_size * model.head_dim * 2 * (model.attention_heads + model.kv_heads)
    return max(0.0, body / model.layers - attention) if model.layers else 0.0


def weights_read_bytes(model: LanguageModel, weights_bytes: float) -> float:
    """Bytes of weights one generated token reads: the file's share of the parameters it multiplies through."""
    return weights_bytes * matmul_params(model) / model.params


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


def memory_breakdown(model: LanguageModel, quant: Quant, context_tokens: int, backend: str, users: int = 1) -> MemoryBreakdown:
    weights, _ = weights_bytes(model, quant)
    return MemoryBreakdown(
        weights_bytes=weights,
        kv_cache_bytes=kv_cache_bytes(model, context_tokens) * users,
        compute_bytes=compute_bytes(model),
        overhead_bytes=RUNTIME_OVERHEAD_BYTES.get(backend, RUNTIME_OVERHEAD_BYTES["cpu"]),
    )


# Share of a bandwidth measured on this machine by `gpuready bench` that token generation
# reaches. The constants above convert a *peak* into tokens/s; a measured bandwidth is already
# what the memory delivers.
# CPU (a multi-threaded read-only kernel): on a Raspberry Pi 5, llama.cpp's decode of five
# quantisations (Q2_K to Q8_0) reached 89, 87, 88, 84 and 91% of the 4-thread read-only
# bandwidth measured on the same board (llama.cpp issue #26484): the median is 0.88 and the
# half range, 4%, is added to the measurement's own spread to give the uncertainty. One board.
# GPU (a device-to-device copy, read + write): such a copy reaches about 0.90 of the spec
# sheet's peak -- RTX 4090 918-924 of 1008 GB/s (p2pBandwidthLatencyTest, same-GPU entries,
# tinygrad/open-gpu-kernel-modules issue #6), A800 PCIe 1727 of 1935 (torch copy,
# mli/transformers-benchmarks issue #4), A100 40GB 1355 of 1555 (PTsolvers/gpu-workshop-
# JuliaCon23 issue #7) -- so the fitted share of peak is divided by 0.90.
MEASURED_BANDWIDTH_EFFICIENCY = 0.88
MEASURED_EFFICIENCY_SPREAD = 0.04
GPU_COPY_SHARE_OF_PEAK = 0.90


def bandwidth_efficiency(device: Device) -> float:
    """Share of the device's bandwidth figure that token generation reaches: of a measured one, or of a peak."""
    peak_share = BANDWIDTH_EFFICIENCY.get(speed_class(device), BANDWIDTH_EFFICIENCY["cpu"])
    if device.bandwidth_source != "this-machine":
        return peak_share
    return MEASURED_BANDWIDTH_EFFICIENCY if device.kind == "cpu" else min(1.0, peak_share / GPU_COPY_SHARE_OF_PEAK)


def is_intel_vulkan(device: Device) -> bool:
    """An Intel GPU under llama.cpp's Vulkan backend (Mesa's ANV or Intel's own driver)."""
    return device.kind == "gpu" and device.backend == "vulkan" and device.vendor == "intel"


def speed_class(device: Device, table: dict | None = None) -> str:
    """The key of a device's constants in ``table`` (BANDWIDTH_EFFICIENCY by default): its backend, or
    "vulkan-intel" for an Intel GPU under Vulkan, or e.g. "cuda-hbm" for an HBM GPU, where that class was fitted."""
    table = BANDWIDTH_EFFICIENCY if table is None else table
    if is_intel_vulkan(device) and "vulkan-intel" in table:
        return "vulkan-intel"
    if device.memory_type and "HBM" in device.memory_type and f"{device.backend}-hbm" in table:
        return f"{device.backend}-hbm"
    return device.backend


# Quant families whose unpacking cost CPU rows took part in fitting (benchmarks/validation: llama.cpp on CPUs in F16,
# legacy, K- and i-quants; tests/test_score_estimator.py checks this against the rows). MXFP4's cost was fitted on GPU
# rows only (gpt-oss on GPUs, where it carries 16 operations a weight): ggml's CPU kernel decodes its 4-bit values
# through one 16-entry table like IQ4_NL, so on a CPU such a family takes the K-quants' cost, as a family without
# rows does (unpack_ops_per_weight).
CPU_UNPACK_FAMILIES = ("float", "i-quant", "i-quant-low", "k-quant", "k-quant-low", "legacy")


def device_unpack_ops(family: str, device: Device) -> float:
    """unpack_ops_per_weight on this device: on a CPU, a family outside CPU_UNPACK_FAMILIES at the K-quants' cost."""
    if device.kind == "cpu" and family not in CPU_UNPACK_FAMILIES:
        return unpack_ops_per_weight("k-quant")
    return unpack_ops_per_weight(family)


def unpack_ops_per_weight(family: str, table: Mapping[str, float] | None = None) -> float:
    """A quant family's unpacking operations a weight in ``table`` (UNPACK_OPS_PER_WEIGHT by default; the fit's own
    table in benchmarks/speedfit.py): a quantised family no validation row has fitted takes the K-quants' cost
    (counting none made an unmeasured family look faster than every measured one), F16/BF16 none."""
    table = UNPACK_OPS_PER_WEIGHT if table is None else table
    if family in table:
        return table[family]
    return 0.0 if family == "float" else table.get("k-quant", 0.0)


def _seconds_per_token(bytes_read: float, device: Device, family: str = "k-quant", layers: float = 0.0,
                       kv_bytes: float = 0.0) -> float:
    """Bytes over effective bandwidth (``kv_bytes`` of them the KV cache's, at KV_READ_EXTRA's cost), plus the fixed
    per-layer cost of the layers on this device."""
    key = speed_class(device)
    efficiency = bandwidth_efficiency(device) * QUANT_FAMILY_EFFICIENCY.get(family, 1.0)
    fixed = layers * LAYER_SECONDS.get(key, 0.0)
    attention = kv_bytes * KV_READ_EXTRA / (device.bandwidth_bytes_per_s * bandwidth_efficiency(device))
    return bytes_read / (device.bandwidth_bytes_per_s * efficiency) + attention + fixed


@dataclass(frozen=True)
class Share:
    """What one device does of each generated token: its share of the weights a token reads (and unpacks), its share
    of the KV cache, and the layers whose fixed per-layer cost it pays."""

    weights: float
    kv: float
    layers: float


def device_shares(model: LanguageModel, gpu_fraction: float, cpu_expert_layers: int = 0,
                  params_read: float | None = None) -> tuple[Share, Share]:
    """(GPU's, CPU's) share of a token. Layers split (``gpu_fraction`` of them on the GPU): each device its
    fraction of everything. Experts split (``cpu_expert_layers``: llama.cpp's --fit and --n-cpu-moe keep every layer
    on the GPU and only the routed experts of that many layers in system memory): the CPU reads those layers'
    routed experts and pays their layers' fixed cost, the GPU everything else, the KV cache included.
    ``params_read``: the parameters a step reads (several users' experts, gpuready.tasks.concurrency), one token's
    by default."""
    if cpu_expert_layers and model.layers:
        params = matmul_params(model) if params_read is None else params_read
        routed = params - (matmul_params(model) - routed_expert_params(model))
        cpu = routed / params * cpu_expert_layers / model.layers if params else 0.0
        return Share(1.0 - cpu, 1.0, model.layers), Share(cpu, 0.0, cpu_expert_layers)
    layers = model.layers
    return (Share(gpu_fraction, gpu_fraction, layers * gpu_fraction),
            Share(1.0 - gpu_fraction, 1.0 - gpu_fraction, layers * (1.0 - gpu_fraction)))


def step_seconds(model: LanguageModel, bytes_read: float, device: Device, share: Share, family: str = "k-quant",
                 bf16: bool = False, params_read: float | None = None, kv_bytes: float = 0.0) -> float:
    """One decoding step on a device doing ``share`` of it (device_shares): its share of
    ``bytes_read`` over effective bandwidth (``kv_bytes`` of them, the KV cache's, also at KV_READ_EXTRA), plus its
    layers' fixed cost, plus unpacking its share of the quantised weights, plus the padded
    expert products of BF16 experts on Vulkan (padded_expert_seconds). A batched step of several users costs the
    same, with every user's KV cache in ``bytes_read`` and, for a mixture of experts, the parameters the step
    reads (``params_read``: more experts than one token's) unpacked (gpuready.tasks.concurrency).
    ``params_read`` defaults to one token's, matmul_params."""
    layers = share.layers * (MOE_LAYER_FACTOR if model.is_moe else 1.0)
    params = matmul_params(model) if params_read is None else params_read
    weights = bytes_read - kv_bytes
    unpack = (params * share.weights * device_unpack_ops(family, device) / device.unpack_flops
              if device.unpack_flops else 0.0)
    padded = padded_expert_seconds(model, device, bf16) * share.weights
    return (_seconds_per_token(weights * share.weights + kv_bytes * share.kv, device, family, layers, kv_bytes * share.kv)
            + unpack + padded)


def routed_expert_params(model: LanguageModel) -> float:
    """Parameters of the experts one token is routed through: each expert's share of the parameters outside
    the shared (always active) ones, (total - active) / (experts - experts_per_token), times experts_per_token.
    0 for a dense model or one whose expert counts the catalogue does not give."""
    experts, chosen = model.experts or 0, model.experts_per_token or 0
    if not model.is_moe or experts <= chosen or chosen <= 0:
        return 0.0
    return (model.params - model.active_params) / (experts - chosen) * chosen


def expert_params(model: LanguageModel) -> float:
    """Parameters of all the experts together: routed_expert_params x experts / experts_per_token (each expert is
    the same size). What is left of the parameters is shared (attention, routers, embeddings), read by every token.
    0 for a dense model or one whose expert counts the catalogue does not give."""
    routed = routed_expert_params(model)
    return routed / model.experts_per_token * model.experts if routed else 0.0


def expert_file_bytes(model: LanguageModel, weights_bytes: float) -> float:
    """Bytes of all the routed experts in a file of ``weights_bytes``: as the file stores them where it was read
    (LanguageModel.expert_bytes), else the experts' share of the parameters (expert_params) of the bytes."""
    if model.expert_bytes:
        return min(model.expert_bytes, weights_bytes)
    return weights_bytes * expert_params(model) / model.params if model.params else 0.0


def padded_expert_seconds(model: LanguageModel, device: Device, bf16: bool) -> float:
    """Seconds a generated token spends in BF16 expert products that llama.cpp's Vulkan backend pads to a
    tile: its matrix-vector path for a mixture of experts takes F32, F16 and quantised weights only
    (ggml_vk_use_mul_mat_vec_id), so BF16 experts run the matrix-matrix shader, which computes
    VULKAN_MOE_TILE_TOKENS columns for the one token. Costed like prompt processing (the same kernels, at
    the rate matrix_rate gives BF16 there, with the mixture-of-experts share). 0 elsewhere."""
    if device.backend != "vulkan" or not bf16 or not device.flops:
        return 0.0
    routed = routed_expert_params(model)
    if not routed:
        return 0.0
    return _matrix_seconds(2 * routed * VULKAN_MOE_TILE_TOKENS, device, "float", bf16=True, moe=True)


def is_geforce_rtx(device: Device) -> bool:
    """A GeForce RTX card: tensor cores whose FP32-accumulate rate (the table's FLOPS) is half the FP16-accumulate rate."""
    return device.kind == "gpu" and "GeForce RTX" in device.name


def is_bf16(quant_id: str) -> bool:
    """BF16 weights (a quant id such as "BF16")."""
    return quant_id.upper().startswith("BF16")


def vulkan_rate(device: Device, bf16: bool = False) -> float:
    """The share of its table FLOPS llama.cpp's Vulkan backend can reach: where it gets no matrix cores, or
    multiplies BF16 weights without BF16 matrix shapes, its scalar shader runs on the vector units, and BF16 is
    promoted to FP32 (docs/vulkan-capabilities.md, sections 3-4): the FP32 vector rate. 1 elsewhere."""
    if device.backend != "vulkan" or not device.vector_flops or not device.flops:
        return 1.0
    if device.matrix_cores is False or (bf16 and not device.bf16_matrix):
        return min(1.0, device.vector_flops / device.flops)
    return 1.0


def matrix_rate(device: Device, bf16: bool = False) -> float:
    """How many times its table FLOPS llama.cpp's prompt kernels can use: the vector share on Vulkan without
    matrix cores (vulkan_rate), else PROMPT_GEFORCE_RATE on a GeForce RTX card, else 1."""
    vector = vulkan_rate(device, bf16)
    if vector < 1.0:
        return vector
    return PROMPT_GEFORCE_RATE if is_geforce_rtx(device) else 1.0


def _prompt_seconds_per_token(model: LanguageModel, device: Device, family: str = "k-quant", bf16: bool = False) -> float:
    """One prompt token: its matrix work (2 x the parameters it multiplies through, prompt_params) in _matrix_seconds."""
    return _matrix_seconds(2 * prompt_params(model), device, family, bf16, model.is_moe)


def _matrix_seconds(work: float, device: Device, family: str = "k-quant", bf16: bool = False, moe: bool = False) -> float:
    """``work`` FLOPs of llama.cpp's matrix-matrix kernels: compute time at the backend's efficiency plus the
    second term, a per-TFLOP software ceiling or the energy of the FLOPs over the board's power limit
    (whichever form the fit kept)."""
    key = speed_class(device, PROMPT_EFFICIENCY)
    efficiency = PROMPT_EFFICIENCY.get(key, PROMPT_EFFICIENCY["cpu"])
    efficiency *= PROMPT_MOE_EFFICIENCY if moe else PROMPT_FAMILY_EFFICIENCY.get(family, 1.0)
    flops = device.flops * matrix_rate(device, bf16)
    ceiling = PROMPT_SECONDS_PER_TFLOP.get(key, 0.0)
    joules = PROMPT_JOULES_PER_FLOP.get(key, 0.0)
    power = work * joules / device.power_watts if device.power_watts else 0.0
    return work / (flops * efficiency) + work / 1e12 * ceiling + power


def prompt_kernel_family(family: str) -> str:
    """A quant family as the prompt's matrix-matrix kernels see it: 2- and 3-bit K-quants with the other
    K-quants (those kernels dequantise a tile at a time, so there is no separate unpacking cost)."""
    return "k-quant" if family == "k-quant-low" else family


def prompt_family(model: LanguageModel, family: str) -> str:
    """The class of a prompt's matrix kernels: "moe" for a mixture of experts, else prompt_kernel_family."""
    return "moe" if model.is_moe else prompt_kernel_family(family)


def offloads_host_weights(gpu: Device | None) -> bool:
    """Whether llama.cpp runs a prompt's products of weights in system memory on this GPU (OP_OFFLOAD_BACKENDS)."""
    return gpu is not None and gpu.backend in OP_OFFLOAD_BACKENDS and not gpu.unified and bool(gpu.flops)


def host_weight_copy_bytes(model: LanguageModel, weights_bytes: float, cpu_weights_share: float,
                           cpu_expert_layers: int = 0, ubatch: int = UBATCH_TOKENS) -> float:
    """Bytes a prompt micro-batch copies from system memory to the GPU: the matrix weights the micro-batch uses of
    the layers in system memory (layers split: their share of the prompt's parameters, with a mixture of experts'
    one token's experts replaced by every expert the micro-batch's tokens use), or, with experts split, the used
    routed experts of the layers that hold them there. A micro-batch uses 1 - (1 - k/n)^UBATCH_TOKENS of the experts
    under uniform routing (llama.cpp PR #15346 copies only the experts used; practically all of them at 512 tokens)."""
    per_param = weights_bytes / model.params if model.params else 0.0
    routed = routed_expert_params(model)
    used = 1.0 - (1.0 - (model.experts_per_token or 0) / (model.experts or 1)) ** ubatch if routed else 0.0
    if cpu_expert_layers and model.layers:
        return expert_file_bytes(model, weights_bytes) * used * cpu_expert_layers / model.layers
    return (prompt_params(model) - routed + expert_params(model) * used) * per_param * cpu_weights_share


def host_prompt_seconds(model: LanguageModel, weights_bytes: float, gpu: Device | None, cpu_weights_share: float,
                        cpu_expert_layers: int = 0, family: str = "k-quant", bf16: bool = False,
                        ubatch: int = UBATCH_TOKENS, copy_bytes_per_s: float | None = None) -> float | None:
    """Seconds a prompt token takes on a split model whose GPU offloads host weights' products (offloads_host_weights):
    the GPU computes every layer, plus each micro-batch's copy of the system-memory weights (host_weight_copy_bytes)
    over PCIe (host_copy_bytes_per_s, unless ``copy_bytes_per_s`` is given) shared by its ``ubatch`` tokens. None where
    nothing is in system memory or the GPU does not offload."""
    if cpu_weights_share <= 0 or not offloads_host_weights(gpu):
        return None
    copied = host_weight_copy_bytes(model, weights_bytes, cpu_weights_share, cpu_expert_layers, ubatch)
    rate = copy_bytes_per_s or host_copy_bytes_per_s(gpu)
    return _prompt_seconds_per_token(model, gpu, family, bf16) + copied / rate / ubatch


def speed_band(classes: list[str], sources: list[str], measured_spreads: tuple[float, ...] = (),
               family: str | None = None) -> float:
    """The +/- of a speed: the widest band of the speed classes involved (speed_class: a backend, or
    vulkan-intel), widened for a quant family the model predicts worse (QUANT_FAMILY_BAND), at least 50%
    where a bandwidth was assumed; a bandwidth measured on this machine (``measured_spreads``, one per such device) brings its own spread plus the
    measured-efficiency spread instead of its class's band."""
    bands = [SPEED_BAND.get(key, SPEED_BAND["sycl"]) for key, source in zip(classes, sources) if source != "this-machine"]
    bands += [spread + MEASURED_EFFICIENCY_SPREAD for spread in measured_spreads]
    band = max(bands) * (QUANT_FAMILY_BAND.get(family, 1.0) if family else 1.0)
    if "assumed" in sources:
        band = max(band, SPEED_UNCERTAINTY["assumed"])
    return band


def speed(
    model: LanguageModel,
    memory: MemoryBreakdown,
    context_tokens: int,
    gpu: Device | None,
    cpu: Device,
    gpu_fraction: float,
    quant_id: str = "",
    cpu_expert_layers: int = 0,
) -> Speed | None:
    """Tokens per second for generation (bandwidth bound) and prompt (compute bound); time on each device adds up.

    Each device's share of a token is its share of the bytes over its effective bandwidth
    plus its share of the layers times its backend's fixed per-layer cost; layers split over
    identical GPUs run one after another, so a group's bandwidth is one card's. At "full
    context" every token also reads the whole KV cache. ``cpu_expert_layers``: the layers whose routed experts
    are in system memory while every layer is on the GPU (device_shares). A split prompt runs on the GPU
    where its backend offloads host weights' products (host_prompt_seconds), else each device computes its part.
    """
    family = quant_family(quant_id) if quant_id else "k-quant"
    bf16 = is_bf16(quant_id)
    weights_read = weights_read_bytes(model, memory.weights_bytes)
    shares = device_shares(model, gpu_fraction, cpu_expert_layers)
    devices = [(gpu, shares[0]), (cpu, shares[1])]
    if any(share.weights > 0 and (device is None or not device.bandwidth_bytes_per_s) for device, share in devices):
        return None
    host = host_prompt_seconds(model, memory.weights_bytes, gpu, shares[1].weights, cpu_expert_layers, family, bf16)
    empty = full = 0.0
    prompt = host or 0.0
    for device, share in devices:
        if share.weights <= 0:
            continue
        empty += step_seconds(model, weights_read, device, share, family, bf16)
        full += step_seconds(model, weights_read + memory.kv_cache_bytes, device, share, family, bf16,
                             kv_bytes=memory.kv_cache_bytes)
        if device.flops and host is None:
            prompt += _prompt_seconds_per_token(model, device, family, bf16) * share.weights
    used = [device for device, share in devices if share.weights > 0]
    uncertainty = speed_band([speed_class(device, SPEED_BAND) for device in used], [device.bandwidth_source for device in used],
                             tuple(device.bandwidth_spread or 0.0 for device in used if device.bandwidth_source == "this-machine"),
                             family)
    return Speed(
        generation_tokens_per_s=1.0 / empty,
        generation_tokens_per_s_full_context=1.0 / full,
        prompt_tokens_per_s=(1.0 / prompt) if prompt else None,
        uncertainty=uncertainty,
        time_to_first_token_s=(TTFT_PROMPT_TOKENS * prompt + empty) if prompt else None,
        # The prompt's band is that of the devices that compute it: the GPU alone where it offloads the CPU's part.
        prompt_uncertainty=(max(PROMPT_BAND.get(speed_class(device, PROMPT_BAND), PROMPT_BAND["sycl"])
                                for device in ([gpu] if host is not None else used))
                            * PROMPT_FAMILY_BAND.get(prompt_family(model, family), 1.0)) if prompt else None,
    )


def estimate(
    model: LanguageModel,
    quant: Quant,
    context_tokens: int,
    gpu: Device | None,
    cpu: Device,
    system_usable_bytes: int | None,
    users: int = 1,
) -> Estimate:
    """The best placement for this variant: all on the GPU, split GPU + CPU, or CPU only;
    with ``users`` sequences at once, a KV cache for each."""
    _, weights_basis = weights_bytes(model, quant)
    basis = [weights_basis, f"KV cache: {model.layers} layers x {model.kv_heads} KV heads x {model.head_dim} dims x {context_tokens:,} tokens x 2 (K,V) x f16"]
    if model.sliding_window_layers:
        basis[-1] += f"; {model.sliding_window_layers} sliding-window layers hold {min(context_tokens, model.sliding_window or 0):,} tokens"
    if users > 1:
        basis[-1] += f"; x {users} users, one cache each"
    if model.is_moe:
        basis.append(f"mixture of experts: memory for all {model.params / 1e9:.1f}B parameters, speed from the {model.active_params / 1e9:.1f}B active")
    if matmul_params(model) != model.active_params:
        basis.append(f"speed: a token reads and multiplies {matmul_params(model) / 1e9:.2f}B of the {model.active_params / 1e9:.2f}B parameters; "
                     f"the {model.vocab_size:,} x {model.hidden_size:,} input embedding, untied from the output, is only gathered from")
    prompt = prompt_params(model)
    if prompt != matmul_params(model):
        head = f"the {model.vocab_size:,} x {model.hidden_size:,} output projection"
        skipped = f"{head} runs" if model.is_moe else f"the last layer's feed-forward and {head} run"
        basis.append(f"prompt: a prompt token multiplies {prompt / 1e9:.2f}B parameters; {skipped} for the last token "
                     "only (llama.cpp computes one token's logits for a prompt)")
    if gpu is not None and gpu.usable_memory_bytes:
        memory = memory_breakdown(model, quant, context_tokens, gpu.backend, users)
        overhead = memory.overhead_bytes * gpu.count
        memory = MemoryBreakdown(memory.weights_bytes, memory.kv_cache_bytes, memory.compute_bytes, overhead)
        if memory.total_bytes <= gpu.usable_memory_bytes:
            basis.append(f"all layers on {gpu.name} ({gpu.backend})")
            return Estimate(model.id, quant.id, context_tokens, "gpu", memory, 1.0, memory.total_bytes, 0,
                            speed(model, memory, context_tokens, gpu, cpu, 1.0, quant.id), _with_speed_basis(basis, model, gpu, cpu, 1.0, quant.id),
                            layers=model.layers)
        experts = None if gpu.unified else expert_split(model, memory, gpu, system_usable_bytes)
        if experts is not None:
            on_cpu, gpu_part, system_part = experts
            basis.append(
                f"all {model.layers} layers on {gpu.name}, the routed experts of {on_cpu} in system memory (llama.cpp's "
                "--fit and --n-cpu-moe placement: attention, shared weights and KV cache stay on the GPU, and --fit's "
                f"{FIT_MARGIN_BYTES / 2**30:g} GiB margin free; each token's time is the sum of both parts)"
            )
            return Estimate(model.id, quant.id, context_tokens, "split", memory, 1.0, gpu_part, system_part,
                            speed(model, memory, context_tokens, gpu, cpu, 1.0, quant.id, on_cpu),
                            _with_speed_basis(basis, model, gpu, cpu, 1.0, quant.id, on_cpu), cpu_expert_layers=on_cpu,
                            layers=model.layers)
        if not gpu.unified:
            layer_bytes = memory.weights_bytes + memory.kv_cache_bytes
            room = gpu.usable_memory_bytes - FIT_MARGIN_BYTES - memory.compute_bytes - memory.overhead_bytes
            fraction = max(0.0, min(1.0, room / layer_bytes)) if layer_bytes else 0.0
            # Whole layers only: llama.cpp offloads an integer number of layers (-ngl).
            fraction = int(fraction * model.layers) / model.layers
            system_part = int(layer_bytes * (1 - fraction)) + RUNTIME_OVERHEAD_BYTES["cpu"]
            if fraction > 0 and (system_usable_bytes is None or system_part <= system_usable_bytes):
                gpu_part = int(layer_bytes * fraction) + memory.compute_bytes + memory.overhead_bytes
                basis.append(
                    f"{int(fraction * model.layers)} of {model.layers} layers on {gpu.name}, the rest in system memory "
                    f"(as llama.cpp's --fit places them, leaving its {FIT_MARGIN_BYTES / 2**30:g} GiB margin free on the "
                    "GPU; each token's time is the sum of both parts)"
                )
                return Estimate(model.id, quant.id, context_tokens, "split", memory, fraction, gpu_part, system_part,
                                speed(model, memory, context_tokens, gpu, cpu, fraction, quant.id), _with_speed_basis(basis, model, gpu, cpu, fraction, quant.id),
                                layers=model.layers)
    memory = memory_breakdown(model, quant, context_tokens, "cpu", users)
    basis.append("all layers on the CPU, weights in system memory")
    return Estimate(model.id, quant.id, context_tokens, "cpu", memory, 0.0, 0, memory.total_bytes,
                    speed(model, memory, context_tokens, None, cpu, 0.0, quant.id), _with_speed_basis(basis, model, None, cpu, 0.0, quant.id),
                    layers=model.layers)


def expert_split(model: LanguageModel, memory: MemoryBreakdown, gpu: Device,
                 system_usable_bytes: int | None) -> tuple[int, int, int] | None:
    """llama.cpp's placement of a mixture of experts that does not fit the GPU (llama_params_fit, on by default since
    late 2025; tools/fit-params/README.md: "with only dense weights in device memory there is a total surplus ...
    -ngl 48 -ot blk.14.ffn_(up|down|gate)_(ch|)exps=CPU,..."): every layer on the GPU, the routed experts of as few
    layers as needed in system memory, leaving its 1 GiB margin free on the GPU (FIT_MARGIN_BYTES). (layers whose
    experts are in system memory, GPU bytes, system bytes), or None
    where the model has no expert counts, the dense part alone does not fit the GPU, or the experts left over do not
    fit system memory. Expert bytes are the file's own where it was read, else their share of the parameters
    (expert_file_bytes; a file that keeps attention at higher precision then has a larger dense part than that)."""
    routed = expert_params(model)
    if not model.is_moe or not routed or not model.layers or not gpu.usable_memory_bytes:
        return None
    experts_bytes = expert_file_bytes(model, memory.weights_bytes)
    per_layer = experts_bytes / model.layers
    dense = memory.total_bytes - experts_bytes
    room = gpu.usable_memory_bytes - FIT_MARGIN_BYTES - dense
    if room < 0:
        return None
    on_gpu = min(model.layers - 1, int(room // per_layer))
    on_cpu = model.layers - on_gpu
    system_part = int(per_layer * on_cpu) + RUNTIME_OVERHEAD_BYTES["cpu"]
    if system_usable_bytes is not None and system_part > system_usable_bytes:
        return None
    return on_cpu, int(dense + per_layer * on_gpu), system_part


def _with_speed_basis(basis: list[str], model: LanguageModel, gpu: Device | None, cpu: Device, gpu_fraction: float,
                      quant_id: str = "", cpu_expert_layers: int = 0) -> tuple[str, ...]:
    lines = list(basis)
    moe = model.is_moe
    family = quant_family(quant_id) if quant_id else "k-quant"
    shares = device_shares(model, gpu_fraction, cpu_expert_layers)
    host = shares[1].weights > 0 and offloads_host_weights(gpu)
    for device, share in ((gpu, shares[0]), (cpu, shares[1])):
        if device is None or share.weights <= 0:
            continue
        if cpu_expert_layers:
            lines.append(f"generation: {device.name} reads {share.weights:.0%} of a token's weights"
                         + (" (the routed experts of the layers in system memory)" if device is cpu else "")
                         + f" and pays the fixed cost of {share.layers:.0f} layers")
        key = speed_class(device)
        guess = f" ({key}: no measured rows, an unfitted guess)" if key not in FITTED_BACKENDS else ""
        if device.bandwidth_bytes_per_s:
            share = QUANT_FAMILY_EFFICIENCY.get(family, 1.0)
            what = "of it reached by llama.cpp" if device.bandwidth_source == "this-machine" else f"{key} efficiency"
            lines.append(
                f"generation: {device.name} bandwidth {device.bandwidth_bytes_per_s / 1e9:.0f} GB/s ({device.bandwidth_detail or device.bandwidth_source})"
                f" x {bandwidth_efficiency(device):.0%} {what}"
                + (f" x {share:.0%} for {family}" if share != 1.0 else "")
                + (f", the KV cache read at {1 / (1 + KV_READ_EXTRA):.0%} of the weights' rate (flash-attention decode "
                   "splits it over few KV heads)" if KV_READ_EXTRA else "")
                + f", plus {LAYER_SECONDS.get(key, 0.0) * 1e6:.0f} us a layer a token (launch/sync)"
                + (f", plus {device_unpack_ops(family, device):.1f} operations a weight to unpack {family} weights"
                   + (f" at {device.unpack_flops / 1e12:.1f} TFLOPS (vector rate)" if device.vector_flops else "")
                   + ("" if family in UNPACK_OPS_PER_WEIGHT else " (the K-quants' cost: no measured rows of this family)")
                   + (" (the K-quants' cost: no measured CPU rows of this family)"
                      if family in UNPACK_OPS_PER_WEIGHT and device_unpack_ops(family, device) != unpack_ops_per_weight(family) else "")
                   if device_unpack_ops(family, device) and device.unpack_flops else "")
                + guess
            )
        else:
            lines.append(f"generation: bandwidth of {device.name} unknown, speed not estimated")
        # Said exactly where the tile is costed (padded_expert_seconds: Vulkan, BF16, expert counts known).
        if padded_expert_seconds(model, device, is_bf16(quant_id)):
            lines.append(f"generation: BF16 experts on Vulkan have no matrix-vector path in llama.cpp, so each token's expert "
                         f"products run the matrix-matrix shader padded to a {VULKAN_MOE_TILE_TOKENS}-token tile and are "
                         f"costed as that many prompt tokens' expert work; an F16 or Q8_0 file takes the matrix-vector path")
        if device.flops and not (host and device is cpu):
            rate, vector = matrix_rate(device, is_bf16(quant_id)), vulkan_rate(device, is_bf16(quant_id)) < 1.0
            pkey = speed_class(device, PROMPT_EFFICIENCY)
            lines.append(
                f"prompt: {device.flops / 1e12:.1f} TFLOPS peak"
                + (f" ({device.flops_detail})" if device.flops_detail else "")
                + (" (one card's: the cards take their layers in turn)" if device.count > 1 else "")
                + (f" x {rate:.2f} (Vulkan without {'BF16 ' if device.matrix_cores is not False else ''}matrix cores: "
                   f"the FP32 vector rate)" if vector else "")
                + (f" x {rate:.0f} (GeForce FP16-accumulate rate)" if rate != 1.0 and not vector else "")
                + f" x {PROMPT_EFFICIENCY.get(pkey, 0.3):.0%} {pkey} efficiency"
                + (f" x {PROMPT_MOE_EFFICIENCY:.0%} for a mixture of experts (small per-expert products)"
                   if moe and PROMPT_MOE_EFFICIENCY != 1.0 else "")
                + (f" x {PROMPT_FAMILY_EFFICIENCY[family]:.0%} for {family}"
                   if not moe and PROMPT_FAMILY_EFFICIENCY.get(family, 1.0) != 1.0 else "")
                + (f" ({family}: no measured prompt rows, taken at the K-quants' efficiency)"
                   if not moe and family != "other" and prompt_kernel_family(family) not in PROMPT_FAMILY_EFFICIENCY else "")
                + (f", plus {PROMPT_SECONDS_PER_TFLOP[pkey] * 1e3:.1f} ms a TFLOP (software ceiling)"
                   if PROMPT_SECONDS_PER_TFLOP.get(pkey) else "")
                + (f", at most {device.power_watts:.0f} W / {PROMPT_JOULES_PER_FLOP[pkey] * 1e12:.2f} pJ a FLOP"
                   f" (power limit)" if PROMPT_JOULES_PER_FLOP.get(pkey) and device.power_watts else "")
                + f"{guess}"
            )
    if host:
        lines.append(host_prompt_basis(model, gpu, shares[1].weights, cpu_expert_layers))
    return tuple(lines)


def host_prompt_basis(model: LanguageModel, gpu: Device, cpu_weights_share: float, cpu_expert_layers: int = 0) -> str:
    """The basis line of host_prompt_seconds."""
    what = (f"the routed experts of the {cpu_expert_layers} layers that keep them in system memory" if cpu_expert_layers
            else f"the matrix weights of the {cpu_weights_share:.0%} of layers in system memory")
    experts = (" (every expert a uniform router would use; llama.cpp copies only those a micro-batch uses, and "
               "llama-bench's gpt-oss-120b prompts ran 2-3x faster than this: benchmarks/ACCURACY.md)"
               if routed_expert_params(model) else "")
    return (f"prompt: llama.cpp's {gpu.backend} backend runs every layer's products on {gpu.name} for batches of 32 "
            f"tokens or more (op offload): {what} are copied to it for every {UBATCH_TOKENS}-token micro-batch at "
            f"{host_copy_bytes_per_s(gpu) / 1e9:.1f} GB/s ({gpu.copy_words}; --no-op-offload is slower, --no-mmap "
            f"(pinned memory) or a larger -ub faster){experts}")
