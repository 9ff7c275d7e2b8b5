"""Document search: embedding models and rerankers, in chunks per second, and the index.

An embedding model turns each chunk of text into a vector; embedding is compute bound
(a batch of chunks through an encoder: 2 x parameters FLOPs per token, plus attention).
Chunks are 256 tokens: the length sentence-transformers/all-MiniLM-L6-v2 truncates to
("By default, input text longer than 256 word pieces is truncated",
https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2), a common chunk size.
The index holds one float32 vector per chunk plus an HNSW graph:
(d x 4 + M x 2 x 4) bytes per vector (faiss wiki, "Guidelines to choose an index",
https://github.com/facebookresearch/faiss/wiki/Guidelines-to-choose-an-index, quoted in
https://github.com/lolishinshi/imsearch/issues/12), with
hnswlib's default M = 16 (https://github.com/nmslib/hnswlib/blob/master/ALGO_PARAMS.md).
A reranker scores (query, chunk) pairs with a cross-encoder: same cost per pair.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuready.catalog.loader import CatalogError, Entry
from gpuready.tasks.base import Group, MemoryPart, MemoryParts, ModelEntry, Task, TaskEstimate, bits_quality, level_at_least, listed_variants, place_whole, without_cpu_fp16
from gpuready.tasks.devices import Device, pytorch_drives
from gpuready.tasks.encoders import device_flops_basis, encoder_efficiency, gpu_weights_peak, per_core_share
from gpuready.units import fmt_number

CHUNK_TOKENS = 256
HNSW_M = 16
# A realistic personal collection: 10,000 documents (notes, mails, PDFs) of about five
# 256-token chunks each (~1,000 words a document). An assumption; change it with --documents.
DEFAULT_DOCUMENTS = 10_000
CHUNKS_PER_DOCUMENT = 5
# Pairs a reranker scores per query: the top 100 of the first-stage search (an assumption).
RERANK_CANDIDATES = 100
# Chunks embedded in one batch (sentence-transformers' encode() default batch_size = 32).
BATCH_CHUNKS = 32
VARIANT_BITS = {"fp32": 32.0, "fp16": 16.0, "int8": 8.0}
# Share of peak FLOPS that sentence-transformers (the runtime gpuready names) reaches when it
# embeds or reranks chunks: the compute-bound regime of an encoder at batch 32 (every token of
# every chunk through the same weight matrices). Fitted by benchmarks/score_search.py on
# benchmarks/validation/document-search*.toml; benchmarks/ACCURACY.md has the rows and the
# cross-validated errors.
# CPU: one core reaches CPU_EMBEDDING_EFFICIENCY of its peak, and each core's share falls as
# cores^-CPU_CORE_SCALING when PyTorch splits a batch's matrix multiplies across more cores
# (intra-op parallelism scales sub-linearly: thinner slices per core and a wait for the slowest
# at every operator; "Scaling up BERT-like model Inference on modern CPU - Part 1",
# https://huggingface.co/blog/bert-cpu-scaling-part-1, section 6, core count scaling). Fitted in
# log space over each (device, cores) median; kept because its leave-one-device-out error beats
# one flat CPU figure and the Whisper encoder's.
CPU_EMBEDDING_EFFICIENCY = 0.61
CPU_CORE_SCALING = 0.69
# GPU backends: a backend keeps its own figure only where leave-one-device-out beats the Whisper
# encoder's efficiency (tasks/encoders.py), which every other backend uses (none does yet: CUDA's
# one device cannot be cross-validated, and the encoder's figure predicts it within 6%).
EMBEDDING_EFFICIENCY: dict[str, float] = {}
# fp32 weights on a GPU: the efficiencies above are shares of the FP16 tensor peak (the fitted GPU row ran fp16).
# An fp32 run does not reach the tensor cores, but it is not slower by the whole FP16 : FP32 ratio either: in the
# paired runs of benchmarks/validation/document-search-gpus.toml (the same model, shape and GPU in fp32 and under
# fp16 autocast) the fp16 run was faster by that ratio to the power 0.21-0.52 (Tesla T4, ratio 8: 1.8-3.0x; RTX 3090,
# ratio 2: 1.2-1.4x); part of a pass (softmax, layer norms, activations) gains nothing from tensor cores. So an fp32
# run is counted at the FP16 peak x (FP32 rate / FP16 peak)^FP32_GPU_EXPONENT: the median over the GPUs of each GPU's
# median pair (benchmarks/score_search.py; held out by device, benchmarks/ACCURACY.md "Document search").
FP32_GPU_EXPONENT = 0.47
# Relative band on chunks per second: the 80th percentile of the leave-one-device-out errors of
# the sentence-transformers rows (benchmarks/score_search.py), so that about four in five
# predictions for a device the constants never saw fall inside it.
UNCERTAINTY = 0.3


@dataclass(frozen=True, kw_only=True)
class SearchModel(ModelEntry):
    kind: str  # embedding | reranker
    params: float
    layers: int
    hidden_size: int
    max_tokens: int
    dimensions: int | None = None  # embedding models: vector size
    task: str = "document-search"


def parse_search_model(entry: Entry, quants=None) -> SearchModel:
    kind = entry.choice("kind", ("embedding", "reranker"))
    variants = entry.known_names("variants", VARIANT_BITS, "precision")
    if kind == "embedding" and not entry.has("dimensions"):
        raise CatalogError(f"{entry.where}: an embedding model needs 'dimensions'")
    return SearchModel(
        kind=kind,
        params=entry.number("params"),
        layers=entry.integer("layers"),
        hidden_size=entry.integer("hidden_size"),
        max_tokens=entry.integer("max_tokens"),
        variants=variants,
        dimensions=entry.integer("dimensions", required=False),
        **entry.card(),
    )


# --- formulas --------------------------------------------------------------------------


def chunk_tokens(model: SearchModel) -> int:
    return min(CHUNK_TOKENS, model.max_tokens)


def layer_params(model: SearchModel) -> float:
    """Parameters that multiply: 12 x hidden^2 per layer (attention 4 h^2, MLP 8 h^2); embeddings are a lookup."""
    return 12 * model.hidden_size**2 * model.layers


def flops_per_chunk(model: SearchModel, tokens: int | None = None) -> float:
    """2 x layer parameters x tokens (each weight one multiply-add per token) + attention 4 x tokens^2 x width x layers.

    The attention term is QK^T and the weighted sum of V, 2 x tokens^2 x width FLOPs each per layer:
    the forward half of the 6N + 12 L H Q T training count in PaLM (Chowdhery et al. 2022, Appendix B).
    `tokens` defaults to gpuready's chunk (256 tokens, or the model's limit if shorter).
    """
    tokens = chunk_tokens(model) if tokens is None else tokens
    return 2 * layer_params(model) * tokens + 4 * tokens**2 * model.hidden_size * model.layers


def index_bytes(model: SearchModel, documents: int) -> int:
    """float32 vectors plus the HNSW graph's links: (d x 4 + M x 2 x 4) bytes per chunk."""
    return documents * CHUNKS_PER_DOCUMENT * (model.dimensions * 4 + HNSW_M * 2 * 4)


