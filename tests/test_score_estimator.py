"""The accuracy script runs over the validation set, and gpuready's constants are its fits."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "score_estimator.py"


@pytest.fixture(scope="module")
def scored():
    spec = importlib.util.spec_from_file_location("score_estimator", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.report(), module.FITS


def test_every_fitted_constant_equals_what_the_validation_rows_imply(scored):
    _, fits = scored
    # CPU has no decoder constant of its own (its one usable row is not enough): it keeps text generation's.
    fitted = {key: value for key, value in fits.items() if key != ("DECODER_EFFICIENCY", "cpu")}
    assert len(fitted) >= 30
    digits = {"LAYER_SECONDS (microseconds)": 1}
    assert {key: round(fit, digits.get(key[0], 2)) for key, (fit, _) in fitted.items()} == {
        key: None if constant is None else round(constant, digits.get(key[0], 2)) for key, (_, constant) in fitted.items()}


def test_the_accuracy_headline_is_what_the_script_computes_from_the_committed_rows(scored):
    text, _ = scored
    headline = text[text.index("### Headline"):text.index("### Generation per backend")]
    committed = (SCRIPT.parent / "ACCURACY.md").read_text(encoding="utf-8")
    assert headline in committed
    # The headline is cross-validated: both tasks, with held-out (LODO and LOSO) columns and the targets.
    assert "| generation |" in headline and "| prompt |" in headline
    assert "LODO median" in headline and "LOSO median" in headline and "Targets (issue 10)" in headline


def test_the_committed_accuracy_figures_are_what_the_script_prints_now(scored):
    text, _ = scored
    committed = (SCRIPT.parent / "ACCURACY.md").read_text(encoding="utf-8")
    assert committed.strip() == text.strip()


def test_a_rows_stated_memory_sets_its_bandwidth_over_the_platform_table():
    spec = importlib.util.spec_from_file_location("score_estimator_memory", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    row = {"cpu_hint": "AMD Ryzen 9 7950X 16-Core Processor", "memory": "DDR5-3600 2ch", "threads": 16}
    assert module.stated_bandwidth(row) == 57_600_000_000
    assert module.cpu_device(row).bandwidth_bytes_per_s == 57_600_000_000
    unstated = {"cpu_hint": "AMD Ryzen 9 7950X 16-Core Processor", "memory": "DDR3 (speed and channels not stated)"}
    assert module.stated_bandwidth(unstated) is None
    assert module.cpu_device(unstated).bandwidth_bytes_per_s == 83_200_000_000  # catalog/cpus.toml, DDR5-5200 x 2


def load_scorer(name: str):
    spec = importlib.util.spec_from_file_location(name, SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    ("backend", "gpu_hint", "measured", "family", "cublas"),
    [
        ("cuda", "NVIDIA GeForce RTX 3090", "2023-12", "legacy", True),    # Ampere, before PR #8075: FP16 cuBLAS
        ("cuda", "NVIDIA GeForce RTX 3090", "2024-01", "k-quant", True),
        ("cuda", "NVIDIA GeForce RTX 3090", "2024-06", "legacy", False),   # the month MMQ became the default
        ("cuda", "NVIDIA GeForce RTX 3090", None, "legacy", False),        # undated rows ran today's kernels
        ("cuda", "NVIDIA GeForce RTX 3090", "2023-12", "float", False),    # F16 weights took cuBLAS either way
        ("cuda", "NVIDIA Tesla P40", "2024-01", "legacy", False),           # Pascal: no FP16 path, dp4a MMQ
        ("rocm", "AMD Radeon RX 7900 XTX", "2023-12", "legacy", False),    # CUDA builds only
    ],
)
def test_dated_cuda_rows_before_mmq_became_the_default_ran_cublas(backend, gpu_hint, measured, family, cublas):
    module = load_scorer("score_estimator_cublas")
    row = {"backend": backend, "gpu_hint": gpu_hint, **({"measured": measured} if measured else {})}
    assert module.gpu_spec(row) is not None
    assert module.cublas_prompt(row, family) is cublas


def test_the_cublas_class_is_its_own_prompt_family_only_when_the_term_is_on():
    import sys
    sys.path.insert(0, str(SCRIPT.parent))
    import speed_report
    import speedfit

    old = speedfit.GenRow("cuda", "legacy", 1e-4, 0.0, 2e-4, "rtx-3090", "s", cublas=True)
    new = speedfit.GenRow("cuda", "legacy", 1e-4, 0.0, 1.5e-4, "rtx-3090", "t")
    rows, shares = speed_report.prompt_families([old, new], families=True, moe=True, cublas=True)
    assert [r.family for r in rows] == ["cublas", "legacy"] and shares
    rows, _ = speed_report.prompt_families([old, new], families=True, moe=True, cublas=False)
    assert [r.family for r in rows] == ["legacy", "legacy"]


@pytest.mark.parametrize(
    ("measured", "output_counted"),
    [
        ("2024-03", True),   # before llama.cpp PR #6122 (merged 2024-03-26): logits for every prompt token
        ("2023-11", True),
        ("2024-04", False),  # after: the output projection for the last token only
        (None, False),       # undated rows are taken as today's builds
    ],
)
def test_rows_measured_before_pr_6122_count_the_output_projection_for_every_prompt_token(measured, output_counted):
    from gpuready.tasks.registry import load_catalog

    module = load_scorer("score_estimator_logits")
    llama = load_catalog().get("llama-3.2-1b")
    row = {"backend": "cuda", **({"measured": measured} if measured else {})}
    counted = module.counted_prompt_params(row, llama)
    head = 128256 * 2048  # Llama 3.2 1B config.json: vocab_size, hidden_size (tied to the input embedding)
    ffn = 3 * 2048 * 8192  # and one layer's feed-forward: 3 x hidden x intermediate_size
    everything = module.est.matmul_params(llama)
    assert counted == (everything if output_counted else pytest.approx(everything - head - ffn, rel=0.002))


def test_the_output_round_counts_the_head_for_every_token_in_its_comparison():
    import sys
    sys.path.insert(0, str(SCRIPT.parent))
    import speed_report
    import speedfit

    row = speedfit.PromptRow("cuda", "k-quant", implied=0.5, device="d", source="s", ideal_s=1e-4, tflop=2.0,
                             per_watt=3.0, output_share=0.25)
    before = speed_report.every_output_rows([row])[0]
    # a quarter more work: the ideal time, the ceiling's TFLOPs, the energy's FLOPs a watt and the implied share of
    # peak scale by 1.25, while the measured time (ideal / implied) stays what was measured; the share is spent
    assert before.ideal_s == pytest.approx(1.25e-4) and before.tflop == pytest.approx(2.5)
    assert before.per_watt == pytest.approx(3.75) and before.output_share == 0.0
    assert before.ideal_s / before.implied == pytest.approx(row.ideal_s / row.implied)


def test_an_apple_gpu_without_a_stated_tflops_figure_is_scored_at_the_rate_gpuready_derives():
    import dataclasses

    from gpuready.probes.apple import apple_hardware
    from gpuready.tasks import devices
    from gpuready.testing import cpu_machine

    module = load_scorer("score_estimator_apple")
    m3 = module.gpu_device({"gpu_hint": "Apple M3 (10-core GPU)"}, "metal")
    gpu, _ = apple_hardware(module.gpu_spec({"gpu_hint": "Apple M3 (10-core GPU)"}))
    # Apple states no M3 TFLOPS: the scorer times prompts and unpacking at the rate the probe derives (10 x M2's).
    assert m3.flops == gpu.fp16_flops == pytest.approx(10 * 13.6e12 / 38)
    assert m3.unpack_flops == m3.flops
    shipped = devices.gpu_device(dataclasses.replace(cpu_machine(16), gpus=(gpu,)))
    assert (shipped.flops, shipped.unpack_flops, shipped.flops_detail) == (m3.flops, m3.unpack_flops, m3.flops_detail)
    assert m3.flops_detail.startswith("derived from 10 cores")
    # A GPU whose table row states its rate keeps it.
    m2 = module.gpu_device({"gpu_hint": "Apple M2 Max (38-core GPU)"}, "metal")
    assert m2.flops == pytest.approx(13.6e12) and m2.flops_detail is None
