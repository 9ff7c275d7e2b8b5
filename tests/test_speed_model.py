"""The speed model's terms, computed by hand, and the invariants any speed model must keep."""

from __future__ import annotations

import importlib
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from gpuready.tasks import devices
from gpuready.tasks import text_estimate as est
from gpuready.tasks.registry import load_catalog

CATALOG = load_catalog()
# 32 layers. Its untied input embedding (read by nobody per token) has its own tests below; the other
# terms are pinned by hand on the model with that term off.
LLAMA_8B = replace(CATALOG.get("llama-3.1-8b"), tied_embeddings=None)
Q4_K_M = CATALOG.quants["Q4_K_M"]
# A prompt token multiplies all but what only its last token runs: the 128,256 x 4,096 output projection and
# the last layer's feed-forward (config.json: 3 x 4,096 x 14,336 intermediate; as derived, the layers' 7.505e9
# parameters / 32 less attention's 4,096 x 128 x 2 x (32 + 8) a layer).
LLAMA_PROMPT_PARAMS = 8.03e9 - 128256 * 4096 - ((8.03e9 - 128256 * 4096) / 32 - 4096 * 128 * 2 * 40)
QWEN_MOE = CATALOG.get("qwen3-30b-a3b")  # 30.5B parameters, 3.3B active, 8 of 128 experts a token
GIB = 1024**3
BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def gpu(backend="cuda", bandwidth=1000e9, memory_type=None, flops=100e12):
    return devices.Device(kind="gpu", name="GPU", backend=backend, usable_memory_bytes=80 * GIB,
                      bandwidth_bytes_per_s=bandwidth, flops=flops, memory_type=memory_type)


CPU = devices.Device(kind="cpu", name="CPU", backend="cpu", usable_memory_bytes=64 * GIB, bandwidth_bytes_per_s=51.2e9, flops=1e12)


def unpack_s(weights: float, flops: float, family: str = "k-quant") -> float:
    """Seconds to unpack `weights` quantised weights at `flops` peak."""
    return weights * est.UNPACK_OPS_PER_WEIGHT.get(family, 0.0) / flops


def load_speedfit():
    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))
    return importlib.import_module("speedfit")


@pytest.mark.parametrize(
    ("quant", "family"),
    [("Q4_K_M", "k-quant"), ("Q6_K", "k-quant"), ("Q2_K", "k-quant-low"), ("Q3_K_M", "k-quant-low"), ("Q4_0", "legacy"), ("Q8_0", "legacy"), ("F16", "float"),
     ("BF16", "float"), ("IQ4_XS", "i-quant"), ("IQ4_NL", "i-quant"), ("IQ3_XXS", "i-quant-low"), ("IQ2_M", "i-quant-low"),
     ("IQ1_S", "i-quant-low"), ("MXFP4", "mxfp4"), ("AWQ-4bit", "other")],
)
def test_each_quantisation_belongs_to_its_kernel_family(quant, family):
    assert est.quant_family(quant) == family


def test_a_token_costs_its_bytes_over_effective_bandwidth_plus_a_fixed_cost_per_layer():
    memory = est.MemoryBreakdown(4_000_000_000, 0, 0, 0)
    result = est.speed(LLAMA_8B, memory, 0, gpu(), CPU, 1.0, "Q4_K_M")
    # 4 GB / (1000 GB/s x cuda efficiency) + 32 layers x cuda's per-layer seconds + unpacking 8.03e9 weights
    seconds = 4e9 / (1000e9 * est.BANDWIDTH_EFFICIENCY["cuda"]) + 32 * est.LAYER_SECONDS["cuda"] + unpack_s(8.03e9, 100e12)
    assert result.generation_tokens_per_s == pytest.approx(1 / seconds)


def test_the_fixed_cost_caps_a_small_model_on_a_fast_gpu_below_its_bandwidth_bound():
    memory = est.MemoryBreakdown(int(4.58 * GIB), 0, 0, 0)
    result = est.speed(LLAMA_8B, memory, 0, gpu(bandwidth=3350e9), CPU, 1.0, "Q4_K_M")
    bandwidth_bound = 3350e9 * est.BANDWIDTH_EFFICIENCY["cuda"] / (4.58 * GIB)
    assert result.generation_tokens_per_s < 0.8 * bandwidth_bound


def test_unpacking_costs_operations_per_weight_at_the_devices_peak_flops():
    memory = est.MemoryBreakdown(4_000_000_000, 0, 0, 0)
    k_quant = est.speed(LLAMA_8B, memory, 0, gpu(flops=100e12), CPU, 1.0, "Q4_K_M")
    f16 = est.speed(LLAMA_8B, memory, 0, gpu(flops=100e12), CPU, 1.0, "F16")
    base = 4e9 / (1000e9 * est.BANDWIDTH_EFFICIENCY["cuda"]) + 32 * est.LAYER_SECONDS["cuda"]
    # 8.03e9 weights x the family's unpacking ops / 100 TFLOPS, on top of bytes and layers.
    unpack = unpack_s(8.03e9, 100e12)
    assert k_quant.generation_tokens_per_s == pytest.approx(1 / (base + unpack))
    # F16 weights need no unpacking: only their bytes (here the same 4 GB) and the layers count.
    f16_bytes = 4e9 / (1000e9 * est.BANDWIDTH_EFFICIENCY["cuda"] * est.QUANT_FAMILY_EFFICIENCY.get("float", 1.0))
    assert f16.generation_tokens_per_s == pytest.approx(1 / (f16_bytes + 32 * est.LAYER_SECONDS["cuda"]))


def test_the_fit_recovers_an_unpacking_cost_per_weight():
    speedfit = load_speedfit()
    rows = []
    for ideal, weight_s in ((2e-3, 1e-4), (5e-3, 1e-4), (4e-3, 4e-4), (10e-3, 4e-4), (20e-3, 8e-4)):
        for family, ops in (("k-quant", 3.0), ("float", 0.0)):
            seconds = ideal / 0.8 + 32 * 50e-6 + weight_s * ops
            rows.append(speedfit.GenRow("cuda", family, ideal, 32, seconds, f"d{ideal}{weight_s}", "s", weight_s=weight_s))
    fit = speedfit.fit_generation(rows, families=False, hbm=False, moe=False)
    assert fit.unpack_ops == {"k-quant": pytest.approx(3.0, rel=1e-3), "float": 0.0}
    assert fit.efficiency["cuda"] == pytest.approx(0.8, rel=1e-3)
    assert fit.layer_s["cuda"] == pytest.approx(50e-6, rel=1e-3)


def test_no_fitted_bandwidth_efficiency_exceeds_the_tables_peak():
    assert max(est.BANDWIDTH_EFFICIENCY.values()) <= 1.0
    assert max(est.PROMPT_EFFICIENCY.values()) <= 1.0


