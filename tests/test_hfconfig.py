"""Parameter counts from real Hugging Face config.json files, against the published totals.

Each config below is the model's config.json as published on the Hugging Face Hub (the URL
next to it); the published parameter counts come from the model cards or release notes named.
"""

from __future__ import annotations

import pytest

from gpuready.modelfiles.hfconfig import HFConfigError, language_model

# https://huggingface.co/meta-llama/Llama-3.1-8B/blob/main/config.json
LLAMA_3_1_8B = {
    "architectures": ["LlamaForCausalLM"],
    "attention_bias": False,
    "attention_dropout": 0.0,
    "bos_token_id": 128000,
    "eos_token_id": 128001,
    "hidden_act": "silu",
    "hidden_size": 4096,
    "initializer_range": 0.02,
    "intermediate_size": 14336,
    "max_position_embeddings": 131072,
    "mlp_bias": False,
    "model_type": "llama",
    "num_attention_heads": 32,
    "num_hidden_layers": 32,
    "num_key_value_heads": 8,
    "pretraining_tp": 1,
    "rms_norm_eps": 1e-05,
    "rope_scaling": {
        "factor": 8.0,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
        "original_max_position_embeddings": 8192,
        "rope_type": "llama3",
    },
    "rope_theta": 500000.0,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "transformers_version": "4.43.0.dev0",
    "use_cache": True,
    "vocab_size": 128256,
}

# https://huggingface.co/Qwen/Qwen2.5-7B/blob/main/config.json
QWEN_2_5_7B = {
    "architectures": ["Qwen2ForCausalLM"],
    "attention_dropout": 0.0,
    "bos_token_id": 151643,
    "eos_token_id": 151643,
    "hidden_act": "silu",
    "hidden_size": 3584,
    "initializer_range": 0.02,
    "intermediate_size": 18944,
    "max_position_embeddings": 131072,
    "max_window_layers": 28,
    "model_type": "qwen2",
    "num_attention_heads": 28,
    "num_hidden_layers": 28,
    "num_key_value_heads": 4,
    "rms_norm_eps": 1e-06,
    "rope_theta": 1000000.0,
    "sliding_window": 131072,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "transformers_version": "4.40.1",
    "use_cache": True,
    "use_mrope": False,
    "use_sliding_window": False,
    "vocab_size": 152064,
}

# https://huggingface.co/Qwen/Qwen3-30B-A3B/blob/main/config.json
QWEN_3_30B_A3B = {
    "architectures": ["Qwen3MoeForCausalLM"],
    "attention_bias": False,
    "attention_dropout": 0.0,
    "bos_token_id": 151643,
    "decoder_sparse_step": 1,
    "eos_token_id": 151645,
    "head_dim": 128,
    "hidden_act": "silu",
    "hidden_size": 2048,
    "initializer_range": 0.02,
    "intermediate_size": 6144,
    "max_position_embeddings": 40960,
    "max_window_layers": 48,
    "mlp_only_layers": [],
    "model_type": "qwen3_moe",
    "moe_intermediate_size": 768,
    "norm_topk_prob": True,
    "num_attention_heads": 32,
    "num_experts": 128,
    "num_experts_per_tok": 8,
    "num_hidden_layers": 48,
    "num_key_value_heads": 4,
    "output_router_logits": False,
    "rms_norm_eps": 1e-06,
    "rope_scaling": None,
    "rope_theta": 1000000.0,
    "router_aux_loss_coef": 0.001,
    "sliding_window": None,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "transformers_version": "4.51.0",
    "use_cache": True,
    "use_sliding_window": False,
    "vocab_size": 151936,
}

# https://huggingface.co/mistralai/Mixtral-8x7B-v0.1/blob/main/config.json
MIXTRAL_8X7B = {
    "architectures": ["MixtralForCausalLM"],
    "attention_dropout": 0.0,
    "bos_token_id": 1,
    "eos_token_id": 2,
    "hidden_act": "silu",
    "hidden_size": 4096,
    "initializer_range": 0.02,
    "intermediate_size": 14336,
    "max_position_embeddings": 32768,
    "model_type": "mixtral",
    "num_attention_heads": 32,
    "num_experts_per_tok": 2,
    "num_hidden_layers": 32,
    "num_key_value_heads": 8,
    "num_local_experts": 8,
    "output_router_logits": False,
    "rms_norm_eps": 1e-05,
    "rope_theta": 1000000.0,
    "router_aux_loss_coef": 0.02,
    "sliding_window": None,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "transformers_version": "4.36.0.dev0",
    "use_cache": True,
    "vocab_size": 32000,
}

