"""An integrated GPU's memory: an AMD APU's carve-out plus GTT, GTT capped by what the OS has and can give; its bandwidth
within the CPU platform's."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from gpuready.hardware import Problem
from gpuready.host import ReplayHost
from gpuready.probes import amd
from gpuready.probes.apu_memory import SharedPool, shared_pool

MACHINES = Path(__file__).parent / "fixtures" / "machines"
GIB = 1024**3


def test_a_96_gib_carve_out_does_not_count_gtt_beyond_the_memory_the_os_has():
    # 96 GiB carve-out (103079215104) + 108000 MiB GTT (113246208000) would claim 201.5 GiB;
    # the OS has MemTotal 32482660 kB and MemAvailable 26775372 kB.
    gpus, problems = amd.probe(ReplayHost(MACHINES / "amd-strix-halo-96g-carveout"))
    assert [(g.memory_total_bytes, g.memory_free_bytes, g.memory_usable_bytes) for g in gpus] == [
        (103079215104 + 32482660 * 1024, 103079215104 + 26775372 * 1024, 103079215104 + 26775372 * 1024),
    ]
    assert problems == [Problem(
        "amd",
        "AMD Radeon 8060S Graphics: shared memory total 127.0 GiB = carve-out 96.0 GiB + GTT 105.5 GiB capped by MemTotal 31.0 GiB;"
        " free 121.5 GiB = carve-out free 96.0 GiB + GTT free 105.5 GiB capped by MemAvailable 25.5 GiB",
        None,
        "info",
    )]


def test_the_carve_out_is_not_capped_again_by_free_system_memory():
    # The probe has already capped GTT by MemAvailable; the device a model is judged on must not cap the whole pool
    # (carve-out included) by it a second time: 96 GiB carve-out + 25.5 GiB available, less the unified margin.
    from gpuready.probes import probe_hardware
    from gpuready.tasks.devices import UNIFIED_MEMORY_MARGIN_BYTES, gpu_device

    hardware, _ = probe_hardware(ReplayHost(MACHINES / "amd-strix-halo-96g-carveout"))
    (gpu,) = hardware.accelerators
    assert gpu.memory_carveout_free_bytes == 103079215104
    device = gpu_device(hardware)
    assert device.usable_memory_bytes == 103079215104 + 26775372 * 1024 - UNIFIED_MEMORY_MARGIN_BYTES
    # with less free system memory now, only the system part shrinks: the carve-out stays the GPU's
    tighter = dataclasses.replace(hardware, memory=dataclasses.replace(hardware.memory, available_bytes=4 * GIB))
    assert gpu_device(tighter).usable_memory_bytes == 103079215104 + 4 * GIB - UNIFIED_MEMORY_MARGIN_BYTES


def test_a_small_carve_out_with_gtt_inside_system_memory_is_not_capped():
    # Existing amd-strix-halo fixture: 4 GiB carve-out, 96 GiB GTT, far more available memory.
    gpus, problems = amd.probe(ReplayHost(MACHINES / "amd-strix-halo"))
    assert (gpus[0].memory_total_bytes, gpus[0].memory_free_bytes) == (
        4294967296 + 103079215104,
        (4294967296 - 312823808) + (103079215104 - 60243968),
    )
    assert [p.message for p in problems if "shared memory total" in p.message] == []


def test_gtt_free_is_capped_by_memavailable_and_gtt_total_by_memtotal():
    # Hand-computed: 8 GiB carve-out with 1 GiB used; 100 GiB GTT with 2 GiB used;
    # the OS has 24 GiB, of which 20 GiB is available.
    pool = shared_pool(8 * GIB, 1 * GIB, 100 * GIB, 2 * GIB, 24 * GIB, 20 * GIB)
    assert pool == SharedPool(
        total_bytes=(8 + 24) * GIB,
        free_bytes=(7 + 20) * GIB,
        capped=True,
        basis="total 32.0 GiB = carve-out 8.0 GiB + GTT 100.0 GiB capped by MemTotal 24.0 GiB;"
        " free 27.0 GiB = carve-out free 7.0 GiB + GTT free 98.0 GiB capped by MemAvailable 20.0 GiB",
        carveout_free_bytes=7 * GIB,
    )


def test_gtt_within_system_memory_counts_whole_and_without_meminfo_too():
    within = shared_pool(512 * 1024**2, 0, 16 * GIB, 1 * GIB, 30 * GIB, 20 * GIB)
    assert (within.total_bytes, within.free_bytes, within.capped) == (16 * GIB + 512 * 1024**2, 15 * GIB + 512 * 1024**2, False)
    unknown = shared_pool(None, None, 16 * GIB, None, None, None)
    assert (unknown.total_bytes, unknown.free_bytes, unknown.capped) == (16 * GIB, 16 * GIB, False)


def test_usage_above_the_total_never_makes_memory_negative():
    pool = shared_pool(1 * GIB, 2 * GIB, 4 * GIB, 5 * GIB, 8 * GIB, 8 * GIB)
    assert (pool.total_bytes, pool.free_bytes) == (5 * GIB, 0)


def test_an_integrated_gpu_is_no_faster_than_the_memory_the_cpu_platform_has():
    import dataclasses

    from gpuready.catalog.tables import enrich
    from gpuready.hardware import CPU, GPU, Hardware, Memory
    from gpuready.tasks.devices import gpu_device

    # The Radeon 780M's row holds LPDDR5X-7500 (120 GB/s), the fastest memory it is sold with; a Ryzen 7 8700G
    # desktop's platform row holds DDR5-5200 x 2 channels (83.2 GB/s), the memory the GPU reads there.
    cpu = CPU(name="AMD Ryzen 7 8700G w/ Radeon 780M Graphics", arch="x86_64")
    igpu = GPU(vendor="amd", name="AMD Radeon 780M Graphics", kind="integrated", source="sysfs")
    dgpu = GPU(vendor="amd", name="AMD Radeon RX 7900 XTX", memory_total_bytes=24 * 1024**3, source="sysfs")
    hardware = Hardware(platform="linux", arch="x86_64", cpu=cpu, memory=Memory(total_bytes=32 * 1024**3,
                        available_bytes=28 * 1024**3), gpus=(igpu, dgpu))
    gpus = enrich(hardware).gpus
    assert (gpus[0].bandwidth_bytes_per_s, gpus[0].bandwidth_source) == (
        83_200_000_000, "system memory, table:amd-ryzen-8000g-desktop; table:radeon-780m lists 120 GB/s")
    # Still a table's figure to the estimates (its band and efficiency), not a measurement.
    alone = enrich(dataclasses.replace(hardware, gpus=(igpu,)))
    assert gpu_device(alone).bandwidth_source == "table"
    # A discrete GPU has memory of its own: untouched.
    assert (gpus[1].bandwidth_bytes_per_s, gpus[1].bandwidth_source) == (960 * 10**9, "table:rx-7900-xtx")
    # gpuready's assumed CPU figure caps nothing, and neither does a measured one (what the CPU cores reached, not
    # the memory's peak): the GPU's row stands.
    for source, bandwidth in ((None, None), ("measured on this machine, 2026-12-04, ±1.0%", 61 * 10**9)):
        other = dataclasses.replace(cpu, name="Some Future CPU", memory_bandwidth_bytes_per_s=bandwidth, bandwidth_source=source)
        assert enrich(dataclasses.replace(hardware, cpu=other)).gpus[0].bandwidth_bytes_per_s == 120 * 10**9


def test_an_integrated_gpu_no_table_row_knows_reads_at_the_cpu_platforms_bandwidth():
    from gpuready.catalog.tables import enrich
    from gpuready.probes import probe_hardware, unknown_gpu_problems

    hardware, problems = probe_hardware(ReplayHost(MACHINES / "intel-arc-a770-uhd770"))
    uhd = next(gpu for gpu in hardware.gpus if gpu.name == "Intel UHD Graphics 770")
    assert (uhd.bandwidth_bytes_per_s, uhd.bandwidth_source) == (
        hardware.cpu.memory_bandwidth_bytes_per_s, "system memory, table:intel-core-13-14-desktop")
    assert hardware.cpu.memory_bandwidth_bytes_per_s == 89_600_000_000
    assert unknown_gpu_problems(enrich(hardware)) == []