def test_an_hbm_gpu_uses_its_own_constants_only_where_the_fit_kept_that_class():
    device = gpu(memory_type="HBM3")
    fitted = {"cuda": 0.9, "cuda-hbm": 0.8, "rocm": 0.9}
    assert est.speed_class(device, fitted) == "cuda-hbm"
    assert est.speed_class(gpu(memory_type="GDDR6X"), fitted) == "cuda"
    assert est.speed_class(gpu(backend="rocm", memory_type="HBM3"), fitted) == "rocm"
    # The committed constants: the held-out term choice dropped the HBM class once an H200 measured with a
    # 2026 llama.cpp joined the A100/H100 rows of 2023-24 (benchmarks/ACCURACY.md, "Which terms stay").
    key = "cuda-hbm" if "cuda-hbm" in est.BANDWIDTH_EFFICIENCY else "cuda"
    assert est.speed_class(device) == key
    memory = est.MemoryBreakdown(4_000_000_000, 0, 0, 0)
    seconds = 4e9 / (1000e9 * est.BANDWIDTH_EFFICIENCY[key]) + 32 * est.LAYER_SECONDS[key] + unpack_s(8.03e9, 100e12)
    assert est.speed(LLAMA_8B, memory, 0, device, CPU, 1.0).generation_tokens_per_s == pytest.approx(1 / seconds)


def test_a_split_model_pays_each_devices_bytes_and_layers():
    memory = est.MemoryBreakdown(4_000_000_000, 0, 0, 0)
    result = est.speed(LLAMA_8B, memory, 0, gpu(), CPU, 0.75, "Q4_K_M")
    seconds = (3e9 / (1000e9 * est.BANDWIDTH_EFFICIENCY["cuda"]) + 24 * est.LAYER_SECONDS["cuda"] + unpack_s(0.75 * 8.03e9, 100e12)
               + 1e9 / (51.2e9 * est.BANDWIDTH_EFFICIENCY["cpu"]) + 8 * est.LAYER_SECONDS["cpu"] + unpack_s(0.25 * 8.03e9, 1e12))
    assert result.generation_tokens_per_s == pytest.approx(1 / seconds)


def test_time_to_first_token_is_the_prompt_plus_one_generated_token():
    memory = est.MemoryBreakdown(4_000_000_000, 0, 0, 0)
    result = est.speed(LLAMA_8B, memory, 0, gpu(), CPU, 1.0, "Q4_K_M")
    assert result.time_to_first_token_s == pytest.approx(512 / result.prompt_tokens_per_s + 1 / result.generation_tokens_per_s)
    no_flops = est.speed(LLAMA_8B, memory, 0, gpu(flops=None), CPU, 1.0, "Q4_K_M")
    assert no_flops.time_to_first_token_s is None


def test_the_band_is_the_backends_and_never_narrower_than_assumed_bandwidth_allows():
    assert est.speed_band(["cuda"], ["table"]) == est.SPEED_BAND["cuda"]
    assert est.speed_band(["cuda", "cpu"], ["table", "table"]) == max(est.SPEED_BAND["cuda"], est.SPEED_BAND["cpu"])
    assert est.speed_band(["cuda"], ["assumed"]) == max(est.SPEED_BAND["cuda"], est.SPEED_UNCERTAINTY["assumed"])


@pytest.mark.parametrize("kv_extra", [0.0, 0.9])
@pytest.mark.parametrize("backend", ["cuda", "rocm", "vulkan", "metal", "cpu", "sycl"])
def test_more_bandwidth_never_slows_generation(backend, kv_extra, monkeypatch):
    monkeypatch.setattr(est, "KV_READ_EXTRA", kv_extra)
    memory = est.MemoryBreakdown(4_000_000_000, 500_000_000, 0, 0)
    speeds = [est.speed(LLAMA_8B, memory, 8192, gpu(backend, bandwidth), CPU, 1.0, "Q4_K_M").generation_tokens_per_s
              for bandwidth in (100e9, 400e9, 1000e9, 3000e9)]
    assert speeds == sorted(speeds)


@pytest.mark.parametrize("kv_extra", [0.0, 0.9])
@pytest.mark.parametrize("placement", [1.0, 0.5, 0.0])
def test_a_deeper_context_never_speeds_generation(placement, kv_extra, monkeypatch):
    monkeypatch.setattr(est, "KV_READ_EXTRA", kv_extra)
    speeds = []
    for context in (0, 4096, 32768, 131072):
        memory = est.MemoryBreakdown(4_000_000_000, est.kv_cache_bytes(LLAMA_8B, context), 0, 0)
        speed = est.speed(LLAMA_8B, memory, context, gpu(), CPU, placement, "Q4_K_M")
        speeds.append(speed.generation_tokens_per_s_full_context)
    assert speeds == sorted(speeds, reverse=True)


# (backend, KV_READ_EXTRA, KV cache bytes): each row's full-context token by hand below.
KV_CASES = [("cuda", 0.0, 0), ("cuda", 0.0, 2_150_000_000), ("cuda", 0.9, 2_150_000_000), ("metal", 0.5, 1_000_000_000),
            ("rocm", 0.25, 4_000_000_000)]


@pytest.mark.parametrize(("backend", "kv_extra", "kv_bytes"), KV_CASES)
def test_the_kv_cache_is_read_at_its_own_share_of_the_weights_bandwidth(backend, kv_extra, kv_bytes, monkeypatch):
    monkeypatch.setattr(est, "KV_READ_EXTRA", kv_extra)
    memory = est.MemoryBreakdown(4_000_000_000, kv_bytes, 0, 0)
    result = est.speed(LLAMA_8B, memory, 16384, gpu(backend), CPU, 1.0, "Q4_K_M")
    effective = 1000e9 * est.BANDWIDTH_EFFICIENCY[backend]
    # weights at the effective bandwidth, the cache at 1 / (1 + k) of it, the layers' fixed cost, unpacking
    fixed = 32 * est.LAYER_SECONDS[backend] + unpack_s(8.03e9, 100e12)
    assert result.generation_tokens_per_s_full_context == pytest.approx(
        1 / (4e9 / effective + kv_bytes * (1 + kv_extra) / effective + fixed))
    # an empty context reads no cache, whatever k
    assert result.generation_tokens_per_s == pytest.approx(1 / (4e9 / effective + fixed))


def test_the_h200_reads_its_cache_at_half_the_weights_rate_with_k_near_one(monkeypatch):
    # text-generation-h200.toml, Llama 3.1 8B Q4_K_M: 275.93 t/s at depth 0, 217.56 at 16,384 (+64 generated
    # tokens on average): 0.97 ms more a token for 2.15 GB more f16 K/V. At CUDA's efficiency on the H200's
    # 4.8 TB/s those bytes take about half that, so a k near 0.9 carries the rest.
    depth_ms = (1 / 217.56 - 1 / 275.93) * 1e3
    cache = est.kv_cache_bytes(CATALOG.get("llama-3.1-8b"), 16384 + 64)
    assert cache == pytest.approx(2.15e9, rel=0.01)
    at_weights_rate = cache / (4.8e12 * est.BANDWIDTH_EFFICIENCY["cuda"]) * 1e3
    assert 1.6 < depth_ms / at_weights_rate < 2.2


