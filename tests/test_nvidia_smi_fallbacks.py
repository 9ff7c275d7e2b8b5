"""Without NVML: `nvidia-smi -L` (GPUs and MIG instances), CSV rows with [N/A] cells or other cell counts, Jetson's L4T release."""

from __future__ import annotations

import shutil

from pathlib import Path

from gpu_fakes import FakeHost, pci_files

from gpuready.hardware import Problem
from gpuready.host import CommandResult, ReplayHost
from gpuready.probes import nvidia, nvidia_fallback
from gpuready.probes import nvidia_smi_more as more

MIB = 1024**2
MACHINES = Path(__file__).parent / "fixtures" / "machines"
NO_PYNVML = {"nvml": {"error": "PYNVML_NOT_INSTALLED"}}
# `nvidia-smi -L` on an A100 80GB PCIe with two MIG instances
# (https://github.com/NVIDIA/nvidia-container-toolkit/issues/203), UUIDs scrubbed.
LIST_MIG = (
    "GPU 0: NVIDIA A100 80GB PCIe (UUID: GPU-00000000-0000-0000-0000-000000000001)\n"
    "  MIG 3g.40gb     Device  0: (UUID: MIG-00000000-0000-0000-0000-000000000002)\n"
    "  MIG 3g.40gb     Device  1: (UUID: MIG-00000000-0000-0000-0000-000000000003)\n"
)


def test_nvidia_smi_list_gives_each_gpu_with_its_mig_instances():
    assert more.parse_list(LIST_MIG) == [
        more.Listed(0, "NVIDIA A100 80GB PCIe", "GPU-00000000-0000-0000-0000-000000000001", (
            ("3g.40gb", 0, "MIG-00000000-0000-0000-0000-000000000002"),
            ("3g.40gb", 1, "MIG-00000000-0000-0000-0000-000000000003"),
        )),
    ]


def test_nvidia_smi_list_without_mig_and_with_an_error_line_lists_only_the_gpus():
    # A plain two-GPU listing as in https://github.com/NVIDIA/go-dcgm/issues/30, plus a line of noise.
    text = ("GPU 0: NVIDIA GeForce RTX 4090 (UUID: GPU-00000000-0000-0000-0000-000000000001)\n"
            "GPU 1: NVIDIA RTX A5000 (UUID: GPU-00000000-0000-0000-0000-000000000002)\n"
            "Unable to determine the device handle for gpu 0000:02:00.0: Unknown Error\n")
    assert [(g.index, g.name, g.migs) for g in more.parse_list(text)] == [
        (0, "NVIDIA GeForce RTX 4090", ()), (1, "NVIDIA RTX A5000", ())]


def test_a_mig_profile_name_gives_a_memory_floor_in_bytes():
    assert [more.mig_profile_bytes(p) for p in ("3g.20gb", "1g.5gb", "7g.80gb", "odd")] == [20 * 10**9, 5 * 10**9, 80 * 10**9, None]


def test_not_available_cells_anywhere_in_a_csv_row_read_as_unknown():
    seen = nvidia_fallback.parse_smi_csv("0, NVIDIA GB10, [N/A], [Not Supported], [N/A], [N/A]\n")
    gpu = seen[0].gpu
    assert (gpu.name, gpu.memory_total_bytes, gpu.memory_free_bytes, gpu.driver_version, gpu.pci_id) == ("NVIDIA GB10", None, None, None, None)


def test_a_gpu_name_with_a_comma_is_joined_back_instead_of_dropping_the_row():
    seen = nvidia_fallback.parse_smi_csv("0, NVIDIA GeForce RTX 4090, Founders, 24564, 23012, 550.54.14, 0x268410DE\n")
    assert [(s.gpu.name, s.gpu.memory_total_bytes, s.gpu.pci_id) for s in seen] == [("NVIDIA GeForce RTX 4090, Founders", 24564 * MIB, "10de:2684")]


def test_a_gpu_row_that_cannot_be_read_is_a_warning_naming_the_row():
    text = "0, NVIDIA GeForce RTX 4090, 24564, 23012, 550.54.14, 0x268410DE\n1, Unable to determine the device handle\n"
    assert more.csv_problems(text) == [Problem(
        "nvidia", "nvidia-smi listed a GPU gpuready could not read: '1, Unable to determine the device handle'",
        "Run `nvidia-smi -q` to see what the driver reports for this GPU.", "warning")]
    assert more.csv_problems("No devices were found\n") == []


