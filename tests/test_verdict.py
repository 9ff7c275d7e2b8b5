"""Verdicts: levels, variants, placements and the reasons people read."""

from __future__ import annotations

import dataclasses

import pytest

from gpuready.tasks.registry import load_catalog
from gpuready.hardware import GPU, Memory
from gpuready.report import build_report
from gpuready.testing import cpu_machine, with_test_gpu
from gpuready.tasks.registry import judge_model
from gpuready.tasks.text import speed_level
from gpuready.tasks.verdict import LEVELS, Options

CATALOG = load_catalog()
MODELS = CATALOG.for_task("text-generation")


@pytest.mark.parametrize(
    ("tokens_per_s", "level"),
    [(45.0, "runs-well"), (20.0, "runs-well"), (12.0, "runs"), (8.0, "runs"), (3.0, "slow"), (2.9, "too-slow"), (None, "unknown")],
)
def test_speed_floors_decide_the_level(tokens_per_s, level):
    assert speed_level(tokens_per_s) == level


def test_a_24_gb_gpu_runs_llama_8b_well_on_the_gpu_at_8_bit():
    hardware = with_test_gpu(cpu_machine(32), memory_gib=24, bandwidth_gb_s=1008, name="NVIDIA GeForce RTX 4090")
    verdict = judge_model(CATALOG.get("llama-3.1-8b"), CATALOG, hardware, Options())
    assert (verdict.level, verdict.quant, verdict.placement, verdict.runtime) == ("runs-well", "Q8_0", "gpu", "llama.cpp (CUDA)")
    assert verdict.speed_unit == "tokens/s" and verdict.speed > 60
    assert any("to spare" in reason for reason in verdict.reasons)


def test_without_a_gpu_formats_that_need_one_are_not_offered():
    verdict = judge_model(CATALOG.get("llama-3.1-8b"), CATALOG, cpu_machine(64), Options())
    assert {v.quant for v in verdict.variants}.isdisjoint({"MLX_4BIT", "FP8", "AWQ_4BIT"})


def test_asking_for_mlx_weights_on_a_pc_says_they_are_not_supported_not_too_big():
    from gpuready.frontends.text import verdict_word
    from gpuready.frontends.tui.format import level_label

    verdict = judge_model(CATALOG.get("llama-3.1-8b"), CATALOG, cpu_machine(64), Options(quant="MLX_4BIT"))
    assert (verdict.level, verdict.supported, verdict.placement) == ("does-not-fit", False, None)
    assert verdict.reasons[-1] == "MLX_4BIT weights need MLX on Apple Silicon (Metal)"
    assert verdict_word(verdict) == "not supported" and level_label(verdict.level, verdict.supported) == "✗ not supported"
    assert [(v.quant, v.supported, verdict_word(v)) for v in verdict.variants] == [("MLX_4BIT", False, "not supported")]
    # No memory would make it run, so no "at least N GB of free memory" suggestion; a variant that runs is named.
    assert not any("free memory" in s for s in verdict.suggestions)
    assert any(s.startswith("--quant ") for s in verdict.suggestions)


def test_a_gpu_only_format_too_big_for_the_gpu_does_not_fit_and_is_supported():
    # FP8 Llama 3.1 70B on a 24 GB RTX 4090: vLLM runs FP8 there, the 70 GB of weights are what is missing.
    from gpuready.frontends.text import verdict_word

    hardware = with_test_gpu(cpu_machine(128), 24, 1008, name="NVIDIA GeForce RTX 4090")
    verdict = judge_model(CATALOG.get("llama-3.1-70b"), CATALOG, hardware, Options(quant="FP8"))
    assert (verdict.level, verdict.supported, verdict_word(verdict)) == ("does-not-fit", True, "does not fit")
    assert verdict.reasons[-1].startswith("FP8 must fit whole in GPU memory: needs ")
    assert any("free memory" in s for s in verdict.suggestions)


