"""What-if hardware: --gpu NAME from the table, --memory SIZE."""

from __future__ import annotations

import json

import pytest

from gpuready.frontends.cli import main
from gpuready.whatif import WhatIfError, resolve_gpu

CPU_DESKTOP = "tests/fixtures/machines/linux-desktop-ryzen-7950x"


@pytest.mark.parametrize(
    ("typed", "table_id", "count"),
    [
        ("RTX 4090", "rtx-4090", 1),
        ("rtx4090", "rtx-4090", 1),
        ("GeForce RTX 4090", "rtx-4090", 1),
        ("NVIDIA GeForce RTX 4090", "rtx-4090", 1),
        ("2x RTX 3090", "rtx-3090", 2),
        ("7900 XTX", "rx-7900-xtx", 1),
    ],
)
def test_what_people_type_finds_the_gpu(typed, table_id, count):
    spec, how_many = resolve_gpu(typed)
    assert (spec.id, how_many) == (table_id, count)


def test_an_unknown_gpu_lists_the_closest_names():
    with pytest.raises(WhatIfError, match="no GPU in the table matches 'RTX 40'; closest: .*RTX 4090"):
        resolve_gpu("RTX 40")


def test_an_ambiguous_gpu_lists_the_candidates_as_names_to_type():
    # Different chips: an error that quotes what to type for each.
    with pytest.raises(WhatIfError, match="matches several GPUs: 'RX 7900 GRE' .*'RX 7900 XTX' .*type one of the quoted names"):
        resolve_gpu("RX 7900")


def test_a_what_if_gpu_replaces_the_machines_gpus_and_changes_verdicts(capsys):
    assert main(["report", "--json", "--machine", CPU_DESKTOP, "--gpu", "RTX 4090"]) == 0
    report = json.loads(capsys.readouterr().out)
    (gpu,) = report["hardware"]["gpus"]
    assert (gpu["name"], gpu["table_id"], gpu["bandwidth_source"]) == ("NVIDIA GeForce RTX 4090", "rtx-4090", "table:rtx-4090")
    llama = next(v for v in report["verdicts"] if v["model_id"] == "llama-3.1-8b")
    assert (llama["placement"], llama["level"]) == ("gpu", "runs-well")


def test_an_unknown_gpu_is_a_usage_error(capsys):
    assert main(["report", "--gpu", "Voodoo 5", "--machine", CPU_DESKTOP]) == 2
    assert "no GPU in the table matches 'Voodoo 5'" in capsys.readouterr().err


def _whatif_report(capsys, *args):
    assert main(["report", "--json", "--machine", CPU_DESKTOP, *args]) == 0
    return json.loads(capsys.readouterr().out)


def test_a_soc_with_shared_memory_takes_the_memory_asked_for(capsys):
    # Strix Halo is sold with 32, 64 or 128 GB: --memory picks the machine, and the GPU's pool is that memory.
    report = _whatif_report(capsys, "--gpu", "Radeon 8060S", "--memory", "128GB")
    (gpu,) = report["hardware"]["gpus"]
    assert (gpu["kind"], gpu["memory_total_bytes"]) == ("unified", 128 * 1024**3)
    assert report["hardware"]["memory"]["total_bytes"] == 128 * 1024**3
    assert not [p for p in report["problems"] if p["probe"] == "whatif"]


def test_a_soc_without_memory_asked_is_its_smallest_machine_not_this_ones(capsys):
    report = _whatif_report(capsys, "--gpu", "Radeon 8060S")
    assert report["hardware"]["memory"]["total_bytes"] == 32 * 1024**3
    assert report["hardware"]["gpus"][0]["memory_total_bytes"] == 32 * 1024**3


def test_a_soc_memory_size_it_is_not_sold_with_is_estimated_and_said(capsys):
    report = _whatif_report(capsys, "--gpu", "Radeon 8060S", "--memory", "96GB")
    assert report["hardware"]["gpus"][0]["memory_total_bytes"] == 96 * 1024**3
    (note,) = [p["message"] for p in report["problems"] if p["probe"] == "whatif"]
    assert note == "AMD Radeon 8060S is sold with 32, 64 or 128 GB of memory; estimated with 96.0 GB as asked"