def test_the_l4t_release_is_read_from_nv_tegra_release():
    line = "# R35 (release), REVISION: 4.1, GCID: 33958178, BOARD: t186ref, EABI: aarch64, DATE: Tue Aug  1 19:57:35 UTC 2023\n"
    assert [more.parse_l4t(t) for t in (line, "# R36 (release), REVISION: 2.0, GCID: 35084178, BOARD: generic, EABI: aarch64, DATE: Tue Dec 19 05:55:03 UTC 2023", "garbage", "")] == [
        "R35.4.1", "R36.2.0", None, None]


def test_without_nvml_a_mig_gpu_is_judged_as_its_instances_listed_by_nvidia_smi():
    gpus, problems = nvidia.probe(ReplayHost(MACHINES / "nvidia-a100-mig-nvidia-smi"))
    assert [(g.name, g.mig_profile, g.memory_total_bytes, g.memory_usable_bytes, g.index, g.source) for g in gpus] == [
        ("NVIDIA A100 80GB PCIe MIG 3g.40gb", "3g.40gb", 40 * 10**9, None, 0, "nvidia-smi -L")] * 2
    assert problems[0] == Problem(
        "nvidia", "NVIDIA A100 80GB PCIe is split into 2 MIG instance(s) (3g.40gb); without NVML each instance's memory is the size "
        "its profile names (3g.40gb: 40 GB) and its free memory is unknown",
        "Install nvidia-ml-py (`pip install nvidia-ml-py`) for each instance's exact memory.", "info")


def test_a_mig_uuid_from_nvidia_smi_list_selects_that_instance_for_cuda():
    host = ReplayHost(MACHINES / "nvidia-a100-mig-nvidia-smi")
    host = FakeHost(commands={nvidia.SMI_ARGV: host.run(nvidia.SMI_ARGV), more.LIST_ARGV: CommandResult("ok", 0, LIST_MIG, "")},
                    libraries=NO_PYNVML, environment={"CUDA_VISIBLE_DEVICES": "MIG-00000000-0000-0000-0000-000000000003"})
    gpus, _ = nvidia.probe(host)
    assert [g.counted for g in gpus] == [False, True]


def test_without_nvml_a_gb10_takes_its_memory_from_proc_meminfo_when_nvidia_smi_says_n_a():
    # The row NVIDIA's DGX Spark known-issues page shows (quoted in https://github.com/unslothai/unsloth/pull/10703),
    # and the DGX Spark's /proc/meminfo from fixture nvidia-gb10-dgx-spark.
    meminfo = (MACHINES / "nvidia-gb10-dgx-spark" / "root" / "proc" / "meminfo").read_text()
    smi = CommandResult("ok", 0, "0, NVIDIA GB10, [N/A], [N/A], 580.95.05, [N/A]\n", "")
    listed = CommandResult("ok", 0, "GPU 0: NVIDIA GB10 (UUID: GPU-00000000-0000-0000-0000-000000000001)\n", "")
    host = FakeHost(arch="arm64", files={"/proc/meminfo": meminfo}, commands={nvidia.SMI_ARGV: smi, more.LIST_ARGV: listed}, libraries=NO_PYNVML)
    gpus, problems = nvidia.probe(host)
    assert [(g.name, g.kind, g.memory_total_bytes, g.memory_usable_bytes, g.driver_version, g.source) for g in gpus] == [
        ("NVIDIA GB10", "unified", 127600748 * 1024, 118566368 * 1024, "580.95.05", "nvidia-smi+proc_meminfo")]
    assert [p.severity for p in problems] == ["info"]


def test_a_jetson_without_nvml_or_nvidia_smi_reports_its_l4t_release():
    gpus, problems = nvidia.probe(ReplayHost(MACHINES / "nvidia-jetson-agx-orin-l4t"))
    assert [(g.name, g.kind, g.driver, g.driver_version) for g in gpus] == [("NVIDIA Jetson AGX Orin", "unified", "nvgpu", "L4T R35.4.1")]
    assert [p.severity for p in problems] == ["info"]


