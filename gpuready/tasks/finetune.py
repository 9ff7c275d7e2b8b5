"""Fine-tuning: the task's hooks for the one judge, over the text-generation catalogue's LLMs.

It has no catalogue of its own (``models_from="text-generation"``): each LLM is judged again
for training. Variants are the methods (full-adamw, full-8bit, lora, qlora); the recipe's
sizes come from the user's Options. Memory and FLOPs are in ``finetune_memory``; this module
places the run, turns compute into training tokens/s, levels it against floors, and says
what would change the answer (another method, checkpointing on, a shorter sequence).
"""

from __future__ import annotations

from dataclasses import replace

from gpuready.tasks import judge as one_judge
from gpuready.tasks import text
from gpuready.tasks.base import MemoryParts, Task, TaskEstimate, level_at_least, place_whole
from gpuready.tasks.devices import Device, one_card, pytorch_drives
from gpuready.tasks.finetune_memory import (
    FULL_METHODS,
    embedding_params,
    METHODS,
    Recipe,
    flops_per_token,
    memory_components,
    trainable_params,
)
from gpuready.tasks.verdict import LEVELS, level_words
from gpuready.units import fmt_gb, fmt_number

DEFAULT_SEQUENCE_TOKENS = 2048
DEFAULT_MICRO_BATCH = 1
DEFAULT_LORA_RANK = 16
# Training floors in tokens/s. A fine-tuning set of about 10 million tokens (the order of
# Stanford Alpaca's 52K instruction examples, https://github.com/tatsu-lab/stanford_alpaca)
# takes one epoch in about an hour at 2,800 tokens/s ("runs-well"), overnight (12 hours) at
# 230 ("runs"), and a week at 17 ("slow"); slower than that is too slow to use.
DATASET_TOKENS = 10_000_000
FINE_TUNING_FLOORS = {"runs-well": 2800.0, "runs": 230.0, "slow": 17.0}
# Share of peak 16-bit throughput a fine-tuning run reaches (model FLOPs utilisation): 0.40,
# from Meta's Llama 3 pre-training at 38-43% BF16 MFU (Llama Team 2024, "The Llama 3 Herd of
# Models", arXiv:2407.21783, table 4). Single-GPU fine-tuning frameworks differ widely on one
# recipe: a published comparison of PEFT + bitsandbytes and torchtune QLoRA of Llama 3 8B on
# one RTX 4090 measured about 2,300 and 670 tokens/s (a README found by gpuready's source
# search, "Comparison of torchtune and PEFT results for Llama3 8b instruct LoRA-finetuning on
# single device"; sequence length not stated), hence the +/-50% band. gpuready has no
# validated training-speed rows yet (benchmarks/FINETUNE_ACCURACY.md scores memory only).
# Other backends: unmeasured assumptions (MLX LoRA on Apple silicon, PyTorch on the CPU).
TRAINING_EFFICIENCY = {"cuda": 0.40, "rocm": 0.40, "metal": 0.30, "cpu": 0.20}
SPEED_UNCERTAINTY = 0.5
# Memory range: the point estimate is the Hugging Face transformers + PEFT path. Fused or
# chunked cross-entropy (Unsloth, Liger Kernel, Apple's Cut Cross-Entropy) never holds the
# float32 logits: the low end leaves them out. The high end adds 20% for the PyTorch caching
# allocator's reserved-but-unused memory (an assumption; torchtune's tables report reserved
# peaks for this reason).
ALLOCATOR_MARGIN = 0.20
# QLoRA's 4-bit base is dequantised to 16-bit for every matrix product (bitsandbytes' dequantize kernel, then a 16-bit
# GEMM): once in the forward pass, once in the backward pass for the input gradient, once more where checkpointing
# recomputes the forward. That memory-bound work is per step and per quantised weight, whatever the step's tokens:
# a long sequence hides it, a short one does not. Measured as the extra time a step took with the base in NF4 with
# double quantisation, against the same run in bf16, over the linear weights and the GPU's bandwidth: LitGPT's
# resource tables (A100-SXM4-40GB, bitsandbytes 0.41.1; benchmarks/validation/fine-tuning-qlora-speed.toml) give
# 9.1-12.4 bytes a weight a pass on eight runs of four models, median 10.7 (benchmarks/FINETUNE_ACCURACY.md scores it
# with each model held out): about 4x what reading 0.5 and writing 2 bytes a weight at full bandwidth would take.
# bitsandbytes only: MLX's quantised LoRA multiplies the packed weights directly (no 16-bit copy).
QLORA_DEQUANT_BYTES_PER_WEIGHT = 10.7
QLORA_DEQUANT_BACKENDS = ("cuda", "rocm")
RUNTIMES = {"cuda": "PyTorch (CUDA)", "rocm": "PyTorch (ROCm)", "sycl": "PyTorch (XPU)", "metal": "MLX (mlx-lm)",
            "cpu": "PyTorch (CPU)"}