def test_a_model_bigger_than_memory_does_not_fit_and_says_what_it_needs():
    verdict = judge_model(CATALOG.get("llama-3.3-70b"), CATALOG, cpu_machine(8), Options())
    assert verdict.level == "does-not-fit"
    assert verdict.quant == "Q2_K"  # the smallest variant is the one closest to fitting
    assert verdict.placement is None and verdict.speed is None
    assert any("at least" in s and "GB of free memory" in s for s in verdict.suggestions)


def test_a_model_that_fits_but_crawls_is_too_slow_not_recommended():
    slow_cpu = cpu_machine(256, bandwidth_gb_s=10)
    verdict = judge_model(CATALOG.get("llama-3.3-70b"), CATALOG, slow_cpu, Options())
    assert verdict.level == "too-slow"
    report = build_report(slow_cpu, [], CATALOG)
    assert report.tasks[0].best_model_id != "llama-3.3-70b"


def test_gpu_only_placement_rejects_a_split():
    hardware = with_test_gpu(cpu_machine(64), memory_gib=8, bandwidth_gb_s=448)
    model = CATALOG.get("qwen2.5-14b")
    anywhere = judge_model(model, CATALOG, hardware, Options(quant="Q8_0"))
    gpu_only = judge_model(model, CATALOG, hardware, Options(quant="Q8_0", placement="gpu"))
    assert anywhere.placement == "split"
    assert gpu_only.level == "does-not-fit"


def test_free_memory_decides_not_total_memory():
    busy = dataclasses.replace(cpu_machine(64), memory=Memory(total_bytes=64 * 1024**3, available_bytes=4 * 1024**3))
    verdict = judge_model(CATALOG.get("llama-3.1-8b"), CATALOG, busy, Options(quant="Q8_0"))
    assert verdict.level == "does-not-fit"


def test_a_context_change_is_applied_and_capped_at_the_models_maximum():
    model = CATALOG.get("qwen2.5-0.5b")
    verdict = judge_model(model, CATALOG, cpu_machine(16), Options(context_tokens=10_000_000))
    assert verdict.context_tokens == model.context_length


def test_two_identical_gpus_pool_their_memory_for_a_layer_split():
    one = with_test_gpu(cpu_machine(128), memory_gib=24, bandwidth_gb_s=936, name="NVIDIA GeForce RTX 3090")
    two = with_test_gpu(one, memory_gib=24, bandwidth_gb_s=936, name="NVIDIA GeForce RTX 3090")
    model = CATALOG.get("llama-3.3-70b")
    assert judge_model(model, CATALOG, one, Options(quant="Q4_K_M")).placement == "split"
    verdict = judge_model(model, CATALOG, two, Options(quant="Q4_K_M"))
    assert verdict.placement == "gpu"
    assert "across 2 GPUs" in verdict.reasons[1]


def test_an_unknown_memory_size_gives_unknown_not_a_guess():
    hardware = dataclasses.replace(cpu_machine(16), memory=Memory(total_bytes=None, available_bytes=None))
    verdict = judge_model(CATALOG.get("llama-3.1-8b"), CATALOG, hardware, Options())
    assert verdict.level == "unknown"


def test_an_uncounted_igpu_is_never_used():
    old_igpu = GPU(vendor="intel", name="Intel(R) UHD Graphics 620", kind="integrated", memory_total_bytes=None,
                   counted=False, not_counted_reason="too old for compute runtimes", source="sysfs")
    hardware = dataclasses.replace(cpu_machine(16), gpus=(old_igpu,))
    verdict = judge_model(CATALOG.get("llama-3.2-1b"), CATALOG, hardware, Options())
    assert verdict.placement == "cpu"


# --- invariants over the whole catalogue ------------------------------------------------


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.id)
def test_more_memory_never_worsens_a_verdict(model):
    levels = [LEVELS.index(judge_model(model, CATALOG, cpu_machine(gib), Options()).level) for gib in (2, 8, 16, 32, 64, 128, 512)]
    assert levels == sorted(levels, reverse=True)


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.id)
def test_more_gpu_memory_never_worsens_a_verdict(model):
    levels = [
        LEVELS.index(judge_model(model, CATALOG, with_test_gpu(cpu_machine(32), gib, 500), Options()).level)
        for gib in (4, 8, 12, 16, 24, 48, 96)
    ]
    assert levels == sorted(levels, reverse=True)


