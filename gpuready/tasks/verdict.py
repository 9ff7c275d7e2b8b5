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


@dataclass(frozen=True)
class VariantVerdict:
    quant: str
    level: str
    placement: str | None
    memory_needed_bytes: int
    generation_tokens_per_s: float | None  # text generation only


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


@dataclass(frozen=True)
class Options:
    """What the user asked for: a context length, a fixed quantisation (or variant), the weakest
    placement accepted, and the other tasks' sizes (documents to index, image resolution)."""

    context_tokens: int | None = None
    quant: str | None = None
    placement: str = "cpu"  # gpu: GPU only; offload: or model offload; split: or GPU+CPU split; cpu: anything
    documents: int | None = None  # document search: size of the collection to index
    resolution: tuple[int, int] | None = None  # image generation: width, height (default: the model's own)


def effective_rank(level: str, quality: str | None) -> int:
    """A level's rank, one step worse for a variant of poor quality: a good 4-bit variant
    that runs beats a 2-bit one that runs well, and a 24B at 4 bits beats a 32B at 2 bits."""
    rank = LEVELS.index(level)
    return rank + 1 if level in RUNNABLE and quality == "poor" else rank


def rank_key(verdict: Verdict):
    """Best level first; within a level, the most capable (largest) model first."""
    return (effective_rank(verdict.level, verdict.quality), -verdict.model_params, verdict.model_id)