def test_gh200s_hbm_is_its_own_not_shared_with_this_machines_memory(capsys):
    # NVML reports a GH200's HBM as the GPU's memory, so the probe calls it discrete; so does the what-if.
    report = _whatif_report(capsys, "--gpu", "GH200")
    (gpu,) = report["hardware"]["gpus"]
    assert (gpu["kind"], gpu["memory_total_bytes"]) == ("discrete", 96 * 1024**3)


def test_the_terminal_uis_pick_of_a_soc_is_a_machine_of_the_chips_memory_too():
    # The TUI's what-if picker calls with_gpu: a DGX Spark picked on a 16 GB laptop is a 128 GB machine, not 15 GB.
    from gpuready.testing import cpu_machine
    from gpuready.whatif import with_gpu

    spark, _ = resolve_gpu("GB10")
    hardware = with_gpu(cpu_machine(16), spark)
    assert hardware.memory.total_bytes == hardware.gpus[0].memory_total_bytes == 128 * 1024**3


def _report_of(capsys, machine, *args):
    assert main(["report", "--json", "--machine", f"tests/fixtures/machines/{machine}", *args]) == 0
    return json.loads(capsys.readouterr().out)


def test_more_memory_on_a_mac_grows_the_gpus_unified_pool(capsys):
    # 128 GB on the 64 GB M3 Max: Metal's default working set is 3/4 of it (96 GiB), so gpt-oss-120b (59 GB) goes on
    # the GPU, as with `--gpu 'M3 Max 40-core' --memory 128GB`
    report = _report_of(capsys, "mac-m3-max-40c-64gb", "--memory", "128GB")
    (gpu,) = report["hardware"]["gpus"]
    assert (gpu["memory_total_bytes"], gpu["memory_usable_bytes"]) == (128 * 1024**3, 96 * 1024**3)
    gpt = next(v for v in report["verdicts"] if v["model_id"] == "gpt-oss-120b")
    assert gpt["placement"] == "gpu"
    # the rest of the probed Mac stays: its CPU and its GPU's probed name
    assert "M3 Max" in report["hardware"]["cpu"]["name"] and gpu["table_id"] == "apple-m3-max-40c"


def test_less_memory_on_a_shared_pool_shrinks_it_and_a_discrete_gpu_keeps_its_own(capsys):
    report = _report_of(capsys, "amd-strix-halo-96g-carveout", "--memory", "32GB")
    (gpu,) = report["hardware"]["gpus"]
    assert (gpu["memory_total_bytes"], gpu["memory_usable_bytes"], gpu["memory_carveout_free_bytes"]) == (
        32 * 1024**3, 32 * 1024**3, None)
    report = _report_of(capsys, "nvidia-rtx4090", "--memory", "256GB")
    (gpu,) = report["hardware"]["gpus"]
    assert gpu["memory_usable_bytes"] == 24066916352  # the card's own free VRAM, whatever the system has


def test_a_what_if_integrated_gpu_reads_this_machines_memory(capsys):
    # The Radeon 780M's row lists LPDDR5X-7500 (120 GB/s); on this Ryzen 7 8700G desktop it reads DDR5-5200 (83.2 GB/s),
    # as the probed 780M of the same recording does
    report = _report_of(capsys, "amd-780m-plus-7900xtx", "--gpu", "Radeon 780M")
    (gpu,) = report["hardware"]["gpus"]
    assert gpu["bandwidth_bytes_per_s"] == 83200000000
    assert gpu["bandwidth_source"].startswith("system memory, table:amd-ryzen-8000g-desktop")


def test_a_what_if_nvidia_gpu_on_a_mac_is_said_to_need_another_os(capsys):
    report = _report_of(capsys, "mac-m2-air-16gb", "--gpu", "RTX 4090")
    warnings = [p["message"] for p in report["problems"] if p["probe"] == "whatif" and p["severity"] == "warning"]
    assert len(warnings) == 1 and "macOS has no NVIDIA driver" in warnings[0]
    # on a Linux machine the same what-if says nothing of it
    report = _report_of(capsys, "linux-desktop-ryzen-7950x", "--gpu", "RTX 4090")
    assert not [p for p in report["problems"] if p["probe"] == "whatif" and p["severity"] == "warning"]