@pytest.mark.parametrize(
    ("gpu", "quant", "refused"),
    [
        # vLLM v0.30.0: FP8 natively from 8.9, weight-only through Marlin from 7.5; AWQ from 7.5.
        ("RTX 3090", "FP8", None),
        ("T4", "FP8", None),
        ("T4", "AWQ_4BIT", None),
        ("Tesla V100", "FP8", "FP8 weights need vLLM (FP8) on an NVIDIA GPU of compute capability 7.5 or newer; Tesla V100-PCIE-16GB is 7.0"),
        ("Tesla P40", "AWQ_4BIT", "AWQ_4BIT weights need vLLM (AWQ) on an NVIDIA GPU of compute capability 7.5 or newer; Tesla P40 is 6.1"),
        # ROCm: FP8 on CDNA 3/4 and RDNA4, not on MI200 (no FP8 instructions), RDNA3 or Strix Halo's RDNA 3.5.
        ("MI300X", "FP8", None),
        ("MI250X", "FP8", "FP8 weights need vLLM (FP8) on an AMD CDNA 3/4 (gfx94x, gfx95x) or RDNA4 (gfx12) GPU; AMD Instinct MI250X is gfx90a"),
        ("RX 9070 XT", "FP8", None),
        ("7900 XTX", "FP8", "FP8 weights need vLLM (FP8) on an AMD CDNA 3/4 (gfx94x, gfx95x) or RDNA4 (gfx12) GPU; AMD Radeon RX 7900 XTX is gfx1100"),
        ("Radeon 8060S", "FP8", "FP8 weights need vLLM (FP8) on an AMD CDNA 3/4 (gfx94x, gfx95x) or RDNA4 (gfx12) GPU; AMD Radeon 8060S is gfx1151"),
    ],
)
def test_vllm_formats_are_offered_only_on_the_gpus_vllm_loads_them_on(gpu, quant, refused):
    from gpuready.whatif import compose

    hardware, _ = compose(cpu_machine(64), [], gpu=gpu)
    model = CATALOG.get("qwen2.5-1.5b" if quant == "AWQ_4BIT" else "llama-3.1-8b")  # a model that lists the format
    assert quant in model.quants
    verdict = judge_model(model, CATALOG, hardware, Options(quant=quant))
    offered = {v.quant for v in judge_model(model, CATALOG, hardware, Options()).variants}
    if refused is None:
        assert verdict.level != "does-not-fit" and verdict.placement == "gpu" and quant in offered
    else:
        assert verdict.level == "does-not-fit" and verdict.reasons[-1] == refused
        assert quant not in offered


def test_on_a_cpu_text_to_speech_is_judged_at_the_fp32_its_runtime_runs():
    # hexgrad's Kokoro weights are fp32 and PyTorch runs them so on a CPU: fp16 there is refused, fp32 chosen.
    verdict = judge_model(CATALOG.get("kokoro-82m"), CATALOG, cpu_machine(32), Options())
    assert (verdict.quant, verdict.placement, verdict.runtime) == ("fp32", "cpu", "PyTorch (CPU)")
    fp16 = judge_model(CATALOG.get("kokoro-82m"), CATALOG, cpu_machine(32), Options(quant="fp16"))
    assert fp16.level == "does-not-fit" and fp16.reasons[-1] == (
        "fp16 Kokoro 82M runs on a GPU; on the CPU PyTorch (CPU) runs its fp32 weights")
    # on a GPU fp16 stays (half the memory, same output)
    on_gpu = judge_model(CATALOG.get("kokoro-82m"), CATALOG, with_test_gpu(cpu_machine(32), 8, 448), Options())
    assert (on_gpu.quant, on_gpu.placement) == ("fp16", "gpu")