def test_the_fit_takes_k_from_each_series_extra_time_at_depth_and_drops_it_when_off():
    speedfit = load_speedfit()
    rows = []
    for backend, efficiency, offset in (("cuda", 0.8, 0.0), ("metal", 0.9, 1e-3), ("rocm", 0.85, 0.0)):
        for ideal, kv, depth, label in ((4e-3, 0.0, 0, "m"), (4e-3, 1e-3, 4096, "m"), (4e-3, 4e-3, 16384, "m"),
                                        (8e-3, 2e-3, 8192, "n")):
            # ideal_s holds the cache's bytes too; the cache pays k = 0.5 more on top. Metal's rows take 1 ms more a
            # token at every depth (work no term models): the difference between its depths cancels it.
            seconds = (ideal + kv) / efficiency + kv * 0.5 / efficiency + 32 * 50e-6 + offset
            rows.append(speedfit.GenRow(backend, "k-quant", ideal + kv, 32, seconds, backend, "s", kv_s=kv, depth=depth,
                                        label=label))
    fit = speedfit.fit_generation(rows, families=False, hbm=False, kv=True)
    assert fit.kv_extra == pytest.approx(0.5, rel=0.05)
    # one series per device: "n" has a single depth and says nothing about k
    series = speedfit.kv_series(rows, lambda row: {"cuda": 0.8, "metal": 0.9, "rocm": 0.85}[row.backend])
    assert [(device, label, low, high) for device, _, label, low, high, _ in series] == [
        ("cuda", "m", 0, 16384), ("metal", "m", 0, 16384), ("rocm", "m", 0, 16384)]
    assert [k for *_, k in series] == pytest.approx([0.5, 0.5, 0.5])
    assert speedfit.fit_generation(rows, families=False, hbm=False, kv=False).kv_extra == 0.0


def test_a_series_k_is_the_median_over_devices_and_never_below_zero():
    speedfit = load_speedfit()

    def series(device: str, k: float, models: int = 1) -> list:
        made = []
        for model in range(models):
            for kv, depth in ((0.0, 0), (2e-3, 8192)):
                made.append(speedfit.GenRow("cuda", "k-quant", 4e-3 + kv, 32, 4e-3 + kv * (1 + k), device, "s",
                                            kv_s=kv, depth=depth, label=f"m{model}"))
        return made

    def unit(row):
        return 1.0

    # GB10's five series count once: the median of devices (0.2, 0.4, 0.9), not of series
    assert speedfit.series_kv_extra(series("a", 0.2, 5) + series("b", 0.4) + series("c", 0.9), unit) == pytest.approx(0.4)
    assert speedfit.series_kv_extra(series("a", -0.3) + series("b", -0.1), unit) == 0.0
    assert speedfit.series_kv_extra([r for r in series("a", 0.5) if r.depth == 0], unit) == 0.0


def test_the_kv_line_is_said_only_where_the_cache_pays_its_own_rate(monkeypatch):
    def basis() -> str:
        found = est.estimate(LLAMA_8B, Q4_K_M, 16384, gpu(), CPU, 64 * GIB)
        return " ".join(found.basis)

    monkeypatch.setattr(est, "KV_READ_EXTRA", 0.0)
    assert "KV cache read at" not in basis()
    monkeypatch.setattr(est, "KV_READ_EXTRA", 1.0)
    assert "the KV cache read at 50% of the weights' rate" in basis()


def test_a_larger_quant_never_reads_fewer_bytes():
    quants = sorted((q for q in CATALOG.quants.values() if q.format == "gguf"), key=lambda q: q.bits_per_weight)
    model = replace(LLAMA_8B, gguf_sizes={})
    sizes = [est.weights_bytes(model, quant)[0] for quant in quants]
    assert sizes == sorted(sizes)


# --- the fit --------------------------------------------------------------------------------


def test_the_fit_recovers_the_constants_that_generated_the_rows():
    speedfit = load_speedfit()
    truth = {"cuda": (0.8, 60e-6), "metal": (0.7, 150e-6)}
    rows = []
    for backend, (efficiency, fixed) in truth.items():
        for ideal, layers in ((2e-3, 32), (5e-3, 32), (10e-3, 40), (20e-3, 80), (40e-3, 80)):
            seconds = ideal / efficiency + layers * fixed
            rows.append(speedfit.GenRow(backend, "k-quant", ideal, layers, seconds, f"{backend}-{ideal}", "s"))
    fit = speedfit.fit_generation(rows, families=False, hbm=False)
    for backend, (efficiency, fixed) in truth.items():
        assert fit.efficiency[backend] == pytest.approx(efficiency, rel=1e-6)
        assert fit.layer_s[backend] == pytest.approx(fixed, rel=1e-6)


def test_known_seconds_are_taken_off_before_the_fit_and_added_back_to_the_prediction():
    speedfit = load_speedfit()
    rows = []
    for ideal, layers, known in ((2e-3, 32, 0.0), (5e-3, 32, 30e-3), (10e-3, 40, 0.0), (20e-3, 80, 5e-3), (40e-3, 80, 0.0)):
        seconds = ideal / 0.8 + layers * 60e-6 + known  # a padded BF16 expert product costs `known` seconds
        rows.append(speedfit.GenRow("vulkan", "k-quant", ideal, layers, seconds, f"d{ideal}", "s", known_s=known))
    fit = speedfit.fit_generation(rows, families=False, hbm=False)
    assert fit.efficiency["vulkan"] == pytest.approx(0.8, rel=1e-6)
    assert fit.layer_s["vulkan"] == pytest.approx(60e-6, rel=1e-6)
    assert speedfit.predict_generation(rows[1], fit) == pytest.approx(1 / rows[1].measured_s, rel=1e-6)


def test_a_family_slower_by_a_fifth_is_fitted_at_four_fifths_of_k_quants():
    speedfit = load_speedfit()
    rows = []
    for ideal in (2e-3, 6e-3, 12e-3):
        for family, share in (("k-quant", 1.0), ("float", 0.8)):
            rows.append(speedfit.GenRow("cuda", family, ideal, 32, ideal / (0.9 * share) + 32 * 50e-6, f"d{ideal}", "s"))
    fit = speedfit.fit_generation(rows, hbm=False)
    assert fit.family["float"] == pytest.approx(0.8, rel=1e-4)
    assert fit.efficiency["cuda"] == pytest.approx(0.9, rel=1e-4)


def test_leave_one_device_out_predicts_each_device_from_the_others_only():
    speedfit = load_speedfit()
    rows = [speedfit.GenRow("cuda", "k-quant", 5e-3, 32, 5e-3 / 0.8, "a", "s"),
            speedfit.GenRow("cuda", "k-quant", 5e-3, 32, 5e-3 / 0.8, "b", "s"),
            speedfit.GenRow("cuda", "k-quant", 5e-3, 32, 5e-3 / 0.4, "c", "s")]
    errors = dict((row.device, error) for row, error in speedfit.cross_validate_generation(rows, "device", layers=False))
    # c is predicted from a and b (0.8 efficiency): twice its real speed, a 100% error.
    assert errors["c"] == pytest.approx(100.0)
    # a is predicted from b and c: least squares on relative time error gives 1/e = (1.25 + 2.5) / 2 ... per row,
    # a predicted speed of 1 / (5e-3 * a_inv) where a_inv minimises (a_inv * 0.8 - 1)^2 + (a_inv * 0.4 - 1)^2.
    a_inv = (0.8 + 0.4) / (0.8**2 + 0.4**2)
    assert errors["a"] == pytest.approx(abs(1 / (5e-3 * a_inv) - 160) / 160 * 100)