# https://huggingface.co/microsoft/Phi-3-mini-4k-instruct/blob/main/config.json (auto_map left out)
PHI_3_MINI = {
    "_name_or_path": "Phi-3-mini-4k-instruct",
    "architectures": ["Phi3ForCausalLM"],
    "attention_dropout": 0.0,
    "bos_token_id": 1,
    "embd_pdrop": 0.0,
    "eos_token_id": 32000,
    "hidden_act": "silu",
    "hidden_size": 3072,
    "initializer_range": 0.02,
    "intermediate_size": 8192,
    "max_position_embeddings": 4096,
    "model_type": "phi3",
    "num_attention_heads": 32,
    "num_hidden_layers": 32,
    "num_key_value_heads": 32,
    "original_max_position_embeddings": 4096,
    "pad_token_id": 32000,
    "resid_pdrop": 0.0,
    "rms_norm_eps": 1e-05,
    "rope_scaling": None,
    "rope_theta": 10000.0,
    "sliding_window": 2047,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "transformers_version": "4.40.2",
    "use_cache": True,
    "attention_bias": False,
    "vocab_size": 32064,
}

# https://huggingface.co/openai/gpt-oss-120b/raw/main/config.json
GPT_OSS_120B = {
    "architectures": ["GptOssForCausalLM"],
    "attention_bias": True,
    "attention_dropout": 0.0,
    "eos_token_id": 200002,
    "experts_per_token": 4,
    "head_dim": 64,
    "hidden_act": "silu",
    "hidden_size": 2880,
    "initial_context_length": 4096,
    "initializer_range": 0.02,
    "intermediate_size": 2880,
    "layer_types": ["sliding_attention", "full_attention"] * 18,
    "max_position_embeddings": 131072,
    "model_type": "gpt_oss",
    "num_attention_heads": 64,
    "num_experts_per_tok": 4,
    "num_hidden_layers": 36,
    "num_key_value_heads": 8,
    "num_local_experts": 128,
    "output_router_logits": False,
    "pad_token_id": 199999,
    "quantization_config": {
        "modules_to_not_convert": ["model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"],
        "quant_method": "mxfp4",
    },
    "rms_norm_eps": 1e-05,
    "rope_scaling": {
        "beta_fast": 32.0,
        "beta_slow": 1.0,
        "factor": 32.0,
        "original_max_position_embeddings": 4096,
        "rope_type": "yarn",
        "truncate": False,
    },
    "rope_theta": 150000,
    "router_aux_loss_coef": 0.9,
    "sliding_window": 128,
    "swiglu_limit": 7.0,
    "tie_word_embeddings": False,
    "transformers_version": "4.55.0.dev0",
    "use_cache": True,
    "vocab_size": 201088,
}


def within(value: float, published: float, tolerance: float = 0.02) -> bool:
    return abs(value - published) <= tolerance * published


@pytest.mark.parametrize(
    ("config", "published_total", "published_active"),
    [
        # Llama 3.1 8B: 8,030,261,248 in the safetensors metadata of the repo.
        (LLAMA_3_1_8B, 8.03e9, 8.03e9),
        # Qwen2.5-7B model card: "Number of Parameters: 7.61B".
        (QWEN_2_5_7B, 7.61e9, 7.61e9),
        # Qwen3-30B-A3B model card: "30.5B in total and 3.3B activated".
        (QWEN_3_30B_A3B, 30.5e9, 3.3e9),
        # Mixtral of experts (mistral.ai/news/mixtral-of-experts): "46.7B total parameters but only uses 12.9B per token".
        (MIXTRAL_8X7B, 46.7e9, 12.9e9),
        # Phi-3-mini model card: "a 3.8B parameters ... model".
        (PHI_3_MINI, 3.8e9, 3.8e9),
    ],
    ids=["llama-3.1-8b", "qwen2.5-7b", "qwen3-30b-a3b", "mixtral-8x7b", "phi-3-mini"],
)
def test_parameter_counts_from_real_configs_match_the_published_ones(config, published_total, published_active):
    model = language_model(config, "m", "M", "config.json")
    assert within(model.params, published_total), model.params
    assert within(model.active_params, published_active), model.active_params