# --- an idle what-if card: the driver's total, less what the driver keeps -----------------------------------------


def _recorded_nvml_reserved():
    """The reservations NVML reported on the recorded NVIDIA cards (libraries/nvml.json, memory v2)."""
    from pathlib import Path
    values = []
    for path in sorted(Path("tests/fixtures/machines").glob("*/libraries/nvml.json")):
        for device in json.loads(path.read_text()).get("devices") or []:
            reserved = (device.get("memory") or {}).get("reserved")
            if reserved:  # a MIG instance reports 0: the parent card's reservation is not its own
                values.append(reserved)
    return values


def test_the_nvidia_reserve_is_what_recorded_cards_reported():
    from gpuready.hardware import MIB
    from gpuready.whatif import NVIDIA_DRIVER_RESERVED_BYTES
    recorded = sorted(_recorded_nvml_reserved())
    assert [round(v / MIB) for v in recorded] == [324, 368, 615]
    # the constant is the median with the published 48 GB card's 569 MiB: (368 + 569) / 2, rounded down
    assert NVIDIA_DRIVER_RESERVED_BYTES == (368 + 569) // 2 * MIB
    assert min(recorded) < NVIDIA_DRIVER_RESERVED_BYTES < max(recorded)


@pytest.mark.parametrize(
    ("typed", "total_mib", "reserved_mib"),
    [
        ("H200", 143771, 468),  # the driver's total (140.4 GiB), not the marketed 141
        ("H100 PCIe", 81559, 468),
        ("RTX 4090", 24 * 1024, 468),  # the marketed 24 GiB is what the driver reports (25,756,172,288 bytes recorded)
        ("A100 80GB", 80 * 1024, 468),
        ("7900 XTX", 24 * 1024, 0),  # no reservation recorded for AMD: none assumed
        ("GB10", 128 * 1024, 0),  # the machine's own LPDDR: shared memory, no card of its own
    ],
)
def test_a_what_if_card_is_an_idle_one(typed, total_mib, reserved_mib):
    from gpuready.hardware import MIB
    from gpuready.whatif import gpu_from_spec
    spec, _ = resolve_gpu(typed)
    gpu = gpu_from_spec(spec)
    assert gpu.memory_total_bytes == total_mib * MIB
    assert gpu.memory_usable_bytes == gpu.memory_free_bytes == (total_mib - reserved_mib) * MIB


def test_what_if_h200_matches_the_recorded_h200_within_the_reserve_spread(capsys):
    whatif = _whatif_report(capsys, "--gpu", "H200")["hardware"]["gpus"][0]
    assert main(["report", "--json", "--machine", "tests/fixtures/machines/nvidia-h200"]) == 0
    real = json.loads(capsys.readouterr().out)["hardware"]["gpus"][0]
    assert whatif["memory_total_bytes"] == real["memory_total_bytes"] == 150_754_820_096
    # the recorded card kept 615 MiB; the what-if keeps the median 468: within 150 MiB of the real free memory
    assert 0 < whatif["memory_usable_bytes"] - real["memory_usable_bytes"] < 150 * 1024**2


@pytest.mark.parametrize(("argv", "message"), [
    (["--gpu", "1000000x RTX 4090"], "--gpu: 1000000 GPUs? Give between 1 and 16."),
    (["--gpu", "17x RTX 4090"], "--gpu: 17 GPUs? Give between 1 and 16."),
    (["--memory", "99999999999999999999999TB"], "--memory: size too large: '99999999999999999999999TB' (at most 1 EiB)"),
])
def test_what_ifs_past_any_machine_say_so(capsys, argv, message):
    # A count of three digits or more read as part of the GPU's name ("no GPU in the table matches"), and a 23-digit
    # memory size printed as "102399999999999991410065408.0 GB total".
    from gpuready.frontends.cli import main

    assert main([*argv, "--plain"]) == 2
    assert capsys.readouterr().err == f"gpuready: error: {message}\n"
