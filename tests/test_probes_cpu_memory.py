"""CPU, memory and system probes against recorded machines (tests/fixtures/machines).

Every expected value below was worked out by hand from the fixture files (the
arithmetic is spelled out next to it), not copied from the probes' output.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gpu_fakes import FakeHost

from gpuready.catalog.tables import ASSUMED_CPU_BANDWIDTH_BYTES_PER_S, enrich_cpu, match_cpu
from gpuready.hardware import CPU, GPU, Memory, Problem
from gpuready.host import ReplayHost, command_slug
from gpuready.probes import cpu, memory, run_probe, system
from gpuready.probes.failure import ProbeFailure
from gpuready.probes.macos import SYSCTL_ARGV

FIXTURES = Path(__file__).parent / "fixtures" / "machines"
KIB = 1024


def machine(name: str) -> ReplayHost:
    return ReplayHost(FIXTURES / name)


# --- Linux x86 ------------------------------------------------------------------


def test_a_zen4_desktop_reports_sixteen_cores_thirty_two_threads_and_avx512():
    value, problems = cpu.probe(machine("linux-desktop-ryzen-7950x"))
    assert problems == []
    assert value == CPU(
        name="AMD Ryzen 9 7950X 16-Core Processor",
        arch="x86_64",
        vendor="AMD",
        physical_cores=16,  # (physical id 0, core id 0..15)
        logical_cores=32,  # processor 0..31
        performance_cores=None,  # no /sys/devices/cpu_core
        efficiency_cores=None,
        # flags carry avx avx2 fma f16c avx512f avx512bw avx512_vnni avx512_bf16; Zen 4 has no avx_vnni/amx
        features=("avx", "avx2", "avx512_bf16", "avx512_vnni", "avx512bw", "avx512f", "f16c", "fma"),
        source="proc_cpuinfo",
    )


def test_a_bare_metal_desktop_has_no_memory_limit():
    value, problems = memory.probe(machine("linux-desktop-ryzen-7950x"))
    assert problems == []
    assert value == Memory(
        total_bytes=65530184 * KIB,
        available_bytes=58744120 * KIB,
        limit_bytes=None,
        limit_usage_bytes=None,
        limit_source=None,
        swap_total_bytes=2097148 * KIB,
        source="proc_meminfo",
    )
    assert value.usable_bytes == 58744120 * KIB
    assert value.capacity_bytes == 65530184 * KIB


def test_a_bare_metal_desktop_is_not_in_a_container():
    (name, in_container), problems = system.probe(machine("linux-desktop-ryzen-7950x"))
    assert (name, in_container, problems) == ("Linux 6.5.0", False, [])


def test_an_intel_hybrid_chip_splits_performance_and_efficiency_cores():
    value, problems = cpu.probe(machine("linux-intel-hybrid-i7-13700k"))
    assert problems == []
    assert value == CPU(
        name="13th Gen Intel(R) Core(TM) i7-13700K",
        arch="x86_64",
        vendor="Intel",
        # P-cores: core ids 0,4,...,28 (two threads each); E-cores: core ids 32..39
        physical_cores=16,
        logical_cores=24,
        performance_cores=8,  # cpu_core/cpus "0-15" = 16 threads, SMT -> 8 cores
        efficiency_cores=8,  # cpu_atom/cpus "16-23"
        features=("avx", "avx2", "avx_vnni", "f16c", "fma"),
        source="proc_cpuinfo",
    )


def test_an_intel_hybrid_desktop_reads_meminfo():
    value, _ = memory.probe(machine("linux-intel-hybrid-i7-13700k"))
    assert value == Memory(
        total_bytes=32626580 * KIB,
        available_bytes=27003312 * KIB,
        swap_total_bytes=2097148 * KIB,
        source="proc_meminfo",
    )


# --- containers and cgroups -----------------------------------------------------


def test_a_cgroup_limit_caps_usable_memory():
    value, problems = memory.probe(machine("linux-container-cgroup2"))
    assert problems == []
    assert value == Memory(
        total_bytes=65530184 * KIB,
        available_bytes=58744120 * KIB,
        limit_bytes=8589934592,  # /sys/fs/cgroup/memory.max
        limit_usage_bytes=2147483648 - 536870912,  # memory.current - inactive_file
        limit_source="cgroup v2 /sys/fs/cgroup/memory.max",
        swap_total_bytes=2097148 * KIB,
        source="proc_meminfo",
    )
    assert value.usable_bytes == 8589934592 - 1610612736  # 6.5 GiB, far below MemAvailable
    assert value.capacity_bytes == 8589934592


def test_a_docker_container_is_detected_by_dockerenv():
    (name, in_container), _ = system.probe(machine("linux-container-cgroup2"))
    assert (name, in_container) == ("Linux 6.5.0", True)


def test_a_nested_cgroup_takes_the_limit_of_its_parent_slice():
    value, problems = memory.probe(machine("linux-cgroup2-nested"))
    assert problems == []
    assert value == Memory(
        total_bytes=65530184 * KIB,
        available_bytes=58744120 * KIB,
        limit_bytes=4294967296,  # user-1000.slice; the leaf scope and the other ancestors say "max"
        limit_usage_bytes=1073741824 - 268435456,
        limit_source="cgroup v2 /sys/fs/cgroup/user.slice/user-1000.slice/memory.max",
        swap_total_bytes=2097148 * KIB,
        source="proc_meminfo",
    )


def _copy_with(tmp_path: Path, base: str, files: dict[str, str]) -> ReplayHost:
    target = tmp_path / "machine"
    shutil.copytree(FIXTURES / base, target)
    for path, text in files.items():
        file = target / "root" / path.lstrip("/")
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(text)
    return ReplayHost(target)


def test_a_cgroup_v1_unlimited_value_is_no_limit(tmp_path):
    host = _copy_with(
        tmp_path,
        "linux-desktop-ryzen-7950x",
        {
            "/proc/self/cgroup": "12:memory:/user.slice\n11:cpu,cpuacct:/user.slice\n",
            # PAGE_COUNTER_MAX * 4096, what v1 reports when nothing is set
            "/sys/fs/cgroup/memory/user.slice/memory.limit_in_bytes": "9223372036854771712\n",
            "/sys/fs/cgroup/memory/user.slice/memory.usage_in_bytes": "1048576000\n",
            "/sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n",
        },
    )
    value, _ = memory.probe(host)
    assert (value.limit_bytes, value.limit_usage_bytes, value.limit_source) == (None, None, None)


def test_a_cgroup_v1_limit_is_read_with_reclaimable_cache_subtracted(tmp_path):
    host = _copy_with(
        tmp_path,
        "linux-desktop-ryzen-7950x",
        {
            "/proc/self/cgroup": "12:memory:/docker/abc\n",
            "/sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes": "4294967296\n",
            "/sys/fs/cgroup/memory/docker/abc/memory.usage_in_bytes": "1073741824\n",
            "/sys/fs/cgroup/memory/docker/abc/memory.stat": "cache 536870912\nrss 268435456\ntotal_inactive_file 268435456\n",
        },
    )
    value, _ = memory.probe(host)
    assert value.limit_bytes == 4294967296
    assert value.limit_usage_bytes == 1073741824 - 268435456
    assert value.limit_source == "cgroup v1 /sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes"


def test_a_cgroup_limit_at_or_above_memtotal_is_ignored(tmp_path):
    memtotal = 65530184 * KIB
    for limit in (memtotal, 68719476736):
        host = _copy_with(
            tmp_path / str(limit),
            "linux-container-cgroup2",
            {"/sys/fs/cgroup/memory.max": f"{limit}\n"},
        )
        value, _ = memory.probe(host)
        assert (value.limit_bytes, value.limit_usage_bytes, value.limit_source) == (None, None, None)
        assert value.usable_bytes == 58744120 * KIB


def test_usable_memory_is_available_capped_by_what_the_limit_leaves():
    assert Memory(total_bytes=100, available_bytes=80).usable_bytes == 80
    assert Memory(total_bytes=100, available_bytes=80, limit_bytes=50, limit_usage_bytes=20).usable_bytes == 30
    assert Memory(total_bytes=100, available_bytes=10, limit_bytes=50, limit_usage_bytes=20).usable_bytes == 10
    assert Memory(total_bytes=100, available_bytes=80, limit_bytes=50, limit_usage_bytes=70).usable_bytes == 0
    assert Memory(total_bytes=100, available_bytes=None, limit_bytes=50).usable_bytes == 50
    assert Memory(total_bytes=100, available_bytes=None).usable_bytes is None


# --- Linux ARM ------------------------------------------------------------------


def test_a_graviton3_is_named_by_its_core_and_reports_sve_and_i8mm():
    value, problems = cpu.probe(machine("linux-arm-graviton3"))
    assert problems == []
    assert value == CPU(
        name="AWS Graviton3 (Neoverse-V1)",  # implementer 0x41 part 0xd40 + sys_vendor "Amazon EC2"
        arch="arm64",
        vendor="ARM",
        physical_cores=4,
        logical_cores=4,
        # asimd->neon, asimddp->dotprod, asimdhp->fp16, sve, i8mm, bf16 (svei8mm/svebf16 are not mapped)
        features=("bf16", "dotprod", "fp16", "i8mm", "neon", "sve"),
        source="proc_cpuinfo",
    )


def test_a_graviton3_reads_meminfo_without_swap():
    value, _ = memory.probe(machine("linux-arm-graviton3"))
    assert value == Memory(
        total_bytes=7934740 * KIB, available_bytes=7398220 * KIB, swap_total_bytes=0, source="proc_meminfo"
    )


def test_a_raspberry_pi_5_is_named_by_its_board_and_core():
    value, problems = cpu.probe(machine("linux-raspberry-pi-5"))
    assert problems == []
    assert value == CPU(
        # devicetree model, trailing NUL stripped, then the core from part 0xd0b
        name="Raspberry Pi 5 Model B Rev 1.0 (Cortex-A76)",
        arch="arm64",
        vendor="ARM",
        physical_cores=4,
        logical_cores=4,
        features=("dotprod", "fp16", "neon"),  # asimd asimdhp asimddp; no sve/i8mm/bf16 on A76
        source="proc_cpuinfo",
    )


def test_a_raspberry_pi_5_reads_meminfo():
    value, _ = memory.probe(machine("linux-raspberry-pi-5"))
    assert value == Memory(
        total_bytes=8245924 * KIB,
        available_bytes=7423100 * KIB,
        swap_total_bytes=204784 * KIB,
        source="proc_meminfo",
    )


def test_the_raspberry_pi_recording_keeps_no_serial_number():
    text = (FIXTURES / "linux-raspberry-pi-5" / "root" / "proc" / "cpuinfo").read_text()
    serials = [line for line in text.splitlines() if line.startswith("Serial")]
    assert serials == ["Serial          : REDACTED"]


# --- macOS ----------------------------------------------------------------------


def test_the_mac_fixtures_use_the_documented_command_file_name():
    slug = command_slug(SYSCTL_ARGV)
    for name in ("mac-m2-air-16gb", "mac-intel-i9"):
        commands = FIXTURES / name / "commands"
        assert (commands / f"{slug}.txt").is_file()
        assert (commands / f"{command_slug(('vm_stat',))}.txt").is_file()
        assert (commands / f"{slug}.rc").read_text().strip() == "1"
        assert "sysctl: unknown oid" in (commands / f"{slug}.err").read_text()


def test_an_m2_air_reports_four_performance_and_four_efficiency_cores():
    value, problems = cpu.probe(machine("mac-m2-air-16gb"))
    assert problems == []
    assert value == CPU(
        name="Apple M2",
        arch="arm64",
        vendor="Apple",
        physical_cores=8,
        logical_cores=8,
        performance_cores=4,
        efficiency_cores=4,
        features=("bf16", "dotprod", "fp16", "i8mm", "neon"),  # FEAT_SME is 0
        source="sysctl",
    )


def test_a_rosetta_free_mac_reports_neon_and_dotprod():
    host = machine("mac-m2-air-16gb")
    from gpuready.probes import macos

    assert macos.sysctl(host)["sysctl.proc_translated"] == "0"  # native, not under Rosetta 2
    value, _ = cpu.probe(host)
    assert {"neon", "dotprod"} <= set(value.features)


def test_a_mac_counts_what_activity_monitor_does_not_call_used_as_available():
    value, problems = memory.probe(machine("mac-m2-air-16gb"))
    assert problems == []
    # Used = app memory (anonymous - purgeable) + wired + compressed pages.
    used_pages = (360514 - 12036) + 160331 + 199712
    assert value == Memory(
        total_bytes=17179869184,  # hw.memsize
        available_bytes=17179869184 - used_pages * 16384,
        source="sysctl+vm_stat",
    )


def test_an_old_vm_stat_without_anonymous_pages_counts_free_inactive_and_purgeable():
    pages = {"page size": 4096, "Pages free": 10, "Pages inactive": 20, "Pages purgeable": 5}
    assert memory.darwin_available_bytes(pages, 1 << 30, 16384) == 35 * 4096


def test_an_intel_mac_reports_avx2_and_no_core_split():
    value, problems = cpu.probe(machine("mac-intel-i9"))
    assert problems == []
    assert value == CPU(
        name="Intel(R) Core(TM) i9-9880H CPU @ 2.30GHz",
        arch="x86_64",
        vendor="Intel",
        physical_cores=8,
        logical_cores=16,
        performance_cores=None,
        efficiency_cores=None,
        features=("avx", "avx2", "fma"),  # avx512f is 0
        source="sysctl",
    )


def test_an_intel_mac_uses_four_kilobyte_pages():
    value, _ = memory.probe(machine("mac-intel-i9"))
    assert value == Memory(
        total_bytes=34359738368,
        available_bytes=34359738368 - ((4191421 - 101922) + 1211033 + 251022) * 4096,
        source="sysctl+vm_stat",
    )


def test_a_mac_names_its_os_from_sysctl():
    (name, in_container), _ = system.probe(machine("mac-m2-air-16gb"))
    assert (name, in_container) == ("macOS 14.5", False)


# --- Windows --------------------------------------------------------------------


def test_a_windows_pc_reads_the_windows_readout():
    host = machine("windows-ryzen-5800x")
    cpu_value, cpu_problems = cpu.probe(host)
    memory_value, memory_problems = memory.probe(host)
    assert cpu_problems == memory_problems == []
    assert cpu_value == CPU(
        name="AMD Ryzen 7 5800X 8-Core Processor",
        arch="x86_64",
        vendor="AMD",
        physical_cores=8,
        logical_cores=16,
        features=("avx", "avx2", "fma"),
        source="windows",
    )
    assert memory_value == Memory(total_bytes=34282434560, available_bytes=21474836480, source="windows")
    assert system.probe(host)[0] == ("Windows 11 Pro 23H2 (build 22631)", False)


@pytest.mark.parametrize(
    ("present", "features", "per_cycle"),
    [
        # IsProcessorFeaturePresent names AVX2 but has no FMA3 constant: an AVX2 CPU has FMA3 (x86-64-v3)
        ({"avx": True, "avx2": True, "avx512f": False, "neon": False, "dotprod": False}, ("avx", "avx2", "fma"), 32),
        ({"avx": True, "avx2": True, "avx512f": True, "neon": False, "dotprod": False}, ("avx", "avx2", "avx512f", "fma"), 64),
        # an AVX-only CPU (Sandy Bridge, Ivy Bridge) has no FMA3, and none is inferred
        ({"avx": True, "avx2": False, "avx512f": False, "neon": False, "dotprod": False}, ("avx",), 8),
    ],
)
def test_a_windows_cpu_with_avx2_is_counted_with_its_fma_pipes(present, features, per_cycle):
    from gpuready.tasks.devices import cpu_flops_per_cycle

    readout = {"cpu": {"name": "Some x86 CPU", "vendor": "GenuineIntel", "physical_cores": 8, "logical_cores": 16,
                       "features": present}}
    value, problems = cpu.windows_cpu(FakeHost(platform="windows", libraries={"windows": readout}), "x86_64")
    assert problems == [] and value.features == features and cpu_flops_per_cycle(value.features) == per_cycle


# --- bad input ------------------------------------------------------------------


def test_garbled_cpuinfo_is_a_probe_failure_not_a_traceback():
    with pytest.raises(ProbeFailure, match="lists no processors"):
        cpu.probe(machine("linux-garbled-proc"))


def test_garbled_meminfo_is_a_probe_failure_not_a_traceback():
    with pytest.raises(ProbeFailure, match="no MemTotal"):
        memory.probe(machine("linux-garbled-proc"))


def test_run_probe_turns_garbled_proc_into_error_problems():
    host = machine("linux-garbled-proc")
    problems: list[Problem] = []
    default_cpu = CPU(name=None, arch="x86_64")
    default_memory = Memory(total_bytes=None, available_bytes=None)
    assert run_probe("cpu", cpu.probe, host, problems, default_cpu) is default_cpu
    assert run_probe("memory", memory.probe, host, problems, default_memory) is default_memory
    assert [(p.probe, p.severity) for p in problems] == [("cpu", "error"), ("memory", "error")]
    assert problems[0].message == "/proc/cpuinfo lists no processors"
    assert problems[1].message == "/proc/meminfo has no MemTotal"
    assert all("crashed" not in p.message for p in problems)


def test_a_missing_proc_is_a_probe_failure(tmp_path):
    (tmp_path / "machine.toml").write_text('platform = "linux"\narch = "x86_64"\n')
    host = ReplayHost(tmp_path)
    with pytest.raises(ProbeFailure, match="cannot read /proc/cpuinfo"):
        cpu.probe(host)
    with pytest.raises(ProbeFailure, match="cannot read /proc/meminfo"):
        memory.probe(host)


# --- ARM core names and the CPU platform table (catalog/cpus.toml) ----------------


def test_a_dgx_spark_is_named_by_its_two_arm_cores():
    value, problems = cpu.probe(machine("nvidia-gb10-dgx-spark"))
    assert problems == []
    assert value == CPU(
        # implementer 0x41 (ARM, so no vendor prefix); parts 0xd85 (processors 0-9) then 0xd87 (10-19), in
        # the order processor 0 onwards lists them (Linux cputype.h: CORTEX_X925 0xD85, CORTEX_A725 0xD87)
        name="Cortex-X925 + Cortex-A725",
        arch="arm64",
        vendor="ARM",
        physical_cores=20,
        logical_cores=20,
        # asimd asimdhp asimddp sve sve2 i8mm bf16 (svei8mm/svebf16 are not mapped)
        features=("bf16", "dotprod", "fp16", "i8mm", "neon", "sve", "sve2"),
        source="proc_cpuinfo",
    )


def test_no_cpu_platform_row_claims_the_gb10_cores_but_the_gb10_gpu_names_the_pool_they_read():
    # The GB10 shares its LPDDR5X with the GPU (catalog/gpus.toml row gb10, 273 GB/s); catalog/cpus.toml has no
    # GB10 row, and the core names alone do not identify the chip (other SoCs pair X925 and A725 cores)...
    spark = enrich_cpu(cpu.probe(machine("nvidia-gb10-dgx-spark"))[0])
    assert (spark.bandwidth_source, spark.memory_bandwidth_bytes_per_s) == ("assumed", ASSUMED_CPU_BANDWIDTH_BYTES_PER_S)
    # ...but the GPU NVML names does: on the whole machine the cores read the pool at the GB10 row's figure.
    from gpuready.host import host_from_environment
    from gpuready.probes import probe_hardware
    hardware, _ = probe_hardware(host_from_environment(str(FIXTURES / "nvidia-gb10-dgx-spark")), python=None)
    assert (hardware.cpu.bandwidth_source, hardware.cpu.memory_bandwidth_bytes_per_s) == ("table:gb10", 273e9)


def test_only_a_soc_pool_lends_its_figure_to_an_unknown_cpu():
    import dataclasses

    from gpuready.catalog.tables import sharing_soc_memory
    unknown = CPU(name="Mystery", arch="arm64", bandwidth_source="assumed", memory_bandwidth_bytes_per_s=ASSUMED_CPU_BANDWIDTH_BYTES_PER_S)
    gb10 = GPU("nvidia", "NVIDIA GB10", kind="unified", index=0, table_id="gb10")
    h200 = GPU("nvidia", "NVIDIA H200", kind="discrete", index=0, table_id="h200")  # its own HBM: not the CPU's memory
    assert sharing_soc_memory(unknown, (h200,)) == unknown
    assert sharing_soc_memory(unknown, (h200, gb10)).memory_bandwidth_bytes_per_s == 273e9
    known = dataclasses.replace(unknown, bandwidth_source="table:x", memory_bandwidth_bytes_per_s=1e9)
    assert sharing_soc_memory(known, (gb10,)) == known  # a CPU row (or a measurement) is never replaced


def test_arm_part_numbers_follow_the_linux_kernels_cputype_h():
    assert cpu.ARM_PARTS[(0x41, 0xD85)] == "Cortex-X925"
    assert cpu.ARM_PARTS[(0x41, 0xD87)] == "Cortex-A725"
    assert cpu.ARM_PARTS[(0x41, 0xD42)] == "Cortex-A78AE"
    assert cpu.ARM_PARTS[(0x41, 0xD8E)] == "Neoverse-N3"
    assert cpu.ARM_PARTS[(0x41, 0xD0C)] == "Neoverse-N1"
    # 0xD0F is ARM_CPU_PART_AEM_V8, Arm's architecture simulator, not a Neoverse-N1.
    assert (0x41, 0xD0F) not in cpu.ARM_PARTS


def test_a_big_little_chip_lists_its_cores_in_the_order_processor_0_onwards_shows_them(tmp_path):
    # A Dell Pro Max with GB10 lists its Cortex-A725s first (processor 0 is part 0xd87; hrw/arm-socs-table #133).
    (tmp_path / "machine.toml").write_text('platform = "linux"\narch = "arm64"\n')
    proc = tmp_path / "root" / "proc"
    proc.mkdir(parents=True)
    block = "processor\t: {n}\nFeatures\t: fp asimd\nCPU implementer\t: 0x41\nCPU part\t: {part}\n"
    parts = ["0xd87"] * 2 + ["0xd85"] * 2
    (proc / "cpuinfo").write_text("\n".join(block.format(n=n, part=part) for n, part in enumerate(parts)))
    value, _ = cpu.probe(ReplayHost(tmp_path))
    assert (value.name, value.logical_cores) == ("Cortex-A725 + Cortex-X925", 4)


# /proc/cpuinfo "model name" (macOS machdep.cpu.brand_string, Windows ProcessorNameString) as these CPUs report it.
NEW_PLATFORM_ROWS = [
    ("Intel(R) Core(TM) i5-8250U CPU @ 1.60GHz", "intel-core-8-mobile-u", 38.4e9),  # DDR4-2400 x 2 ch
    ("Intel(R) Core(TM) i7-8565U CPU @ 1.80GHz", "intel-core-8-mobile-u", 38.4e9),
    ("Intel(R) Core(TM) i9-9880H CPU @ 2.30GHz", "intel-core-8-9-mobile-h", 42.7e9),  # DDR4-2666 x 2 ch
    ("Intel(R) Core(TM) i7-8750H CPU @ 2.20GHz", "intel-core-8-9-mobile-h", 42.7e9),
    ("Intel(R) Core(TM) i7-1065G7 CPU @ 1.30GHz", "intel-core-10-mobile-ice-lake", 59.7e9),  # LPDDR4-3733 x 128 bit
    ("Intel(R) Core(TM) i5-10210U CPU @ 1.60GHz", "intel-core-10-mobile-comet-lake", 46.9e9),  # 2933 MT/s x 2 ch
    ("Intel(R) Core(TM) i7-10750H CPU @ 2.60GHz", "intel-core-10-mobile-comet-lake", 46.9e9),
    ("11th Gen Intel(R) Core(TM) i5-1135G7 @ 2.40GHz", "intel-core-11-mobile-up3-h35", 68.3e9),  # LPDDR4X-4267 x 128 bit
    ("11th Gen Intel(R) Core(TM) i7-1165G7 @ 2.80GHz", "intel-core-11-mobile-up3-h35", 68.3e9),
    ("11th Gen Intel(R) Core(TM) i7-11370H @ 3.30GHz", "intel-core-11-mobile-up3-h35", 68.3e9),
    ("11th Gen Intel(R) Core(TM) i7-11800H @ 2.30GHz", "intel-core-11-mobile-h45", 51.2e9),  # DDR4-3200 x 2 ch
    ("AMD Ryzen 7 8700G w/ Radeon 780M Graphics", "amd-ryzen-8000g-desktop", 83.2e9),  # DDR5-5200 x 2 ch
    ("AMD Ryzen 5 8600G w/ Radeon 760M Graphics", "amd-ryzen-8000g-desktop", 83.2e9),
    ("AMD Ryzen 5 8500G w/ Radeon 740M Graphics", "amd-ryzen-8000g-desktop", 83.2e9),
    ("AMD Ryzen 3 8300G w/ Radeon 740M Graphics", "amd-ryzen-8000g-desktop", 83.2e9),
    ("AMD Ryzen 7 8845HS w/ Radeon 780M Graphics", "amd-ryzen-7040-8040-mobile", 120e9),  # Hawk Point: LPDDR5X-7500
    ("AMD Ryzen 9 8945HS w/ Radeon 780M Graphics", "amd-ryzen-7040-8040-mobile", 120e9),
    ("AMD Ryzen Threadripper PRO 5975WX 32-Cores", "amd-threadripper-pro-3000-5000", 204.8e9),  # DDR4-3200 x 8 ch
    ("AMD Ryzen Threadripper 3970X 32-Core Processor", "amd-threadripper-3000", 102.4e9),  # DDR4-3200 x 4 ch
    ("Intel(R) Core(TM) i7-7700K CPU @ 4.20GHz", "intel-core-7-desktop", 38.4e9),  # DDR4-2400 x 2 ch
    ("Intel(R) Core(TM) i5-6500 CPU @ 3.20GHz", "intel-core-6-desktop", 34.1e9),  # DDR4-2133 x 2 ch
    ("Intel(R) Core(TM) i7-7820HQ CPU @ 2.90GHz", "intel-core-7-mobile-h", 38.4e9),
    ("Intel(R) Core(TM) i5-4278U CPU @ 2.60GHz", "intel-core-4-mobile-u", 25.6e9),  # DDR3L-1600 x 2 ch
    ("Intel(R) N100", "intel-n-series", 38.4e9),  # DDR5-4800 x 1 ch
    ("Intel(R) Core(TM) i3-N305", "intel-n-series", 38.4e9),
]


@pytest.mark.parametrize(("name", "row", "bandwidth"), NEW_PLATFORM_ROWS)
def test_a_cpu_name_finds_its_platform_row(name, row, bandwidth):
    platform = match_cpu(name)
    assert platform is not None, name
    assert (platform.id, platform.bandwidth_bytes_per_s) == (row, int(bandwidth))


@pytest.mark.parametrize(
    ("name", "row"),
    [
        # The neighbours of the new rows keep theirs (first match wins: the new rows must not shadow them).
        ("AMD Ryzen 7 8840U w/ Radeon 780M Graphics", "amd-ryzen-7040-8040-mobile"),
        ("AMD Ryzen 9 7950X 16-Core Processor", "amd-ryzen-7000-desktop"),
        ("AMD Ryzen 7 5700G with Radeon Graphics", "amd-ryzen-5000-desktop"),
        ("11th Gen Intel(R) Core(TM) i7-11700K @ 3.60GHz", "intel-core-11-desktop"),
        ("Intel(R) Core(TM) i9-10900K CPU @ 3.70GHz", "intel-core-10-desktop"),
        ("Intel(R) Core(TM) i7-8700K CPU @ 3.70GHz", "intel-core-8-9-desktop"),
        ("Intel(R) Core(TM) i3-8100 CPU @ 3.60GHz", "intel-core-8-9-desktop"),
        ("12th Gen Intel(R) Core(TM) i7-1260P", "intel-core-12-14-mobile"),
        ("13th Gen Intel(R) Core(TM) i7-1355U", "intel-core-12-14-mobile"),
        # Not claimed: Dragon Range (DDR5 only) and Amber Lake Y have no row.
        ("AMD Ryzen 9 7945HX with Radeon Graphics", None),
        ("AMD Ryzen 7 7845HX with Radeon Graphics", None),
        ("AMD Ryzen Threadripper 7980X 64-Cores", "amd-threadripper-7000"),
        ("AMD Ryzen Threadripper PRO 7995WX 96-Cores", "amd-threadripper-pro-7000"),
        ("Intel(R) Core(TM) i7-6700HQ CPU @ 2.60GHz", None),  # 6th gen mobile H: no row
        ("Intel(R) Core(TM) i9-7900X CPU @ 3.30GHz", None),  # Skylake-X HEDT, four channels: not the desktop row
        ("Intel(R) Core(TM) i5-8200Y CPU @ 1.30GHz", None),
    ],
)
def test_a_cpu_name_near_the_new_rows_keeps_its_own(name, row):
    platform = match_cpu(name)
    assert (platform.id if platform else None) == row


@pytest.mark.parametrize(
    ("machine_name", "row"),
    [
        ("amd-780m-plus-7900xtx", "amd-ryzen-8000g-desktop"),  # AMD Ryzen 7 8700G w/ Radeon 780M Graphics
        ("intel-uhd620-laptop", "intel-core-8-mobile-u"),  # Intel(R) Core(TM) i5-8250U CPU @ 1.60GHz
        ("mac-intel-i9", "intel-core-8-9-mobile-h"),  # macOS brand string Intel(R) Core(TM) i9-9880H CPU @ 2.30GHz
        ("windows-directml-only", "intel-core-11-mobile-up3-h35"),  # 11th Gen Intel(R) Core(TM) i5-1135G7 @ 2.40GHz
    ],
)
def test_recorded_machines_that_read_51_gb_s_assumed_now_find_their_platform(machine_name, row):
    enriched = enrich_cpu(cpu.probe(machine(machine_name))[0])
    assert enriched.bandwidth_source == f"table:{row}"


# --- an assumed system-memory bandwidth is said, with what measures it --------------------------------------------


@pytest.mark.parametrize(
    ("machine", "source", "said"),
    [
        ("linux-cloud-epyc-cgroup1", "assumed", True),  # "AMD EPYC" with no model number: no table row
        ("nvidia-h200", "assumed", True),  # a cloud VM's "Intel(R) Xeon(R) Processor"
        ("linux-desktop-ryzen-7950x", "table:amd-ryzen-7000-desktop", False),
        ("nvidia-gb10-dgx-spark", "table:gb10", False),  # the GB10's cores read the GPU's LPDDR5X pool
    ],
)
def test_a_report_says_when_system_memory_bandwidth_is_assumed(machine, source, said):
    import dataclasses

    from gpuready.app import Request, load

    loaded = load(Request(machine=str(FIXTURES / machine), measured=False))
    assert loaded.hardware.cpu.bandwidth_source == source
    notes = [p for p in loaded.problems if p.probe == "cpu" and "not in gpuready's CPU table" in p.message]
    assert bool(notes) == said
    if said:
        (note,) = notes
        assert (note.severity, "51 GB/s" in note.message, "gpuready bench" in note.hint) == ("info", True, True)
    # once `gpuready bench` measured it, nothing is assumed and nothing is said
    from gpuready.app import assumed_bandwidth_problems
    measured = dataclasses.replace(loaded.hardware, cpu=dataclasses.replace(loaded.hardware.cpu, bandwidth_source="measured"))
    assert assumed_bandwidth_problems(measured) == []