# What each method needs beyond PyTorch: bitsandbytes' 8-bit optimisers and 4-bit base run on
# CUDA and ROCm GPUs; MLX trains LoRA adapters over a quantised model (QLoRA) but has no 8-bit
# optimiser; full-precision methods run anywhere PyTorch does.
METHOD_BACKENDS = {"full-8bit": ("cuda", "rocm"), "qlora": ("cuda", "rocm", "metal")}
QUALITY = {"full-adamw": (4.0, "lossless"), "full-8bit": (3.5, "near-lossless"), "lora": (3.0, None), "qlora": (2.0, None)}


def recipe(method: str, options) -> Recipe:
    return Recipe(method=method, sequence_tokens=sequence_tokens(None, options), micro_batch=options.micro_batch or DEFAULT_MICRO_BATCH,
                  lora_rank=options.lora_rank or DEFAULT_LORA_RANK, checkpointing=options.checkpointing)


def sequence_tokens(model, options) -> int:
    """The training sequence length judged: the user's, default 2,048, capped at the model's context."""
    wanted = options.sequence_tokens or DEFAULT_SEQUENCE_TOKENS
    return min(wanted, model.context_length) if model is not None else wanted


def variants(model, catalog, gpu: Device | None, options) -> list[str]:
    return [options.method] if options.method in METHODS else list(METHODS)


