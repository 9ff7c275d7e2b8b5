"""gpuready bench: measured figures win over table ones in the estimate and say so; llama-bench output;
the torch subprocess's failures; the `bench` command and what `report` shows."""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from pathlib import Path

import jsonschema
import pytest

from gpuready.bench import cache
from gpuready.bench.apply import Applied, LevelChange, apply_measurements, level_changes, summarise, with_measurements
from gpuready.bench.gpu import measure_gpus, parse_worker_output
from gpuready.bench.llama import LlamaBenchError, model_speed, parse, placement
from gpuready.bench.results import Measurements
from gpuready.bench.stats import Spread
from gpuready.tasks.registry import load_catalog
from gpuready.tasks.devices import cpu_device
from gpuready.tasks.text_estimate import (
    LAYER_SECONDS,
    MEASURED_BANDWIDTH_EFFICIENCY,
    MEASURED_EFFICIENCY_SPREAD,
    QUANT_FAMILY_BAND,
    UNPACK_OPS_PER_WEIGHT,
)
from gpuready.hardware import Problem
from gpuready.report import SCHEMA_PATH, build_report, report_json
from gpuready.testing import cpu_machine, with_test_gpu
from gpuready.tasks.registry import judge_model
from gpuready.tasks.verdict import Options

FIXTURES = Path(__file__).parent / "fixtures"
LLAMA_BENCH_JSON = (FIXTURES / "llama-bench" / "rtx4080-qwen2.5-7b-q4_k_m.json").read_text()
READ = Spread(18.0e9, 20.0e9, 21.0e9, 9)  # ±7.5%


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


def measured(hardware, **changes) -> Measurements:
    return dataclasses.replace(
        Measurements(measured_at="2026-12-03", fingerprint=cache.fingerprint(hardware), memory_read_bytes_per_s=READ),
        **changes,
    )


def test_a_measured_bandwidth_replaces_the_table_figure_and_says_when(tmp_path):
    hardware = cpu_machine(32, bandwidth_gb_s=51.2)
    cache.save(measured(hardware), tmp_path)
    applied = apply_measurements(hardware, [], tmp_path)
    assert applied.hardware.cpu.memory_bandwidth_bytes_per_s == 20_000_000_000
    assert applied.hardware.cpu.bandwidth_source == "measured on this machine, 2026-12-03, ±7.5%"
    assert applied.unmeasured == hardware
    assert applied.notes == ("memory bandwidth 20.0 GB/s measured (was 51 GB/s, user)",)


def test_the_estimator_takes_the_measured_figure_with_its_own_efficiency_band_and_basis(catalog):
    hardware, _ = with_measurements(cpu_machine(32, bandwidth_gb_s=51.2), measured(cpu_machine(32)))
    device = cpu_device(hardware)
    assert (device.bandwidth_source, device.bandwidth_spread) == ("this-machine", pytest.approx(0.075))
    model = catalog.models["llama-3.1-8b"]
    verdict = judge_model(model, catalog, hardware, Options(quant="Q4_K_M"))
    weights = verdict.estimate.memory.weights_bytes
    # the measured bandwidth at its own efficiency, plus the speed model's fixed costs (per layer, unpacking K-quants);
    # a token reads and unpacks all but the untied 128,256 x 4,096 input embedding (tests/test_speed_model.py)
    multiplied = model.active_params - 128_256 * 4_096
    seconds = (weights * multiplied / model.params / (20e9 * MEASURED_BANDWIDTH_EFFICIENCY) + model.layers * LAYER_SECONDS["cpu"]
               + multiplied * UNPACK_OPS_PER_WEIGHT["k-quant"] / device.flops)
    assert verdict.estimate.speed.generation_tokens_per_s == pytest.approx(1 / seconds)
    # its own spread plus the efficiency spread, widened like any band for a family the model predicts worse
    assert verdict.uncertainty == pytest.approx((0.075 + MEASURED_EFFICIENCY_SPREAD) * QUANT_FAMILY_BAND["k-quant"])
    assert any(line.startswith("generation: Test CPU bandwidth 20 GB/s (measured on this machine, 2026-12-03, ±7.5%) x 88% "
                               "of it reached by llama.cpp, the KV cache read at 80% of the weights' rate") for line in verdict.estimate.basis)


