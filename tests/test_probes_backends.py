"""Backends probe: CUDA, ROCm support by gfx target, Metal, Vulkan (real vs software), DirectML,
and the OpenVINO/PyTorch subprocess with fake interpreters."""

from __future__ import annotations

import json
import shutil
import stat
import sys
from pathlib import Path

import pytest

from gpuready.hardware import GPU, Backend, Problem
from gpuready.host import LiveHost, ReplayHost, command_slug
from gpuready.probes import backends, pyinfo

FIXTURES = Path(__file__).parent / "fixtures" / "machines"
VULKAN = command_slug(["vulkaninfo", "--summary"])


def machine(name: str) -> ReplayHost:
    return ReplayHost(FIXTURES / name)


def linux_machine(tmp_path: Path, files: dict[str, str], commands: dict[str, str] | None = None) -> ReplayHost:
    (tmp_path / "machine.toml").write_text('platform = "linux"\narch = "x86_64"\n')
    for path, text in files.items():
        target = tmp_path / "root" / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    for slug, text in (commands or {}).items():
        (tmp_path / "commands").mkdir(exist_ok=True)
        (tmp_path / "commands" / f"{slug}.txt").write_text(text)
    return ReplayHost(tmp_path)


RADV_SUMMARY = (FIXTURES / "linux-strix-ryzen-ai-370" / "commands" / f"{VULKAN}.txt").read_text().replace(
    "AMD Radeon 890M Graphics (RADV GFX1150)", "AMD Radeon RX 6600 (RADV NAVI23)"
)


def test_vulkan_counts_real_gpus_and_ignores_llvmpipe():
    backend, real = backends.vulkan_backend(machine("linux-meteor-lake-npu"))
    assert backend == Backend("vulkan", True, version="1.3.274", detail="Intel(R) Arc(tm) Graphics (MTL)", source="vulkaninfo")
    assert [d["vendorID"] for d in real] == ["0x8086"]


def test_vulkan_with_only_llvmpipe_is_not_available(tmp_path):
    summary = (FIXTURES / "linux-meteor-lake-npu" / "commands" / f"{VULKAN}.txt").read_text()
    software_only = summary[summary.index("GPU1:"):].replace("GPU1:", "Devices:\n========\nGPU0:")
    host = linux_machine(tmp_path, {}, {VULKAN: software_only})
    assert backends.vulkan_backend(host) == (
        Backend("vulkan", False, detail="only software rendering (llvmpipe (LLVM 17.0.6, 256 bits))", source="vulkaninfo"),
        [],
    )


def test_cuda_reports_the_driver_and_the_toolkit_a_framework_would_find(tmp_path):
    host = linux_machine(tmp_path, {
        "/proc/driver/nvidia/version": "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.14  Thu Feb 22 01:44:30 UTC 2024\n"
                                       "GCC version:  gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04) \n",
        "/usr/local/cuda/version.json": json.dumps({"cuda": {"name": "CUDA SDK", "version": "12.4.1"},
                                                    "cuda_cudart": {"name": "CUDA Runtime (cudart)", "version": "12.4.127"}}),
    })
    assert backends.cuda_backend(host) == Backend(
        "cuda", True, version="550.54.14", detail="driver 550.54.14; CUDA toolkit 12.4.1 in /usr/local/cuda", source="nvidia-driver"
    )


def test_an_amd_card_rocm_does_not_support_falls_back_to_vulkan(tmp_path):
    host = linux_machine(tmp_path, {"/opt/rocm/.info/version": "6.1.2-119\n"}, {VULKAN: RADV_SUMMARY})
    card = GPU(vendor="amd", name="AMD Radeon RX 6600", gfx_target="gfx1032")
    found, problems = backends.probe(host, gpus=(card,))
    assert Backend("rocm", False, version="6.1.2-119", detail="gfx targets gfx1032; supported: none", source="/opt/rocm") in found
    assert problems == [
        Problem("backends", "ROCm 6.1.2-119 does not support gfx1032 (AMD's support matrix)",
                "llama.cpp with Vulkan runs on this GPU; HSA_OVERRIDE_GFX_VERSION may make ROCm work unofficially.", "warning")
    ]
    assert backends.assign((card,), tuple(found), host)[0].backends == ("vulkan",)


def test_an_amd_card_rocm_supports_gets_rocm_and_vulkan(tmp_path):
    host = linux_machine(tmp_path, {"/opt/rocm/.info/version": "6.1.2-119\n"}, {VULKAN: RADV_SUMMARY})
    card = GPU(vendor="amd", name="AMD Radeon RX 7900 XTX", gfx_target="gfx1100")
    found, problems = backends.probe(host, gpus=(card,))
    assert problems == []
    assert backends.assign((card,), tuple(found), host)[0].backends == ("rocm", "vulkan")


