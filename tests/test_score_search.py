"""benchmarks/score_search.py: each term against hand-computed values, and the cross-validation's bookkeeping."""

from __future__ import annotations

import importlib.util
import math
import statistics
import sys
from pathlib import Path

import pytest

from gpuready.tasks import encoders, search
from gpuready.tasks.registry import load_catalog

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
_spec = importlib.util.spec_from_file_location("score_search", BENCHMARKS / "score_search.py")
score_search = importlib.util.module_from_spec(_spec)
sys.modules["score_search"] = score_search  # dataclasses look their module up while the class is built
_spec.loader.exec_module(score_search)

CATALOG = load_catalog()


def cpu_row(hardware: str, rate: float, tokens: int = 256, threads: int | None = None, model: str = "all-minilm-l6-v2",
            source: str = "measured here", runtime: str = "sentence-transformers") -> dict:
    row = {"hardware": hardware, "cpu_hint": hardware, "physical_cores": 2, "features": ["avx512f", "avx2", "fma"],
           "backend": "cpu", "model": model, "chunk_tokens": tokens, "chunks_per_minute": rate, "source": source,
           "runtime": runtime, "implementation": runtime}
    if threads:
        row["threads"] = threads
    return row


@pytest.mark.parametrize(
    ("row", "rate", "tokens"),
    [
        ({"chunks_per_minute": 1231, "chunk_tokens": 256}, 1231 / 60, 256),
        ({"pairs_per_minute": 600, "chunk_tokens": 512}, 10.0, 512),
        # infinity's table: 10 requests x 256 sentences = 2,560 in 59.107 s; 1,150,000 tokens / 2,560 = 449.2
        ({"chunks": 2560, "seconds": 59.107, "tokens": 1_150_000}, 2560 / 59.107, 449),
    ],
)
def test_a_rows_rate_and_tokens_per_chunk_come_from_whichever_figures_it_copies(row, rate, tokens):
    assert score_search.measured_rate(row) == pytest.approx(rate)
    assert score_search.row_tokens(row) == tokens


def test_a_cpu_rows_peak_uses_its_threads_capped_at_its_cores():
    # 2 cores x 3 GHz assumed x 64 FLOPs a cycle (AVX-512: 2 FMA x 16 lanes x 2) = 384 GFLOPS; 1 thread: half.
    assert score_search.device_for(cpu_row("vm", 1000)).flops == 384e9
    assert score_search.device_for(cpu_row("vm", 1000, threads=1)).flops == 192e9
    assert score_search.device_for(cpu_row("vm", 1000, threads=8)).flops == 384e9


def test_the_fma_what_if_counts_a_zen_4_at_its_pipes_rate_by_name_or_by_its_rows_cpu_platform():
    # a Ryzen 9 7950X by name: 2 cores x 3 GHz x 32 (Zen 4's 256-bit pipes, catalog/cpus.toml) = 192 GFLOPS
    named = {**cpu_row("desktop", 1000), "cpu_hint": "AMD Ryzen 9 7950X 16-Core Processor"}
    (by_name, hidden, placed, avx2), _ = score_search.scored_rows(CATALOG, [
        named, cpu_row("vm", 1000), {**cpu_row("vm", 1000), "cpu_platform": "amd-epyc-9004"},
        {**cpu_row("vm", 1000), "cpu_platform": "amd-epyc-9004", "features": ["avx2", "fma"]}])
    assert by_name.device.flops == 384e9 and score_search.fma_rate(by_name) == 192e9
    # "AMD EPYC" (a VM that hides the model) matches no row: no FMA rate, unless its row names the platform
    assert score_search.fma_rate(hidden) is None
    assert placed.device.flops == 384e9 and score_search.fma_rate(placed) == 192e9
    # AVX2 only: the flags' 32 already, nothing narrower
    assert score_search.fma_rate(avx2) is None


def test_the_implied_efficiency_is_measured_rate_times_flops_per_chunk_over_peak():
    (row,), _ = score_search.scored_rows(CATALOG, [cpu_row("vm", 1231)])
    # 1,231 / 60 = 20.517 chunks/s x 6,039,797,760 FLOPs a 256-token MiniLM chunk / 384 GFLOPS = 0.3227
    assert row.implied == pytest.approx(1231 / 60 * 6_039_797_760 / 384e9)
    assert row.implied == pytest.approx(0.3227, abs=1e-4)


