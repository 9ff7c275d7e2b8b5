"""Memory and compute of fine-tuning a language model: pure functions over a catalogue
``LanguageModel`` and the user's recipe (method, sequence length, micro-batch, LoRA rank,
gradient checkpointing). No I/O; every constant cites where it comes from.

Methods: ``full-adamw`` (mixed precision, AdamW), ``full-8bit`` (mixed precision, 8-bit
AdamW), ``lora`` (16-bit frozen base, LoRA adapters on every linear layer) and ``qlora``
(4-bit NF4 frozen base with double quantisation, LoRA adapters on every linear layer).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuready.tasks.text_estimate import LanguageModel

METHODS = ("full-adamw", "full-8bit", "lora", "qlora")
FULL_METHODS = ("full-adamw", "full-8bit")

# Bytes per parameter, from Hugging Face's "Model training anatomy" (transformers docs,
# https://huggingface.co/docs/transformers/model_memory_anatomy, "Anatomy of Model's Memory"),
# which "Methods and tools for efficient training on a single GPU" builds on:
# model weights 6 bytes in mixed-precision training (an fp32 master copy and a 16-bit copy),
# gradients 4 bytes, AdamW 8 bytes (two fp32 moments), 8-bit optimisers such as
# bitsandbytes' 8-bit AdamW 2 bytes.
MIXED_PRECISION_WEIGHT_BYTES = 6
GRADIENT_BYTES = 4
OPTIMISER_BYTES = {"full-adamw": 8, "full-8bit": 2}
# A frozen base model in bf16: 2 bytes a parameter, no gradients, no optimiser states.
BASE_16BIT_BYTES = 2
# QLoRA's 4-bit NormalFloat with double quantisation: 4 bits plus 0.127 bits of quantisation
# constants a parameter (Dettmers et al. 2023, "QLoRA: Efficient Finetuning of Quantized
# LLMs", arXiv:2305.14314, section 3 "Double Quantization": 8/64 + 32/(64*256) = 0.127).
# bitsandbytes quantises the linear layers only; the embeddings and output head stay 16-bit.
NF4_BITS = 4.127
# LoRA adapters are kept in fp32 with fp32 gradients and AdamW's two fp32 moments: 4 + 4 + 8
# bytes an adapter parameter (PEFT casts adapter weights to float32 by default,
# ``autocast_adapter_dtype=True`` in peft.get_peft_model; the byte counts as above).
ADAPTER_WEIGHT_BYTES = 4
ADAPTER_GRADIENT_BYTES = 4
ADAPTER_OPTIMISER_BYTES = 8
# Activations of one transformer layer, 16-bit, no tensor parallelism: s*b*h*(34 + 5*a*s/h)
# bytes without recomputation, 2*s*b*h with full recomputation (Korthikanti et al. 2022,
# "Reducing Activation Recomputation in Large Transformer Models", arXiv:2205.05198, eq. (1)
# and section 4.1). The 5*a*s^2*b term (attention scores, softmax, dropout) is not stored
# with FlashAttention (Dao et al. 2022, arXiv:2205.14135), the default attention of
# transformers' Llama-class models through SDPA, so it is left out.
ACTIVATION_BYTES_PER_TOKEN_HIDDEN = 34
CHECKPOINT_BYTES_PER_TOKEN_HIDDEN = 2
# The loss step: transformers' causal-LM loss upcasts the logits to float32 before cross
# entropy. Per token and vocabulary entry: bf16 logits (2), their float32 copy (4), the
# saved log-softmax (4), its float32 gradient (4) and the bf16 gradient (2) = 16 bytes. An
# assumption from that code path, not a measurement; the Hugging Face + FA2 rows of
# benchmarks/validation/fine-tuning.toml score it.
LOSS_BYTES_PER_TOKEN_VOCAB = 16
DEFAULT_VOCAB = 32000
# Training FLOPs a token: 6 x parameters for a forward and backward pass (Kaplan et al. 2020,
# arXiv:2001.08361, section 2.1) plus 12 x layers x attention width x sequence for attention
# (Chowdhery et al. 2022, PaLM, arXiv:2204.02311, appendix B). LoRA computes no weight
# gradients for the frozen base: about 4 x parameters (forward 2, backward to the
# activations 2; Hu et al. 2021, arXiv:2106.09685, section 4.2 reports the resulting ~25%
# speed-up). Gradient checkpointing repeats the forward pass: + 2 x parameters (+ 4 x L x a x s).
FULL_FLOPS_PER_PARAM = 6
LORA_FLOPS_PER_PARAM = 4
RECOMPUTE_FLOPS_PER_PARAM = 2


@dataclass(frozen=True)
class Recipe:
    """What is trained and how: the method and its sizes."""

    method: str
    sequence_tokens: int
    micro_batch: int = 1
    lora_rank: int = 16
    checkpointing: bool = True

    @property
    def tokens(self) -> int:
        return self.sequence_tokens * self.micro_batch


def embedding_params(model: LanguageModel) -> float:
    """Input embeddings and output head, counted untied (2 x vocabulary x hidden): an upper bound."""
    return min(model.params, 2 * (model.vocab_size or DEFAULT_VOCAB) * model.hidden_size)


def linear_widths(model: LanguageModel) -> tuple[int, int, int]:
    """(attention width, KV width, feed-forward width); the feed-forward width is derived from the
    parameter count (a SwiGLU MLP of 3 x hidden x width a layer) where config.json's is not catalogued."""
    attention = model.attention_heads * model.head_dim
    kv = model.kv_heads * model.head_dim
    h = model.hidden_size
    per_layer = (model.params - embedding_params(model)) / model.layers
    attention_params = 2 * h * attention + 2 * h * kv
    feed_forward = max(h, int((per_layer - attention_params) / (3 * h)))
    return attention, kv, feed_forward