def test_llama_3_1_8b_counts_exactly_its_safetensors_parameters():
    # embeddings 2 x 128,256 x 4,096 + 32 layers x (attention 41,943,040 + MLP 176,160,768 + 2 norms 8,192) + final norm 4,096
    model = language_model(LLAMA_3_1_8B, "llama", "Llama", "config.json")
    assert model.params == 8_030_261_248
    assert model.tied_embeddings is False  # "tie_word_embeddings": false: the speed model skips the input table


def test_gpt_oss_counts_total_parameters_and_its_alternating_window():
    model = language_model(GPT_OSS_120B, "gpt-oss-120b", "gpt-oss-120b", "config.json")
    # OpenAI's gpt-oss model card: 116.8B total parameters (117B), 128 experts, 4 active.
    assert within(model.params, 116.8e9)
    assert (model.experts, model.experts_per_token) == (128, 4)
    assert (model.sliding_window, model.sliding_window_layers) == (128, 18)
    # The card's 5.1B active excludes the embedding table; counted here it adds 201,088 x 2,880 = 0.58B.
    assert within(model.active_params - 201_088 * 2_880, 5.1e9)


def test_a_moe_config_fills_every_architecture_field():
    model = language_model(QWEN_3_30B_A3B, "qwen3-30b-a3b", "Qwen3-30B-A3B", "config.json in Qwen3-30B-A3B")
    assert (model.layers, model.hidden_size, model.attention_heads, model.kv_heads, model.head_dim) == (48, 2048, 32, 4, 128)
    assert (model.context_length, model.vocab_size, model.experts, model.experts_per_token) == (40960, 151936, 128, 8)
    assert (model.sliding_window, model.sliding_window_layers, model.family) == (None, 0, "qwen3_moe")


def test_gemma_3_multimodal_configs_are_read_from_their_text_config():
    # google/gemma-3-4b-it config.json: text_config lists only what differs from Gemma3TextConfig's defaults.
    config = {
        "architectures": ["Gemma3ForConditionalGeneration"],
        "model_type": "gemma3",
        "text_config": {
            "hidden_size": 2560,
            "intermediate_size": 10240,
            "model_type": "gemma3_text",
            "num_hidden_layers": 34,
            "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
            "sliding_window": 1024,
        },
        "vision_config": {"hidden_size": 1152, "model_type": "siglip_vision_model"},
    }
    config["text_config"].update(num_attention_heads=8, num_key_value_heads=4)  # Gemma3TextConfig defaults, spelled out
    model = language_model(config, "gemma-3-4b", "Gemma 3 4B", "config.json")
    # keras-hub gemma3 presets give 3.88B for the 4B text model; the vision tower is not counted here.
    assert within(model.params, 3.88e9)
    assert (model.sliding_window, model.sliding_window_layers, model.head_dim) == (1024, 34 - 34 // 6, 256)


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"model_type": "bert"}, "model_type 'bert' is not supported"),
        ({"hidden_size": 4096}, "missing 'model_type'"),
        ({**LLAMA_3_1_8B, "hidden_size": None}, "missing 'hidden_size', which a llama config needs"),
        ({k: v for k, v in MIXTRAL_8X7B.items() if k != "num_local_experts"}, "missing 'num_local_experts', which a mixtral config needs"),
        ({**LLAMA_3_1_8B, "num_hidden_layers": "32"}, "'num_hidden_layers' must be a positive whole number (got '32')"),
        ({**LLAMA_3_1_8B, "num_key_value_heads": 64}, "'num_key_value_heads' (64) exceeds 'num_attention_heads' (32)"),
        ([1, 2], "config.json must hold a JSON object"),
    ],
)
def test_a_config_that_cannot_be_counted_says_why(config, message):
    with pytest.raises(HFConfigError) as error:
        language_model(config, "m", "M", "config.json")
    assert message in str(error.value)