def test_fp16_image_generation_on_a_cpu_names_the_runtime_that_runs_it():
    # diffusers refuses fp16 pipelines on a CPU; stable-diffusion.cpp runs fp16 weights there.
    verdict = judge_model(CATALOG.get("sdxl-turbo"), CATALOG, cpu_machine(32), Options(quant="fp16"))
    assert (verdict.placement, verdict.runtime) == ("cpu", "stable-diffusion.cpp (CPU)")
    fp32 = judge_model(CATALOG.get("sdxl-turbo"), CATALOG, cpu_machine(32), Options(quant="fp32"))
    assert fp32.runtime == "diffusers (CPU) or stable-diffusion.cpp"


def test_without_a_gpu_text_to_speech_is_not_judged_at_fp16_at_all():
    # Not offered rather than refused: a refused fp16 would outrank an 'unknown' fp32 and put
    # "fp16 runs on a GPU" in the summary of a machine whose memory could not be read.
    unknown_memory = dataclasses.replace(cpu_machine(32), memory=Memory(total_bytes=None, available_bytes=None))
    verdict = judge_model(CATALOG.get("f5-tts"), CATALOG, unknown_memory, Options())
    assert [v.quant for v in verdict.variants] == ["fp32"]
    assert verdict.level == "unknown" and "fp16" not in " ".join(verdict.reasons)


def test_fp16_is_left_out_on_a_cpu_only_where_fp32_exists_and_nobody_asked_for_it():
    from gpuready.tasks.base import without_cpu_fp16

    listed = ["fp32", "fp16", "int8"]
    assert without_cpu_fp16(listed, None, Options()) == ["fp32", "int8"]
    assert without_cpu_fp16(listed, None, Options(quant="fp16")) == listed  # asked for: judged, and refused where so
    assert without_cpu_fp16(listed, object(), Options()) == listed          # a GPU may run it
    assert without_cpu_fp16(["fp16"], None, Options()) == ["fp16"]           # nothing else to run
    embed = judge_model(CATALOG.get("all-minilm-l6-v2"), CATALOG, cpu_machine(32), Options())
    assert embed.quant == "fp32" and "fp16" not in {v.quant for v in embed.variants}


def _unread_gpu(hardware, name="NVIDIA GeForce RTX 4090"):
    """The machine plus a discrete NVIDIA GPU whose memory no probe could read (NVML broken, no table size)."""
    gpu = GPU(vendor="nvidia", name=name, memory_total_bytes=None, memory_free_bytes=None, memory_usable_bytes=None,
              bandwidth_bytes_per_s=int(1008e9), bandwidth_source="user", fp16_flops=165e12, flops_source="user",
              backends=("cuda",), source="user")
    return dataclasses.replace(hardware, gpus=hardware.gpus + (gpu,))


def test_a_gpu_only_format_on_a_gpu_whose_memory_is_unread_is_unknown_not_does_not_fit():
    hardware = _unread_gpu(cpu_machine(64))
    awq = judge_model(CATALOG.get("qwen2.5-1.5b"), CATALOG, hardware, Options(quant="AWQ_4BIT"))
    assert awq.level == "unknown" and awq.placement is None
    assert awq.reasons[-1] == ("AWQ_4BIT runs only on the GPU, and NVIDIA GeForce RTX 4090's free memory could not "
                               "be read, so whether it fits is unknown")
    # With its memory read, the same GPU runs it: the unknown was the memory, nothing else.
    read = with_test_gpu(cpu_machine(64), 24, 1008, name="NVIDIA GeForce RTX 4090")
    assert judge_model(CATALOG.get("qwen2.5-1.5b"), CATALOG, read, Options(quant="AWQ_4BIT")).placement == "gpu"
    # A format no runtime here loads stays refused whatever the memory: MLX needs Apple Silicon.
    mlx = judge_model(CATALOG.get("llama-3.1-8b"), CATALOG, hardware, Options(quant="MLX_4BIT"))
    assert mlx.level == "does-not-fit" and "MLX" in mlx.reasons[-1]


