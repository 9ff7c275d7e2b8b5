"""Matching GPU names from drivers and from people to rows of catalog/gpus.toml, and cross-checking bandwidth."""

from __future__ import annotations

import pytest

from gpuready.hardware import GIB, GPU
from gpuready.catalog.tables import find_gpus, match_gpu, reconcile_bandwidth


@pytest.mark.parametrize(
    "typed, rows",
    [
        ("RTX 4090", ["rtx-4090"]),
        ("rtx4090", ["rtx-4090"]),
        ("GeForce RTX 4090", ["rtx-4090"]),
        ("4090", ["rtx-4090"]),
        ("RTX 4090 24GB", ["rtx-4090"]),
        ("A100 80GB", ["a100-sxm4-80gb"]),
        ("7900 XTX", ["rx-7900-xtx"]),
        ("7900XTX", ["rx-7900-xtx"]),
        ("7900 XTX 24 GB", ["rx-7900-xtx"]),
        ("RTX 4060 Ti 16GB", ["rtx-4060-ti-16gb"]),
        ("RTX 4060 Ti 8 GB", ["rtx-4060-ti-8gb"]),
        ("A770 8GB", ["arc-a770-8gb"]),
        ("M3 Max 40-core", ["apple-m3-max-40c"]),
        ("NVIDIA", []),
        ("---", []),
        ("", []),
        ("RTX 4090 48GB", []),
    ],
)
def test_what_people_type_finds_the_right_rows(typed, rows):
    assert [spec.id for spec in find_gpus(typed)] == rows


@pytest.mark.parametrize(
    "vendor, reported, memory_gib, row",
    [
        ("nvidia", "NVIDIA GeForce RTX 4090", 24, "rtx-4090"),  # NVML
        ("nvidia", "NVIDIA A100-SXM4-40GB", 40, "a100-40gb"),
        ("nvidia", "NVIDIA H100 80GB HBM3", 80, "h100-sxm"),
        ("nvidia", "Tesla T4", 15, "tesla-t4"),
        ("nvidia", "NVIDIA GeForce RTX 4060 Ti", 16, "rtx-4060-ti-16gb"),  # same name, told apart by memory
        ("nvidia", "NVIDIA GeForce RTX 4060 Ti", 8, "rtx-4060-ti-8gb"),
        ("amd", "AMD Radeon RX 7900 XTX", 24, "rx-7900-xtx"),  # Windows DriverDesc and amdgpu.ids
        ("amd", "AMD Radeon 8060S Graphics", None, "radeon-8060s"),
        ("amd", "AMD Radeon 780M Graphics", None, "radeon-780m"),
        ("intel", "Intel(R) Arc(TM) A770 Graphics", 16, "arc-a770-16gb"),  # Windows DriverDesc
        ("intel", "Intel Arc A770", 8, "arc-a770-8gb"),
        ("intel", "Intel(R) UHD Graphics 620", None, "uhd-620"),
    ],
)
def test_names_as_drivers_report_them_match_their_rows(vendor, reported, memory_gib, row):
    gpu = GPU(vendor=vendor, name=reported, memory_total_bytes=memory_gib * GIB if memory_gib else None)
    assert match_gpu(gpu).id == row


def test_a_name_shared_by_two_memory_sizes_matches_nothing_without_a_memory_size():
    assert match_gpu(GPU(vendor="intel", name="Intel(R) Arc(TM) A770 Graphics")) is None


def test_a_name_from_another_vendor_does_not_match():
    assert match_gpu(GPU(vendor="amd", name="NVIDIA GeForce RTX 4090", memory_total_bytes=24 * GIB)) is None


def test_bandwidth_within_fifteen_percent_of_the_table_keeps_the_measured_figure():
    gpu = GPU(vendor="nvidia", name="NVIDIA GeForce RTX 4090", memory_total_bytes=24 * GIB)
    assert reconcile_bandwidth(gpu, 1_008_096_000_000, "nvml") == (1_008_096_000_000, "nvml", None)


def test_bandwidth_far_from_the_table_gives_way_to_the_table_with_a_note():
    gpu = GPU(vendor="nvidia", name="NVIDIA GeForce RTX 4090", memory_total_bytes=24 * GIB)
    assert reconcile_bandwidth(gpu, 500_000_000_000, "nvml") == (
        1_008_000_000_000, "table:rtx-4090",
        "NVIDIA GeForce RTX 4090: nvml gives 500 GB/s memory bandwidth, the table 1008 GB/s (rtx-4090); using the table")


def test_an_unknown_gpu_keeps_its_measured_bandwidth_and_gets_none_from_the_table():
    gpu = GPU(vendor="nvidia", name="NVIDIA Future GPU 9000")
    assert (reconcile_bandwidth(gpu, 2_000_000_000_000, "nvml"), reconcile_bandwidth(gpu, None, "nvml")) == (
        (2_000_000_000_000, "nvml", None), (None, None, None))