def test_without_measurements_nothing_changes(tmp_path, catalog):
    hardware = cpu_machine(32)
    applied = apply_measurements(hardware, [Problem("gpu", "x")], tmp_path)
    assert applied == Applied(hardware, hardware, [Problem("gpu", "x")])


def test_measured_gpu_bandwidth_replaces_the_gpus_and_table_flops_stay(tmp_path):
    from gpuready.bench.results import GPUMeasurement

    hardware = with_test_gpu(cpu_machine(32), 16, 716.8, fp16_tflops=97.5, name="NVIDIA GeForce RTX 4080")
    gpu = GPUMeasurement(0, "NVIDIA GeForce RTX 4080", Spread(600e9, 620e9, 630e9, 7), Spread(150e12, 160e12, 161e12, 7), None)
    result, notes = with_measurements(hardware, measured(hardware, memory_read_bytes_per_s=None, gpus=(gpu,)))
    assert result.gpus[0].bandwidth_bytes_per_s == 620_000_000_000
    assert result.gpus[0].bandwidth_source == "measured on this machine, 2026-12-03, ±2.4%"
    assert result.gpus[0].fp16_flops == 97.5e12
    assert result.cpu == hardware.cpu
    assert notes == ["NVIDIA GeForce RTX 4080: bandwidth 620 GB/s measured",
                     "NVIDIA GeForce RTX 4080: 160.0 TFLOPS FP16 matmul measured, table 97.5 kept for the prompt estimate"]


def test_a_measured_gpu_bandwidth_uses_the_fitted_share_of_a_copy_not_of_a_peak(catalog):
    from gpuready.bench.results import GPUMeasurement
    from gpuready.tasks.devices import gpu_device
    from gpuready.tasks.text_estimate import BANDWIDTH_EFFICIENCY, GPU_COPY_SHARE_OF_PEAK

    hardware = with_test_gpu(cpu_machine(32), 16, 716.8, fp16_tflops=97.5, name="NVIDIA GeForce RTX 4080")
    gpu = GPUMeasurement(0, "NVIDIA GeForce RTX 4080", Spread(600e9, 620e9, 630e9, 7), None, None)
    measured_machine, _ = with_measurements(hardware, measured(hardware, memory_read_bytes_per_s=None, gpus=(gpu,)))
    model = catalog.models["llama-3.1-8b"]
    verdict = judge_model(model, catalog, measured_machine, Options(quant="Q4_K_M"))
    weights = verdict.estimate.memory.weights_bytes
    efficiency = min(1.0, BANDWIDTH_EFFICIENCY["cuda"] / GPU_COPY_SHARE_OF_PEAK)  # never more than the copy itself
    multiplied = model.active_params - 128_256 * 4_096  # less the untied input embedding, gathered not read
    seconds = (weights * multiplied / model.params / (620e9 * efficiency) + model.layers * LAYER_SECONDS["cuda"]
               + multiplied * UNPACK_OPS_PER_WEIGHT["k-quant"] / gpu_device(measured_machine).flops)
    assert verdict.estimate.placement == "gpu"
    assert verdict.estimate.speed.generation_tokens_per_s == pytest.approx(1 / seconds)
    assert verdict.uncertainty == pytest.approx((15 / 620 + MEASURED_EFFICIENCY_SPREAD) * QUANT_FAMILY_BAND["k-quant"],
                                                abs=1e-3)


def test_the_mps_measurement_applies_to_the_apple_gpu():
    from gpuready.bench.results import GPUMeasurement
    from gpuready.hardware import GPU

    apple = GPU(vendor="apple", name="Apple M2 GPU (10-core)", kind="unified", bandwidth_bytes_per_s=100_000_000_000,
                bandwidth_source="table:apple-m2", fp16_flops=7.1e12, flops_source="table:apple-m2")
    hardware = dataclasses.replace(cpu_machine(16), platform="darwin", arch="arm64", gpus=(apple,))
    gpu = GPUMeasurement(0, "Apple GPU (MPS)", Spread(88e9, 90e9, 91e9, 7), None, None)
    result, _ = with_measurements(hardware, measured(hardware, memory_read_bytes_per_s=None, gpus=(gpu,)))
    assert (result.gpus[0].bandwidth_bytes_per_s, result.gpus[0].bandwidth_source) == (
        90_000_000_000, "measured on this machine, 2026-12-03, ±1.7%")