def test_a_rows_band_comes_only_from_other_devices_errors():
    speedfit = load_speedfit()
    row = lambda device: speedfit.GenRow("cuda", "k-quant", 1, 1, 1, device, "s")  # noqa: E731
    errors = [(row("a"), 5.0), (row("b"), 10.0), (row("c"), 50.0)]
    covered = speedfit.band_coverage(errors, "device", share=0.5)
    # a's band: the median of b and c's errors (nearest rank: 10), b's: 5, c's: 5.
    assert [(r.device, band, inside) for r, band, inside in covered] == [("a", 10.0, True), ("b", 5.0, False), ("c", 5.0, False)]


# --- the input embedding a token only gathers from ---------------------------------------------


def test_an_untied_input_embedding_is_left_out_of_the_parameters_a_token_multiplies_through():
    llama = CATALOG.get("llama-3.1-8b")  # tie_word_embeddings false: 128,256 x 4,096 table of its own
    assert est.matmul_params(llama) == pytest.approx(8.03e9 - 128_256 * 4_096)  # 7.505e9
    assert est.matmul_params(CATALOG.get("llama-3.2-3b")) == 3.21e9  # tied: the output projection reads the table
    assert est.matmul_params(CATALOG.get("qwen3-30b-a3b")) == 3.3e9  # MoE: the stated active count stands
    assert est.matmul_params(replace(llama, tied_embeddings=None)) == 8.03e9  # not known: nothing subtracted


def test_a_token_reads_the_files_share_of_the_parameters_it_multiplies_through():
    llama = CATALOG.get("llama-3.1-8b")
    # 4.58 GiB Q4_K_M file x 7.505e9 / 8.03e9 = 4.28 GiB a token
    assert est.weights_read_bytes(llama, 4.58 * GIB) == pytest.approx(4.58 * GIB * (8.03e9 - 525_336_576) / 8.03e9)
    memory = est.MemoryBreakdown(int(4.58 * GIB), 0, 0, 0)
    untied = est.speed(llama, memory, 0, gpu(), CPU, 1.0, "F16")  # F16: no unpacking term
    unknown = est.speed(replace(llama, tied_embeddings=None), memory, 0, gpu(), CPU, 1.0, "F16")
    fixed = 32 * est.LAYER_SECONDS["cuda"]
    bandwidth = 1000e9 * est.BANDWIDTH_EFFICIENCY["cuda"]
    assert 1 / untied.generation_tokens_per_s - fixed == pytest.approx(4.58 * GIB * 7.505e9 / 8.03e9 / bandwidth, rel=1e-3)
    assert 1 / unknown.generation_tokens_per_s - fixed == pytest.approx(4.58 * GIB / bandwidth)
    # the prompt's FLOPs shrink by the same 525M parameters: neither counts the output projection (last token
    # only), so 2 x (7.505e9 - 525M - one feed-forward) per token instead of 2 x (8.03e9 - 525M - one feed-forward)
    assert unknown.prompt_tokens_per_s / untied.prompt_tokens_per_s == pytest.approx(
        est.prompt_params(llama) / est.prompt_params(replace(llama, tied_embeddings=None)), rel=1e-6)
    # not known as untied, the embedding sits among the layers' parameters: 1/32 of it lands in one layer's
    # feed-forward as derived, and so is subtracted with it
    assert est.prompt_params(replace(llama, tied_embeddings=None)) - est.prompt_params(llama) == pytest.approx(
        525_336_576 * (1 - 1 / 32))


def test_the_catalogue_rejects_a_tied_embeddings_value_that_is_not_true_or_false():
    from gpuready.catalog.loader import CatalogError, Entry
    from gpuready.tasks.text import parse_language_model

    data = {"id": "m", "name": "M", "params": 1e9, "layers": 2, "hidden_size": 64, "attention_heads": 4, "kv_heads": 4,
            "context_length": 4096, "quants": ["Q4_K_M"], "source": "config.json", "tied_embeddings": "yes"}
    with pytest.raises(CatalogError, match="tied_embeddings"):
        parse_language_model(Entry(data, "text-generation.toml [[models]] #1"), CATALOG.quants)


def test_weights_are_unpacked_at_the_vector_rate_not_the_tensor_rate():
    memory = est.MemoryBreakdown(4_000_000_000, 0, 0, 0)
    tensor_only = gpu(flops=165e12)
    with_vector = replace(tensor_only, vector_flops=82.6e12)  # an RTX 4090: 165 TFLOPS FP16 tensor, 82.6 FP32
    slow = est.speed(LLAMA_8B, memory, 0, with_vector, CPU, 1.0, "Q4_K_M")
    fast = est.speed(LLAMA_8B, memory, 0, tensor_only, CPU, 1.0, "Q4_K_M")
    # the same bytes and layers; only the unpacking term changes, from 8.03e9 x ops / 165e12 to / 82.6e12
    assert 1 / slow.generation_tokens_per_s - 1 / fast.generation_tokens_per_s == pytest.approx(
        unpack_s(8.03e9, 82.6e12) - unpack_s(8.03e9, 165e12))
    assert with_vector.unpack_flops == 82.6e12 and tensor_only.unpack_flops == 165e12


def test_a_table_gpu_carries_its_vector_rate_into_the_estimate():
    from gpuready.tasks.devices import gpu_device
    from gpuready.testing import cpu_machine
    from gpuready.whatif import compose

    hardware, _ = compose(cpu_machine(64), [], gpu="RTX 4090")
    device = gpu_device(hardware)
    assert device.vector_flops == pytest.approx(82.6e12)  # catalog/gpus.toml fp32_tflops


# --- the prompt's power limit ---------------------------------------------------------------


def test_a_prompt_token_pays_its_flops_energy_over_the_boards_power_limit(monkeypatch):
    monkeypatch.setitem(est.PROMPT_JOULES_PER_FLOP, "cuda", 2e-12)  # 2 pJ a FLOP
    monkeypatch.setitem(est.PROMPT_SECONDS_PER_TFLOP, "cuda", 0.0)
    memory = est.MemoryBreakdown(4_000_000_000, 0, 0, 0)
    limited = replace(gpu(flops=200e12), power_watts=300.0)
    result = est.speed(LLAMA_8B, memory, 0, limited, CPU, 1.0, "Q4_K_M")
    work = 2 * LLAMA_PROMPT_PARAMS
    # compute at the backend's efficiency, plus 15.0 GFLOP x 2 pJ / 300 W = 100 us a token
    seconds = work / (200e12 * est.PROMPT_EFFICIENCY["cuda"] * est.PROMPT_FAMILY_EFFICIENCY["k-quant"]) + work * 2e-12 / 300
    assert result.prompt_tokens_per_s == pytest.approx(1 / seconds)
    unknown = est.speed(LLAMA_8B, memory, 0, gpu(flops=200e12), CPU, 1.0, "Q4_K_M")  # no power figure: no power term
    assert 1 / unknown.prompt_tokens_per_s == pytest.approx(seconds - work * 2e-12 / 300)


@pytest.mark.parametrize("watts", [(100.0, 200.0), (300.0, 450.0), (450.0, 600.0)])
def test_a_higher_power_limit_never_slows_the_prompt(watts):
    memory = est.MemoryBreakdown(4_000_000_000, 0, 0, 0)
    low, high = (est.speed(LLAMA_8B, memory, 0, replace(gpu(), power_watts=w), CPU, 1.0, "Q4_K_M") for w in watts)
    assert high.prompt_tokens_per_s >= low.prompt_tokens_per_s


