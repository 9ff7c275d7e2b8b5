"""The estimator's formulas, checked against values computed by hand from the model's config."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gpuready.tasks import devices
from gpuready.tasks import text_estimate as est
from gpuready.tasks.registry import load_catalog

CATALOG = load_catalog()
# The untied-embedding term has its own tests (tests/test_speed_model.py); these pin the rest by hand.
LLAMA_8B = replace(CATALOG.get("llama-3.1-8b"), tied_embeddings=None)
Q4_K_M = CATALOG.quants["Q4_K_M"]
CUDA_GPU = devices.Device(kind="gpu", name="GPU", backend="cuda", usable_memory_bytes=24 * 1024**3,
                      bandwidth_bytes_per_s=1000e9, flops=100e12)
CPU = devices.Device(kind="cpu", name="CPU", backend="cpu", usable_memory_bytes=64 * 1024**3,
                 bandwidth_bytes_per_s=51.2e9, flops=1e12)

# Llama 3.1 8B config.json: 32 layers, 8 KV heads, head_dim 128, vocab 128256, hidden 4096.
LLAMA_WEIGHTS_Q4 = 4_912_754_000  # 8.03e9 parameters x 4.8944 bits / 8
LLAMA_KV_8K = 1_073_741_824  # 2 (K,V) x 8 heads x 128 dims x 2 bytes x 32 layers x 8192 tokens = 1 GiB
LLAMA_COMPUTE = 296_222_720  # 512 tokens x 4 bytes x (128256 vocab + 4 x 4096 hidden)
CUDA_OVERHEAD = 350 * 1024**2
# Unpacking the K-quant weights inside the matrix-vector kernel: operations per weight at peak FLOPS.
K_OPS = est.UNPACK_OPS_PER_WEIGHT.get("k-quant", 0.0)


def test_weights_are_parameters_times_bits_per_weight():
    assert est.weights_bytes(LLAMA_8B, Q4_K_M)[0] == LLAMA_WEIGHTS_Q4


def test_the_kv_cache_of_llama_3_1_8b_at_8k_context_is_one_gibibyte():
    assert est.kv_cache_bytes(LLAMA_8B, 8192) == LLAMA_KV_8K


def test_sliding_window_layers_hold_only_their_window():
    gemma = CATALOG.get("gemma-3-27b")
    # 62 layers, 52 of them local with a 1024-token window, 16 KV heads x 128 dims:
    # 8192 bytes a token a layer x (10 x 32768 + 52 x 1024) token-layers.
    assert est.kv_cache_bytes(gemma, 32768) == 8192 * (10 * 32768 + 52 * 1024)


def test_the_compute_buffer_follows_the_vocabulary_and_hidden_size():
    assert est.compute_bytes(LLAMA_8B) == LLAMA_COMPUTE


def test_a_model_that_fits_runs_whole_on_the_gpu_at_bandwidth_speed():
    result = est.estimate(LLAMA_8B, Q4_K_M, 8192, CUDA_GPU, CPU, 64 * 1024**3)
    memory = est.MemoryBreakdown(LLAMA_WEIGHTS_Q4, LLAMA_KV_8K, LLAMA_COMPUTE, CUDA_OVERHEAD)
    bandwidth = 1000e9 * est.BANDWIDTH_EFFICIENCY["cuda"]
    fixed = 32 * est.LAYER_SECONDS["cuda"] + 8.03e9 * K_OPS / 100e12  # 32 layers' launch/sync + unpacking
    # A prompt token multiplies all but what only the last token runs: the 128,256 x 4,096 output projection and
    # the last layer's feed-forward (derived as a layer's share of the rest less attention's 4,096 x 128 x 2 x
    # (32 + 8); with tying not known here, the rest holds the input embedding too): 2 x that many FLOPs at the
    # backend's efficiency, plus its TFLOPs x the backend's ceiling.
    layers = 8.03e9 - 128256 * 4096
    prompt_flops = 2 * (layers - (layers / 32 - 4096 * 128 * 2 * 40))
    prompt_s = prompt_flops / (100e12 * est.PROMPT_EFFICIENCY["cuda"]) + prompt_flops / 1e12 * est.PROMPT_SECONDS_PER_TFLOP["cuda"]
    assert result == est.Estimate(
        model_id="llama-3.1-8b",
        quant="Q4_K_M",
        context_tokens=8192,
        placement="gpu",
        memory=memory,
        gpu_fraction=1.0,
        gpu_memory_bytes=memory.total_bytes,
        system_memory_bytes=0,
        speed=est.Speed(
            generation_tokens_per_s=pytest.approx(1 / (LLAMA_WEIGHTS_Q4 / bandwidth + fixed)),
            # the cache's bytes read at 1 / (1 + KV_READ_EXTRA) of the weights' rate (decode attention)
            generation_tokens_per_s_full_context=pytest.approx(
                1 / ((LLAMA_WEIGHTS_Q4 + LLAMA_KV_8K * (1 + est.KV_READ_EXTRA)) / bandwidth + fixed)),
            prompt_tokens_per_s=pytest.approx(1 / prompt_s),
            uncertainty=pytest.approx(est.SPEED_BAND["cuda"] * est.QUANT_FAMILY_BAND["k-quant"]),
            time_to_first_token_s=pytest.approx(512 * prompt_s + LLAMA_WEIGHTS_Q4 / bandwidth + fixed),
            prompt_uncertainty=pytest.approx(est.PROMPT_BAND["cuda"] * est.PROMPT_FAMILY_BAND["k-quant"]),  # its own, wider band
        ),
        basis=result.basis,
        layers=32,
    )
    assert memory.total_bytes == 6_649_720_144


def test_a_model_too_big_for_the_gpu_splits_whole_layers_and_adds_the_times():
    small_gpu = devices.Device(kind="gpu", name="GPU", backend="cuda", usable_memory_bytes=4 * 1024**3,
                           bandwidth_bytes_per_s=1000e9, flops=100e12)
    result = est.estimate(LLAMA_8B, Q4_K_M, 8192, small_gpu, CPU, 64 * 1024**3)
    layer_bytes = LLAMA_WEIGHTS_Q4 + LLAMA_KV_8K
    # room = 4 GiB - compute - overhead - llama.cpp's 1 GiB --fit margin = 2,558,001,152 bytes = 42.7% of the layers
    # (5,986,495,824 bytes) -> 13 of 32 layers.
    fraction = 13 / 32
    assert (result.placement, result.gpu_fraction) == ("split", fraction)
    assert result.gpu_memory_bytes == int(layer_bytes * fraction) + LLAMA_COMPUTE + CUDA_OVERHEAD
    assert result.system_memory_bytes == int(layer_bytes * (1 - fraction)) + 200 * 1024**2
    seconds = (LLAMA_WEIGHTS_Q4 * fraction / (1000e9 * est.BANDWIDTH_EFFICIENCY["cuda"]) + 13 * est.LAYER_SECONDS["cuda"]
               + 8.03e9 * fraction * K_OPS / 100e12
               + LLAMA_WEIGHTS_Q4 * (1 - fraction) / (51.2e9 * est.BANDWIDTH_EFFICIENCY["cpu"]) + 19 * est.LAYER_SECONDS["cpu"]
               + 8.03e9 * (1 - fraction) * K_OPS / 1e12)
    assert result.speed.generation_tokens_per_s == pytest.approx(1 / seconds)


def test_without_a_gpu_the_model_runs_on_the_cpu_from_system_memory():
    result = est.estimate(LLAMA_8B, Q4_K_M, 8192, None, CPU, 64 * 1024**3)
    assert result.placement == "cpu"
    assert result.memory == est.MemoryBreakdown(LLAMA_WEIGHTS_Q4, LLAMA_KV_8K, LLAMA_COMPUTE, 200 * 1024**2)
    seconds = LLAMA_WEIGHTS_Q4 / (51.2e9 * est.BANDWIDTH_EFFICIENCY["cpu"]) + 32 * est.LAYER_SECONDS["cpu"] + 8.03e9 * K_OPS / 1e12
    assert result.speed.generation_tokens_per_s == pytest.approx(1 / seconds)


def test_a_mixture_of_experts_needs_memory_for_all_experts_but_reads_only_the_active_ones():
    qwen_moe = CATALOG.get("qwen3-30b-a3b")
    result = est.estimate(qwen_moe, Q4_K_M, 8192, None, CPU, 64 * 1024**3)
    weights = int(30.5e9 * 4.8944 / 8)
    assert result.memory.weights_bytes == weights
    read_per_token = weights * 3.3e9 / 30.5e9
    # 48 layers, each costing MOE_LAYER_FACTOR dense layers (expert routing)
    seconds = (read_per_token / (51.2e9 * est.BANDWIDTH_EFFICIENCY["cpu"]) + 48 * est.MOE_LAYER_FACTOR * est.LAYER_SECONDS["cpu"]
               + 3.3e9 * K_OPS / 1e12)  # only the 3.3B active weights are unpacked
    assert result.speed.generation_tokens_per_s == pytest.approx(1 / seconds)


def test_a_real_file_size_replaces_the_bits_per_weight_formula():
    from dataclasses import replace

    model = replace(LLAMA_8B, gguf_sizes={"Q4_K_M": 4_920_734_016.0})
    assert est.weights_bytes(model, Q4_K_M) == (4_920_734_016, "weights: real Q4_K_M file size")


@pytest.mark.parametrize("model", list(CATALOG.for_task("text-generation")), ids=lambda m: m.id)
def test_a_longer_context_never_needs_less_memory(model):
    sizes = [est.memory_breakdown(model, Q4_K_M, context, "cpu").total_bytes for context in (512, 2048, 8192, 32768)]
    assert sizes == sorted(sizes)


@pytest.mark.parametrize(
    ("features", "flops_per_cycle"),
    [(("avx512f", "avx2", "fma"), 64), (("avx2", "fma"), 32), (("neon", "dotprod"), 32), (("neon",), 16), ((), 8)],
)
def test_cpu_peak_throughput_follows_the_widest_vector_unit(features, flops_per_cycle):
    assert devices.cpu_peak_flops(4, features) == 4 * devices.ASSUMED_CPU_CLOCK_HZ * flops_per_cycle


def test_a_cpu_whose_platform_row_states_narrower_cores_gets_that_peak():
    # An Intel N100's Gracemont cores report avx2 and fma but run them on 128-bit pipes: 16 FP32 FLOPs a cycle, so
    # its peak is half of a big core's with the same flags (its llama.cpp prompt row was predicted at 3x its speed).
    features = ("avx2", "fma")
    assert devices.cpu_peak_flops(4, features, "Intel(R) N100") == 4 * devices.ASSUMED_CPU_CLOCK_HZ * 16
    assert devices.cpu_peak_flops(4, features, "Intel(R) Core(TM) i5-6500 CPU @ 3.20GHz") == 4 * devices.ASSUMED_CPU_CLOCK_HZ * 32
    # A row never raises the flags' figure: a CPU without AVX2 stays at its own width.
    assert devices.cpu_peak_flops(4, (), "Intel(R) N100") == 4 * devices.ASSUMED_CPU_CLOCK_HZ * 8


@pytest.mark.parametrize(
    ("source", "kind", "shown"),
    [
        ("nvml", "driver", "nvml"),  # NVML's memory clock x bus width: a specification the driver reports
        ("nvml x MIG memory share", "driver", "nvml x MIG memory share"),
        ("table:rtx-4090", "table", None),
        ("assumed", "assumed", None),
    ],
)
def test_a_bandwidth_the_driver_reports_is_named_as_it_is_not_called_measured(source, kind, shown):
    from gpuready.hardware import GPU, CPU, Hardware, Memory

    gpu = GPU("nvidia", "NVIDIA GeForce RTX 4090", memory_total_bytes=24 * 1024**3, memory_usable_bytes=24 * 1024**3,
              bandwidth_bytes_per_s=1008 * 10**9, bandwidth_source=source, fp16_flops=165e12)
    hardware = Hardware(platform="linux", arch="x86_64", cpu=CPU(name="x", arch="x86_64"), memory=Memory(64 * 1024**3, 60 * 1024**3),
                        gpus=(gpu,))
    device = devices.gpu_device(hardware)
    assert (device.bandwidth_source, device.bandwidth_detail) == (kind, shown)


def test_a_prompt_token_skips_the_output_projection_that_only_its_last_token_needs():
    # llama.cpp PR #6122: a prompt's logits are computed for the token that asks for them, not for every token.
    # The last layer's feed-forward runs for that token only too: derived from the layers' parameters, it is the
    # config.json's 3 x hidden x intermediate within 1%.
    llama_1b = CATALOG.get("llama-3.2-1b")  # tied: the 128,256 x 2,048 matrix is the output projection
    head = 128256 * 2048
    ffn = est.last_feed_forward_params(llama_1b, est.matmul_params(llama_1b) - head)
    assert ffn == pytest.approx(3 * 2048 * 8192, rel=0.01)
    assert est.prompt_params(llama_1b) == pytest.approx(est.matmul_params(llama_1b) - head - ffn)
    llama_8b = CATALOG.get("llama-3.1-8b")  # untied: the input embedding is already out of matmul_params
    ffn = est.last_feed_forward_params(llama_8b, 8.03e9 - 2 * 128256 * 4096)
    assert ffn == pytest.approx(3 * 4096 * 14336, rel=0.01)
    assert est.prompt_params(llama_8b) == pytest.approx(8.03e9 - 2 * 128256 * 4096 - ffn)
    # A mixture of experts: its stated active count holds the 151,936 x 2,048 output head (Qwen3-30B-A3B's 3.3B
    # adds up with it), so that goes; its last (routed) feed-forward is not derived and stays.
    moe = CATALOG.get("qwen3-30b-a3b")
    assert est.prompt_params(moe) == pytest.approx(3.3e9 - 151936 * 2048)
    shapeless = replace(LLAMA_8B, vocab_size=0)
    assert est.prompt_params(shapeless) == est.matmul_params(shapeless)  # nothing known to subtract
    basis = est.estimate(llama_1b, Q4_K_M, 4096, CUDA_GPU, CPU, 64 * 1024**3).basis
    assert any("output projection run for the last token only" in line for line in basis)
    moe_basis = est.estimate(moe, Q4_K_M, 4096, CUDA_GPU, CPU, 64 * 1024**3).basis
    assert any("output projection runs for the last token only" in line for line in moe_basis)
    assert not any("feed-forward" in line for line in moe_basis)