def test_report_lists_the_verdicts_whose_level_the_measurements_changed(catalog, tmp_path):
    hardware = cpu_machine(32, bandwidth_gb_s=51.2)
    cache.save(measured(hardware, memory_read_bytes_per_s=Spread(9e9, 10e9, 11e9, 5)), tmp_path)
    applied = apply_measurements(hardware, [], tmp_path)
    report = summarise(applied, build_report(applied.hardware, [], catalog, Options()),
                       lambda hardware, problems, options: build_report(hardware, problems, catalog, options), Options())
    # one verdict per model, task and part of it: Llama 3.1 8B's fine-tuning verdict is not its text-generation one
    without = {(v.task, v.group, v.model_id): v.level for v in build_report(hardware, [], catalog, Options()).verdicts}
    expected = tuple(LevelChange(v.task, v.model_id, v.model_name, without[v.task, v.group, v.model_id], v.level, v.group)
                     for v in report.verdicts if without[v.task, v.group, v.model_id] != v.level)
    assert expected  # a fifth of the bandwidth moves some verdicts
    assert report.measured.changed == expected
    assert report.measured.figures == ("memory bandwidth 10.0 GB/s measured (was 51 GB/s, user)",)
    data = report_json(report)
    jsonschema.validate(data, json.loads(SCHEMA_PATH.read_text()))
    assert data["measured"]["changed"][0] == dataclasses.asdict(expected[0])


class V:
    def __init__(self, model_id, level, task="text-generation", group=None):
        self.task, self.group, self.model_id, self.model_name, self.level = task, group, model_id, model_id.upper(), level


def test_level_changes_ignores_verdicts_that_kept_their_level():
    assert level_changes([V("a", "runs"), V("b", "slow")], [V("a", "runs"), V("b", "runs")]) == (
        LevelChange("text-generation", "b", "B", "slow", "runs"),
    )


def test_level_changes_compares_a_model_with_itself_in_the_same_task():
    # Keyed by model alone, the fine-tuning verdict (judged after) overwrote the text-generation one, and every
    # model whose two levels differ was listed as changed though neither moved.
    without = [V("llama", "runs-well"), V("llama", "too-slow", "fine-tuning"), V("bge", "runs", "document-search", "embedding")]
    same = [V("llama", "runs-well"), V("llama", "too-slow", "fine-tuning"), V("bge", "runs", "document-search", "embedding")]
    assert level_changes(without, same) == ()
    moved = [V("llama", "slow"), V("llama", "too-slow", "fine-tuning"), V("bge", "slow", "document-search", "embedding")]
    assert level_changes(without, moved) == (
        LevelChange("text-generation", "llama", "LLAMA", "runs-well", "slow"),
        LevelChange("document-search", "bge", "BGE", "runs", "slow", "embedding"),
    )


def test_the_text_report_lists_the_changes_under_each_task():
    from gpuready.bench.apply import MeasuredSummary, render_summary
    summary = MeasuredSummary("2026-12-05", ("memory bandwidth 29.2 GB/s measured (was 51 GB/s, table)",), (
        LevelChange("text-generation", "mistral-7b", "Mistral 7B", "runs", "slow"),
        LevelChange("document-search", "bge-m3", "BGE-M3", "runs-well", "runs", "embedding"),
        LevelChange("text-generation", "gemma-3-27b", "Gemma 3 27B", "slow", "too-slow"),
    ))
    assert render_summary(summary).splitlines()[3:] == [
        "  verdicts changed by the measurements:",
        "    Text generation:",
        "      Mistral 7B: runs -> slow",
        "      Gemma 3 27B: slow -> too slow",
        "    Embedding:",
        "      BGE-M3: runs well -> runs",
    ]


# --- llama-bench --------------------------------------------------------------------------


def test_llama_bench_json_gives_real_generation_and_prompt_speeds(catalog):
    qwen = catalog.models["qwen2.5-7b"]
    speed = model_speed(LLAMA_BENCH_JSON, qwen, "Q4_K_M")
    assert speed.generation_tokens_per_s == Spread(117.464, 119.03, 120.178, 5)
    assert speed.prompt_tokens_per_s == Spread(6863.1, 7136.37, 7237.21, 5)
    assert (speed.placement, speed.quant, speed.layers, speed.hidden_size) == ("gpu", "Q4_K_M", 28, 3584)
    assert speed.source == "llama-bench 8cf427ff (CUDA), Qwen2.5-7B-Instruct-Q4_K_M.gguf, tg128/pp512"