def test_a_table_gpu_carries_its_board_power_and_nvml_limit_wins():
    import dataclasses

    from gpuready.tasks.devices import gpu_device
    from gpuready.testing import cpu_machine
    from gpuready.whatif import compose

    hardware, _ = compose(cpu_machine(64), [], gpu="RTX 4090")
    assert gpu_device(hardware).power_watts == 450  # catalog/power.toml: Total Graphics Power 450 W
    capped = dataclasses.replace(hardware, gpus=tuple(dataclasses.replace(g, power_limit_w=300.0) for g in hardware.gpus))
    assert gpu_device(capped).power_watts == 300.0  # a user-set limit (nvidia-smi -pl) is what the card may draw


def test_only_bf16_experts_on_vulkan_carry_the_padded_tile_line():
    # Dense BF16 takes Vulkan's matrix-vector path (a Radeon 8060S ran gemma-3-27b BF16 at its byte-bound
    # speed, benchmarks/validation); only a mixture of experts in BF16 is padded to the matrix-matrix tile.
    bf16, f16 = (CATALOG.quants[q] for q in ("BF16", "F16"))
    vulkan = replace(gpu(backend="vulkan"), vector_flops=30e12, matrix_cores=True)

    def tiled(model, quant, device):
        return any("32-token tile" in line for line in est.estimate(model, quant, 4096, device, CPU, 256 * GIB).basis)

    assert tiled(QWEN_MOE, bf16, vulkan)
    assert not tiled(QWEN_MOE, f16, vulkan)
    assert not tiled(LLAMA_8B, bf16, vulkan)
    assert not tiled(QWEN_MOE, bf16, gpu())


@pytest.mark.parametrize(("quant", "family", "weights_bytes"), [("Q3_K_M", "k-quant-low", 3_000_000_000),
                                                                 ("IQ4_XS", "i-quant", 4_000_000_000)])
def test_a_low_bit_k_quant_or_an_i_quant_pays_its_own_unpacking_cost_per_weight(quant, family, weights_bytes):
    memory = est.MemoryBreakdown(weights_bytes, 0, 0, 0)
    own = est.speed(LLAMA_8B, memory, 0, gpu(), CPU, 1.0, quant)
    q4 = est.speed(LLAMA_8B, memory, 0, gpu(), CPU, 1.0, "Q4_K_M")
    # the same bytes and layers; the unpacking term uses each family's operations a weight
    assert 1 / own.generation_tokens_per_s - 1 / q4.generation_tokens_per_s == pytest.approx(
        unpack_s(8.03e9, 100e12, family) - unpack_s(8.03e9, 100e12, "k-quant"))


def test_without_the_lowbit_term_2_and_3_bit_k_quants_are_fitted_as_k_quants():
    speedfit = load_speedfit()
    row = speedfit.GenRow("cuda", "k-quant-low", 0.01, 32, 0.02, "d", "s", weight_s=1e-4)
    assert speedfit.merge_low_bit([row], False)[0].family == "k-quant"
    assert speedfit.merge_low_bit([row], True)[0].family == "k-quant-low"
    fit = speedfit.fit_generation([row, speedfit.GenRow("cuda", "k-quant", 0.01, 32, 0.015, "e", "s", weight_s=1e-4)],
                                  lowbit=False)
    assert "k-quant-low" not in fit.unpack_ops


def test_every_quantised_family_pays_an_unpacking_cost_and_an_unfitted_one_pays_the_k_quants():
    # The bug this guards: i-quants had no fitted cost, so IQ4_XS counted none and looked twice as fast as Q4_K_M on a
    # 2-core CPU. Every quantised quant gpuready offers unpacks at a cost; F16/BF16 need none.
    quants = load_catalog().quants
    assert "IQ4_XS" in quants and "Q4_K_M" in quants
    for quant in quants.values():
        family = est.quant_family(quant.id)
        if family == "other":  # MLX, AWQ, FP8: not llama.cpp's kernels
            continue
        assert (est.unpack_ops_per_weight(family) > 0) == (family != "float"), quant.id
    for family in ("k-quant", "k-quant-low", "legacy", "mxfp4", "i-quant", "i-quant-low"):
        assert est.unpack_ops_per_weight(family) > 0, family
    assert est.unpack_ops_per_weight("float") == 0.0
    assert est.unpack_ops_per_weight("a-family-no-row-measured") == est.UNPACK_OPS_PER_WEIGHT["k-quant"]


def test_without_the_ilowbit_term_1_to_3_bit_i_quants_are_fitted_as_iq4():
    speedfit = load_speedfit()
    low = speedfit.GenRow("cpu", "i-quant-low", 0.01, 32, 0.03, "d", "s", weight_s=1e-4)
    iq4 = speedfit.GenRow("cpu", "i-quant", 0.01, 32, 0.02, "e", "s", weight_s=1e-4)
    assert speedfit.merge_low_bits([low], ilowbit=False)[0].family == "i-quant"
    assert speedfit.merge_low_bits([low], ilowbit=True)[0].family == "i-quant-low"
    assert speedfit.merge_low_bits([low], lowbit=False)[0].family == "i-quant-low"  # lowbit is the K-quants' term
    fit = speedfit.fit_generation([low, iq4], ilowbit=False)
    assert "i-quant-low" not in fit.unpack_ops and fit.unpack_ops["i-quant"] > 0


def test_a_family_the_fit_has_no_rows_of_is_predicted_at_the_k_quants_unpacking_cost():
    speedfit = load_speedfit()
    # rows made from known constants (efficiency 0.8, 50 us a layer, 3 operations a weight) on several devices
    rows = [speedfit.GenRow("cpu", "k-quant", ideal, 32, ideal / 0.8 + 32 * 50e-6 + weight * 3.0, f"d{i}", "s", weight_s=weight)
            for i, (ideal, weight) in enumerate([(0.01, 1e-3), (0.02, 4e-4), (0.005, 2e-3), (0.03, 3e-3)])]
    fit = speedfit.fit_generation(rows)
    assert fit.unpack_ops["k-quant"] == pytest.approx(3.0, rel=0.01)
    unseen = replace(rows[0], family="i-quant")
    assert speedfit.predict_generation(unseen, fit) == pytest.approx(speedfit.predict_generation(rows[0], fit))
    assert speedfit.unpack_ops_of(fit, "float") == 0.0


# --- Vulkan without matrix cores, and mixture-of-experts prompts -------------------------------


def vulkan_gpu(matrix_cores, bf16_matrix=None):
    return replace(gpu(backend="vulkan", flops=120e12), vector_flops=30e12, matrix_cores=matrix_cores,
                   bf16_matrix=bf16_matrix)


