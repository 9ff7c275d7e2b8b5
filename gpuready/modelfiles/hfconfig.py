"""Turn a Hugging Face ``config.json`` into a LanguageModel: parameter counts from the architecture.

Parameters are counted the way the transformers modelling code lays the weights out (the
files named per architecture below): embeddings, per layer the attention projections (with
their biases and q/k norms where the architecture has them), the MLP or the experts and their
router, the norms, and the output head unless it is tied to the embeddings. For
mixture-of-experts models the active parameters leave out the experts a token does not use.
Checked against published totals in tests/test_hfconfig.py (within 2%).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuready.tasks.text import LanguageModel


class HFConfigError(ValueError):
    """The config.json cannot be read or lacks what the count needs; the message says which."""


@dataclass(frozen=True)
class Arch:
    """How one transformers architecture lays out its weights."""

    qkv_bias: bool = False  # q, k and v projections carry a bias
    o_bias: bool = False
    qk_norm: bool = False  # a norm of head_dim on q and k (Qwen3, Gemma 3)
    norms_per_layer: int = 2  # RMSNorm vectors of hidden_size per layer
    tied_by_default: bool = False  # tie_word_embeddings when config.json leaves it out
    moe: bool = False
    expert_bias: bool = False  # experts and router carry biases (gpt-oss)
    attention_sinks: bool = False  # one learned sink logit per head (gpt-oss)
    alternating_window: int = 0  # every n-th layer is global, the rest use the sliding window


# Sources: transformers/src/transformers/models/<model_type>/modeling_<model_type>.py.
ARCHITECTURES: dict[str, Arch] = {
    "llama": Arch(),
    "mistral": Arch(),
    "mixtral": Arch(moe=True),
    "qwen2": Arch(qkv_bias=True),  # Qwen2Attention: q/k/v_proj bias=True, o_proj bias=False
    "qwen3": Arch(qk_norm=True),
    "qwen3_moe": Arch(qk_norm=True, moe=True),
    "phi3": Arch(),  # fused qkv_proj and gate_up_proj: the same count as separate projections
    # Gemma 2/3: input, post-attention, pre- and post-feedforward norms; embeddings tied.
    "gemma2": Arch(norms_per_layer=4, tied_by_default=True, alternating_window=2),
    "gemma3_text": Arch(qk_norm=True, norms_per_layer=4, tied_by_default=True, alternating_window=6),
    # GptOssAttention: q/k/v/o with bias, sinks per head; GptOssExperts: gate_up and down with biases.
    "gpt_oss": Arch(qkv_bias=True, o_bias=True, moe=True, expert_bias=True, attention_sinks=True, alternating_window=2),
}

# Values transformers uses when a Gemma 3 text config leaves them out
# (Gemma3TextConfig defaults in configuration_gemma3.py).
_DEFAULTS = {"gemma3_text": {"vocab_size": 262_208, "head_dim": 256, "max_position_embeddings": 131_072, "sliding_window": 4096}}


def _whole(config: dict, key: str, model_type: str, default: int | None = None, required: bool = True) -> int | None:
    value = config.get(key)
    if value is None:
        value = _DEFAULTS.get(model_type, {}).get(key, default)
    if value is None:
        if required:
            raise HFConfigError(f"missing '{key}', which a {model_type} config needs")
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise HFConfigError(f"'{key}' must be a positive whole number (got {_shown(value)})")
    if value > MAX_FIELD:
        raise HFConfigError(f"'{key}' is implausibly large ({_shown(value)}; at most {MAX_FIELD:,})")
    return value


# No real model's count (vocabulary, context, hidden size, layers, experts) comes near 2^31;
# a bigger one is a typo or a fuzzed file, and would overflow the float parameter count.
MAX_FIELD = 2**31 - 1


def _shown(value: Any) -> str:
    """A value for an error message, cut short: a huge integer or a long string must stay one line."""
    text = repr(value) if not isinstance(value, int) or abs(value) < 10**30 else f"an integer of {len(str(abs(value)))} digits"
    return text if len(text) <= 60 else text[:57] + "..."


def text_config(config: dict) -> tuple[dict, str]:
    """The language-model part of a config (multimodal Gemma 3 nests it under text_config) and its model_type."""
    if not isinstance(config, dict):
        raise HFConfigError("config.json must hold a JSON object")
    model_type = config.get("model_type")
    if model_type == "gemma3" and isinstance(config.get("text_config"), dict):
        return config["text_config"], "gemma3_text"
    if not isinstance(model_type, str):
        raise HFConfigError("missing 'model_type'")
    if model_type not in ARCHITECTURES:
        raise HFConfigError(f"model_type '{model_type}' is not supported (supported: {', '.join(sorted(ARCHITECTURES))})")
    return config, model_type


def _window_layers(config: dict, model_type: str, arch: Arch, layers: int) -> tuple[int | None, int]:
    """The sliding window and how many layers use it."""
    window = config.get("sliding_window", _DEFAULTS.get(model_type, {}).get("sliding_window"))
    if not isinstance(window, int) or isinstance(window, bool) or window <= 0:
        return None, 0
    layer_types = config.get("layer_types")
    if isinstance(layer_types, list) and layer_types:
        return window, min(layers, sum(1 for kind in layer_types if kind == "sliding_attention"))
    if arch.alternating_window:
        pattern = config.get("sliding_window_pattern", arch.alternating_window)
        if not isinstance(pattern, int) or pattern <= 0:
            pattern = arch.alternating_window
        return window, layers - layers // pattern
    if model_type in ("mistral", "mixtral"):
        return window, layers  # Mistral 7B v0.1: every layer attends within the window
    if model_type.startswith("qwen") and config.get("use_sliding_window"):
        full = config.get("max_window_layers", layers)
        return window, max(0, layers - full) if isinstance(full, int) else 0
    # Phi-3 configs name a window too; the KV cache is counted in full, which overstates rather than understates.
    return None, 0


def _moe_layers(config: dict, layers: int) -> int:
    """Layers whose MLP is a mixture of experts (Qwen3-MoE can keep some dense)."""
    step = config.get("decoder_sparse_step", 1) or 1
    if isinstance(step, bool) or not isinstance(step, int) or not 0 < step <= MAX_FIELD:
        raise HFConfigError(f"'decoder_sparse_step' must be a positive whole number (got {_shown(step)})")
    listed = config.get("mlp_only_layers") or []
    if not isinstance(listed, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in listed):
        raise HFConfigError(f"'mlp_only_layers' must be a list of layer numbers (got {_shown(listed)})")
    dense = set(listed)
    return sum(1 for i in range(layers) if i not in dense and (i + 1) % step == 0)


def language_model(config: dict, model_id: str, name: str, source: str) -> LanguageModel:
    """Count a config's parameters and fill a LanguageModel (quants left empty for the caller)."""
    config, model_type = text_config(config)
    arch = ARCHITECTURES[model_type]
    hidden = _whole(config, "hidden_size", model_type)
    layers = _whole(config, "num_hidden_layers", model_type)
    heads = _whole(config, "num_attention_heads", model_type)
    kv_heads = _whole(config, "num_key_value_heads", model_type, default=heads)
    head_dim = _whole(config, "head_dim", model_type, default=hidden // heads)
    vocab = _whole(config, "vocab_size", model_type)
    context = _whole(config, "max_position_embeddings", model_type)
    if kv_heads > heads:
        raise HFConfigError(f"'num_key_value_heads' ({kv_heads}) exceeds 'num_attention_heads' ({heads})")

    attention = hidden * heads * head_dim + 2 * hidden * kv_heads * head_dim + heads * head_dim * hidden
    if arch.qkv_bias or config.get("attention_bias"):
        attention += heads * head_dim + 2 * kv_heads * head_dim
    if arch.o_bias or (config.get("attention_bias") and model_type != "qwen2"):
        attention += hidden
    attention += 2 * head_dim if arch.qk_norm else 0
    attention += heads if arch.attention_sinks else 0
    per_layer = attention + arch.norms_per_layer * hidden

    experts = experts_per_token = None
    moe_layers = 0
    expert_params = 0
    if arch.moe:
        experts = _whole(config, "num_local_experts" if model_type in ("mixtral", "gpt_oss") else "num_experts", model_type)
        experts_per_token = _whole(config, "num_experts_per_tok", model_type)
        if experts_per_token > experts:
            raise HFConfigError(f"'num_experts_per_tok' ({experts_per_token}) exceeds the {experts} experts")
        expert_size = _whole(config, "moe_intermediate_size" if model_type == "qwen3_moe" else "intermediate_size", model_type)
        expert_params = 3 * hidden * expert_size + ((2 * expert_size + hidden) if arch.expert_bias else 0)
        router = hidden * experts + (experts if arch.expert_bias else 0)
        moe_layers = _moe_layers(config, layers) if model_type == "qwen3_moe" else layers
        dense_layers = layers - moe_layers
        dense_mlp = 3 * hidden * _whole(config, "intermediate_size", model_type) if dense_layers else 0
        mlp_total = moe_layers * (experts * expert_params + router) + dense_layers * dense_mlp
    else:
        mlp_total = layers * 3 * hidden * _whole(config, "intermediate_size", model_type)

    tied = config.get("tie_word_embeddings", arch.tied_by_default)
    embeddings = vocab * hidden * (1 if tied else 2)
    params = embeddings + layers * per_layer + mlp_total + hidden  # + the final norm
    active = params - moe_layers * (experts - experts_per_token) * expert_params if arch.moe else params
    window, window_layers = _window_layers(config, model_type, arch, layers)
    return LanguageModel(
        id=model_id,
        name=name,
        params=float(params),
        active_params=float(active),
        layers=layers,
        hidden_size=hidden,
        attention_heads=heads,
        kv_heads=kv_heads,
        head_dim=head_dim,
        context_length=context,
        quants=(),
        source=source,
        family=model_type,
        vocab_size=vocab,
        tied_embeddings=bool(tied),
        sliding_window=window if window_layers else None,
        sliding_window_layers=window_layers,
        experts=experts,
        experts_per_token=experts_per_token,
        notes=f"parameters counted from config.json ({model_type}), not from the weight files",
        origin=source,
    )


def read_config(path: Path) -> dict[str, Any]:
    """Load a config.json (or the one in a directory); errors name the file."""
    if path.is_dir():
        path = path / "config.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise HFConfigError(f"{path}: cannot read: {error.strerror or error}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise HFConfigError(f"{path}: not valid JSON: {error}") from None
    except RecursionError:
        raise HFConfigError(f"{path}: not valid JSON: nested too deeply") from None
    if not isinstance(data, dict):
        raise HFConfigError(f"{path}: config.json must hold a JSON object")
    return data
