"""Recorded machines with GPUs: each probe's whole GPU list, and a full report on every one of them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuready.tasks.registry import load_catalog
from gpuready.tasks.devices import gpu_device
from gpuready.hardware import GPU, Problem
from gpuready.host import ReplayHost
from gpuready.probes import probe_hardware
from gpuready.report import build_report, report_json
from gpuready.tasks.registry import judge_model
from gpuready.tasks.verdict import Options

MACHINES = Path(__file__).parent / "fixtures" / "machines"

EXPECTED_GPUS = {
    "amd-780m-plus-7900xtx": (
        GPU('amd', 'AMD Radeon 780M Graphics', kind='integrated', index=1, memory_total_bytes=17072533504, memory_free_bytes=16931278848, memory_usable_bytes=16931278848, memory_carveout_free_bytes=416628736, bandwidth_bytes_per_s=83200000000, bandwidth_source='system memory, table:amd-ryzen-8000g-desktop; table:radeon-780m lists 120 GB/s', fp16_flops=16600000000000.002, flops_source='table:radeon-780m', architecture='RDNA 3', gfx_target='gfx1103', driver='amdgpu', pci_id='1002:15bf', table_id='radeon-780m', backends=('rocm', 'vulkan'), source='sysfs+kfd'),
        GPU('amd', 'AMD Radeon RX 7900 XTX', index=0, memory_total_bytes=25753026560, memory_free_bytes=24570679296, memory_usable_bytes=24570679296, bandwidth_bytes_per_s=960000000000, bandwidth_source='table:rx-7900-xtx', fp16_flops=122800000000000.0, flops_source='table:rx-7900-xtx', architecture='RDNA 3', gfx_target='gfx1100', driver='amdgpu', pci_id='1002:744c', table_id='rx-7900-xtx', backends=('rocm', 'vulkan'), source='sysfs+kfd'),
    ),
    "amd-rx7900xt-amd-smi": (
        GPU('amd', 'AMD Radeon RX 7900 XT', index=0, memory_total_bytes=21458059264, memory_free_bytes=21430796288, memory_usable_bytes=21430796288, bandwidth_bytes_per_s=800000000000, bandwidth_source='table:rx-7900-xt', fp16_flops=103000000000000.0, flops_source='table:rx-7900-xt', architecture='RDNA 3', gfx_target='gfx1100', driver='amdgpu', pci_id='1002:744c', table_id='rx-7900-xt', backends=('rocm', 'vulkan'), source='sysfs+kfd+amd-smi'),
    ),
    "amd-rx7900xt-rocm-smi": (
        GPU('amd', 'AMD Radeon RX 7900 XT', index=0, memory_total_bytes=21458059264, memory_free_bytes=21430202368, memory_usable_bytes=21430202368, bandwidth_bytes_per_s=800000000000, bandwidth_source='table:rx-7900-xt', fp16_flops=103000000000000.0, flops_source='table:rx-7900-xt', architecture='RDNA 3', gfx_target='gfx1100', driver='amdgpu', pci_id='1002:744c', table_id='rx-7900-xt', backends=('rocm', 'vulkan'), source='sysfs+kfd+rocm-smi'),
    ),
    "amd-rx7900xtx": (
        GPU('amd', 'AMD Radeon RX 7900 XTX', index=0, memory_total_bytes=25753026560, memory_free_bytes=24570679296, memory_usable_bytes=24570679296, bandwidth_bytes_per_s=960000000000, bandwidth_source='table:rx-7900-xtx', fp16_flops=122800000000000.0, flops_source='table:rx-7900-xtx', architecture='RDNA 3', gfx_target='gfx1100', driver='amdgpu', pci_id='1002:744c', table_id='rx-7900-xtx', backends=('rocm', 'vulkan'), source='sysfs+kfd'),
    ),
    "amd-strix-halo": (
        GPU('amd', 'AMD Radeon 8060S Graphics', kind='unified', index=0, memory_total_bytes=107374182400, memory_free_bytes=107001114624, memory_usable_bytes=107001114624, memory_carveout_free_bytes=3982143488, bandwidth_bytes_per_s=256000000000, bandwidth_source='table:radeon-8060s', fp16_flops=29700000000000.0, flops_source='table:radeon-8060s', architecture='RDNA 3.5', gfx_target='gfx1151', driver='amdgpu', pci_id='1002:1586', table_id='radeon-8060s', backends=('rocm', 'vulkan'), source='sysfs+kfd'),
    ),
    "amd-strix-halo-96g-carveout": (
        GPU('amd', 'AMD Radeon 8060S Graphics', kind='unified', index=0, memory_total_bytes=136341458944, memory_free_bytes=130497196032, memory_usable_bytes=130497196032, memory_carveout_free_bytes=103079215104, bandwidth_bytes_per_s=256000000000, bandwidth_source='table:radeon-8060s', fp16_flops=29700000000000.0, flops_source='table:radeon-8060s', architecture='RDNA 3.5', gfx_target='gfx1151', driver='amdgpu', pci_id='1002:1586', table_id='radeon-8060s', backends=('rocm', 'vulkan'), source='sysfs+kfd'),
    ),
    "intel-arc-a770-uhd770": (
        GPU('intel', 'Intel UHD Graphics 770', kind='integrated', memory_usable_bytes=28672000000, bandwidth_bytes_per_s=89600000000, bandwidth_source='system memory, table:intel-core-13-14-desktop', driver='i915', pci_id='8086:a780', backends=('sycl', 'vulkan'), source='sysfs'),
        GPU('intel', 'Intel Arc A770', memory_total_bytes=17179869184, memory_usable_bytes=17179869184, bandwidth_bytes_per_s=560000000000, bandwidth_source='table:arc-a770-16gb', fp16_flops=39300000000000.0, flops_source='table:arc-a770-16gb', architecture='Xe-HPG (Alchemist)', driver='xe', pci_id='8086:56a0', table_id='arc-a770-16gb', backends=('sycl', 'vulkan'), source='sysfs'),
    ),
    "intel-uhd620-laptop": (
        GPU('intel', 'Intel UHD Graphics 620', kind='integrated', bandwidth_bytes_per_s=38400000000, bandwidth_source='table:uhd-620', fp16_flops=800000000000.0, flops_source='table:uhd-620', architecture='Gen9.5', driver='i915', pci_id='8086:5917', table_id='uhd-620', counted=False, not_counted_reason="graphics older than Gen12 (Xe): Intel's compute runtime and llama.cpp SYCL do not support it", source='sysfs'),
    ),
    "laptop-rtx4060-iris-xe": (
        GPU('nvidia', 'NVIDIA GeForce RTX 4060 Laptop GPU', index=0, memory_total_bytes=8585740288, memory_free_bytes=8184135680, memory_usable_bytes=8184135680, bandwidth_bytes_per_s=256032000000, bandwidth_source='nvml', fp16_flops=23200000000000.0, flops_source='table:rtx-4060-laptop', architecture='Ada Lovelace', compute_capability='8.9', driver='nvidia', driver_version='550.120', pci_id='10de:28e0', cuda_version='12.4', table_id='rtx-4060-laptop', backends=('cuda',), source='nvml'),
        GPU('intel', 'Intel Iris Xe Graphics', kind='integrated', memory_usable_bytes=24576000000, bandwidth_bytes_per_s=68300000000, bandwidth_source='table:iris-xe-96eu', fp16_flops=3400000000000.0, flops_source='table:iris-xe-96eu', architecture='Xe-LP (Gen12)', driver='i915', pci_id='8086:a7a0', table_id='iris-xe-96eu', backends=('sycl', 'vulkan'), source='sysfs'),
    ),
    "nvidia-3090-a5000-cuda-visible": (
        GPU('nvidia', 'NVIDIA GeForce RTX 3090', index=0, memory_total_bytes=25769803776, memory_free_bytes=25495076864, memory_usable_bytes=25495076864, bandwidth_bytes_per_s=936096000000, bandwidth_source='nvml', fp16_flops=71200000000000.0, flops_source='table:rtx-3090', architecture='Ampere', compute_capability='8.6', driver='nvidia', driver_version='550.107.02', pci_id='10de:2204', cuda_version='12.4', table_id='rtx-3090', counted=False, not_counted_reason='not in CUDA_VISIBLE_DEVICES=1', backends=('cuda',), source='nvml'),
        GPU('nvidia', 'NVIDIA RTX A5000', index=1, memory_total_bytes=25757220864, memory_free_bytes=25748832256, memory_usable_bytes=25748832256, bandwidth_bytes_per_s=768096000000, bandwidth_source='nvml', fp16_flops=111100000000000.0, flops_source='table:rtx-a5000', architecture='Ampere', compute_capability='8.6', driver='nvidia', driver_version='550.107.02', pci_id='10de:2231', cuda_version='12.4', table_id='rtx-a5000', backends=('cuda',), source='nvml'),
    ),
    "nvidia-a100-mig": (
        GPU('nvidia', 'NVIDIA A100-SXM4-40GB MIG 3g.20gb', index=0, memory_total_bytes=21072183296, memory_free_bytes=21058551808, memory_usable_bytes=21058551808, bandwidth_bytes_per_s=771001065719, bandwidth_source='nvml x MIG memory share', fp16_flops=133714285714285.72, flops_source='table:a100-40gb x 3/7 MIG compute slices', architecture='Ampere', compute_capability='8.0', driver='nvidia', driver_version='535.161.08', pci_id='10de:20b0', cuda_version='12.2', mig_profile='3g.20gb', backends=('cuda',), source='nvml'),
        GPU('nvidia', 'NVIDIA A100-SXM4-40GB MIG 1g.5gb', index=0, memory_total_bytes=5100273664, memory_free_bytes=5093982208, memory_usable_bytes=5093982208, bandwidth_bytes_per_s=186611722912, bandwidth_source='nvml x MIG memory share', fp16_flops=44571428571428.57, flops_source='table:a100-40gb x 1/7 MIG compute slices', architecture='Ampere', compute_capability='8.0', driver='nvidia', driver_version='535.161.08', pci_id='10de:20b0', cuda_version='12.2', mig_profile='1g.5gb', backends=('cuda',), source='nvml'),
    ),
    "nvidia-a100-mig-nvidia-smi": (
        GPU('nvidia', 'NVIDIA A100 80GB PCIe MIG 3g.40gb', index=0, memory_total_bytes=40000000000, bandwidth_bytes_per_s=901054590940, bandwidth_source='table:a100-pcie-80gb x MIG memory share', fp16_flops=133714285714285.72, flops_source='table:a100-pcie-80gb x 3/7 MIG compute slices', driver='nvidia', driver_version='530.30.02', pci_id='10de:20b5', mig_profile='3g.40gb', backends=('cuda',), source='nvidia-smi -L'),
        GPU('nvidia', 'NVIDIA A100 80GB PCIe MIG 3g.40gb', index=0, memory_total_bytes=40000000000, bandwidth_bytes_per_s=901054590940, bandwidth_source='table:a100-pcie-80gb x MIG memory share', fp16_flops=133714285714285.72, flops_source='table:a100-pcie-80gb x 3/7 MIG compute slices', driver='nvidia', driver_version='530.30.02', pci_id='10de:20b5', mig_profile='3g.40gb', backends=('cuda',), source='nvidia-smi -L'),
    ),
    "nvidia-driver-not-loaded": (
        GPU('nvidia', 'NVIDIA GPU 10de:2684', pci_id='10de:2684', counted=False, not_counted_reason='the NVIDIA driver is not usable: NVML_ERROR_DRIVER_NOT_LOADED', source='sysfs'),
    ),
    "nvidia-gb10-dgx-spark": (
        GPU('nvidia', 'NVIDIA GB10', kind='unified', index=0, memory_total_bytes=130663165952, memory_free_bytes=121411960832, memory_usable_bytes=121411960832, bandwidth_bytes_per_s=273000000000, bandwidth_source='table:gb10', fp16_flops=125000000000000.0, flops_source='table:gb10', architecture='Blackwell', compute_capability='12.1', driver='nvidia', driver_version='580.173.02', cuda_version='13.0', table_id='gb10', backends=('cuda',), source='nvml+proc_meminfo'),
    ),
    "nvidia-h200": (
        GPU('nvidia', 'NVIDIA H200', index=0, memory_total_bytes=150754820096, memory_free_bytes=150109880320, memory_usable_bytes=150109880320, bandwidth_bytes_per_s=4814304000000, bandwidth_source='nvml', fp16_flops=989400000000000.0, flops_source='table:h200', architecture='Hopper', compute_capability='9.0', driver='nvidia', driver_version='580.159.04', pci_id='10de:2335', cuda_version='13.0', table_id='h200', power_limit_w=700.0, backends=('cuda',), source='nvml'),
    ),
    "nvidia-rtx4090": (
        GPU('nvidia', 'NVIDIA GeForce RTX 4090', index=0, memory_total_bytes=25756172288, memory_free_bytes=24066916352, memory_usable_bytes=24066916352, bandwidth_bytes_per_s=1008096000000, bandwidth_source='nvml', fp16_flops=165200000000000.0, flops_source='table:rtx-4090', architecture='Ada Lovelace', compute_capability='8.9', driver='nvidia', driver_version='550.54.14', pci_id='10de:2684', cuda_version='12.4', table_id='rtx-4090', backends=('cuda',), source='nvml'),
    ),
    "nvidia-wsl2": (
        GPU('nvidia', 'NVIDIA GeForce RTX 3080', index=0, memory_total_bytes=10737418240, memory_free_bytes=9484369920, memory_usable_bytes=9484369920, bandwidth_bytes_per_s=760080000000, bandwidth_source='nvml', fp16_flops=59500000000000.0, flops_source='table:rtx-3080', architecture='Ampere', compute_capability='8.6', driver='nvidia', driver_version='560.94', pci_id='10de:2206', cuda_version='12.6', table_id='rtx-3080', backends=('cuda',), source='nvml'),
    ),
    "windows-rx7800xt-uhd770": (
        GPU('amd', 'AMD Radeon RX 7800 XT', memory_total_bytes=17163091968, memory_usable_bytes=17163091968, bandwidth_bytes_per_s=624000000000, bandwidth_source='table:rx-7800-xt', fp16_flops=74700000000000.0, flops_source='table:rx-7800-xt', architecture='RDNA 3', driver_version='32.0.11037.4004', pci_id='1002:747e', table_id='rx-7800-xt', backends=('vulkan', 'directml'), source='registry'),
        GPU('intel', 'Intel(R) UHD Graphics 770', kind='integrated', memory_usable_bytes=22548578304, bandwidth_bytes_per_s=89600000000, bandwidth_source='system memory, table:intel-core-13-14-desktop', driver_version='31.0.101.5186', pci_id='8086:a780', backends=('sycl', 'vulkan'), source='registry'),
    ),
}


def probe(name: str):
    return probe_hardware(ReplayHost(MACHINES / name))


@pytest.mark.parametrize("machine", sorted(EXPECTED_GPUS))
def test_each_recorded_machine_reports_exactly_its_gpus(machine):
    hardware, _ = probe(machine)
    assert hardware.gpus == EXPECTED_GPUS[machine]


@pytest.mark.parametrize("machine", sorted(EXPECTED_GPUS))
def test_the_full_report_builds_and_serialises_on_each_recorded_machine(machine):
    hardware, problems = probe(machine)
    report = build_report(hardware, problems, load_catalog())
    data = json.loads(json.dumps(report_json(report)))
    assert data["hardware"]["gpus"] == [json.loads(json.dumps(_as_json(gpu))) for gpu in hardware.gpus]
    assert not [p for p in problems if p.severity == "error"], problems
    assert report.verdicts


def _as_json(gpu: GPU) -> dict:
    from gpuready.hardware import to_dict

    return to_dict(gpu)


def test_a_driver_that_is_not_loaded_is_a_warning_with_a_hint_not_a_missing_gpu():
    _, problems = probe("nvidia-driver-not-loaded")
    assert problems == [
        Problem(
            "nvidia",
            "1 NVIDIA GPU(s) on the PCI bus but the driver cannot be used: NVML_ERROR_DRIVER_NOT_LOADED (Driver Not Loaded)",
            "The NVIDIA kernel driver is not loaded: install the driver (or run `sudo modprobe nvidia`) and reboot.",
            "warning",
        )
    ]


def test_a_discrete_card_beats_the_integrated_gpu_and_the_igpu_memory_is_not_added():
    hardware, _ = probe("amd-780m-plus-7900xtx")
    device = gpu_device(hardware)
    assert (device.name, device.count, device.usable_memory_bytes, device.unified) == (
        "AMD Radeon RX 7900 XTX", 1, 24570679296, False)


def test_a_laptop_dgpu_beats_an_igpu_that_could_borrow_more_memory():
    hardware, _ = probe("laptop-rtx4060-iris-xe")
    device = gpu_device(hardware)
    assert (device.name, device.usable_memory_bytes, device.backend) == ("NVIDIA GeForce RTX 4060 Laptop GPU", 8184135680, "cuda")


def test_windows_vram_comes_from_the_64_bit_registry_value_not_the_4_gb_cap():
    hardware, problems = probe("windows-rx7800xt-uhd770")
    device = gpu_device(hardware)
    assert (device.name, device.usable_memory_bytes) == ("AMD Radeon RX 7800 XT", 17163091968)
    assert problems == []


def test_only_the_gpu_selected_by_cuda_visible_devices_is_used():
    hardware, _ = probe("nvidia-3090-a5000-cuda-visible")
    device = gpu_device(hardware)
    assert (device.name, device.count) == ("NVIDIA RTX A5000", 1)


def test_mig_instances_are_judged_one_at_a_time_by_their_own_memory():
    hardware, _ = probe("nvidia-a100-mig")
    device = gpu_device(hardware)
    assert (device.name, device.count, device.usable_memory_bytes) == ("NVIDIA A100-SXM4-40GB MIG 3g.20gb", 1, 21058551808)


def test_a_mig_slice_gets_its_share_of_the_cards_power_and_prompts_no_faster_than_the_whole_card(tmp_path):
    # A 3g.40gb slice was timed at 3/7 of the A100's compute with no power limit at all, so its prompt came out at
    # 2,322 tokens/s against 1,402 for the whole card under the board's 300 W (catalog/power.toml). The slice now
    # gets 3/7 of the card's power and its FP32 rate, from the card's own table row.
    import shutil

    from gpuready.tasks import text_estimate as est
    from gpuready.tasks.devices import cpu_device

    sliced, _ = probe("nvidia-a100-mig-nvidia-smi")
    whole_machine = tmp_path / "whole"
    shutil.copytree(MACHINES / "nvidia-a100-mig-nvidia-smi", whole_machine)
    (whole_machine / "commands" / "nvidia-smi_L.timeout").write_text("")  # MIG unseen: the whole card
    whole, _ = probe_hardware(ReplayHost(whole_machine))
    slice_device, card = gpu_device(sliced), gpu_device(whole)
    assert card.name == "NVIDIA A100 80GB PCIe" and slice_device.name == "NVIDIA A100 80GB PCIe MIG 3g.40gb"
    assert slice_device.power_watts == pytest.approx(card.power_watts * 3 / 7)
    assert slice_device.vector_flops == pytest.approx(card.vector_flops * 3 / 7)
    catalog = load_catalog()
    model, quant = catalog.get("qwen2.5-32b"), catalog.quants["Q8_0"]
    speeds = [est.estimate(model, quant, 8192, device, cpu_device(hardware), hardware.memory.usable_bytes).speed
              for device, hardware in ((slice_device, sliced), (card, whole))]
    assert speeds[0].prompt_tokens_per_s < speeds[1].prompt_tokens_per_s
    assert speeds[0].generation_tokens_per_s < speeds[1].generation_tokens_per_s


def test_a_unified_nvidia_system_uses_available_system_memory_for_the_gpu_less_llama_cpps_fit_margin():
    hardware, _ = probe("nvidia-gb10-dgx-spark")
    device = gpu_device(hardware)
    # MemAvailable of the recording, less the 1024 MiB llama.cpp's --fit keeps free by default.
    assert (device.unified, device.usable_memory_bytes) == (True, 118566368 * 1024 - 1024 * 1024**2)


def test_an_apu_keeps_llama_cpps_fit_margin_free_but_apple_silicon_does_not():
    # Strix Halo: 107,001,114,624 bytes of carve-out + GTT free (the probe's figure), less 1024 MiB.
    assert gpu_device(probe("amd-strix-halo")[0]).usable_memory_bytes == 107001114624 - 1024 * 1024**2
    # M3 Max: Metal's working-set limit (48 GiB) as it is; it already leaves a quarter to macOS.
    assert gpu_device(probe("mac-m3-max-40c-64gb")[0]).usable_memory_bytes == 48 * 1024**3


def test_reasons_say_how_much_vram_is_free_and_what_is_left_over():
    hardware, _ = probe("nvidia-rtx4090")
    catalog = load_catalog()
    verdict = judge_model(catalog.get("llama-3.1-8b"), catalog, hardware, Options(quant="Q4_K_M"))
    assert verdict.placement == "gpu"
    assert [r for r in verdict.reasons if r.startswith("fits")] == [
        f"fits in 22.4 GB free VRAM with {_gb(24066916352 - verdict.estimate.gpu_memory_bytes)} to spare"
    ]


def test_a_split_reason_says_what_the_gpu_has_free_and_the_share_of_layers_on_it():
    hardware, _ = probe("nvidia-wsl2")
    catalog = load_catalog()
    verdict = judge_model(catalog.get("qwen2.5-14b"), catalog, hardware, Options(quant="Q8_0"))
    estimate = verdict.estimate
    assert estimate.placement == "split"
    assert [r for r in verdict.reasons if r.startswith("needs")] == [
        f"needs {_gb(estimate.memory.total_bytes)}, GPU has 8.8 GB free: "
        f"{round(estimate.gpu_fraction * 48)} of 48 layers on GPU, the rest from system memory"
    ]
    assert estimate.gpu_fraction == 21 / 48  # Qwen2.5 14B has 48 layers: 21 on the GPU, 1 GiB of it kept free (--fit)


def _gb(value: int) -> str:
    return f"{value / 1024**3:.1f} GB"


def test_indices_in_cuda_visible_devices_on_different_gpus_warn_about_cuda_device_order():
    _, problems = probe("nvidia-3090-a5000-cuda-visible")
    assert [(p.probe, p.severity, p.hint) for p in problems] == [
        ("nvidia", "info", "Set CUDA_DEVICE_ORDER=PCI_BUS_ID (or use GPU UUIDs) so indices mean the same GPU everywhere.")]


@pytest.mark.parametrize("machine", sorted(EXPECTED_GPUS))
def test_a_report_of_each_machine_reads_back_as_the_same_hardware(machine):
    from gpuready.report import dumps, load_hardware_json

    hardware, problems = probe(machine)
    report = build_report(hardware, problems, load_catalog())
    assert load_hardware_json(dumps(report), "report.json") == hardware


def test_strix_halo_says_its_pool_relies_on_gtt_which_some_rocm_versions_do_not_use():
    _, problems = probe("amd-strix-halo")
    assert problems == [Problem(
        "amd",
        "AMD Radeon 8060S Graphics: 99.7 GiB of shared memory assumes the runtime can use GTT; some ROCm versions see only the 4.0 GiB carve-out",
        "If a ROCm build reports less, use llama.cpp's Vulkan backend or raise the BIOS carve-out (UMA frame buffer).",
        "info",
    )]


def test_the_recorded_h200_is_judged_within_its_band_of_what_llama_bench_measured_on_it():
    """The H200 was recorded (benchmarks/gpu_run.sh) on the machine where llama-bench measured Llama 3.1 8B
    shapes (benchmarks/validation/text-generation-h200.toml): the estimate for that very machine must hold
    each measured generation speed inside the band it states."""
    import tomllib

    rows = tomllib.loads((Path(__file__).parent.parent / "benchmarks" / "validation" / "text-generation-h200.toml")
                         .read_text())["measurements"]
    hardware, problems = probe("nvidia-h200")
    assert problems == []
    catalog = load_catalog()
    model = catalog.models["llama-3.1-8b"]
    checked = 0
    for row in rows:
        if row["model"] != "llama-3.1-8b" or row["test"] != "tg128":
            continue
        verdict = judge_model(model, catalog, hardware, Options(context_tokens=1024, quant=row["quant"]))
        speed = verdict.estimate.speed
        low = speed.generation_tokens_per_s * (1 - speed.uncertainty)
        high = speed.generation_tokens_per_s * (1 + speed.uncertainty)
        assert verdict.placement == "gpu" and low <= row["tokens_per_s"] <= high, (row["quant"], speed, row["tokens_per_s"])
        checked += 1
    assert checked == 4  # Q4_K_M, Q4_0, Q8_0 and F16