def test_rows_of_unknown_models_or_hardware_are_skipped_and_counted():
    rows = [cpu_row("vm", 1000, model="no-such-model"), {**cpu_row("vm", 1000), "backend": "cuda", "gpu_id": "no-such-gpu"}]
    scored, skipped = score_search.scored_rows(CATALOG, rows)
    assert scored == [] and skipped == {"model not in the catalogue": 1, "hardware not in the tables": 1}


PER_MINUTE = 384e9 / 6_039_797_760 * 60  # chunks a minute at efficiency 1 on the 2-core row (MiniLM, 256 tokens)


def test_the_fit_is_the_median_over_devices_so_a_device_measured_many_times_counts_once():
    # Device A: four rows at implied 0.2; device B: one row at 0.4; device C: one at 0.3 (all two cores).
    rows = [cpu_row("A", 0.2 * PER_MINUTE) for _ in range(4)] + [cpu_row("B", 0.4 * PER_MINUTE), cpu_row("C", 0.3 * PER_MINUTE)]
    scored, _ = score_search.scored_rows(CATALOG, rows)
    assert score_search.fit(scored)["cpu"] == pytest.approx((0.3, 0.0))  # median of (0.2, 0.4, 0.3), not of six rows


def test_the_core_scaling_is_a_straight_line_in_log_space():
    # One core at 0.6 and two at 0.6 x 2^-0.5: exponent 0.5, one-core share 0.6. Rates are per the row's own peak.
    one = cpu_row("A", 0.6 * PER_MINUTE / 2, threads=1)
    two = cpu_row("B", 0.6 * 2**-0.5 * PER_MINUTE)
    scored, _ = score_search.scored_rows(CATALOG, [one, two])
    share, exponent = score_search.fit(scored)["cpu"]
    assert (share, exponent) == (pytest.approx(0.6), pytest.approx(0.5))
    assert score_search.fit(scored, scaling=False)["cpu"] == (pytest.approx(statistics.median([0.6, 0.6 * 2**-0.5])), 0.0)
    # gpuready's own formula says the same for the same cores: 0.6 x 8^-0.5 on eight.
    assert score_search.predict(scored[0], {"cpu": (0.6, 0.5)}) == pytest.approx(scored[0].measured)


def test_leave_one_device_out_predicts_each_device_from_the_others_only():
    scored, _ = score_search.scored_rows(CATALOG, [cpu_row("A", 0.2 * PER_MINUTE), cpu_row("B", 0.4 * PER_MINUTE)])
    errors = dict((r.device_key, e) for r, e in score_search.held_out(scored, lambda r: r.device_key, "flat"))
    # A predicted at B's 0.4: 100% too fast; B predicted at A's 0.2: 50% too slow.
    assert errors == pytest.approx({"A": 100.0, "B": 50.0})


def test_a_backend_left_without_devices_falls_back_to_the_whisper_encoder_efficiency():
    scored, _ = score_search.scored_rows(CATALOG, [cpu_row("A", 0.2 * PER_MINUTE)])
    ((row, e),) = score_search.held_out(scored, lambda r: r.device_key)
    share = encoders.encoder_efficiency("cpu")[0]
    assert score_search.predict(row, {}) == pytest.approx(384e9 * share / 6_039_797_760)
    assert e == pytest.approx(abs(share - 0.2) / 0.2 * 100)


def test_a_constant_that_loses_to_the_encoder_efficiency_out_of_sample_is_dropped():
    share = encoders.encoder_efficiency("cpu")[0]
    # Two devices far apart around the encoder figure: each predicts the other badly, the encoder figure well.
    scored, _ = score_search.scored_rows(CATALOG, [cpu_row("A", share * 0.8 * PER_MINUTE), cpu_row("B", share * 1.25 * PER_MINUTE)])
    variant, keep, medians = score_search.choose(scored)
    assert (variant, keep) == ("encoder", set()) and medians["cpu"]["flat"] > medians["cpu"]["encoder"]
    # Three devices that agree with each other and not with the encoder figure: a flat CPU share stays
    # (one core count: the scaling fit reduces to the flat one, and the tie goes to the simpler term's order).
    scored, _ = score_search.scored_rows(CATALOG, [cpu_row(name, 3 * share * PER_MINUTE) for name in "ABC"])
    variant, keep, _ = score_search.choose(scored)
    assert "cpu" in keep and variant in ("scaling", "flat")


def test_the_band_percentile_takes_the_value_at_or_above_the_share():
    assert score_search.percentile([10, 20, 30, 40, 50], 0.8) == 40
    assert score_search.percentile([5.0], 0.8) == 5.0