@pytest.mark.parametrize(
    "reported, memory_gib, row",
    [
        ("NVIDIA GeForce RTX 5050", 8, "rtx-5050"),
        ("NVIDIA GeForce RTX 5050 Laptop GPU", 8, "rtx-5050-laptop"),
        ("NVIDIA GeForce RTX 5060 Laptop GPU", 8, "rtx-5060-laptop"),
        ("NVIDIA GeForce RTX 5070 Laptop GPU", 8, "rtx-5070-laptop"),
        ("NVIDIA GeForce RTX 5070 Ti Laptop GPU", 12, "rtx-5070-ti-laptop"),
        ("NVIDIA GeForce RTX 5080 Laptop GPU", 16, "rtx-5080-laptop"),
        ("NVIDIA GeForce RTX 5090 Laptop GPU", 24, "rtx-5090-laptop"),
    ],
)
def test_geforce_50_laptop_gpus_match_their_own_rows_with_or_without_a_memory_size(reported, memory_gib, row):
    assert match_gpu(GPU(vendor="nvidia", name=reported, memory_total_bytes=memory_gib * GIB)).id == row
    assert match_gpu(GPU(vendor="nvidia", name=reported)).id == row


@pytest.mark.parametrize("desktop", ["rtx-5050", "rtx-5060", "rtx-5070", "rtx-5070-ti", "rtx-5080", "rtx-5090"])
def test_a_laptop_gpu_never_gets_the_desktop_cards_row(desktop):
    # A laptop part has its own memory and bandwidth (RTX 5090 Laptop: 24 GB at 896 GB/s, the desktop card
    # 32 GB at 1792): whatever memory size the probe read, the desktop row is not the answer.
    from gpuready.catalog.tables import gpu_table

    spec = next(s for s in gpu_table() if s.id == desktop)
    laptop = spec.name + " Laptop GPU"
    for memory in (None, spec.memory_bytes, 8 * GIB, 16 * GIB):
        found = match_gpu(GPU(vendor="nvidia", name=laptop, memory_total_bytes=memory))
        assert found is not None and found.id == desktop + "-laptop", (laptop, memory)
    desktop_found = match_gpu(GPU(vendor="nvidia", name=spec.name, memory_total_bytes=spec.memory_bytes))
    assert desktop_found.id == desktop
    assert "laptop" not in {word.lower() for word in find_gpus(spec.name)[0].name.split()}


@pytest.mark.parametrize(
    "reported, memory_gib, row",
    [
        # NVML names, as https://developer.nvidia.com/cuda-gpus lists them
        ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", 96, "rtx-pro-6000-blackwell"),
        ("NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition", 96, "rtx-pro-6000-blackwell-max-q"),
        ("NVIDIA RTX PRO 6000 Blackwell Server Edition", 96, "rtx-pro-6000-blackwell-server"),
        ("NVIDIA RTX PRO 5000 Blackwell", 48, "rtx-pro-5000-blackwell"),
        ("NVIDIA RTX PRO 5000 Blackwell", 72, "rtx-pro-5000-blackwell-72gb"),  # told apart by memory
        ("NVIDIA RTX PRO 5000 72GB Blackwell", 72, "rtx-pro-5000-blackwell-72gb"),
        ("NVIDIA RTX PRO 4500 Blackwell", 32, "rtx-pro-4500-blackwell"),
        ("NVIDIA RTX PRO 4000 Blackwell", 24, "rtx-pro-4000-blackwell"),
        ("NVIDIA RTX PRO 4000 Blackwell SFF Edition", 24, "rtx-pro-4000-blackwell-sff"),
        ("NVIDIA RTX 5000 Ada Generation", 32, "rtx-5000-ada"),  # the Ada card keeps its row
        ("NVIDIA B300 SXM6 AC", 268, "b300"),
        ("NVIDIA B200", 179, "b200"),
        ("NVIDIA Thor", None, "jetson-agx-thor"),  # CUDA/NVML on JetPack 7
        ("NVIDIA Jetson AGX Thor", None, "jetson-agx-thor"),  # the device-tree model, "Developer Kit" cut off
    ],
)
def test_blackwell_workstation_datacenter_and_jetson_names_match_their_rows(reported, memory_gib, row):
    gpu = GPU(vendor="nvidia", name=reported, memory_total_bytes=memory_gib * GIB if memory_gib else None)
    assert match_gpu(gpu).id == row