def test_rocm_reads_gfx_targets_from_kfd_when_no_gpu_names_one(tmp_path):
    host = linux_machine(tmp_path, {
        "/opt/rocm/.info/version": "6.4.1-1\n",
        "/sys/class/kfd/kfd/topology/nodes/0/properties": "cpu_cores_count 16\nsimd_count 0\ngfx_target_version 0\n",
        "/sys/class/kfd/kfd/topology/nodes/1/properties": "cpu_cores_count 0\nsimd_count 192\ngfx_target_version 120001\n",
    })
    rocm, problems = backends.rocm_backend(host, [])
    assert (rocm.available, rocm.detail, problems) == (True, "gfx targets gfx1201; supported: gfx1201", [])
    assert backends.gfx_from_target_version(90010) == "gfx90a"


def test_apple_silicon_has_metal_and_an_intel_mac_does_not():
    assert backends.metal_backend(machine("mac-m3-max-40c-64gb")) == Backend(
        "metal", True, version="Metal 3", detail="Apple M3 GPU: llama.cpp (Metal), MLX, PyTorch MPS", source="system_profiler"
    )
    assert backends.metal_backend(machine("mac-intel-i9")).available is False


def test_a_windows_machine_with_directml_only_reports_just_directml():
    assert backends.probe(machine("windows-directml-only")) == (
        [Backend("directml", True, version="1.13.1", detail="DirectML.dll in System32: ONNX Runtime (DirectML EP), Windows ML", source="windows")],
        [],
    )


# --- the Python subprocess ------------------------------------------------------------------