def test_a_shared_memory_gpu_without_system_memory_is_not_judged_on_its_table_size():
    # The recorded Jetson AGX Orin has no /proc/meminfo: the table's 64 GB is the whole pool, not what is free,
    # so gpt-oss-120b (59 GB) is unknown there, not "runs well".
    from pathlib import Path

    from gpuready.host import ReplayHost
    from gpuready.probes import probe_hardware

    hardware, problems = probe_hardware(ReplayHost(Path(__file__).parent / "fixtures" / "machines" / "nvidia-jetson-agx-orin-l4t"))
    assert hardware.memory.usable_bytes is None
    report = build_report(hardware, problems, CATALOG, Options())
    assert report.verdict("gpt-oss-120b", "text-generation").level == "unknown"
    text = next(s for s in report.tasks if s.task == "text-generation")
    assert text.status == "unknown"
    assert text.summary == "system memory could not be read, so fit is unknown"


def test_a_task_with_no_usable_model_says_which_fit_but_are_too_slow_not_only_what_the_smallest_needs():
    # A 4-core i5-8250U laptop with 5.0 GB free: Stable Diffusion 1.5 (2.4 GB) fits but makes an image in minutes;
    # "the smallest needs 2.4 GB" read as if it did not fit.
    from pathlib import Path

    from gpuready.host import ReplayHost
    from gpuready.probes import probe_hardware

    hardware, problems = probe_hardware(ReplayHost(Path(__file__).parent / "fixtures" / "machines" / "intel-uhd620-laptop"))
    report = build_report(hardware, problems, CATALOG, Options())
    images = next(s for s in report.tasks if s.task == "image-generation")
    sd15 = report.verdict("sd-1.5", "image-generation")
    assert images.status == "not-possible" and sd15.level == "too-slow"
    assert images.summary == (f"no model in the catalogue is usable here: 1 fits but is too slow (Stable Diffusion 1.5, "
                              f"{sd15.reasons[0]}); the rest need more memory, the smallest 5.2 GB (5.0 GB available)")
    finetune = next(s for s in report.tasks if s.task == "fine-tuning")
    assert finetune.summary == "no model in the catalogue is usable here: the smallest needs 5.5 GB (5.0 GB available)"


def test_a_variant_no_runtime_here_runs_ranks_below_one_whose_fit_is_unknown():
    # The garbled recording has no GPU and no readable memory: every fine-tuning model's lora is unknown, its qlora
    # needs bitsandbytes on a CUDA/ROCm GPU. "Could not tell" is the answer, not "qlora needs bitsandbytes".
    from pathlib import Path

    from gpuready.host import ReplayHost
    from gpuready.probes import probe_hardware

    hardware, problems = probe_hardware(ReplayHost(Path(__file__).parent / "fixtures" / "machines" / "linux-garbled-proc"))
    report = build_report(hardware, problems, CATALOG, Options())
    tuning = [v for v in report.verdicts if v.task == "fine-tuning"]
    assert {(v.level, v.quant, v.supported) for v in tuning} == {("unknown", "lora", True)}
    summary = next(s for s in report.tasks if s.task == "fine-tuning")
    assert (summary.status, summary.summary) == ("unknown", "system memory could not be read, so fit is unknown")
    # Asked for, qlora is judged and said to be unsupported, with nothing to buy that would change it.
    qlora = judge_model(CATALOG.get("qwen2.5-0.5b"), CATALOG, hardware, Options(method="qlora"), "fine-tuning")
    assert (qlora.level, qlora.supported) == ("does-not-fit", False)