def test_a_llama_bench_result_replaces_the_estimate_for_that_model_and_quant(catalog):
    qwen = catalog.models["qwen2.5-7b"]
    speed = model_speed(LLAMA_BENCH_JSON, qwen, "Q4_K_M")
    machine = with_test_gpu(cpu_machine(32), 16, 716.8, fp16_tflops=97.5, name="NVIDIA GeForce RTX 4080")
    estimated = judge_model(qwen, catalog, machine, Options(quant="Q4_K_M"))
    verdict = judge_model(qwen, catalog, machine, Options(quant="Q4_K_M", measured_speeds=(speed,)))
    assert verdict.speed == 119.03
    assert verdict.uncertainty == pytest.approx((120.178 - 117.464) / 2 / 119.03)
    assert verdict.estimate.speed.prompt_tokens_per_s == 7136.37
    ratio = estimated.estimate.speed.generation_tokens_per_s_full_context / estimated.estimate.speed.generation_tokens_per_s
    assert verdict.estimate.speed.generation_tokens_per_s_full_context == pytest.approx(119.03 * ratio)
    assert any(line.startswith("generation: 119.0 tokens/s measured on this machine (117.5-120.2 over 5 runs; llama-bench")
               for line in verdict.estimate.basis)
    # another quantisation of the same model, and the same quant on the CPU, keep the estimate
    other = judge_model(qwen, catalog, machine, Options(quant="Q8_0", measured_speeds=(speed,)))
    assert other.speed == judge_model(qwen, catalog, machine, Options(quant="Q8_0")).speed
    on_cpu = judge_model(qwen, catalog, cpu_machine(32), Options(quant="Q4_K_M", measured_speeds=(speed,)))
    assert on_cpu.speed == judge_model(qwen, catalog, cpu_machine(32), Options(quant="Q4_K_M")).speed