def test_other_runtimes_are_shown_but_never_fitted():
    share = encoders.encoder_efficiency("cpu")[0]
    rows = [cpu_row(name, 3 * share * PER_MINUTE) for name in "ABC"]
    fast = [cpu_row(name, 30 * share * PER_MINUTE, runtime="onnx") for name in "ABC"]
    fits: dict = {}
    text = "\n".join(score_search.section(CATALOG, rows + fast, fits))
    assert fits[("CPU_EMBEDDING_EFFICIENCY", "cpu")][0] == pytest.approx(3 * share)
    assert "Other runtimes" in text and "| onnx |" in text


def test_the_committed_constants_are_what_the_validation_rows_fit():
    spec = importlib.util.spec_from_file_location("score_estimator_for_search", BENCHMARKS / "score_estimator.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    fits: dict = {}
    score_search.section(CATALOG, module.load("document-search"), fits)
    assert {key: round(fitted, 2) for key, (fitted, _) in fits.items()} == {
        key: None if constant is None else round(constant, 2) for key, (_, constant) in fits.items()}
    kept = {backend for (name, backend) in fits if name == "EMBEDDING_EFFICIENCY"}
    assert kept == set(search.EMBEDDING_EFFICIENCY)


def test_a_row_of_an_uncatalogued_model_is_scored_with_the_shapes_it_names():
    row = {**cpu_row("vm", 100, model="all-mpnet-base-v2"), "shape_of": "bge-base-en-v1.5"}
    (scored,), _ = score_search.scored_rows(CATALOG, [row])
    # 12 layers x 12 x 768^2 = 84,934,656 multiplying parameters: 2 x that x 256 + 4 x 256^2 x 768 x 12
    assert scored.flops == 2 * 84_934_656 * 256 + 4 * 256**2 * 768 * 12


def gpu_row(gpu_id: str, precision: str, chunks: int, seconds: float, model: str = "bge-base-en-v1.5") -> dict:
    return {"hardware": gpu_id, "gpu_id": gpu_id, "backend": "cuda", "model": model, "precision": precision,
            "chunks": chunks, "seconds": seconds, "chunk_tokens": 384, "batch": 16, "runtime": "pytorch",
            "implementation": "pytorch", "source": "https://example.org/pairs"}


def test_fp32_and_fp16_twins_give_the_exponent_of_the_fp32_peak_and_hold_it_out_by_gpu():
    # A T4 (65 TFLOPS FP16, 8.1 FP32: ratio 8.02) whose fp16 run is 2.97x its fp32 twin's speed: a = ln 2.97 / ln 8.02;
    # an RTX 3090 (71 and 35.6 in catalog/gpus.toml: ratio 1.99) at 1.42x: a = ln 1.42 / ln 1.99
    raw = [gpu_row("tesla-t4", "fp16", 16, 0.13418), gpu_row("tesla-t4", "fp32", 16, 0.39849),
           gpu_row("rtx-3090", "fp16", 16, 0.04878), gpu_row("rtx-3090", "fp32", 16, 0.06918)]
    rows, skipped = score_search.scored_rows(CATALOG, raw)
    assert not skipped
    pairs = score_search.precision_pairs(rows)
    assert [(fp16.precision, fp32.precision) for fp16, fp32 in pairs] == [("fp16", "fp32")] * 2
    t4 = next(p for p in pairs if p[0].device.name.endswith("T4"))
    ratio = t4[0].device.flops / t4[0].device.vector_flops
    assert score_search.pair_exponent(*t4) == pytest.approx(math.log(0.39849 / 0.13418) / math.log(ratio))
    exponents = sorted(score_search.pair_exponent(*p) for p in pairs)
    assert score_search.fp32_exponent(pairs) == pytest.approx(statistics.median(exponents))
    # the fp32 run predicted from its fp16 twin at the exponent: exact at its own pair's exponent
    assert score_search.fp32_predicted(t4[0], score_search.pair_exponent(*t4)) == pytest.approx(t4[1].measured)
    # the report states the fitted exponent and the held-out comparison, and records the constant it checks
    fits = {}
    lines = score_search.fp32_section(rows, fits)
    assert fits[("FP32_GPU_EXPONENT", "gpu")] == (pytest.approx(statistics.median(exponents)), search.FP32_GPU_EXPONENT)
    assert any(line.startswith("| held out by GPU") for line in lines)
    # a row's implied efficiency is against the peak gpuready counts its precision at (search.weights_peak)
    assert t4[1].peak == pytest.approx(search.weights_peak(t4[1].device, "fp32")[0]) and t4[1].peak < t4[0].peak