def estimate(model, variant: str, catalog, gpu: Device | None, cpu: Device, options) -> TaskEstimate:
    """Memory at the step's peak, placement (one GPU, else the CPU), and training tokens/s."""
    plan = replace(recipe(variant, options), sequence_tokens=sequence_tokens(model, options))
    components = memory_components(model, plan)
    # A GPU trains where PyTorch has a device for it (devices.pytorch_drives: CUDA, ROCm, XPU on the Intel GPUs PyTorch
    # validates) or MLX runs (Apple silicon). PyTorch has no Vulkan device, so a GPU llama.cpp reaches only through
    # Vulkan (a Radeon without ROCm, as on Windows) or an Iris Xe trains nothing: the run is judged on the CPU.
    if gpu is not None and not pytorch_drives(gpu):
        gpu = None
    # Training keeps a whole copy on each GPU (data parallel): a group fits as one of its cards does.
    placement, device, parts = place_whole(components, gpu, cpu)
    memory = MemoryParts(parts)
    flops = flops_per_token(model, plan)
    efficiency = TRAINING_EFFICIENCY.get(device.backend, TRAINING_EFFICIENCY["cpu"])
    # Data parallel: every card trains on its own micro-batches, so a group's speed adds up.
    on_gpu = placement != "cpu" and gpu is not None and bool(gpu.flops)
    cards = gpu.count if on_gpu else 1
    card = one_card(gpu) if on_gpu else device
    dequant_s = dequant_seconds(model, plan, card) if variant == "qlora" else 0.0
    speed = None
    if card.flops:
        step_s = plan.tokens * flops / (card.flops * efficiency) + dequant_s
        speed = cards * plan.tokens / step_s
    peak = card.flops * cards if card.flops else None
    loss = next(size for label, size in components.items() if label.startswith("loss"))
    low = memory.total_bytes - loss
    high = int(memory.total_bytes * (1 + ALLOCATOR_MARGIN))
    trainable = trainable_params(model, plan)
    basis = [
        f"{variant}: {trainable / 1e6:,.1f}M trainable parameters of {model.params / 1e9:.2f}B; sequence {plan.sequence_tokens:,} tokens x "
        f"micro-batch {plan.micro_batch}, gradient checkpointing {'on' if plan.checkpointing else 'off'}",
        "bytes a parameter: mixed-precision weights 6, gradients 4, AdamW 8, 8-bit AdamW 2 (Hugging Face, Model training anatomy); "
        "NF4 4.127 bits (QLoRA paper); LoRA adapters fp32 with AdamW, 16 bytes",
        "activations: 34 x tokens x hidden bytes a layer, 2 with checkpointing (Korthikanti et al. 2022), "
        "attention scores not stored (FlashAttention); loss: 16 bytes x tokens x vocabulary (float32 logits)",
        f"memory range {fmt_gb(low)} (fused cross-entropy, as Unsloth or Liger) to {fmt_gb(high)} (allocator reserve): "
        "published figures for one recipe differ by about 2x",
    ]
    if peak:
        assumed = "" if device.backend in TRAINING_EFFICIENCY else f" (none known for {device.backend}: the CPU's)"
        basis.append(
            f"speed: {flops / 1e9:,.1f} GFLOPs a token ({'6' if variant in FULL_METHODS else '4'} x parameters"
            f"{' + 2 recomputed' if plan.checkpointing else ''}, plus attention) on {peak / 1e12:.1f} TFLOPS x "
            f"{efficiency:.0%} {device.backend} training efficiency{assumed}; {fmt_number(speed * 0.5)}-{fmt_number(speed * 1.5)} tokens/s"
        )
        if dequant_s:
            basis.append(
                f"NF4 base dequantised to 16-bit {dequant_passes(plan)} times a step (forward, backward"
                f"{', recompute' if plan.checkpointing else ''}): {quantised_weights(model) / 1e9:.2f}B weights x "
                f"{QLORA_DEQUANT_BYTES_PER_WEIGHT} bytes at {card.bandwidth_bytes_per_s / 1e9:,.0f} GB/s = "
                f"{dequant_s * 1e3:,.0f} ms a step of {plan.tokens:,} tokens (bitsandbytes; LitGPT's A100 tables)"
            )
        if gpu is not None and gpu.count > 1 and placement == "gpu":
            basis.append(f"data parallel over {gpu.name}: each GPU holds a whole copy; speed adds up")
    details = (("trainable_params", float(trainable)), ("flops_per_token", flops),
               ("memory_low_bytes", float(low)), ("memory_high_bytes", float(high)))
    return TaskEstimate(model.id, variant, placement, memory, memory.on("gpu"), memory.on("system"), speed,
                        "training tokens/s", SPEED_UNCERTAINTY, details, tuple(basis))


def quantised_weights(model) -> float:
    """The weights QLoRA stores in NF4: all but the embeddings and output head (finetune_memory's NF4 part)."""
    return model.params - embedding_params(model)


def dequant_passes(plan: Recipe) -> int:
    return 3 if plan.checkpointing else 2


def dequant_seconds(model, plan: Recipe, card: Device) -> float:
    """Seconds a training step spends dequantising QLoRA's NF4 base on one card (QLORA_DEQUANT_BYTES_PER_WEIGHT);
    0 where bitsandbytes does not run it or the card's bandwidth is unknown."""
    if card.backend not in QLORA_DEQUANT_BACKENDS or not card.bandwidth_bytes_per_s:
        return 0.0
    return dequant_passes(plan) * quantised_weights(model) * QLORA_DEQUANT_BYTES_PER_WEIGHT / card.bandwidth_bytes_per_s


def at_risk(model, estimate: TaskEstimate, gpu: Device | None, cpu: Device) -> str | None:
    """A method that fits at its point estimate but not at the high end of its memory range (the caching allocator's
    reserve, ALLOCATOR_MARGIN): a run that meets that end runs out of memory, so another method is safer."""
    high = dict(estimate.details).get("memory_high_bytes")
    # data parallel: each card of a group holds a whole copy, so one card's memory is what counts
    usable = (one_card(gpu) if estimate.placement == "gpu" and gpu is not None else cpu).usable_memory_bytes
    if high is None or usable is None or high <= usable:
        return None
    return (f"at the high end of its memory range it needs {fmt_gb(high)} of the {fmt_gb(usable)} usable, "
            "so it may run out of memory")