def lora_params(model: LanguageModel, rank: int) -> int:
    """LoRA on every linear layer (q, k, v, o, gate, up, down), as the QLoRA paper recommends:
    rank x (inputs + outputs) of each, in every layer."""
    attention, kv, feed_forward = linear_widths(model)
    h = model.hidden_size
    per_layer = (h + attention) + 2 * (h + kv) + (attention + h) + 3 * (h + feed_forward)
    return rank * per_layer * model.layers


def activation_bytes(model: LanguageModel, recipe: Recipe) -> int:
    """Stored activations of every layer; with checkpointing only each layer's input plus one
    layer recomputed at a time (never more than without it)."""
    per_layer = ACTIVATION_BYTES_PER_TOKEN_HIDDEN * recipe.tokens * model.hidden_size
    full = model.layers * per_layer
    if not recipe.checkpointing:
        return full
    return min(full, model.layers * CHECKPOINT_BYTES_PER_TOKEN_HIDDEN * recipe.tokens * model.hidden_size + per_layer)


def loss_bytes(model: LanguageModel, recipe: Recipe) -> int:
    return LOSS_BYTES_PER_TOKEN_VOCAB * recipe.tokens * (model.vocab_size or DEFAULT_VOCAB)


def memory_components(model: LanguageModel, recipe: Recipe) -> dict[str, int]:
    """The memory parts of one training step at its peak, in bytes, by label."""
    params = model.params
    parts: dict[str, int] = {}
    if recipe.method in FULL_METHODS:
        parts["weights (fp32 master + 16-bit copy)"] = int(params * MIXED_PRECISION_WEIGHT_BYTES)
        parts["gradients (fp32)"] = int(params * GRADIENT_BYTES)
        optimiser = "AdamW" if recipe.method == "full-adamw" else "8-bit AdamW"
        parts[f"optimiser states ({optimiser})"] = int(params * OPTIMISER_BYTES[recipe.method])
    else:
        if recipe.method == "qlora":
            embeddings = embedding_params(model)
            parts["base weights (NF4, embeddings 16-bit)"] = int((params - embeddings) * NF4_BITS / 8 + embeddings * BASE_16BIT_BYTES)
        else:
            parts["base weights (bf16, frozen)"] = int(params * BASE_16BIT_BYTES)
        adapters = lora_params(model, recipe.lora_rank)
        parts[f"LoRA adapters (rank {recipe.lora_rank}, fp32)"] = adapters * ADAPTER_WEIGHT_BYTES
        parts["adapter gradients"] = adapters * ADAPTER_GRADIENT_BYTES
        parts["adapter optimiser states (AdamW)"] = adapters * ADAPTER_OPTIMISER_BYTES
    label = "activations (checkpointed)" if recipe.checkpointing else "activations"
    parts[label] = activation_bytes(model, recipe)
    parts["loss (float32 logits)"] = loss_bytes(model, recipe)
    return parts


def trainable_params(model: LanguageModel, recipe: Recipe) -> float:
    return model.params if recipe.method in FULL_METHODS else lora_params(model, recipe.lora_rank)


def flops_per_token(model: LanguageModel, recipe: Recipe) -> float:
    """Training FLOPs per token of the sequence: weights (active parameters) plus attention."""
    per_param = FULL_FLOPS_PER_PARAM if recipe.method in FULL_METHODS else LORA_FLOPS_PER_PARAM
    attention = 12 * model.layers * model.attention_heads * model.head_dim * recipe.sequence_tokens
    if recipe.checkpointing:
        per_param += RECOMPUTE_FLOPS_PER_PARAM
        attention += 4 * model.layers * model.attention_heads * model.head_dim * recipe.sequence_tokens
    return per_param * model.active_params + attention