@pytest.mark.parametrize(
    ("matrix_cores", "bf16_matrix", "quant", "rate"),
    [
        (True, None, "Q4_K_M", 1.0),    # cooperative matrix: the table's matrix rate
        (None, None, "Q4_K_M", 1.0),    # not known: the table stands
        (False, None, "Q4_K_M", 0.25),  # scalar shader: 30 of 120 TFLOPS, the FP32 vector rate
        (True, None, "BF16", 0.25),     # BF16 without BF16 matrix shapes is promoted to FP32
        (True, True, "BF16", 1.0),      # BF16 matrix shapes (the line says bf16: 1)
        (False, True, "BF16", 0.25),    # no matrix cores at all
    ],
)
def test_vulkan_prompts_run_at_the_vector_rate_without_matrix_cores(matrix_cores, bf16_matrix, quant, rate, monkeypatch):
    monkeypatch.setitem(est.PROMPT_SECONDS_PER_TFLOP, "vulkan", 0.0)  # the compute term alone
    monkeypatch.setitem(est.PROMPT_JOULES_PER_FLOP, "vulkan", 0.0)
    device = vulkan_gpu(matrix_cores, bf16_matrix)
    assert est.vulkan_rate(device, est.is_bf16(quant)) == rate
    memory = est.MemoryBreakdown(4_000_000_000, 0, 0, 0)
    result = est.speed(LLAMA_8B, memory, 0, device, CPU, 1.0, quant)
    work = 2 * LLAMA_PROMPT_PARAMS
    family = est.PROMPT_FAMILY_EFFICIENCY.get(est.quant_family(quant), 1.0)
    assert 1 / result.prompt_tokens_per_s == pytest.approx(work / (120e12 * rate * est.PROMPT_EFFICIENCY["vulkan"] * family))


def test_other_backends_and_a_vulkan_gpu_without_a_vector_figure_keep_the_table_rate():
    assert est.vulkan_rate(replace(gpu(), vector_flops=30e12, matrix_cores=False)) == 1.0  # CUDA
    assert est.vulkan_rate(replace(gpu(backend="vulkan"), matrix_cores=False)) == 1.0  # no vector figure


def test_the_architecture_decides_vulkan_matrix_cores_where_no_line_says():
    assert devices.vulkan_matrix_cores("intel", "Xe-HPG (Alchemist)") is False  # blocked by llama.cpp
    assert devices.vulkan_matrix_cores("intel", "Xe2-HPG (Battlemage)") is True
    assert devices.vulkan_matrix_cores("amd", "RDNA 2") is False
    assert devices.vulkan_matrix_cores("amd", "RDNA 4") is True
    assert devices.vulkan_matrix_cores("nvidia", "Volta") is None  # not established: the table stands
    from gpuready.catalog.tables import gpu_table

    architectures = {(spec.vendor, spec.architecture) for spec in gpu_table() if spec.vendor != "apple"}
    assert set(devices.VULKAN_MATRIX_CORES) <= architectures  # every key names a real table architecture


def test_a_mixture_of_experts_prompt_runs_at_its_own_share_of_the_compute(monkeypatch):
    monkeypatch.setattr(est, "PROMPT_MOE_EFFICIENCY", 0.5)
    monkeypatch.setitem(est.PROMPT_JOULES_PER_FLOP, "cuda", 0.0)
    monkeypatch.setitem(est.PROMPT_SECONDS_PER_TFLOP, "cuda", 0.0)
    moe = replace(LLAMA_8B, params=4 * LLAMA_8B.active_params)  # 4x the parameters, the same active ones
    memory = est.MemoryBreakdown(4_000_000_000, 0, 0, 0)
    result = est.speed(moe, memory, 0, gpu(), CPU, 1.0, "Q4_K_M")
    # its active FLOPs less the output head (run for the last token only) at half the backend's efficiency, in
    # place of the K-quant share; a mixture's last (routed) feed-forward is not derived, so it stays counted
    work = 2 * est.prompt_params(moe)
    assert work == 2 * (LLAMA_8B.active_params - 128256 * 4096)
    assert 1 / result.prompt_tokens_per_s == pytest.approx(work / (100e12 * est.PROMPT_EFFICIENCY["cuda"] * 0.5))


@pytest.mark.parametrize("backend", ["cuda", "rocm", "metal", "vulkan", "sycl"])
@pytest.mark.parametrize("quant", ["Q4_K_M", "Q8_0", "BF16"])
def test_more_flops_never_slows_the_prompt_and_matrix_cores_never_hurt(backend, quant):
    memory = est.MemoryBreakdown(4_000_000_000, 0, 0, 0)
    speeds = [est.speed(LLAMA_8B, memory, 0, replace(gpu(backend=backend, flops=f), vector_flops=f / 4, power_watts=300.0),
                        CPU, 1.0, quant).prompt_tokens_per_s for f in (50e12, 100e12, 200e12)]
    assert speeds == sorted(speeds)
    without, unknown, with_cores = (
        est.speed(LLAMA_8B, memory, 0, replace(gpu(backend=backend), vector_flops=25e12, matrix_cores=cores, bf16_matrix=cores),
                  CPU, 1.0, quant).prompt_tokens_per_s for cores in (False, None, True))
    assert without <= unknown <= with_cores


# --- BF16 experts on Vulkan: the matrix-matrix shader pads each token's products to a tile --------



def test_a_token_is_routed_through_its_share_of_the_expert_parameters():
    # (30.5e9 - 3.3e9) / (128 - 8) = 226.7M a expert, 8 of them: 1.813e9 parameters
    assert est.routed_expert_params(QWEN_MOE) == pytest.approx(27.2e9 / 120 * 8)
    assert est.routed_expert_params(LLAMA_8B) == 0.0  # dense
    assert est.routed_expert_params(replace(QWEN_MOE, experts=None)) == 0.0  # expert counts not known


@pytest.mark.parametrize(
    ("backend", "quant", "bf16_matrix", "rate"),
    [
        ("vulkan", "BF16", None, 0.25),  # no BF16 matrix shapes: the scalar shader at the FP32 vector rate
        ("vulkan", "BF16", True, 1.0),   # BF16 cooperative matrix: the matrix rate, still a 32-token tile
        ("vulkan", "F16", None, 0.0),    # F16 experts take the matrix-vector path
        ("vulkan", "Q4_K_M", None, 0.0),
        ("cuda", "BF16", None, 0.0),     # CUDA's mmvf handles BF16 experts
    ],
)
def test_bf16_experts_on_vulkan_cost_a_tile_of_prompt_work_a_token(backend, quant, bf16_matrix, rate, monkeypatch):
    monkeypatch.setitem(est.PROMPT_SECONDS_PER_TFLOP, "vulkan", 0.0)  # the compute term alone
    monkeypatch.setitem(est.PROMPT_JOULES_PER_FLOP, "vulkan", 0.0)
    device = replace(vulkan_gpu(True, bf16_matrix), backend=backend)
    padded = est.padded_expert_seconds(QWEN_MOE, device, est.is_bf16(quant))
    if not rate:
        assert padded == 0.0
        return
    work = 2 * (27.2e9 / 120 * 8) * 32  # 2 FLOPs a weight x routed experts x a 32-column tile
    assert padded == pytest.approx(work / (120e12 * rate * est.PROMPT_EFFICIENCY["vulkan"] * est.PROMPT_MOE_EFFICIENCY))
    memory = est.MemoryBreakdown(int(61e9), 0, 0, 0)
    with_tile = est.speed(QWEN_MOE, memory, 0, device, CPU, 1.0, quant)
    as_f16 = est.speed(QWEN_MOE, memory, 0, device, CPU, 1.0, "F16")  # same bytes, matrix-vector path
    assert 1 / with_tile.generation_tokens_per_s == pytest.approx(1 / as_f16.generation_tokens_per_s + padded)
    assert any("32-token tile" in line for line in est._with_speed_basis([], QWEN_MOE, device, CPU, 1.0, quant))