def refuse(model, variant: str, estimate: TaskEstimate, gpu: Device | None, catalog) -> str | None:
    """bitsandbytes' 8-bit optimisers and QLoRA's 4-bit base need their runtime's GPU."""
    backends = METHOD_BACKENDS.get(variant)
    backend = gpu.backend if gpu is not None and estimate.placement == "gpu" else "cpu"
    if backends is None or backend in backends:
        return None
    return f"{variant} needs bitsandbytes (or MLX for qlora) on a {' or '.join(b.upper() for b in backends)} GPU, whole in its memory"


def days(speed: float) -> str:
    hours = DATASET_TOKENS / speed / 3600
    return f"{hours:.1f} hours" if hours < 48 else f"{hours / 24:.0f} days"


def level(model, estimate: TaskEstimate, options) -> tuple[str, list[str]]:
    result = level_at_least(estimate.speed, FINE_TUNING_FLOORS)
    reasons = [f"{DATASET_TOKENS / 1e6:.0f}M training tokens (one epoch of an Alpaca-sized set) take about {days(estimate.speed)}"]
    if result == "too-slow":
        reasons.append(f"below the {FINE_TUNING_FLOORS['slow']:.0f} tokens/s floor of usable (a week for such a set)")
    return result, reasons


def describe(model, estimate: TaskEstimate, options) -> str:
    return f"about {fmt_number(estimate.speed)} training tokens/s"


def runtime(model, estimate: TaskEstimate, gpu: Device | None, catalog) -> str:
    backend = gpu.backend if gpu is not None and estimate.placement == "gpu" else "cpu"
    name = RUNTIMES.get(backend, f"PyTorch ({backend})")
    if estimate.quant not in FULL_METHODS and backend != "metal":
        name += " + PEFT"
    if estimate.quant in METHOD_BACKENDS and backend in ("cuda", "rocm"):
        name += " + bitsandbytes"
    return name


def quality(model, variant: str, catalog) -> tuple[float, str | None]:
    """Full fine-tuning first where it runs as well; QLoRA matched 16-bit full fine-tuning in its
    paper's benchmarks, so the labels stay empty rather than claim a loss."""
    return QUALITY.get(variant, (0.0, None))


def suggest(model, chosen, catalog, gpu: Device | None, cpu: Device, options) -> list[str]:
    """Another method (when one was fixed), checkpointing on, or a shorter sequence that would do better."""
    tries = []
    if options.method:
        tries += [(f"--method {m}", replace(options, method=m)) for m in METHODS if m != options.method]
    if not options.checkpointing:
        tries.append(("gradient checkpointing on (without --no-checkpointing)", replace(options, checkpointing=True)))
    sequence = sequence_tokens(model, options)
    tries += [(f"--sequence {s}", replace(options, sequence_tokens=s)) for s in (1024, 512) if s < sequence]
    found = []
    for words, changed in tries:
        method = changed.method or chosen.variant
        judged = one_judge.judge_variant(TASK, model, method, catalog, gpu, cpu, changed)
        if LEVELS.index(judged.level) < LEVELS.index(chosen.level):
            found.append(f"{words} would make it '{level_words(judged.level)}' ({fmt_gb(judged.estimate.memory.total_bytes)})")
            if len(found) == 2:
                break
    return found


def least_memory(model, chosen, candidates, catalog, cpu: Device, options) -> str:
    """The memory QLoRA, the smallest method, needs with checkpointing at this sequence."""
    plan = Recipe("qlora", sequence_tokens(model, options), options.micro_batch or DEFAULT_MICRO_BATCH,
                  options.lora_rank or DEFAULT_LORA_RANK, True)
    need = sum(memory_components(model, plan).values())
    return f"at least {fmt_gb(need)} of free memory is needed for weights, training state and activations even with qlora and checkpointing"


TASK = Task(
    name="fine-tuning",
    title="Fine-tuning",
    parse=text.parse_language_model,
    variants=variants,
    estimate=estimate,
    level=level,
    describe=describe,
    runtime=runtime,
    quality=quality,
    refuse=refuse,
    suggest=suggest,
    at_risk=at_risk,
    context=sequence_tokens,
    least_memory=least_memory,
    placement_first=True,
    speed_unknown="device FLOPS unknown: training speed not estimated",
    models_from="text-generation",
    variant_flag="--method",
)
