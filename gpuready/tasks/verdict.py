"""What a judgement says, for every task: the Verdict, its levels and placements, and the user's Options.

Levels, best first: runs-well, runs, slow, too-slow (fits, but below the usable floor),
does-not-fit, unknown.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

LEVELS = ("runs-well", "runs", "slow", "too-slow", "does-not-fit", "unknown")
RUNNABLE = ("runs-well", "runs", "slow")

# Weakest accepted placement last. "offload" (image models: components take turns on the GPU,
# all compute stays there) ranks above "split" (layers computed by the CPU).
PLACEMENT_ORDER = ("gpu", "offload", "split", "cpu")
# Each placement in words for people, the same in every front end: "split" runs layers on both, "offload" runs on
# the GPU while components wait their turn in system memory.
PLACEMENT_WORDS = {"gpu": "GPU", "offload": "GPU+offload", "split": "GPU+CPU", "cpu": "CPU"}


def level_words(level: str) -> str:
    """'runs-well' -> 'runs well': words for people; the JSON's level fields keep the tokens."""
    return level.replace("-", " ")


@dataclass(frozen=True)
class VariantVerdict:
    quant: str
    level: str
    placement: str | None
    memory_needed_bytes: int
    generation_tokens_per_s: float | None  # text generation only
    supported: bool = True  # False: level does-not-fit because no runtime here runs this variant at all
    speed: float | None = None  # the variant's headline speed in speed_unit, any task (None: not estimated)
    speed_unit: str | None = None


@dataclass(frozen=True)
class Verdict:
    task: str
    model_id: str
    model_name: str
    model_params: float
    level: str
    quant: str | None
    context_tokens: int | None  # text generation only
    placement: str | None  # gpu | offload | split | cpu, None when it does not fit
    runtime: str | None
    memory_needed_bytes: int | None
    memory_available_bytes: int | None
    estimate: Any  # the task's estimate of the chosen variant (text generation: text_estimate.Estimate)
    reasons: tuple[str, ...]
    suggestions: tuple[str, ...] = ()
    variants: tuple[VariantVerdict, ...] = field(default=())
    # The headline speed in the task's own unit (text generation: generation tokens/s),
    # and its relative uncertainty, so front ends need not know each task's estimate.
    speed: float | None = None
    speed_unit: str | None = None
    uncertainty: float | None = None
    quality: str | None = None  # of the variant: lossless, near-lossless, good, fair, poor
    # False where the level is does-not-fit because no runtime here runs the variant wherever it is placed (MLX
    # weights on a PC, FP8 on a GPU vLLM has no FP8 kernels for), not because it is too big: shown as "not supported".
    supported: bool = True
    group: str | None = None  # the part of the task the model serves: speech-to-text, text-to-speech, embedding, reranking
    energy: Any = None  # gpuready.tasks.energy.Energy: energy per unit of work, where power and speed are known
    npu: Any = None  # gpuready.tasks.npu.NpuOffer: the NPU placement a cited runtime offers, next to this one
    # Why the chosen variant got its level, without the task's notes that follow it in reasons (an NPU not used):
    # check's 'closest' names it.
    cause: str | None = None


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
    # Fine-tuning (gpuready.tasks.finetune): the method (None: every method is judged), the training
    # sequence length, micro-batch, LoRA rank and whether gradient checkpointing is on.
    method: str | None = None
    sequence_tokens: int | None = None  # default: finetune.DEFAULT_SEQUENCE_TOKENS
    micro_batch: int | None = None  # default 1
    lora_rank: int | None = None  # default 16
    checkpointing: bool = True
    # Text generation: sequences served at once (the KV cache holds one per user); None: one.
    users: int | None = None
    # Models resident alongside (--with): their memory is taken before anything else is judged.
    with_models: tuple[str, ...] = ()


# Variants below "good" quality (catalog/quants.toml: perplexity +0.30 or more on Llama 3 8B:
# the 2- and 3-bit K-quants, Q4_0, MLX 4-bit) count one level lower than their speed alone
# would earn: a good 4-bit variant that runs beats a 3-bit one that runs well, and a 24B at
# 4 bits beats a 32B at 3 bits. The judge applies it to every variant's level, so every
# rank, pick and summary sees the same level.
LOW_QUALITIES = ("fair", "poor")


def quality_adjusted(level: str, quality: str | None) -> str:
    """The level a variant of this quality gets: one lower for a runnable variant below good quality."""
    if level in RUNNABLE and quality in LOW_QUALITIES:
        return LEVELS[LEVELS.index(level) + 1]
    return level


def rank_key(verdict: Verdict):
    """Best level first, a model no runtime here runs last; within a level, the most capable (largest) model first."""
    return (LEVELS.index(verdict.level) if verdict.supported else len(LEVELS), -verdict.model_params, verdict.model_id)