def test_a_failing_nvidia_smi_list_leaves_the_csv_gpus_whole_and_says_mig_instances_go_unseen():
    smi = CommandResult("ok", 0, "0, NVIDIA GeForce RTX 4090, 24564, 23012, 550.54.14, 0x268410DE\n", "")
    failed = CommandResult("ok", 255, "", "Unable to determine the device handle\n")
    gpus, problems = nvidia.probe(FakeHost(commands={nvidia.SMI_ARGV: smi, more.LIST_ARGV: failed}, libraries=NO_PYNVML))
    assert [(g.name, g.memory_total_bytes, g.mig_profile) for g in gpus] == [("NVIDIA GeForce RTX 4090", 24564 * MIB, None)]
    assert problems[0] == Problem("nvidia", "`nvidia-smi -L` failed (exit code 255): MIG instances, if any, are not seen and each GPU is judged whole",
                                  "Run `nvidia-smi -L` to see the MIG instances the driver lists.", "info")


def test_an_nvidia_smi_list_that_times_out_on_a_gpu_that_can_be_split_is_a_warning(tmp_path):
    # The A100 recording with `nvidia-smi -L` hung: the CSV's whole 80 GB card is all gpuready sees, and a verdict for
    # it would be wrong for a 40 GB slice, so the report says so as a warning, not an info line.
    machine = tmp_path / "machine"
    shutil.copytree(MACHINES / "nvidia-a100-mig-nvidia-smi", machine)
    (machine / "commands" / "nvidia-smi_L.timeout").write_text("")
    gpus, problems = nvidia.probe(ReplayHost(machine))
    assert [(g.name, g.mig_profile) for g in gpus] == [("NVIDIA A100 80GB PCIe", None)]
    assert problems[0].severity == "warning"
    assert problems[0].message == ("`nvidia-smi -L` timed out: whether NVIDIA A100 80GB PCIe is split into MIG instances is unknown, "
                                   "and each GPU is judged whole; a MIG instance has only part of its memory and compute")


def test_a_recording_replays_the_same_whatever_the_load_on_this_machine(monkeypatch):
    # Replayed commands read files; the 1.2 s budget for live commands once expired on a loaded machine and dropped
    # the A100 recording's MIG slices in some runs. Replay now has no wall-clock budget: a zero live budget changes nothing.
    from gpuready.probes import commands, probe_hardware

    monkeypatch.setattr(commands, "COMMAND_BUDGET_S", 0.0)
    hardware, problems = probe_hardware(ReplayHost(MACHINES / "nvidia-a100-mig-nvidia-smi"))
    assert [g.mig_profile for g in hardware.gpus] == ["3g.40gb", "3g.40gb"]
    assert not [p for p in problems if "did not answer" in p.message]


def test_nvidia_smi_exiting_0_with_no_readable_row_falls_back_to_the_pci_bus():
    files = pci_files("0000:01:00.0", "0x10de", "0x2684", driver="nvidia")
    garbage = CommandResult("ok", 0, "0, NVIDIA GeForce RTX 4090\n", "")
    gpus, problems = nvidia.probe(FakeHost(files=files, commands={nvidia.SMI_ARGV: garbage}, libraries=NO_PYNVML))
    assert [(g.name, g.counted) for g in gpus] == [("NVIDIA GPU 10de:2684", False)]
    assert [p.severity for p in problems] == ["warning", "warning"]
    assert "nvidia-smi printed no GPU row gpuready could read" in problems[0].message
    assert "'0, NVIDIA GeForce RTX 4090'" in problems[1].message


def test_a_jetson_whose_device_tree_model_is_unreadable_is_still_found_from_nv_tegra_release():
    host = FakeHost(arch="arm64", files={"/proc/device-tree/model": "\x00\x00", "/etc/nv_tegra_release": "# R36 (release), REVISION: 2.0, GCID: 35084178, BOARD: generic, EABI: aarch64, DATE: Tue Dec 19 05:55:03 UTC 2023\n"})
    gpus, _ = nvidia.probe(host)
    assert [(g.name, g.kind, g.driver_version) for g in gpus] == [("NVIDIA Jetson", "unified", "L4T R36.2.0")]
