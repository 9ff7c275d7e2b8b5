"""A full report on every machine of this branch: probes, registry, backends matched to GPUs,
verdicts that name their runtime and say why an NPU is not used, and JSON that round-trips."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuready.tasks.registry import load_catalog
from gpuready.hardware import Backend
from gpuready.host import ReplayHost
from gpuready.probes import probe_hardware
from gpuready.report import build_report, load_hardware_json, report_json

FIXTURES = Path(__file__).parent / "fixtures" / "machines"

# machine -> (GPUs as (name, backends, counted), NPU table ids, backends as (name, available), problems as (probe, severity))
EXPECTED = {
    "mac-m2-air-16gb": ([("Apple M2 (10-core GPU)", ("metal",), True)], ["apple-ane-m2"], [("metal", True)], []),
    "mac-m3-max-40c-64gb": ([("Apple M3 Max (40-core GPU)", ("metal",), True)], ["apple-ane-m3"], [("metal", True)], []),
    "mac-studio-m2-ultra-192gb-wired": ([("Apple M2 Ultra (76-core GPU)", ("metal",), True)], ["apple-ane-m2"], [("metal", True)], [("apple", "info")]),
    "mac-intel-i9": (
        [("Intel UHD Graphics 630", (), False), ("AMD Radeon Pro 5500M", (), False)], [], [("metal", False)], []
    ),
    "mac-m1-rosetta-python": ([("Apple M1 (7-core GPU)", ("metal",), True)], ["apple-ane-m1"], [("metal", False)], [("apple", "warning")]),
    # Both recordings hold vulkaninfo but no /sys/class/drm: the GPU Vulkan lists is a warning, not left unsaid.
    "linux-meteor-lake-npu": ([], ["intel-npu-3720"], [("vulkan", True)], [("vulkan", "warning")]),
    "linux-strix-ryzen-ai-370": ([], ["amd-xdna2-strix-point"], [("vulkan", True)], [("vulkan", "warning")]),
    # The Adreno enumerates on ACPI: listed (it was dropped unseen), not counted (no speed model for it).
    "windows-snapdragon-x-elite": ([("Qualcomm(R) Adreno(TM) X1-85 GPU", (), False)], ["qualcomm-hexagon-x-elite"],
                                   [("directml", True)], []),
    "windows-directml-only": ([("Intel(R) Iris(R) Xe Graphics", ("sycl", "vulkan"), True)], [], [("directml", True)], []),
}


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_full_report_works_on_every_recorded_accelerator_machine(name, catalog):
    hardware, problems = probe_hardware(ReplayHost(FIXTURES / name))
    gpus, npus, backends, problem_keys = EXPECTED[name]
    assert [(g.name, g.backends, g.counted) for g in hardware.gpus] == gpus
    assert [n.table_id for n in hardware.npus] == npus
    assert [(b.name, b.available) for b in hardware.backends] == backends
    assert [(p.probe, p.severity) for p in problems] == problem_keys
    report = build_report(hardware, problems, catalog)
    data = json.loads(json.dumps(report_json(report)))
    assert load_hardware_json(json.dumps(data), name) == hardware
    assert report.tasks[0].status in ("ready", "limited")


def test_a_mac_verdict_names_metal_and_says_what_its_usable_memory_is(catalog):
    hardware, problems = probe_hardware(ReplayHost(FIXTURES / "mac-m3-max-40c-64gb"))
    verdict = next(v for v in build_report(hardware, problems, catalog).verdicts if v.placement == "gpu")
    assert verdict.runtime == "llama.cpp (Metal) or MLX"
    assert verdict.memory_available_bytes == 48 * 1024**3  # Metal's working set, not all 64 GiB
    assert verdict.reasons[-2:] == (
        "usable GPU memory is Metal's working-set limit (about 2/3 of unified memory up to 32 GB, 3/4 above), "
        "or iogpu.wired_limit_mb when raised",
        "Apple Neural Engine (M3 Max), 18 TOPS: not used, llama.cpp-class runtimes have no NPU backend; "
        "only Core ML models converted for it use it",
    )


def test_an_npu_is_listed_with_the_reason_it_does_not_run_text_generation(catalog):
    hardware, problems = probe_hardware(ReplayHost(FIXTURES / "linux-strix-ryzen-ai-370"))
    for verdict in build_report(hardware, problems, catalog).verdicts:
        if verdict.task != "text-generation":
            continue
        assert verdict.placement != "npu"
        assert verdict.reasons[-1] == (
            "AMD Ryzen AI NPU (Strix Point / Krackan Point), 50 TOPS: not used, llama.cpp-class runtimes have no "
            "NPU backend; AMD's Ryzen AI Software runs some ONNX LLMs on it"
        )


def test_an_intel_mac_runs_models_on_the_cpu_not_on_its_radeon(catalog):
    hardware, problems = probe_hardware(ReplayHost(FIXTURES / "mac-intel-i9"))
    verdicts = build_report(hardware, problems, catalog).verdicts
    assert {v.placement for v in verdicts} <= {"cpu", None}
    assert {v.runtime for v in verdicts if v.placement and v.task == "text-generation"} == {"llama.cpp (CPU)"}


def test_a_probe_that_crashes_does_not_lose_the_others(monkeypatch):
    from gpuready.probes import npu

    def broken(host):
        raise RuntimeError("boom")

    monkeypatch.setattr(npu, "probe", broken)
    hardware, problems = probe_hardware(ReplayHost(FIXTURES / "mac-m2-air-16gb"))
    assert [g.name for g in hardware.gpus] == ["Apple M2 (10-core GPU)"]
    assert hardware.backends == (Backend("metal", True, version="Metal 3", detail="Apple M2 GPU: llama.cpp (Metal), MLX, PyTorch MPS", source="system_profiler"),)
    assert [(p.probe, p.severity) for p in problems] == [("npu", "error")]


def test_report_with_torch_on_a_recorded_machine_exits_zero_and_says_the_check_could_not_run():
    import subprocess
    import sys

    root = Path(__file__).parent.parent
    completed = subprocess.run(
        [sys.executable, "-m", "gpuready", "report", "--json", "--torch", "--machine", str(FIXTURES / "linux-meteor-lake-npu")],
        capture_output=True, text=True, cwd=root, timeout=60,
    )
    assert completed.returncode == 0, completed.stderr
    data = json.loads(completed.stdout)
    assert [n["table_id"] for n in data["hardware"]["npus"]] == ["intel-npu-3720"]
    # A recording holds no answer from this test's interpreter: said so, as information (beside the Arc iGPU that
    # only Vulkan lists in this recording).
    assert [(p["probe"], p["severity"]) for p in data["problems"]] == [("backends", "info"), ("vulkan", "warning")]


def test_the_text_summary_lists_npus_and_backends(catalog):
    from gpuready.frontends.text import render

    hardware, problems = probe_hardware(ReplayHost(FIXTURES / "mac-intel-i9"))
    lines = render(build_report(hardware, problems, catalog)).splitlines()
    assert "Backends  metal unusable" in lines
    hardware, problems = probe_hardware(ReplayHost(FIXTURES / "linux-strix-ryzen-ai-370"))
    lines = render(build_report(hardware, problems, catalog)).splitlines()
    assert "NPUs      AMD Ryzen AI NPU (Strix Point / Krackan Point) · 50 TOPS" in lines
    assert "Backends  vulkan 1.4.305" in lines


def test_gpu_verdicts_under_rosetta_say_the_gpu_is_not_usable_from_this_process():
    # The x86_64 Python under Rosetta 2 reported "metal unusable" and then placed every model on the GPU without a
    # word: each GPU verdict now says why its figures are not this process's, and CPU verdicts say nothing of it.
    from gpuready.host import ReplayHost
    from gpuready.probes import probe_hardware
    from gpuready.tasks.registry import judge_all, load_catalog
    from gpuready.tasks.verdict import Options

    caveat = ("not usable from this process: metal (this Python runs under Rosetta 2 (x86_64): no MPS or MLX); the "
              "figures are for a process that can drive the GPU (see Problems)")
    for name, expected in (("mac-m1-rosetta-python", True), ("mac-m2-air-16gb", False)):
        hardware, _ = probe_hardware(ReplayHost(Path(__file__).parent / "fixtures" / "machines" / name))
        verdicts = judge_all(load_catalog(), hardware, Options())
        on_gpu = [v for v in verdicts if v.placement not in (None, "cpu")]
        assert on_gpu
        assert all((caveat in v.reasons) == expected for v in on_gpu), name
        assert not any(caveat in v.reasons for v in verdicts if v.placement in (None, "cpu"))