def fake_python(tmp_path: Path, body: str) -> str:
    script = tmp_path / "fakepython"
    script.write_text("#!/bin/sh\n" + body + "\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return str(script)


def test_a_torch_check_that_times_out_is_a_warning_not_a_hang(tmp_path, monkeypatch):
    monkeypatch.setattr(backends, "TORCH_TIMEOUT_S", 0.5)
    python = fake_python(tmp_path, "sleep 10")
    found, problems = backends.python_backends(LiveHost(), python, torch=True)
    assert found == []
    assert problems == [
        Problem("backends", "PyTorch/OpenVINO check: fakepython did not answer within 0.5 s",
                "Importing torch can be slow on first run; try again, or run without --torch.", "warning")
    ]


def test_a_torch_check_that_prints_garbage_is_a_warning(tmp_path):
    python = fake_python(tmp_path, "echo 'Illegal instruction (core dumped)'")
    found, problems = backends.python_backends(LiveHost(), python, torch=True)
    assert found == []
    assert [(p.severity, "cannot read" in p.message) for p in problems] == [("warning", True)]


def test_a_recorded_torch_timeout_replays_as_a_warning(tmp_path):
    root = tmp_path / "m"
    shutil.copytree(FIXTURES / "linux-meteor-lake-npu", root)
    (root / "commands" / (command_slug(["python3", "-m", "gpuready.probes.pyinfo", "--import"]) + ".timeout")).write_text("")
    found, problems = backends.probe(ReplayHost(root), python="python3", torch=True)
    assert [b.name for b in found] == ["vulkan"]
    assert [p.message for p in problems] == ["PyTorch/OpenVINO check: python3 did not answer within 30 s"]


def test_torch_and_openvino_report_the_devices_they_see(tmp_path):
    answer = {
        "machine": "x86_64",
        "packages": {"torch": "2.5.1", "openvino": "2024.6.0", "onnxruntime": None},
        "torch": {"version": "2.5.1+xpu", "cuda": None, "hip": None, "cuda_available": False, "cuda_devices": [],
                  "mps_available": False, "xpu_available": True},
        "openvino_devices": ["CPU", "GPU", "NPU"],
    }
    python = fake_python(tmp_path, f"echo '{json.dumps(answer)}'")
    found, problems = backends.python_backends(LiveHost(), python, torch=True)
    assert problems == []
    assert found == [
        Backend("openvino", True, version="2024.6.0", detail="devices: CPU, GPU, NPU", source="python"),
        Backend("torch", True, version="2.5.1+xpu", detail="devices: xpu", source="python"),
    ]


def test_the_real_interpreter_answers_the_cheap_package_check():
    found, problems = backends.python_backends(LiveHost(), sys.executable, torch=False)
    assert problems == []
    assert all(b.name == "openvino" for b in found)  # torch is only reported on request


def test_the_child_prints_what_the_parent_parses():
    assert pyinfo.parse("warning: noise\n" + json.dumps(pyinfo.main([]))) == pyinfo.main([])


def test_package_versions_come_from_the_python_readout_without_starting_an_interpreter():
    from gpuready.hardware import Backend
    from gpuready.probes.backends import python_backends
    from gpuready.testing import FakeHost

    host = FakeHost(libraries={"python": {"machine": "x86_64", "packages": {"openvino": "2024.4.0", "torch": None}}})
    assert python_backends(host, "/usr/bin/python3", torch=False) == (
        [Backend("openvino", True, version="2024.4.0", detail=None, source="python")],
        [],
    )
    assert host.runs == []


def test_a_gpu_only_vulkan_lists_is_a_problem_not_a_silent_none_found():
    # The Strix Point laptop recording has vulkaninfo but no /sys/class/drm (as in a container that hides it): the
    # report read "GPUs: none found" while llama.cpp's Vulkan backend would run on the Radeon 890M.
    from gpuready.probes import probe_hardware

    hardware, problems = probe_hardware(machine("linux-strix-ryzen-ai-370"))
    assert hardware.gpus == ()
    unseen = [p for p in problems if p.probe == "vulkan"]
    assert [(p.severity, p.message.split(",")[0]) for p in unseen] == [
        ("warning", "Vulkan lists AMD Radeon 890M Graphics (RADV GFX1150) (integrated GPU)")]
    # The what-if flag that shows what it could run, under the table's name for it (RADV adds its codename).
    assert unseen[0].hint.endswith("or see what it could run with --gpu '890M'.")
    assert hardware.cpu.name and hardware.memory.total_bytes  # every other probe still ran
    # With that what-if, the machine's own GPU Problems go, as the GPU they are about is replaced.
    from gpuready.whatif import compose

    _, kept = compose(hardware, problems, gpu="890M")
    assert [p.probe for p in kept if p.probe == "vulkan"] == []


def test_a_vulkan_name_finds_its_table_row_through_the_drivers_own_words():
    flag = backends._what_if_flag
    assert flag("Microsoft Direct3D12 (NVIDIA GeForce RTX 3080)") == "--gpu 'RTX 3080'"  # WSL2's Direct3D 12 bridge
    assert flag("Intel(R) Arc(tm) A770 Graphics (DG2)") == "--gpu 'Arc A770'"
    assert flag("Intel(R) Arc(tm) Graphics (MTL)") == "--gpu 'Arc Graphics'"
    assert flag("Some GPU 9000 (X)") == "--gpu NAME (`gpuready models --gpus` lists the names)"


def _gpu(vendor: str, pci_id: str | None, name: str = "probed") -> GPU:
    return GPU(vendor, name, pci_id=pci_id)


def test_a_vulkan_device_is_a_probed_gpu_by_pci_id_or_else_by_vendor(tmp_path):
    # RADV_SUMMARY lists one AMD GPU, vendorID 0x1002, deviceID 0x150e, and llvmpipe.
    host = linux_machine(tmp_path, {}, {VULKAN: RADV_SUMMARY})
    assert backends.unseen_vulkan_gpus((_gpu("amd", "1002:150e"),), host) == []
    # A GPU probed without a PCI id (Apple's, a Jetson's) or one a translation layer reports under other ids is
    # paired by vendor...
    assert backends.unseen_vulkan_gpus((_gpu("amd", None),), host) == []
    assert backends.unseen_vulkan_gpus((_gpu("amd", "1002:73ff"),), host) == []
    # ...but a GPU of another vendor is not this one, and neither is nothing.
    for probed in ((_gpu("nvidia", "10de:2684"),), ()):
        assert [p.message.split(" (")[0] for p in backends.unseen_vulkan_gpus(probed, host)] == [
            "Vulkan lists AMD Radeon RX 6600"]


def test_two_vulkan_gpus_of_one_vendor_with_one_probed_leave_one_unseen(tmp_path):
    second = RADV_SUMMARY.replace("GPU1:", "GPU1:\n\tvendorID           = 0x1002\n\tdeviceID           = 0x73ff\n"
                                  "\tdeviceType         = PHYSICAL_DEVICE_TYPE_DISCRETE_GPU\n"
                                  "\tdeviceName         = AMD Radeon RX 6600 XT (RADV NAVI23)\nGPU2:")
    host = linux_machine(tmp_path, {}, {VULKAN: second})
    assert [d["deviceName"] for d in backends.vulkan_backend(host)[1]] == [
        "AMD Radeon RX 6600 (RADV NAVI23)", "AMD Radeon RX 6600 XT (RADV NAVI23)"]
    problems = backends.unseen_vulkan_gpus((_gpu("amd", "1002:150e"),), host)
    assert [p.message.split(", which")[0] for p in problems] == [
        "Vulkan lists AMD Radeon RX 6600 XT (RADV NAVI23) (discrete GPU)"]
    # No vulkaninfo: nothing to compare, no Problem.
    (tmp_path / "bare").mkdir()
    assert backends.unseen_vulkan_gpus((), linux_machine(tmp_path / "bare", {})) == []


@pytest.mark.parametrize(
    ("packages", "said"),
    [
        ({"torch": None, "openvino": None, "onnxruntime": None}, True),  # nobody to ask: the report says so
        ({"torch": None, "openvino": "2024.6.0", "onnxruntime": None}, False),  # OpenVINO answered
    ],
)
def test_torch_with_neither_framework_installed_says_so(tmp_path, packages, said):
    answer = {"machine": "x86_64", "packages": packages, "openvino_devices": ["CPU"]}
    python = fake_python(tmp_path, f"echo '{json.dumps(answer)}'")
    _, problems = backends.python_backends(LiveHost(), python, torch=True)
    assert [(p.severity, p.message.startswith("--torch: neither PyTorch nor OpenVINO is installed for fakepython"),
             "gpuready[torch]" in p.hint) for p in problems] == ([("info", True, True)] if said else [])
    # without --torch nothing was asked, and nothing is said
    assert backends.python_backends(LiveHost(), python, torch=False)[1] == []