def test_the_tile_line_is_said_only_where_the_tile_is_costed():
    # A mixture of experts whose expert counts the catalogue lacks pays no tile cost, so its basis must not claim one.
    device = vulkan_gpu(True)
    no_counts = replace(QWEN_MOE, experts=None)
    assert est.padded_expert_seconds(no_counts, device, True) == 0.0
    found = est.estimate(no_counts, CATALOG.quants["BF16"], 4096, replace(device, usable_memory_bytes=int(128e9)), CPU, 0)
    assert not any("32-token tile" in line for line in found.basis)
    found = est.estimate(QWEN_MOE, CATALOG.quants["BF16"], 4096, replace(device, usable_memory_bytes=int(128e9)), CPU, 0)
    assert any("32-token tile" in line for line in found.basis)


def test_bf16_experts_split_over_gpu_and_cpu_pay_the_tile_only_for_the_gpu_share():
    device = vulkan_gpu(True)
    padded = est.padded_expert_seconds(QWEN_MOE, device, True)
    memory = est.MemoryBreakdown(int(61e9), 0, 0, 0)
    whole = est.speed(QWEN_MOE, memory, 0, device, CPU, 1.0, "BF16")
    half = est.speed(QWEN_MOE, memory, 0, device, CPU, 0.5, "BF16")
    half_f16 = est.speed(QWEN_MOE, memory, 0, device, CPU, 0.5, "F16")
    assert 1 / half.generation_tokens_per_s == pytest.approx(1 / half_f16.generation_tokens_per_s + padded / 2)
    assert whole.generation_tokens_per_s > half.generation_tokens_per_s


# --- bands per quant family ------------------------------------------------------------------------


def test_a_quant_family_predicted_worse_widens_its_backends_band(monkeypatch):
    monkeypatch.setitem(est.QUANT_FAMILY_BAND, "k-quant-low", 3.0)
    assert est.speed_band(["cuda"], ["table"], family="k-quant-low") == pytest.approx(est.SPEED_BAND["cuda"] * 3.0)
    assert est.speed_band(["cuda"], ["table"], family="legacy") == pytest.approx(
        est.SPEED_BAND["cuda"] * est.QUANT_FAMILY_BAND["legacy"])
    memory = est.MemoryBreakdown(3_000_000_000, 0, 0, 0)
    assert est.speed(LLAMA_8B, memory, 0, gpu(), CPU, 1.0, "Q2_K").uncertainty == pytest.approx(est.SPEED_BAND["cuda"] * 3.0)


def test_a_prompt_band_takes_the_family_of_the_prompts_kernels(monkeypatch):
    monkeypatch.setitem(est.PROMPT_FAMILY_BAND, "moe", 2.0)
    assert est.prompt_family(QWEN_MOE, "k-quant") == "moe"
    assert est.prompt_family(LLAMA_8B, "k-quant-low") == "k-quant"  # the matrix-matrix kernel has no 2-3-bit class
    memory = est.MemoryBreakdown(17_000_000_000, 0, 0, 0)
    moe = est.speed(QWEN_MOE, memory, 0, gpu(), CPU, 1.0, "Q4_K_M")
    assert moe.prompt_uncertainty == pytest.approx(est.PROMPT_BAND["cuda"] * 2.0)
    dense = est.speed(LLAMA_8B, memory, 0, gpu(), CPU, 1.0, "Q4_K_M")
    assert dense.prompt_uncertainty == pytest.approx(est.PROMPT_BAND["cuda"] * est.PROMPT_FAMILY_BAND["k-quant"])


def test_the_family_factor_is_the_familys_percentile_over_all_rows():
    speedfit = load_speedfit()
    row = lambda family, device: speedfit.GenRow("cuda", family, 1, 1, 1, device, "s")  # noqa: E731
    errors = [(row("legacy", f"d{i}"), 10.0) for i in range(8)] + [(row("k-quant-low", f"e{i}"), 40.0) for i in range(2)]
    # all rows' 80th percentile: 10% (8 of 10 rows at 10%); the family's: 40%
    assert speedfit.family_band_factor(errors, "k-quant-low", 0.8, min_devices=2) == pytest.approx(4.0)
    assert speedfit.family_band_factor(errors, "k-quant-low", 0.8, min_devices=3) == 1.0  # too few devices
    assert speedfit.family_band_factor(errors, "legacy", 0.8, min_devices=2) == 1.0  # never narrower than its backend


# --- Intel GPUs under Vulkan: their own constants ---------------------------------------------------


def test_an_intel_gpu_under_vulkan_takes_its_own_fitted_constants():
    intel = replace(gpu(backend="vulkan"), vendor="intel")
    assert est.is_intel_vulkan(intel)
    assert not est.is_intel_vulkan(replace(intel, backend="sycl"))  # SYCL is Intel's already
    assert not est.is_intel_vulkan(replace(intel, vendor="amd"))
    assert est.speed_class(intel) == "vulkan-intel" and est.speed_class(replace(intel, vendor="amd")) == "vulkan"
    memory = est.MemoryBreakdown(4_000_000_000, 0, 0, 0)
    result = est.speed(LLAMA_8B, memory, 0, intel, CPU, 1.0, "Q4_K_M")
    seconds = (4e9 / (1000e9 * est.BANDWIDTH_EFFICIENCY["vulkan-intel"]) + 32 * est.LAYER_SECONDS["vulkan-intel"]
               + unpack_s(8.03e9, 100e12))
    assert result.generation_tokens_per_s == pytest.approx(1 / seconds)
    assert result.uncertainty == pytest.approx(est.SPEED_BAND["vulkan-intel"] * est.QUANT_FAMILY_BAND["k-quant"])
    assert result.prompt_uncertainty == pytest.approx(est.PROMPT_BAND["vulkan-intel"] * est.PROMPT_FAMILY_BAND["k-quant"])


def test_the_fit_gives_a_vendor_class_its_own_constants_only_when_the_term_is_on():
    speedfit = load_speedfit()
    rows = []
    for vendor, efficiency in (("", 0.8), ("intel", 0.4)):
        for ideal in (2e-3, 5e-3, 10e-3):
            rows.append(speedfit.GenRow("vulkan", "k-quant", ideal, 32, ideal / efficiency, f"{vendor}{ideal}", "s",
                                        vendor_class=vendor))
    fit = speedfit.fit_generation(rows, layers=False, families=False, hbm=False, moe=False, unpack=False)
    assert fit.efficiency["vulkan"] == pytest.approx(0.8) and fit.efficiency["vulkan-intel"] == pytest.approx(0.4)
    assert speedfit.predict_generation(rows[-1], fit) == pytest.approx(0.4 / 10e-3)
    pooled = speedfit.fit_generation(rows, layers=False, families=False, hbm=False, moe=False, unpack=False, intel=False)
    assert set(pooled.efficiency) == {"vulkan"}