@pytest.mark.parametrize(
    ("row", "expected"),
    [
        ({"backends": "CPU", "n_gpu_layers": 99}, "cpu"),
        ({"backends": "CUDA", "n_gpu_layers": 0}, "cpu"),
        ({"backends": "CUDA", "n_gpu_layers": 99}, "gpu"),
        ({"backends": "Metal,BLAS", "n_gpu_layers": -1}, "gpu"),
        ({"backends": "Vulkan", "n_gpu_layers": 20}, "split"),
        # every layer on the GPU, experts in system memory (--n-cpu-moe, or -ot as llama-bench prints it)
        ({"backends": "CUDA", "n_gpu_layers": 99, "n_cpu_moe": 26}, "split"),
        ({"backends": "CUDA", "n_gpu_layers": 99, "tensor_buft_overrides": "blk\\.1[0-9]\\.ffn_.*_exps=CPU"}, "split"),
        ({"backends": "CUDA", "n_gpu_layers": 99, "n_cpu_moe": 0, "tensor_buft_overrides": "none"}, "gpu"),
        ({"backends": "CUDA", "n_gpu_layers": 99, "n_cpu_moe": True}, "gpu"),  # not a count
    ],
)
def test_llama_bench_placement_follows_its_backend_and_offloaded_layers(row, expected):
    assert placement(row, 28) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("| model | size |", "llama-bench output is not JSON"),
        ('{"avg_ts": 1}', "llama-bench JSON output should be an array of objects"),
        ('[{"n_prompt": 512, "n_gen": 0, "avg_ts": 10}]', "llama-bench output has no text-generation (tg) result"),
    ],
)
def test_output_that_is_not_llama_bench_json_is_a_clear_error(text, message):
    with pytest.raises(LlamaBenchError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse(text)


def test_older_llama_bench_output_without_samples_uses_average_and_deviation(catalog):
    rows = json.loads(LLAMA_BENCH_JSON)
    for row in rows:
        del row["samples_ts"]
    speed = model_speed(json.dumps(rows), catalog.models["qwen2.5-7b"], "Q4_K_M")
    assert speed.generation_tokens_per_s == Spread(118.881588 - 1.041811, 118.881588, 118.881588 + 1.041811, 1)


# --- the torch subprocess ------------------------------------------------------------------


def test_a_hanging_torch_worker_gives_a_problem_within_its_timeout():
    started = time.monotonic()
    gpus, problems = measure_gpus(timeout_s=1.0, command=[sys.executable, "-c", "import time; time.sleep(60)"])
    assert time.monotonic() - started < 10
    assert gpus == []
    assert problems == [Problem("bench-gpu", "the PyTorch GPU benchmark did not finish within 1 s",
                                hint="a GPU driver may be hung: check nvidia-smi / rocm-smi", severity="error")]


def test_a_crashing_torch_worker_gives_a_problem_with_its_last_error_line():
    script = "import sys; sys.stderr.write('Traceback ...\\nRuntimeError: CUDA error: unknown error\\n'); sys.exit(134)"
    gpus, problems = measure_gpus(timeout_s=20, command=[sys.executable, "-c", script])
    assert gpus == []
    assert problems == [Problem("bench-gpu", "the PyTorch GPU benchmark exited with code 134: RuntimeError: CUDA error: unknown error",
                                hint="a broken driver or PyTorch install; `python -c 'import torch'` shows the error",
                                severity="error")]


def test_a_worker_without_torch_says_how_to_measure_gpus():
    assert parse_worker_output('{"error": "PyTorch is not installed"}') == ([], [Problem(
        "bench-gpu", "GPUs not measured: PyTorch is not installed",
        hint="pip install torch (with the CUDA, ROCm or MPS build for this GPU) to measure GPUs", severity="info")])


def test_the_worker_output_becomes_gpu_measurements():
    line = json.dumps({"torch": "2.5.1", "gpus": [{"index": 0, "name": "NVIDIA H100", "bandwidth_bytes_per_s": READ.to_dict(),
                                                    "fp16_flops": None, "bf16_flops": None, "errors": ["bf16_flops: no"]}]})
    gpus, problems = parse_worker_output("some warning\n" + line)
    assert [(g.name, g.bandwidth_bytes_per_s, g.fp16_flops) for g in gpus] == [("NVIDIA H100", READ, None)]
    assert problems == [Problem("bench-gpu", "NVIDIA H100: bf16_flops: no")]


def test_the_real_worker_reports_a_missing_torch_as_an_error_line():
    pytest.importorskip("numpy")
    if __import__("importlib").util.find_spec("torch") is not None:
        pytest.skip("torch is installed here")
    gpus, problems = measure_gpus(timeout_s=60)
    assert gpus == [] and problems[0].message == "GPUs not measured: PyTorch is not installed"


# --- the CPU kernels, tiny ------------------------------------------------------------------


def test_the_cpu_kernels_run_and_give_positive_rates():
    pytest.importorskip("numpy")
    from gpuready.bench.measure import MIB, Plan, measure_cpu

    result = measure_cpu(Plan(array_bytes=4 * MIB, repeats=2, sample_seconds=0.005, matmul_size=64), threads=2)
    for spread in (result.read_bytes_per_s, result.copy_bytes_per_s, result.fp32_flops):
        assert spread.samples == 2 and 0 < spread.minimum <= spread.median <= spread.maximum
    assert result.threads == 2


def test_with_a_resident_model_the_baseline_is_judged_with_its_memory_taken_too(catalog, tmp_path):
    # --with takes the resident model's memory before anything is judged; the baseline was judged on the whole
    # machine, so models that fit only beside nothing were listed as moved by the measurements.
    from gpuready.app import Request, report
    hardware = cpu_machine(32, bandwidth_gb_s=51.2)
    cache.save(measured(hardware, memory_read_bytes_per_s=Spread(40e9, 50e9, 52e9, 5)), tmp_path)
    applied = apply_measurements(hardware, [], tmp_path)
    options = Options(with_models=("qwen2.5-14b",))
    result = report(Request(options=options), catalog, (applied.hardware, [], applied))
    baseline = report(Request(options=options), catalog, (hardware, []))
    assert result.measured.changed == level_changes(baseline.verdicts, result.verdicts)
    # the whole machine's baseline (the old one) lists also what the resident model's memory did
    whole = report(Request(), catalog, (hardware, []))
    memory_only = set(level_changes(whole.verdicts, result.verdicts)) - set(result.measured.changed)
    assert memory_only and all(change.level_without != "does-not-fit" for change in memory_only)
