"""A model too big for the GPU, placed as llama.cpp places it: a mixture of experts keeps every layer on the GPU and
moves the routed experts of some layers to system memory (--fit, --n-cpu-moe); a prompt's products of weights in
system memory run on the GPU, the weights copied over PCIe once per micro-batch (op offload). Every figure by hand."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from replay_support import replayed_hardware, with_pcie_link

from gpuready.frontends.cli import main
from gpuready.frontends.tui import format as fmt
from gpuready.hardware import pcie_words
from gpuready.tasks import concurrency, devices
from gpuready.tasks import text_estimate as est
from gpuready.tasks.registry import judge_model, load_catalog
from gpuready.tasks.verdict import Options

FIXTURES = Path(__file__).parent / "fixtures" / "machines"
CATALOG = load_catalog()
LLAMA = CATALOG.get("llama-3.1-8b")
# A mixture of experts by hand: 10 layers, 8 experts of 1B parameters in all (0.1B a layer), 2 a token, 2B shared:
# 10B in all, 4B active. A 5 GB file: 0.5 bytes a parameter, so the experts hold 4 GB (0.4 GB a layer).
TOY = replace(LLAMA, id="toy-moe", name="Toy MoE", params=10e9, active_params=4e9, layers=10, experts=8,
              experts_per_token=2, tied_embeddings=None)
WEIGHTS = 5 * 10**9
MEMORY = est.MemoryBreakdown(WEIGHTS, 200_000_000, 100_000_000, 200_000_000)  # 5.5 GB in all, 1.5 GB not experts
# 3 GB free for the model once llama.cpp's --fit margin (1 GiB) is kept.
GPU = devices.Device(kind="gpu", name="Toy GPU", backend="cuda", usable_memory_bytes=3 * 10**9 + devices.FIT_MARGIN_BYTES,
                     bandwidth_bytes_per_s=1e12, flops=100e12)
CPU = devices.Device(kind="cpu", name="Toy CPU", backend="cpu", usable_memory_bytes=64 * 10**9,
                     bandwidth_bytes_per_s=1e11, flops=1e12)
UNPACK = est.UNPACK_OPS_PER_WEIGHT["k-quant"]


def test_the_experts_that_do_not_fit_go_to_system_memory_a_layer_at_a_time():
    # 3.0 GB on the GPU, 1.5 GB of it for what is not an expert: 1.5 GB left holds 3 layers' experts (0.4 GB each).
    on_cpu, gpu_part, system_part = est.expert_split(TOY, MEMORY, GPU, 64 * 10**9)
    assert on_cpu == 7
    assert gpu_part == 1_500_000_000 + 3 * 400_000_000
    assert system_part == 7 * 400_000_000 + devices.RUNTIME_OVERHEAD_BYTES["cpu"]


def test_no_expert_split_for_a_dense_model_a_dense_part_too_big_or_too_little_system_memory():
    assert est.expert_split(LLAMA, MEMORY, GPU, None) is None
    assert est.expert_split(TOY, MEMORY, replace(GPU, usable_memory_bytes=1_400_000_000 + devices.FIT_MARGIN_BYTES), None) is None
    # The margin is kept: 1.5 GB free is room for the dense part alone, and a layer's experts short of it.
    assert est.expert_split(TOY, MEMORY, replace(GPU, usable_memory_bytes=1_500_000_000 + devices.FIT_MARGIN_BYTES), None)[0] == 10
    assert est.expert_split(TOY, MEMORY, GPU, 2 * 10**9) is None  # the 2.8 GB of experts left over do not fit
    assert est.expert_split(replace(TOY, experts=None), MEMORY, GPU, None) is None  # expert counts unknown


def test_each_device_does_its_share_of_a_token():
    # A token reads 4B parameters, 2B of them routed experts: the CPU reads 7 of 10 layers' routed experts.
    gpu, cpu = est.device_shares(TOY, 1.0, 7)
    assert cpu == est.Share(weights=pytest.approx(0.5 * 7 / 10), kv=0.0, layers=7)
    assert gpu == est.Share(weights=pytest.approx(1 - 0.35), kv=1.0, layers=10)
    # Layers split: each device its fraction of everything.
    assert est.device_shares(TOY, 0.25) == (est.Share(0.25, 0.25, 2.5), est.Share(0.75, 0.75, 7.5))


def test_an_expert_split_token_is_the_gpus_part_plus_the_cpus_part():
    speed = est.speed(TOY, MEMORY, 0, GPU, CPU, 1.0, "Q4_K_M", 7)
    read = WEIGHTS * 4 / 10  # 2 GB a token
    factor = est.MOE_LAYER_FACTOR
    gpu_s = (0.65 * read / (1e12 * est.BANDWIDTH_EFFICIENCY["cuda"]) + 10 * factor * est.LAYER_SECONDS["cuda"]
             + 0.65 * 4e9 * UNPACK / 100e12)
    cpu_s = (0.35 * read / (1e11 * est.BANDWIDTH_EFFICIENCY["cpu"]) + 7 * factor * est.LAYER_SECONDS["cpu"]
             + 0.35 * 4e9 * UNPACK / 1e12)
    assert speed.generation_tokens_per_s == pytest.approx(1 / (gpu_s + cpu_s))


def test_the_kv_cache_stays_on_the_gpu_when_only_experts_move():
    memory = replace(MEMORY, kv_cache_bytes=10**9)
    full = est.speed(TOY, memory, 8192, GPU, CPU, 1.0, "Q4_K_M", 7)
    empty = est.speed(TOY, memory, 8192, GPU, CPU, 1.0, "Q4_K_M", 7)
    extra = 1 / full.generation_tokens_per_s_full_context - 1 / empty.generation_tokens_per_s
    # The whole cache is read on the GPU, at 1 / (1 + k) of its weights' rate.
    assert extra == pytest.approx(10**9 * (1 + est.KV_READ_EXTRA) / (1e12 * est.BANDWIDTH_EFFICIENCY["cuda"]))


def test_a_split_prompt_runs_on_the_gpu_plus_copying_the_system_memory_weights_once_a_micro_batch():
    speed = est.speed(TOY, MEMORY, 0, GPU, CPU, 1.0, "Q4_K_M", 7)
    used = 1 - (1 - 2 / 8) ** est.UBATCH_TOKENS  # practically every expert, at 512 tokens
    copied = 8e9 * 0.5 * 7 / 10 * used  # 2.8 GB of experts
    expected = est._prompt_seconds_per_token(TOY, GPU) + copied / devices.HOST_TO_GPU_BYTES_PER_S / est.UBATCH_TOKENS
    assert 1 / speed.prompt_tokens_per_s == pytest.approx(expected)
    # Layers split: the prompt's matrix weights of the CPU's layers are copied.
    layers = est.speed(LLAMA, MEMORY, 0, GPU, CPU, 0.25, "Q4_K_M")
    copied = est.prompt_params(LLAMA) * WEIGHTS / LLAMA.params * 0.75
    expected = est._prompt_seconds_per_token(LLAMA, GPU) + copied / devices.HOST_TO_GPU_BYTES_PER_S / est.UBATCH_TOKENS
    assert 1 / layers.prompt_tokens_per_s == pytest.approx(expected)


@pytest.mark.parametrize("backend", ["metal", "cpu"])
def test_where_the_gpu_backend_does_not_offload_each_device_computes_its_own_part_of_the_prompt(backend):
    gpu = replace(GPU, backend=backend)
    speed = est.speed(LLAMA, MEMORY, 0, gpu, CPU, 0.25, "Q4_K_M")
    expected = (0.25 * est._prompt_seconds_per_token(LLAMA, gpu) + 0.75 * est._prompt_seconds_per_token(LLAMA, CPU))
    assert 1 / speed.prompt_tokens_per_s == pytest.approx(expected)
    assert est.host_prompt_seconds(LLAMA, WEIGHTS, gpu, 0.75) is None


def test_all_on_one_device_copies_nothing():
    assert est.host_prompt_seconds(LLAMA, WEIGHTS, GPU, 0.0) is None
    whole = est.speed(LLAMA, MEMORY, 0, GPU, CPU, 1.0, "Q4_K_M")
    assert 1 / whole.prompt_tokens_per_s == pytest.approx(est._prompt_seconds_per_token(LLAMA, GPU))


def test_more_experts_in_system_memory_never_speed_a_token_up():
    speeds = [est.speed(TOY, MEMORY, 0, GPU, CPU, 1.0, "Q4_K_M", n) for n in range(1, 11)]
    generation = [s.generation_tokens_per_s for s in speeds]
    prompt = [s.prompt_tokens_per_s for s in speeds]
    assert generation == sorted(generation, reverse=True) and prompt == sorted(prompt, reverse=True)


@pytest.mark.parametrize("model_id", ["gpt-oss-120b", "qwen3-30b-a3b", "mixtral-8x7b", "qwen3-235b-a22b"])
def test_more_gpu_memory_never_slows_a_mixture_of_experts(model_id):
    model = CATALOG.get(model_id)
    quant = CATALOG.quants["Q4_K_M" if "Q4_K_M" in model.quants else model.quants[0]]
    found = [est.estimate(model, quant, 8192, replace(GPU, usable_memory_bytes=gib * 2**30), CPU, 512 * 2**30)
             for gib in (4, 8, 12, 16, 24, 32, 48, 80, 160)]
    generation = [f.speed.generation_tokens_per_s for f in found]
    prompt = [f.speed.prompt_tokens_per_s for f in found]
    assert generation == sorted(generation) and prompt == sorted(prompt)
    assert any(f.cpu_expert_layers for f in found)  # the sweep goes through expert splits


def test_several_users_of_an_expert_split_read_their_experts_on_the_cpu():
    one = concurrency.batched(TOY, WEIGHTS, 0, 1, GPU, CPU, 1.0, "Q4_K_M", 7)
    single = est.speed(TOY, est.MemoryBreakdown(WEIGHTS, 0, 0, 0), 0, GPU, CPU, 1.0, "Q4_K_M", 7)
    assert one.per_user_tokens_per_s == pytest.approx(single.generation_tokens_per_s)
    # Eight users read 1 - (6/8)^8 of the experts: the CPU's share of the step grows with them.
    params = concurrency.step_params_read(TOY, 8)
    gpu, cpu = est.device_shares(TOY, 1.0, 7, params)
    assert cpu.weights == pytest.approx((params - 2e9) / params * 7 / 10)
    assert gpu.weights == pytest.approx(1 - cpu.weights)


def test_on_a_cpu_a_family_no_cpu_row_measured_unpacks_at_the_k_quants_cost():
    assert est.device_unpack_ops("mxfp4", CPU) == est.UNPACK_OPS_PER_WEIGHT["k-quant"]
    assert est.device_unpack_ops("mxfp4", GPU) == est.UNPACK_OPS_PER_WEIGHT["mxfp4"]
    for family in est.CPU_UNPACK_FAMILIES:
        assert est.device_unpack_ops(family, CPU) == est.unpack_ops_per_weight(family)


def test_the_cpu_unpacking_families_are_those_of_the_cpu_validation_rows():
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
    import score_estimator

    rows = score_estimator.load("text-generation")
    families = {est.quant_family(row["quant"].split(" (")[0]) for row in rows
                if row.get("gpu_hint") == "cpu" and row["test"].startswith("tg")}
    assert families == set(est.CPU_UNPACK_FAMILIES)


def test_gpt_oss_120b_on_a_24_gb_card_keeps_its_layers_there_and_says_where_the_experts_are(capsys):
    verdict = judge_model(CATALOG.get("gpt-oss-120b"), CATALOG, replayed_hardware(FIXTURES / "nvidia-rtx4090"), Options())
    estimate = verdict.estimate
    assert estimate.placement == "split" and estimate.gpu_fraction == 1.0 and estimate.layers == 36
    assert 0 < estimate.cpu_expert_layers < 36
    words = f"all 36 layers on GPU, the experts of {estimate.cpu_expert_layers} in system memory"
    assert estimate.split_words == words
    assert any(reason.endswith(f"free: {words}") for reason in verdict.reasons)
    # The table's cell gives the share of the model's bytes on the GPU, not 100% of its layers.
    share = estimate.gpu_memory_bytes / (estimate.gpu_memory_bytes + estimate.system_memory_bytes)
    assert fmt.placement_cell(verdict) == f"GPU+CPU {share:.0%}" and share < 0.5
    assert main(["--machine", str(FIXTURES / "nvidia-rtx4090"), "estimate", "gpt-oss-120b"]) == 0
    out = capsys.readouterr().out
    assert f"placement split ({words})" in out
    assert "copied to it for every 512-token micro-batch at 12.9 GB/s" in out
    assert "3.6 operations a weight to unpack mxfp4 weights (the K-quants' cost: no measured CPU rows" in out


def test_the_json_carries_the_layers_and_the_expert_layers_in_system_memory(capsys):
    assert main(["--machine", str(FIXTURES / "nvidia-rtx4090"), "report", "--json"]) == 0
    verdicts = {v["model_id"]: v for v in json.loads(capsys.readouterr().out)["verdicts"] if v["task"] == "text-generation"}
    oss = verdicts["gpt-oss-120b"]["estimate"]
    assert oss["layers"] == 36 and oss["gpu_fraction"] == 1.0 and 0 < oss["cpu_expert_layers"] < 36
    dense = verdicts["llama-3.1-70b"]["estimate"]
    assert dense["placement"] == "split" and dense["cpu_expert_layers"] == 0 and 0 < dense["gpu_fraction"] < 1


@pytest.mark.parametrize(("gt_s", "width", "expected"), [
    (16.0, 16, 16e9 * 16 * 128 / 130 / 8),  # PCIe 4.0 x16: 31.5 GB/s
    (8.0, 8, 8e9 * 8 * 128 / 130 / 8),  # PCIe 3.0 x8: 7.9 GB/s
    (5.0, 16, 5e9 * 16 * 0.8 / 8),  # PCIe 2.0 x16, 8b/10b: 8 GB/s
    (64.0, 16, 64e9 * 16 * 242 / 256 / 8),  # PCIe 6.0 x16, FLIT
])
def test_a_pcie_links_bytes_a_second(gt_s, width, expected):
    assert devices.link_bytes_per_s(gt_s, width) == pytest.approx(expected)


def test_copies_run_at_the_pageable_rate_unless_the_link_the_driver_reports_is_slower():
    assert devices.host_copy_bytes_per_s(GPU) == devices.HOST_TO_GPU_BYTES_PER_S  # link not reported: PCIe 4.0 x16 assumed
    assert devices.host_copy_bytes_per_s(replace(GPU, pcie_link_gt_s=16.0, pcie_link_width=16)) == devices.HOST_TO_GPU_BYTES_PER_S
    assert devices.host_copy_bytes_per_s(replace(GPU, pcie_link_gt_s=32.0, pcie_link_width=16)) == devices.HOST_TO_GPU_BYTES_PER_S
    x8 = replace(GPU, pcie_link_gt_s=8.0, pcie_link_width=8)  # a PCIe 3.0 board, an x8 slot
    assert devices.host_copy_bytes_per_s(x8) == pytest.approx(8e9 * 8 * 128 / 130 / 8 * 23.85 / 31.5)
    slow = est.speed(TOY, MEMORY, 0, x8, CPU, 1.0, "Q4_K_M", 7)
    fast = est.speed(TOY, MEMORY, 0, GPU, CPU, 1.0, "Q4_K_M", 7)
    assert slow.prompt_tokens_per_s < fast.prompt_tokens_per_s
    assert slow.generation_tokens_per_s == fast.generation_tokens_per_s  # a token's weights never cross the link


def test_a_recorded_pcie_3_x8_link_slows_a_split_prompt_and_is_named_in_the_basis(tmp_path, capsys):
    recording = with_pcie_link(FIXTURES / "nvidia-rtx4090", tmp_path / "rtx4090-on-pcie3-x8", 3, 8)
    hardware = replayed_hardware(recording)
    assert (hardware.gpus[0].pcie_link_gt_s, hardware.gpus[0].pcie_link_width, hardware.gpus[0].pcie_link_source) == (8.0, 8, "nvml")
    slow = judge_model(CATALOG.get("gpt-oss-120b"), CATALOG, hardware, Options()).estimate
    fast = judge_model(CATALOG.get("gpt-oss-120b"), CATALOG, replayed_hardware(FIXTURES / "nvidia-rtx4090"), Options()).estimate
    assert slow.speed.prompt_tokens_per_s < 0.6 * fast.speed.prompt_tokens_per_s
    assert slow.speed.generation_tokens_per_s == fast.speed.generation_tokens_per_s
    assert any("at 6.0 GB/s (the most its PCIe 3.0 x8 link as the driver reports it allows;" in line
               for line in slow.basis)
    assert any("at 12.9 GB/s (pageable memory over a PCIe 4.0 x16 link, assumed: the driver did not report the link;"
               in line for line in fast.basis)
    assert main(["--machine", str(recording), "report", "--json"]) == 0
    gpu = json.loads(capsys.readouterr().out)["hardware"]["gpus"][0]
    assert (gpu["pcie_link_gt_s"], gpu["pcie_link_width"], gpu["pcie_link_source"]) == (8.0, 8, "nvml")


def test_a_whole_gpu_fit_inside_llama_cpps_margin_says_how_to_keep_it_there():
    hardware = replayed_hardware(FIXTURES / "nvidia-rtx4090")
    tight = judge_model(CATALOG.get("qwen3-30b-a3b"), CATALOG, hardware, Options(quant="Q5_K_M"))
    spare = tight.estimate and (tight.memory_available_bytes - tight.estimate.gpu_memory_bytes)
    assert tight.placement == "gpu" and 0 < spare < devices.FIT_MARGIN_BYTES
    fits = [reason for reason in tight.reasons if reason.startswith("fits in")]
    assert fits and fits[0].endswith("pass -ngl 99 (or --fit off) to keep it all on the GPU")
    roomy = judge_model(CATALOG.get("llama-3.1-8b"), CATALOG, hardware, Options(quant="Q4_K_M"))
    assert [reason for reason in roomy.reasons if reason.startswith("fits in") and "--fit" not in reason]
    assert not replace(tight.estimate, quant="AWQ-4bit").placed_by_llama_cpp  # vLLM's weights: no --fit


def test_a_prompt_the_gpu_computes_alone_carries_the_gpus_band_not_the_cpus():
    offloaded = est.speed(LLAMA, MEMORY, 0, GPU, CPU, 0.25, "Q4_K_M")
    assert offloaded.prompt_uncertainty == pytest.approx(est.PROMPT_BAND["cuda"] * est.PROMPT_FAMILY_BAND["k-quant"])
    # Where each device computes its own part (no op offload), the wider of the two bands.
    metal = est.speed(LLAMA, MEMORY, 0, replace(GPU, backend="metal"), CPU, 0.25, "Q4_K_M")
    assert metal.prompt_uncertainty == pytest.approx(max(est.PROMPT_BAND["metal"], est.PROMPT_BAND["cpu"])
                                                     * est.PROMPT_FAMILY_BAND["k-quant"])


def test_a_files_own_expert_bytes_decide_how_many_layers_experts_fit():
    # The same toy, its experts stored in 3.5 of its 5 GB (fewer bits than the rest): the dense part is 2.0 GB with the
    # cache and buffers, leaving 1.0 GB for 0.35 GB a layer's experts: 2 layers' on the GPU, 8 in system memory.
    stored = replace(TOY, expert_bytes=3.5e9)
    on_cpu, gpu_part, system_part = est.expert_split(stored, MEMORY, GPU, 64 * 10**9)
    assert (on_cpu, gpu_part) == (8, int(2_000_000_000 + 2 * 350_000_000))
    assert system_part == int(8 * 350_000_000) + devices.RUNTIME_OVERHEAD_BYTES["cpu"]
    used = 1 - (1 - 2 / 8) ** est.UBATCH_TOKENS
    assert est.host_weight_copy_bytes(stored, WEIGHTS, 1.0, 8) == pytest.approx(3.5e9 * used * 8 / 10)
    assert est.expert_file_bytes(TOY, WEIGHTS) == pytest.approx(4e9)  # not read from a file: the parameters' share


def test_the_text_summary_names_the_pcie_link_the_driver_reported(tmp_path, capsys):
    recording = with_pcie_link(FIXTURES / "nvidia-rtx4090", tmp_path / "rtx4090-on-x8", 4, 8)
    assert main(["--machine", str(recording), "report", "--task", "speech"]) == 0
    gpu_line = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("GPUs"))
    assert "NVIDIA GeForce RTX 4090" in gpu_line and " · PCIe 4.0 x8 · driver 550.54.14" in gpu_line
    assert main(["--machine", str(FIXTURES / "nvidia-rtx4090"), "report", "--task", "speech"]) == 0
    assert "PCIe" not in next(line for line in capsys.readouterr().out.splitlines() if line.startswith("GPUs"))
    assert pcie_words(32.0, 16) == "PCIe 5.0 x16" and pcie_words(None, 16) is None