def test_a_term_for_one_class_of_rows_is_judged_on_that_class():
    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))
    import speed_report

    speedfit = load_speedfit()
    # 20 ordinary rows at 0.8 of bandwidth, 3 "intel" rows at 0.3: the class term is judged on its own 3 rows.
    rows = [speedfit.GenRow("vulkan", "k-quant", 1e-3 * (1 + i), 0, 1e-3 * (1 + i) / 0.8, f"d{i}", f"s{i}")
            for i in range(20)]
    rows += [speedfit.GenRow("vulkan", "k-quant", 1e-3 * (1 + i), 0, 1e-3 * (1 + i) / 0.3, f"i{i}", f"t{i}",
                             vendor_class="intel") for i in range(3)]

    def cv(rows, key, intel=True):
        return speedfit.cross_validate_generation(rows, key, layers=False, families=False, hbm=False, moe=False,
                                                  unpack=False, intel=intel)

    scope = {"intel": lambda r: bool(r.vendor_class)}
    scoped, trials = speed_report.choose_terms(rows, cv, ("intel",), scope)
    assert scoped == {"intel": True}
    assert [label for label, _, _ in trials] == ["all terms", "without intel, its own 3 rows",
                                                  "without intel, the other 20 rows", "without intel, all 23 rows"]
    # The same class at the ordinary rows' 0.8: its own constants predict it no better, so the term goes.
    same = rows[:20] + [replace(r, measured_s=r.ideal_s / 0.8) for r in rows[20:]]
    assert speed_report.choose_terms(same, cv, ("intel",), scope)[0] == {"intel": False}
    assert speed_report.kept_by_all_rows(trials) == []


def test_a_class_term_that_ties_on_its_own_rows_stays_when_dropping_it_raises_the_error_over_all_rows():
    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))
    import speed_report

    speedfit = load_speedfit()
    # 6 rows, 2 of them the class's: without the term its own rows' errors stay 10%, the others' go 5% -> 20%
    # (its rows pull the shared constants), so the all-rows median rises and the term stays.
    rows = [speedfit.GenRow("cpu", "k-quant", 1e-3, 0, 1e-3, f"d{i}", f"s{i}", vendor_class="x" if i < 2 else "")
            for i in range(6)]

    def cv(rows, key, x=True):
        return [(r, 10.0 if r.vendor_class else (5.0 if x else 20.0)) for r in rows]

    terms, trials = speed_report.choose_terms(rows, cv, ("x",), {"x": lambda r: bool(r.vendor_class)})
    assert terms == {"x": True}
    assert ("without x, its own 2 rows", 10.0, 10.0) in trials and ("without x, all 6 rows", 20.0, 5.0) in trials
    assert speed_report.kept_by_all_rows(trials) == ["x"]

    # Neither its own rows nor all rows get worse without it: the simpler model wins the tie.
    def flat(rows, key, x=True):
        return [(r, 10.0) for r in rows]

    assert speed_report.choose_terms(rows, flat, ("x",), {"x": lambda r: bool(r.vendor_class)})[0] == {"x": False}


def test_the_basis_says_where_a_family_has_no_measured_rows_of_its_own():
    iq4 = est._with_speed_basis([], LLAMA_8B, None, CPU, 0.0, "IQ4_XS")
    q4 = est._with_speed_basis([], LLAMA_8B, None, CPU, 0.0, "Q4_K_M")
    prompt_iq4 = next(line for line in iq4 if line.startswith("prompt: ") and "TFLOPS" in line)
    assert "i-quant: no measured prompt rows, taken at the K-quants' efficiency" in prompt_iq4
    assert not any("no measured" in line for line in q4)
    # generation: the i-quants' own fitted cost is named; a format no row measured says it takes the K-quants'
    assert any("operations a weight to unpack i-quant weights" in line and "no measured rows" not in line for line in iq4)
    tq = est._with_speed_basis([], LLAMA_8B, None, CPU, 0.0, "TQ2_0")
    assert any("(the K-quants' cost: no measured rows of this family)" in line for line in tq)


def test_the_prompt_basis_says_when_the_gpus_flops_figure_is_derived_or_measured_rather_than_stated():
    from gpuready.hardware import GPU
    from gpuready.testing import cpu_machine

    def basis(source: str | None) -> str:
        gpu = GPU(vendor="apple", name="Apple M3 Max (40-core GPU)", kind="unified", memory_total_bytes=64 * GIB,
                  memory_usable_bytes=48 * GIB, bandwidth_bytes_per_s=400e9, bandwidth_source="table:apple-m3-max-40c",
                  fp16_flops=40 * 13.6e12 / 38, flops_source=source, backends=("metal",))
        device = devices.gpu_device(replace(cpu_machine(64), gpus=(gpu,)))
        lines = est._with_speed_basis([], LLAMA_8B, device, CPU, 1.0, "Q4_K_M")
        return next(line for line in lines if line.startswith("prompt:") and "TFLOPS peak" in line)

    assert basis("derived:40 cores x M2's 0.358 TFLOPS a core").startswith(
        "prompt: 14.3 TFLOPS peak (derived from 40 cores x M2's 0.358 TFLOPS a core, a floor: the maker states no figure) x ")
    measured = "measured on this machine, 2026-12-01 10:00, ±2.0%"
    assert basis(measured).startswith(f"prompt: 14.3 TFLOPS peak ({measured}) x ")
    assert basis("table:apple-m3-max-40c").startswith("prompt: 14.3 TFLOPS peak x ")


def test_the_iquant_paragraph_reads_right_when_the_codebook_iquants_share_iq4s_cost():
    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))
    import speed_report

    speedfit = load_speedfit()
    # Four CPUs: K-quant rows from one source, IQ4_XS and IQ2_M rows from another. With the "ilowbit" term off the
    # IQ2_M rows carry the IQ4 family ("i-quant"), as speedfit.merge_low_bits leaves them; the paragraph still
    # tells the two kinds apart by their quant and says they share one cost.
    rows = []
    for d in range(4):
        for i, ideal in enumerate((2e-3, 4e-3, 8e-3)):
            rows.append(speedfit.GenRow("cpu", "k-quant", ideal, 0, ideal / (0.8 + 0.01 * d), f"d{d}", "s-main",
                                        variant=f"m{i} Q4_K_M", label=f"m{i} Q4_K_M"))
        rows.append(speedfit.GenRow("cpu", "i-quant", 3e-3, 0, 3e-3 / 0.7, f"d{d}", "s-iq",
                                    variant="m IQ4_XS", label="m IQ4_XS"))
        rows.append(speedfit.GenRow("cpu", "i-quant", 2e-3, 0, 2e-3 / (0.5 + 0.02 * d), f"d{d}", "s-iq",
                                    variant="m IQ2_M", label="m IQ2_M"))
    terms = dict(layers=False, families=True, hbm=False, moe=False, unpack=False, lowbit=True, ilowbit=False,
                 intel=False, kv=False)
    fit = speedfit.fit_generation(rows, **terms)
    lodo = speedfit.cross_validate_generation(rows, "device", **terms)
    text = speed_report.iquant_round(rows, terms, fit, lodo)
    assert "which the term choice above does not keep: all i-quants share one unpacking cost" in text
    assert "kept by the term choice above" not in text
    assert ", 4 rows), the IQ1-IQ3 rows' " in text  # four IQ4 rows, then the four IQ2_M rows held out on their own
    assert text.count(", 4 rows)") == 2