def activation_bytes(model: SearchModel) -> int:
    """One batch's hidden states (fp32) and attention scores for one layer at a time."""
    tokens = chunk_tokens(model)
    return BATCH_CHUNKS * tokens * 4 * (4 * model.hidden_size + tokens * max(1, model.hidden_size // 64))


def efficiency(backend: str, cores: int | None = None) -> tuple[float, str]:
    """Share of peak: the CPU's fitted per-core figure for its cores, a GPU backend's own, else the Whisper encoder's."""
    if backend == "cpu":
        value, used = per_core_share(CPU_EMBEDDING_EFFICIENCY, cores, CPU_CORE_SCALING)
        return value, (f"{value:.0%} cpu efficiency ({CPU_EMBEDDING_EFFICIENCY:.0%} for one core x {used} cores^-{CPU_CORE_SCALING:.2f}, "
                       "fitted on sentence-transformers measurements, benchmarks/ACCURACY.md)")
    if backend in EMBEDDING_EFFICIENCY:
        value = EMBEDDING_EFFICIENCY[backend]
        return value, f"{value:.0%} {backend} efficiency (fitted on sentence-transformers measurements, benchmarks/ACCURACY.md)"
    value, why = encoder_efficiency(backend)
    return value, why + "; no embedding measurement of its own"


def chunks_per_second(model: SearchModel, device: Device, tokens: int | None = None,
                      variant: str = "fp16") -> tuple[float | None, str]:
    """Chunks a second at the device's peak for the variant's weights (weights_peak: a GPU's fp32 weights below its
    FP16 peak) x the backend's efficiency."""
    if not device.flops:
        return None, f"throughput of {device.name} unknown: speed not estimated"
    share, why = efficiency(device.backend, device.cores)
    flops = flops_per_chunk(model, tokens)
    tokens = chunk_tokens(model) if tokens is None else tokens
    peak, basis = weights_peak(device, variant)
    return peak * share / flops, f"{flops / 1e9:.1f} GFLOPs per {tokens}-token chunk; {basis} x {why}"


def weights_peak(device: Device, variant: str, exponent: float = FP32_GPU_EXPONENT) -> tuple[float, str]:
    """The peak an embedding pass of `variant` weights is counted at: a CPU's (Device.flops); a GPU's as
    encoders.gpu_weights_peak counts it, fp32 weights at the fitted FP32_GPU_EXPONENT."""
    if device.kind == "cpu":
        return device.flops, device_flops_basis(device)
    return gpu_weights_peak(device, variant, exponent)


def estimate(model: SearchModel, variant: str, documents: int, gpu: Device | None, cpu: Device) -> TaskEstimate:
    weights = int(model.params * VARIANT_BITS[variant] / 8)
    activations = activation_bytes(model)
    basis = [f"weights: {model.params / 1e6:.0f}M parameters at {variant}",
             f"activations: batch of {BATCH_CHUNKS} chunks x {chunk_tokens(model)} tokens"]
    placement, device, parts = place_whole({f"weights ({variant})": weights, "activations": activations}, gpu, cpu)
    parts = list(parts)
    if model.kind == "embedding":
        index = index_bytes(model, documents)
        parts.append(MemoryPart(f"index ({documents:,} documents)", index, "system"))
        basis.append(
            f"index: {documents:,} documents x {CHUNKS_PER_DOCUMENT} chunks x ({model.dimensions} dims x 4 bytes"
            f" + HNSW M={HNSW_M} x 2 x 4 bytes), in system memory"
        )
    memory = MemoryParts(tuple(parts))
    basis.append(f"on {device.name} ({device.backend})")
    speed, why = chunks_per_second(model, device, variant=variant)
    basis.append(why)
    details = ()
    if speed and model.kind == "embedding":
        total = documents * CHUNKS_PER_DOCUMENT
        details = (("chunks", float(total)), ("index_build_seconds", total / speed))
        basis.append(f"embedding all {total:,} chunks takes about {_duration(total / speed)}")
    elif speed:
        details = (("seconds_per_query", RERANK_CANDIDATES / speed),)
        basis.append(f"reranking {RERANK_CANDIDATES} candidates takes about {RERANK_CANDIDATES / speed:.2f} s per query")
    unit = "chunks/s" if model.kind == "embedding" else "pairs/s"
    return TaskEstimate(model.id, variant, placement, memory, memory.on("gpu"), memory.on("system"), speed, unit,
                        UNCERTAINTY, details, tuple(basis))


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


# --- judging ---------------------------------------------------------------------------

# Embedding: time to index the whole collection. Ten minutes is a coffee break, an hour is
# acceptable once, eight hours (overnight) is the most a person will wait; product
# judgements. Reranking: seconds per query for RERANK_CANDIDATES pairs (0.5 s feels
# instant, 2 s is acceptable, 10 s is the limit of patience).
INDEX_SECONDS_CEILINGS = {"runs-well": 600.0, "runs": 3600.0, "slow": 8 * 3600.0}
RERANK_SECONDS_CEILINGS = {"runs-well": 0.5, "runs": 2.0, "slow": 10.0}
RUNTIME_BY_BACKEND = {"cuda": "sentence-transformers (CUDA)", "rocm": "sentence-transformers (ROCm)",
                      "metal": "sentence-transformers (MPS)", "sycl": "sentence-transformers (XPU) or OpenVINO",
                      "vulkan": "llama.cpp embeddings (Vulkan)", "cpu": "sentence-transformers (CPU)"}


def runtime(estimate: TaskEstimate, gpu: Device | None) -> str:
    """The runtime by backend; on an Intel GPU PyTorch has no XPU device for (an Iris Xe: devices.pytorch_drives),
    OpenVINO, which drives it."""
    backend = gpu.backend if gpu and estimate.placement != "cpu" else "cpu"
    if backend == "sycl" and not pytorch_drives(gpu):
        return "OpenVINO (optimum-intel)"
    return RUNTIME_BY_BACKEND.get(backend, "sentence-transformers")


def _collection(options) -> tuple[int, int]:
    documents = options.documents or DEFAULT_DOCUMENTS
    return documents, documents * CHUNKS_PER_DOCUMENT


def _floors(model: SearchModel, options) -> dict[str, float]:
    """Chunks (or pairs) a second needed to index the collection, or rerank a query, within each ceiling."""
    if model.kind == "embedding":
        return {level: _collection(options)[1] / seconds for level, seconds in INDEX_SECONDS_CEILINGS.items()}
    return {level: RERANK_CANDIDATES / seconds for level, seconds in RERANK_SECONDS_CEILINGS.items()}


def _describe(model: SearchModel, estimate: TaskEstimate, options) -> str:
    speed = estimate.speed
    if model.kind == "embedding":
        documents, chunks = _collection(options)
        return (f"about {fmt_number(speed)} chunks/s ({fmt_number(speed * 60)} a minute): {documents:,} documents indexed in "
                f"{_duration(chunks / speed)}")
    return f"about {fmt_number(speed)} pairs/s: {RERANK_CANDIDATES} candidates reranked in {RERANK_CANDIDATES / speed:.2f} s"


TASK = Task(
    name="document-search",
    title="Document search",
    parse=parse_search_model,
    variants=lambda model, catalog, gpu, options: without_cpu_fp16(listed_variants(model, catalog, gpu, options), gpu, options),
    estimate=lambda model, variant, catalog, gpu, cpu, options: estimate(model, variant, _collection(options)[0], gpu, cpu),
    level=lambda model, estimate, options: (level_at_least(estimate.speed, _floors(model, options)), []),
    describe=_describe,
    runtime=lambda model, estimate, gpu, catalog: runtime(estimate, gpu),
    quality=bits_quality(VARIANT_BITS),
    groups=(Group("embedding", "Embedding", "embedding", "embed"), Group("reranking", "Reranking", "reranker", "rerank")),
)