def test_a_gpu_newer_than_the_table_gets_a_problem_and_could_not_tell_not_not_possible():
    # A GPU no table row knows and no probe read the bandwidth of (an Apple M5 before the table had it): its models
    # fit, their speed is unknown. The tasks said "not possible: the smallest needs 0.8 GB" because the 235B model's
    # "does not fit" ranked above the small models' "unknown".
    from gpuready.catalog.tables import enrich
    from gpuready.probes import unknown_gpu_problems

    future = GPU(vendor="nvidia", name="NVIDIA GeForce RTX 9090", memory_total_bytes=24 * 1024**3,
                 memory_free_bytes=24 * 1024**3, memory_usable_bytes=24 * 1024**3, backends=("cuda",), source="nvml")
    hardware = enrich(dataclasses.replace(cpu_machine(64), gpus=(future,)))
    problems = unknown_gpu_problems(hardware)
    assert [(p.probe, p.severity, p.message) for p in problems] == [
        ("nvidia", "warning", "NVIDIA GeForce RTX 9090 is not in gpuready's GPU table and its memory bandwidth could "
                              "not be read: speeds on it are not estimated")]
    assert "gpuready bench" in problems[0].hint
    report = build_report(hardware, problems, CATALOG, Options())
    text = next(s for s in report.tasks if s.task == "text-generation")
    assert (text.status, text.summary) == ("unknown", "memory bandwidth unknown: speed not estimated")
    assert report.verdict("qwen2.5-0.5b", "text-generation").placement is None
    # A GPU the table knows gets no such problem: its bandwidth comes from the table.
    known = enrich(dataclasses.replace(cpu_machine(64), gpus=(dataclasses.replace(future, name="NVIDIA GeForce RTX 4090"),)))
    assert known.gpus[0].bandwidth_bytes_per_s == 1008 * 10**9 and unknown_gpu_problems(known) == []


def test_every_placement_has_words_and_every_front_end_uses_them(capsys):
    from gpuready.frontends.cli import main
    from gpuready.tasks.verdict import PLACEMENT_ORDER, PLACEMENT_WORDS
    assert tuple(PLACEMENT_WORDS) == PLACEMENT_ORDER  # a placement added later must get its words
    machine = "tests/fixtures/machines/nvidia-rtx4090"
    assert main(["check", "--machine", machine, "--model", "llama-3.1-70b"]) == 0  # split over the 4090 and the CPU
    line = capsys.readouterr().out
    assert " on GPU+CPU via " in line and "SPLIT" not in line
    assert main(["report", "--machine", machine, "--task", "text-generation"]) == 0
    table = capsys.readouterr().out
    assert "GPU+CPU" in table and "SPLIT" not in table


def test_large_speeds_in_the_text_tables_have_thousands_separators(capsys):
    import re

    from gpuready.frontends.cli import main
    assert main(["report", "--machine", "tests/fixtures/machines/nvidia-h200", "--task", "text-generation"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if re.search(r"\bGPU\b", line)]
    numbers = [cell for line in rows for cell in re.findall(r"(?<![\d.,])\d[\d,]*(?![\d.,]|\s*GB)", line.split("GPU", 1)[1])]
    assert numbers and any(int(n.replace(",", "")) >= 1000 for n in numbers)  # the H200's prompt speeds
    assert all(re.fullmatch(r"\d{1,3}(,\d{3})*", n) for n in numbers), numbers  # 16,372, never 16372


def test_a_variant_leaving_under_a_gib_of_system_memory_free_goes_after_one_that_leaves_room():
    # Phi-3.5 mini on the Raspberry Pi 5 was Q8_0 at "7.1 GB (available: 7.1 GB)", as good as a variant with room to
    # spare; it now carries a reason and comes after the variants at its level that leave llama.cpp's 1 GiB margin.
    from pathlib import Path

    from gpuready.host import ReplayHost
    from gpuready.probes import probe_hardware
    from gpuready.tasks.devices import UNIFIED_MEMORY_MARGIN_BYTES

    hardware, _ = probe_hardware(ReplayHost(Path(__file__).parent / "fixtures" / "machines" / "linux-raspberry-pi-5"))
    catalog = load_catalog()
    verdict = judge_model(catalog.get("phi-3.5-mini"), catalog, hardware, Options())
    assert verdict.placement == "cpu" and verdict.quant != "Q8_0"
    assert hardware.memory.usable_bytes - verdict.estimate.system_memory_bytes >= UNIFIED_MEMORY_MARGIN_BYTES
    q8 = judge_model(catalog.get("phi-3.5-mini"), catalog, hardware, Options(quant="Q8_0"))
    assert any(r.startswith("it leaves 0.") and "llama.cpp's --fit keeps free on every device" in r for r in q8.reasons)