def test_the_rtx_pro_6000_variants_are_not_one_row():
    # Same GB202 and 96 GB, but the Server Edition's memory runs at 1597 GB/s and the Max-Q's clock is lower.
    rows = {name: match_gpu(GPU(vendor="nvidia", name=f"NVIDIA RTX PRO 6000 Blackwell {name}", memory_total_bytes=96 * GIB))
            for name in ("Workstation Edition", "Max-Q Workstation Edition", "Server Edition")}
    assert len({spec.id for spec in rows.values()}) == 3
    assert rows["Server Edition"].bandwidth_bytes_per_s < rows["Workstation Edition"].bandwidth_bytes_per_s
    assert rows["Max-Q Workstation Edition"].fp16_flops < rows["Workstation Edition"].fp16_flops
    assert [spec.id for spec in find_gpus("RTX PRO 6000")] == ["rtx-pro-6000-blackwell"]


@pytest.mark.parametrize(
    "reported, memory_gib, row",
    [
        ("AMD Instinct MI355X", 288, "instinct-mi355x"),  # amd-smi / rocm-smi marketing names
        ("AMD Instinct MI350X", 288, "instinct-mi350x"),
        ("AMD Instinct MI300X", 192, "instinct-mi300x"),
        ("AMD Radeon AI PRO R9700", 32, "radeon-ai-pro-r9700"),
        ("AMD Radeon RX 9070 XT", 16, "rx-9070-xt"),  # same Navi 48, its own row
        ("AMD Radeon(TM) 880M Graphics", None, "radeon-880m"),  # Windows DriverDesc
        ("AMD Radeon 880M Graphics", None, "radeon-880m"),  # amdgpu.ids
        ("AMD Radeon 890M Graphics", None, "radeon-890m"),
        ("AMD Radeon 8050S Graphics", None, "radeon-8050s"),
        ("AMD Radeon 8050S Graphics", 64, "radeon-8050s"),
        ("AMD Radeon 8060S Graphics", 128, "radeon-8060s"),
    ],
)
def test_new_amd_names_match_their_rows(reported, memory_gib, row):
    gpu = GPU(vendor="amd", name=reported, memory_total_bytes=memory_gib * GIB if memory_gib else None)
    assert match_gpu(gpu).id == row


def test_a_strix_halo_bin_without_a_row_is_not_taken_for_another_bin():
    # The 16-CU Radeon 8040S has no row (its memory bus is not published where it could be read): it must not
    # borrow the 8050S's or 8060S's throughput.
    assert match_gpu(GPU(vendor="amd", name="AMD Radeon 8040S Graphics")) is None


@pytest.mark.parametrize("reported", ["Intel(R) Arc(TM) 140V GPU (16GB)", "Intel(R) Arc(TM) 140V GPU (8GB)", "Intel(R) Arc(TM) 140V GPU"])
def test_a_memory_size_in_an_integrated_gpus_name_does_not_hide_its_row(reported):
    # Intel's Windows and Vulkan drivers append the shared memory to Lunar Lake's name; the row has no VRAM
    # (memory_gib = 0) for the size to contradict.
    assert match_gpu(GPU(vendor="intel", name=reported)).id == "arc-140v"
    assert [spec.id for spec in find_gpus("Arc 140V 16GB")] == ["arc-140v"]


@pytest.mark.parametrize(
    "reported, memory_gib, row",
    [
        ("Intel(R) Arc(TM) Pro B50 Graphics", 16, "arc-pro-b50"),  # Level Zero / Windows DriverDesc
        ("Intel(R) Arc(TM) Pro B60 Graphics", 24, "arc-pro-b60"),
        ("Intel(R) Arc(TM) B580 Graphics", 12, "arc-b580"),  # the consumer card on the same die keeps its row
        ("Intel(R) Arc(TM) 130V GPU", None, "arc-130v"),
        ("Intel(R) Arc(TM) 130V GPU (8GB)", None, "arc-130v"),
        ("Intel(R) Arc(TM) 130V GPU (16GB)", None, "arc-130v"),
    ],
)
def test_new_intel_names_match_their_rows(reported, memory_gib, row):
    gpu = GPU(vendor="intel", name=reported, memory_total_bytes=memory_gib * GIB if memory_gib else None)
    assert match_gpu(gpu).id == row


@pytest.mark.parametrize(
    "reported, row",
    [
        ("Apple M5 (10-core GPU)", "apple-m5-10c"),  # the Apple probe's name
        ("Apple M5", "apple-m5-10c"),  # one bin listed: no core count needed
        ("Apple M5 (8-core GPU)", None),  # a bin the table does not list
        ("Apple M4 (10-core GPU)", "apple-m4-10c"),
    ],
)
def test_apple_m5_matches_by_chip_and_core_count(reported, row):
    found = match_gpu(GPU(vendor="apple", name=reported, memory_total_bytes=16 * GIB))
    assert (found.id if found else None) == row
