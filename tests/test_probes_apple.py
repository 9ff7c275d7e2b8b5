"""Apple probe against recorded Macs: chip and GPU-core bin, Metal's working set, Rosetta, Intel Macs.

Expected values are worked out from the fixture files and catalog rows named next to them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuready.hardware import GPU, NPU, Backend, Problem
from gpuready.host import ReplayHost
from gpuready.probes import apple, backends
from gpuready.catalog.tables import find_gpus, gpu_table, match_gpu

FIXTURES = Path(__file__).parent / "fixtures" / "machines"
MIB = 1024**2
GIB = 1024**3


def machine(name: str) -> ReplayHost:
    return ReplayHost(FIXTURES / name)


def spec(table_id: str):
    return next(s for s in gpu_table() if s.id == table_id)


@pytest.mark.parametrize(
    ("total_gib", "logged_mib"),
    [
        (16, "10922.67"),  # llama.cpp #2209, llama-cpp-python #687
        (32, "21845.34"),  # ollama #434, llama.cpp #2011
        (64, "49152.00"),  # llama-cpp-python server log
        (192, "147456.00"),  # 3/4 of 192 GiB
    ],
)
def test_the_metal_working_set_matches_what_ggml_metal_logs(total_gib, logged_mib):
    assert f"{apple.metal_working_set_bytes(total_gib * GIB) / MIB:.2f}" == logged_mib


def test_a_raised_wired_limit_replaces_the_working_set_but_not_beyond_memory():
    assert apple.metal_working_set_bytes(16 * GIB, 14000) == 14000 * MIB  # llmfit #754: Metal reports exactly that
    assert apple.metal_working_set_bytes(16 * GIB, 20000) == 16 * GIB
    assert apple.metal_working_set_bytes(16 * GIB, 0) == apple.metal_working_set_bytes(16 * GIB)


def test_an_m2_air_reports_its_ten_core_gpu_with_two_thirds_of_memory_usable():
    gpus, problems = apple.probe(machine("mac-m2-air-16gb"))
    assert problems == []
    assert gpus == [
        GPU(
            vendor="apple",
            name="Apple M2 (10-core GPU)",  # brand "Apple M2", sppci_cores "10"
            kind="unified",
            memory_total_bytes=17179869184,  # hw.memsize
            memory_usable_bytes=11453251584,  # 2/3 of 16 GiB rounded up to 16 KiB pages = 10922.67 MiB
            bandwidth_bytes_per_s=100_000_000_000,  # gpus.toml apple-m2-10c
            bandwidth_source="table:apple-m2-10c",
            fp16_flops=3.6e12,
            flops_source="table:apple-m2-10c",
            architecture="Apple M2 GPU",
            driver="Metal",
            driver_version="Metal 3",  # spdisplays_mtlgpufamilysupport = spdisplays_metal3
            table_id="apple-m2-10c",
            backends=("metal",),
            source="system_profiler",
        )
    ]


def test_an_m3_max_forty_core_gets_the_forty_core_bandwidth_and_flops_derived_from_its_cores():
    (gpu,), problems = apple.probe(machine("mac-m3-max-40c-64gb"))
    assert problems == []
    assert (gpu.name, gpu.table_id, gpu.bandwidth_bytes_per_s) == ("Apple M3 Max (40-core GPU)", "apple-m3-max-40c", 400_000_000_000)
    assert gpu.memory_usable_bytes == 48 * GIB  # 3/4 of 64 GiB
    # Apple publishes no M3 TFLOPS: 40 cores x M2 Max's 13.6 TFLOPS / 38 cores (the newest rate Apple states), derived.
    assert (gpu.fp16_flops, gpu.flops_source) == (40 * 13.6e12 / 38, "derived:40 cores x M2's 0.358 TFLOPS a core")


def test_an_m2_ultra_with_a_raised_wired_limit_may_use_what_the_limit_says():
    (gpu,), problems = apple.probe(machine("mac-studio-m2-ultra-192gb-wired"))
    assert gpu.memory_usable_bytes == 180000 * MIB  # iogpu.wired_limit_mb: 180000
    assert gpu.memory_total_bytes == 192 * GIB
    assert gpu.table_id == "apple-m2-ultra-76c"
    assert problems == [
        Problem(
            "apple",
            "iogpu.wired_limit_mb is raised to 180000 MB: the GPU may use 175.8 GiB of 192 GiB, "
            "so little is left for macOS and other programs",
            None,
            "info",
        )
    ]


def test_an_m2_ultra_has_a_thirty_two_core_neural_engine_with_twice_the_tops():
    assert apple.probe_neural_engine(machine("mac-studio-m2-ultra-192gb-wired")) == [
        NPU(
            vendor="apple",
            name="Apple Neural Engine (M2 Ultra)",
            generation="M2 32-core Neural Engine",
            tops_int8=31.6,  # gpus.toml apple-m2-ultra-76c neural_engine_tops
            driver="macOS",
            driver_loaded=True,
            runtimes=("Core ML",),
            table_id="apple-ane-m2",
            source="table",
        )
    ]


def test_an_x86_python_under_rosetta_is_a_problem_with_a_hint():
    host = machine("mac-m1-rosetta-python")
    gpus, problems = apple.probe(host)
    assert [g.name for g in gpus] == ["Apple M1 (7-core GPU)"]
    assert problems == [
        Problem(
            "apple",
            "this Python is an x86_64 build running under Rosetta 2: Metal acceleration (MPS, MLX, "
            "llama.cpp Metal) is unavailable to it, and CPU code runs translated",
            apple.ROSETTA_HINT,
            "warning",
        )
    ]
    assert backends.metal_backend(host) == Backend(
        "metal", False, detail="this Python runs under Rosetta 2 (x86_64): no MPS or MLX", source="sysctl"
    )


def test_an_intel_mac_lists_its_radeon_and_igpu_but_counts_neither():
    gpus, problems = apple.probe(machine("mac-intel-i9"))
    assert problems == []
    assert gpus == [
        GPU(
            vendor="intel",
            name="Intel UHD Graphics 630",
            kind="integrated",
            index=0,
            driver="Metal",
            driver_version="Metal 3",
            pci_id="8086:3e9b",
            counted=False,
            not_counted_reason=apple.INTEL_MAC_GPU_REASON,
            source="system_profiler",
        ),
        GPU(
            vendor="amd",
            name="AMD Radeon Pro 5500M",
            kind="discrete",
            index=1,
            memory_total_bytes=4 * GIB,  # spdisplays_vram "4 GB"
            driver="Metal",
            driver_version="Metal 3",
            pci_id="1002:7340",
            counted=False,
            not_counted_reason=apple.INTEL_MAC_GPU_REASON,
            source="system_profiler",
        ),
    ]
    assert apple.probe_neural_engine(machine("mac-intel-i9")) == []


def test_a_mac_whose_system_profiler_times_out_still_reports_the_chip(tmp_path):
    import shutil

    shutil.copytree(FIXTURES / "mac-m3-max-40c-64gb", tmp_path / "m")
    commands = tmp_path / "m" / "commands"
    (commands / "system-profiler_SPDisplaysDataType_json.txt").unlink()
    (commands / "system-profiler_SPDisplaysDataType_json.timeout").write_text("")
    (gpu,), problems = apple.probe(ReplayHost(tmp_path / "m"))
    # Without the core count the 30- and 40-core bins (300 vs 400 GB/s) cannot be told apart.
    assert (gpu.name, gpu.table_id, gpu.bandwidth_bytes_per_s, gpu.memory_usable_bytes) == ("Apple M3 Max", None, None, 48 * GIB)
    assert [p.severity for p in problems] == ["info"]


def test_the_what_if_chip_defaults_to_its_smallest_memory():
    gpu, npu = apple.apple_hardware(spec("apple-m3-max-40c"))
    assert gpu == GPU(
        vendor="apple",
        name="Apple M3 Max (40-core GPU)",
        kind="unified",
        memory_total_bytes=48 * GIB,  # memory_options_gib = [48, 64, 128]
        memory_usable_bytes=36 * GIB,  # 3/4 of 48 GiB
        bandwidth_bytes_per_s=400_000_000_000,
        bandwidth_source="table:apple-m3-max-40c",
        fp16_flops=40 * 13.6e12 / 38,
        flops_source="derived:40 cores x M2's 0.358 TFLOPS a core",
        architecture="Apple M3 GPU",
        table_id="apple-m3-max-40c",
        backends=("metal",),
        source="table",
    )
    assert (npu.name, npu.tops_int8, npu.table_id) == ("Apple Neural Engine (M3 Max)", 18.0, "apple-ane-m3")


def test_the_what_if_chip_takes_the_memory_asked_for():
    gpu, _ = apple.apple_hardware(find_gpus("M3 Max 40-core")[0], 64 * GIB)
    assert (gpu.memory_total_bytes, gpu.memory_usable_bytes) == (64 * GIB, 48 * GIB)


def test_table_matching_uses_the_gpu_core_count_for_apple_bins():
    def matched(name):
        found = match_gpu(GPU(vendor="apple", name=name, memory_total_bytes=64 * GIB))
        return found.id if found else None

    assert matched("Apple M3 Max (30-core GPU)") == "apple-m3-max-30c"
    assert matched("Apple M3 Max (40-core GPU)") == "apple-m3-max-40c"
    assert matched("Apple M3 Max") is None  # 300 vs 400 GB/s: no guessing from memory size


def test_a_chip_newer_than_the_table_is_still_reported_without_invented_numbers():
    values = {"machdep.cpu.brand_string": "Apple M6", "hw.memsize": str(16 * GIB)}
    entries = [{"_name": "Apple M6", "sppci_cores": "10", "sppci_model": "Apple M6"}]
    gpu, problems = apple.apple_silicon_gpu(values, entries)
    assert problems == []
    assert gpu == GPU(
        vendor="apple",
        name="Apple M6 (10-core GPU)",
        kind="unified",
        memory_total_bytes=16 * GIB,
        memory_usable_bytes=apple.metal_working_set_bytes(16 * GIB),
        driver="Metal",
        backends=("metal",),
        source="system_profiler",
    )
    assert apple.neural_engine("M6", None) == NPU(
        vendor="apple", name="Apple Neural Engine (M6)", driver="macOS", driver_loaded=True, runtimes=("Core ML",), source="table"
    )


def test_the_m5_is_in_the_table_with_its_bandwidth_and_no_invented_tflops():
    values = {"machdep.cpu.brand_string": "Apple M5", "hw.memsize": str(16 * GIB)}
    entries = [{"_name": "Apple M5", "sppci_cores": "10", "sppci_model": "Apple M5"}]
    gpu, problems = apple.apple_silicon_gpu(values, entries)
    assert problems == []
    assert (gpu.name, gpu.table_id, gpu.bandwidth_bytes_per_s, gpu.bandwidth_source) == (
        "Apple M5 (10-core GPU)", "apple-m5-10c", 153_000_000_000, "table:apple-m5-10c")
    row = spec("apple-m5-10c")
    assert (row.fp16_flops, row.fp32_flops, row.neural_engine_tops) == (None, None, None)  # Apple publishes none for M5
    # A bin the table does not list gets no row rather than the 10-core one's numbers.
    assert apple.chip_spec("M5", None, 8) is None


def test_when_sysctl_fails_system_profiler_still_names_the_apple_gpu(tmp_path):
    import shutil

    shutil.copytree(FIXTURES / "mac-m2-air-16gb", tmp_path / "m")
    for path in (tmp_path / "m" / "commands").glob("sysctl_*"):
        path.unlink()
    (gpu,), problems = apple.probe(ReplayHost(tmp_path / "m"))
    assert (gpu.name, gpu.table_id, gpu.counted, gpu.memory_total_bytes) == ("Apple M2 (10-core GPU)", "apple-m2-10c", True, None)
