"""The NVIDIA probe over fake NVML readouts: every NVML error it tolerates, nvidia-smi, visibility, MIG."""

from __future__ import annotations

import sys
import types

import pytest
from gpu_fakes import FakeHost, pci_files

from gpuready.hardware import GPU, Problem
from gpuready.host import CommandResult
from gpuready.probes import nvidia, nvidia_fallback
from gpuready.readouts import nvml as nvml_readout

MIB = 1024**2
RTX_4090 = {
    "index": 0, "name": "NVIDIA GeForce RTX 4090", "uuid": "GPU-00000000-0000-0000-0000-000000000001",
    "pci_device_id": 0x268410DE, "memory": {"total": 24563 * MIB, "free": 22952 * MIB, "used": 1287 * MIB, "version": 2},
    "compute_capability": [8, 9], "architecture": 8, "memory_bus_width_bits": 384, "max_memory_clock_mhz": 10501,
}
READOUT = {"driver_version": "550.54.14", "cuda_driver_version": 12040, "devices": [RTX_4090]}
PCI_4090 = pci_files("0000:01:00.0", "0x10de", "0x2684")


def gpu_4090(**changes) -> GPU:
    values = dict(
        vendor="nvidia", name="NVIDIA GeForce RTX 4090", index=0, memory_total_bytes=24563 * MIB,
        memory_free_bytes=22952 * MIB, memory_usable_bytes=22952 * MIB, bandwidth_bytes_per_s=1_008_096_000_000,
        bandwidth_source="nvml", architecture="Ada Lovelace", compute_capability="8.9", driver="nvidia",
        driver_version="550.54.14", cuda_version="12.4", pci_id="10de:2684", backends=("cuda",), source="nvml",
    )
    values.update(changes)
    return GPU(**values)


def test_a_working_nvml_gives_free_memory_and_bandwidth_from_bus_width_and_clock():
    assert nvidia.probe(FakeHost(libraries={"nvml": READOUT})) == ([gpu_4090()], [])


@pytest.mark.parametrize(
    "error, hint",
    [
        ("NVML_ERROR_DRIVER_NOT_LOADED", nvidia.NVML_HINTS["NVML_ERROR_DRIVER_NOT_LOADED"]),
        ("NVML_ERROR_LIB_RM_VERSION_MISMATCH", nvidia.NVML_HINTS["NVML_ERROR_LIB_RM_VERSION_MISMATCH"]),
        ("NVML_ERROR_NO_PERMISSION", nvidia.NVML_HINTS["NVML_ERROR_NO_PERMISSION"]),
        # A missing library with no driver bound to the card: the driver is what is missing.
        ("NVML_ERROR_LIBRARY_NOT_FOUND", nvidia.NVML_HINTS["NVML_ERROR_DRIVER_NOT_LOADED"]),
        ("PYNVML_NOT_INSTALLED", nvidia.NVML_HINTS["NVML_ERROR_DRIVER_NOT_LOADED"]),
        ("NVML_ERROR_GPU_IS_LOST", "Run `nvidia-smi` to see what the driver says."),
        ("NVML_ERROR_UNKNOWN", "Run `nvidia-smi` to see what the driver says."),
        ("NVML_INIT_FAILED", "Run `nvidia-smi` to see what the driver says."),
    ],
)
def test_every_nvml_start_error_with_a_gpu_on_the_bus_is_a_warning_with_a_hint(error, hint):
    host = FakeHost(files=PCI_4090, libraries={"nvml": {"error": error}})
    gpus, problems = nvidia.probe(host)
    assert gpus == [
        GPU(vendor="nvidia", name="NVIDIA GPU 10de:2684", pci_id="10de:2684", counted=False,
            not_counted_reason=f"the NVIDIA driver is not usable: {error}", source="sysfs")
    ]
    assert problems == [Problem("nvidia", f"1 NVIDIA GPU(s) on the PCI bus but the driver cannot be used: {error}", hint, "warning")]


@pytest.mark.parametrize("error", ["NVML_ERROR_LIBRARY_NOT_FOUND", "PYNVML_NOT_INSTALLED"])
def test_no_nvidia_library_and_no_gpu_means_nothing_to_report(error):
    assert nvidia.probe(FakeHost(libraries={"nvml": {"error": error}})) == ([], [])


@pytest.mark.parametrize("error", ["NVML_ERROR_DRIVER_NOT_LOADED", "NVML_ERROR_LIB_RM_VERSION_MISMATCH", "NVML_ERROR_NO_PERMISSION"])
def test_an_nvml_that_fails_to_start_is_a_problem_even_with_no_pci_files_and_no_nvidia_smi(error):
    # A container or VM can hide /sys/bus/pci; NVML's own error is then the only sign of the GPU (issue 16).
    assert nvidia.probe(FakeHost(libraries={"nvml": {"error": error, "detail": "from nvmlInit"}})) == ([], [
        Problem("nvidia", f"NVML failed ({error} (from nvmlInit)) and no NVIDIA GPU is visible on the PCI bus", nvidia.NVML_HINTS[error], "warning")
    ])


def test_nvidia_smi_version_mismatch_names_the_reboot_fix():
    smi = CommandResult("ok", 18, "Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 550.120\n", "")
    host = FakeHost(files=PCI_4090 | {"/sys/bus/pci/devices/0000:01:00.0/uevent": "DRIVER=nvidia\n"}, commands={nvidia.SMI_ARGV: smi})
    _, problems = nvidia.probe(host)
    assert problems == [Problem("nvidia", "1 NVIDIA GPU(s) on the PCI bus but the driver cannot be used: NVML_ERROR_LIB_RM_VERSION_MISMATCH",
                                nvidia.NVML_HINTS["NVML_ERROR_LIB_RM_VERSION_MISMATCH"], "warning")]


def test_the_nouveau_driver_gets_its_own_hint():
    host = FakeHost(files=pci_files("0000:01:00.0", "0x10de", "0x2684", driver="nouveau"))
    _, problems = nvidia.probe(host)
    assert problems[0].hint.startswith("The open-source nouveau driver is bound")


def test_wsl2_without_a_usable_nvml_points_at_the_windows_driver():
    host = FakeHost(files={"/proc/sys/kernel/osrelease": "5.15.153.1-microsoft-standard-WSL2\n", "/dev/dxg": ""},
                    libraries={"nvml": {"error": "NVML_ERROR_LIBRARY_NOT_FOUND"}})
    assert nvidia.probe(host) == ([], [Problem("nvidia", "a WSL2 GPU (/dev/dxg) but the driver cannot be used: NVML_ERROR_LIBRARY_NOT_FOUND",
                                               nvidia.WSL_HINT, "warning")])


def test_nvidia_smi_stands_in_when_pynvml_is_missing():
    smi = CommandResult("ok", 0, "0, NVIDIA GeForce RTX 4090, 24564, 23012, 550.54.14, 0x268410DE\n", "")
    listed = CommandResult("ok", 0, "GPU 0: NVIDIA GeForce RTX 4090 (UUID: GPU-00000000-0000-0000-0000-000000000001)\n", "")
    host = FakeHost(commands={nvidia.SMI_ARGV: smi, ("nvidia-smi", "-L"): listed}, libraries={"nvml": {"error": "PYNVML_NOT_INSTALLED"}})
    gpus, problems = nvidia.probe(host)
    assert gpus == [
        GPU(vendor="nvidia", name="NVIDIA GeForce RTX 4090", index=0, memory_total_bytes=24564 * MIB, memory_free_bytes=23012 * MIB,
            memory_usable_bytes=23012 * MIB, bandwidth_bytes_per_s=1_008_000_000_000, bandwidth_source="table:rtx-4090",
            driver="nvidia", driver_version="550.54.14", pci_id="10de:2684", backends=("cuda",), source="nvidia-smi")
    ]
    assert [p.severity for p in problems] == ["info"]


def test_nvidia_smi_not_available_values_stay_unknown():
    # `nvidia-smi --query-gpu=...` on a DGX Spark: https://github.com/marimo-team/marimo/pull/6822
    seen = nvidia_fallback.parse_smi_csv("0, NVIDIA GB10, [N/A], [N/A], 580.95.05, [N/A]\n")
    assert [(s.gpu.kind, s.gpu.memory_total_bytes, s.gpu.memory_free_bytes, s.gpu.pci_id) for s in seen] == [("unified", None, None, None)]


def test_a_field_nvml_does_not_support_is_left_unknown_and_the_table_fills_bandwidth():
    device = {k: v for k, v in RTX_4090.items() if k not in ("memory_bus_width_bits", "max_memory_clock_mhz")}
    device["errors"] = {"memory_bus_width_bits": "NVML_ERROR_NOT_SUPPORTED", "max_memory_clock_mhz": "NVML_ERROR_NOT_SUPPORTED"}
    gpus, problems = nvidia.probe(FakeHost(libraries={"nvml": READOUT | {"devices": [device]}}))
    assert (gpus, problems) == ([gpu_4090(bandwidth_bytes_per_s=1_008_000_000_000, bandwidth_source="table:rtx-4090")], [
        Problem("nvidia", "NVML could not answer every question about NVIDIA GeForce RTX 4090: nvmlDeviceGetMemoryBusWidth: "
                "NVML_ERROR_NOT_SUPPORTED, nvmlDeviceGetMaxClockInfo: NVML_ERROR_NOT_SUPPORTED", nvidia.FAILED_CALL_HINT, "info")])


def test_a_memory_size_nvml_cannot_read_on_a_discrete_card_is_a_warning():
    device = {k: v for k, v in RTX_4090.items() if k != "memory"} | {"errors": {"memory": "NVML_ERROR_GPU_IS_LOST"}}
    gpus, problems = nvidia.probe(FakeHost(libraries={"nvml": READOUT | {"devices": [device]}}))
    assert gpus == [gpu_4090(memory_total_bytes=None, memory_free_bytes=None, memory_usable_bytes=None)]
    assert problems == [Problem("nvidia", "NVML reports no memory size for NVIDIA GeForce RTX 4090 (nvmlDeviceGetMemoryInfo: NVML_ERROR_GPU_IS_LOST)",
                                "Verdicts use the GPU table's memory size, if the GPU is listed there.", "warning")]


def test_a_device_nvml_cannot_open_is_skipped_with_a_warning():
    readout = READOUT | {"devices": [{"index": 0, "errors": {"handle": "NVML_ERROR_GPU_IS_LOST"}}, RTX_4090 | {"index": 1}]}
    gpus, problems = nvidia.probe(FakeHost(libraries={"nvml": readout}))
    assert gpus == [gpu_4090(index=1)]
    assert problems == [Problem("nvidia", "NVML could not read GPU 0: nvmlDeviceGetHandleByIndex: NVML_ERROR_GPU_IS_LOST",
                                "Run `nvidia-smi -q` to see whether the driver can talk to this GPU.", "warning")]


def test_a_derived_bandwidth_far_from_the_table_loses_to_the_table_with_a_note():
    device = RTX_4090 | {"max_memory_clock_mhz": 405}  # an idle memory clock, not the maximum
    gpus, problems = nvidia.probe(FakeHost(libraries={"nvml": READOUT | {"devices": [device]}}))
    assert gpus == [gpu_4090(bandwidth_bytes_per_s=1_008_000_000_000, bandwidth_source="table:rtx-4090")]
    assert problems == [Problem("nvidia", "NVIDIA GeForce RTX 4090: nvml gives 39 GB/s memory bandwidth, the table 1008 GB/s (rtx-4090); using the table", severity="info")]


def test_mig_mode_without_instances_leaves_the_gpu_unusable():
    device = RTX_4090 | {"name": "NVIDIA A100-SXM4-40GB", "mig_mode": [1, 1], "mig_devices": []}
    gpus, _ = nvidia.probe(FakeHost(libraries={"nvml": READOUT | {"devices": [device]}}))
    assert [(g.counted, g.not_counted_reason) for g in gpus] == [(False, "MIG mode is on but no MIG instance exists, so CUDA cannot use this GPU")]


@pytest.mark.parametrize(
    "value, entries",
    [(None, None), ("", []), ("-1", []), ("1", ["1"]), ("0,2", ["0", "2"]), ("0,-1,1", ["0"]),
     ("GPU-00000000", ["GPU-00000000"]), ("MIG-00000000-0000-0000-0000-000000000002", ["MIG-00000000-0000-0000-0000-000000000002"])],
)
def test_cuda_visible_devices_is_read_the_way_cuda_reads_it(value, entries):
    assert nvidia.parse_visible_devices(value) == entries


def test_a_uuid_prefix_in_cuda_visible_devices_selects_that_gpu():
    second = RTX_4090 | {"index": 1, "uuid": "GPU-00000000-0000-0000-0000-000000000002"}
    host = FakeHost(environment={"CUDA_VISIBLE_DEVICES": "GPU-00000000-0000-0000-0000-0000000000"},
                    libraries={"nvml": READOUT | {"devices": [RTX_4090, second]}})
    gpus, _ = nvidia.probe(host)
    assert [g.counted for g in gpus] == [True, True]  # the prefix fits both: CUDA would refuse it, we do not hide either
    host.environment["CUDA_VISIBLE_DEVICES"] = "GPU-00000000-0000-0000-0000-000000000002"
    gpus, _ = nvidia.probe(host)
    assert [(g.index, g.counted) for g in gpus] == [(0, False), (1, True)]


def test_an_empty_cuda_visible_devices_hides_every_gpu_with_a_warning():
    gpus, problems = nvidia.probe(FakeHost(environment={"CUDA_VISIBLE_DEVICES": ""}, libraries={"nvml": READOUT}))
    assert [g.not_counted_reason for g in gpus] == ["not in CUDA_VISIBLE_DEVICES="]
    assert [p.severity for p in problems] == ["warning"]


def test_nvidia_visible_devices_none_hides_every_gpu():
    gpus, _ = nvidia.probe(FakeHost(environment={"NVIDIA_VISIBLE_DEVICES": "void"}, libraries={"nvml": READOUT}))
    assert [g.not_counted_reason for g in gpus] == ["NVIDIA_VISIBLE_DEVICES=void hides every GPU"]


def test_a_mig_uuid_in_cuda_visible_devices_selects_that_instance():
    device = RTX_4090 | {"name": "NVIDIA A100-SXM4-40GB", "mig_mode": [1, 1], "mig_devices": [
        {"index": 0, "name": "NVIDIA A100-SXM4-40GB MIG 3g.20gb", "uuid": "MIG-00000000-0000-0000-0000-000000000002", "memory": {"total": 20096 * MIB, "free": 20083 * MIB}},
        {"index": 1, "name": "NVIDIA A100-SXM4-40GB MIG 1g.5gb", "uuid": "MIG-00000000-0000-0000-0000-000000000003", "memory": {"total": 4864 * MIB, "free": 4858 * MIB}},
    ]}
    host = FakeHost(environment={"CUDA_VISIBLE_DEVICES": "MIG-00000000-0000-0000-0000-000000000003"}, libraries={"nvml": READOUT | {"devices": [device]}})
    gpus, _ = nvidia.probe(host)
    assert [(g.mig_profile, g.counted) for g in gpus] == [("3g.20gb", False), ("1g.5gb", True)]


def test_a_not_counted_reason_quotes_cuda_visible_devices_without_its_uuids():
    # A report carries no UUIDs: the variable is quoted with each UUID replaced, indices kept.
    real = "GPU-3f1c2a4e-8b7d-4c21-9e5f-0a1b2c3d4e5f"
    second = RTX_4090 | {"index": 1, "uuid": real}
    host = FakeHost(environment={"CUDA_VISIBLE_DEVICES": f"{real},7"}, libraries={"nvml": READOUT | {"devices": [RTX_4090, second]}})
    gpus, _ = nvidia.probe(host)
    assert [(g.index, g.not_counted_reason) for g in gpus] == [(0, "not in CUDA_VISIBLE_DEVICES=GPU-<uuid>,7"), (1, None)]


@pytest.mark.parametrize("value, quoted", [
    ("MIG-3f1c2a4e-8b7d-4c21-9e5f-0a1b2c3d4e5f", "MIG-<uuid>"),
    ("MIG-GPU-3f1c2a4e-8b7d-4c21-9e5f-0a1b2c3d4e5f/1/0", "MIG-GPU-<uuid>/1/0"),
    ("gpu-3f1c2a4e,2", "GPU-<uuid>,2"),  # CUDA's unique-prefix form
    ("3f1c2a4e-8b7d-4c21-9e5f-0a1b2c3d4e5f", "<uuid>"),
    ("GPU-b85e402c0fb3757f", "GPU-<uuid>"),  # ROCm's 16-hex id
    ("b85e402c0fb3757f,1", "<uuid>,1"),
    ("0,2", "0,2"), ("-1", "-1"), ("void", "void"), ("level_zero:0.1", "level_zero:0.1"),
])
def test_a_device_selection_variable_is_quoted_without_uuids(value, quoted):
    from gpuready.probes.fields import without_device_ids
    assert without_device_ids(value) == quoted


def test_the_report_of_a_mig_machine_quotes_no_mig_uuid(capsys, tmp_path):
    # The reviewer's reproduction: nvidia-a100-mig with CUDA_VISIBLE_DEVICES naming a MIG instance by UUID.
    import shutil
    from pathlib import Path

    from gpuready.frontends.cli import main
    machine = tmp_path / "m"
    shutil.copytree(Path(__file__).parent / "fixtures" / "machines" / "nvidia-a100-mig", machine)
    toml = machine / "machine.toml"
    toml.write_text(toml.read_text().replace("[env]", '[env]\nCUDA_VISIBLE_DEVICES = "MIG-00000000-0000-0000-0000-000000000003"', 1))
    assert main(["report", "--json", "--machine", str(machine)]) == 0
    out = capsys.readouterr().out
    assert "not in CUDA_VISIBLE_DEVICES=MIG-<uuid>" in out
    assert "0000-000000000003" not in out


# --- the readout itself, over a fake pynvml module -------------------------------------------------


class FakeNVMLError(Exception):
    def __init__(self, value):
        super().__init__(value)
        self.value = value


def fake_pynvml(init_error=None, memory_v2_error=None, bus_width_error=None, mig=False):
    module = types.ModuleType("pynvml")
    module.NVMLError = FakeNVMLError
    for name, value in [("NVML_ERROR_NOT_SUPPORTED", 3), ("NVML_ERROR_NOT_FOUND", 6), ("NVML_ERROR_DRIVER_NOT_LOADED", 9),
                        ("NVML_ERROR_FUNCTION_NOT_FOUND", 13), ("NVML_ERROR_LIB_RM_VERSION_MISMATCH", 18)]:
        setattr(module, name, value)
    module.nvmlMemory_v2 = 0x02000028
    module.NVML_CLOCK_MEM = 2
    module.NVML_DEVICE_MIG_ENABLE = 1
    calls = []

    def init():
        if init_error:
            raise FakeNVMLError(init_error)

    def memory(handle, version=None):
        if version and memory_v2_error:
            raise FakeNVMLError(memory_v2_error)
        total = 40536 * MIB if handle == "gpu" else 20096 * MIB
        return types.SimpleNamespace(total=total, free=total - 87 * MIB, used=87 * MIB, reserved=0)

    def bus_width(handle):
        if bus_width_error:
            raise FakeNVMLError(bus_width_error)
        return 5120

    def mig_handle(handle, index):
        if index == 1:
            raise FakeNVMLError(6)
        return "mig"

    module.nvmlInit = init
    module.nvmlShutdown = lambda: calls.append("shutdown")
    module.nvmlSystemGetDriverVersion = lambda: b"535.161.08"
    module.nvmlSystemGetCudaDriverVersion_v2 = lambda: 12020
    module.nvmlSystemGetNVMLVersion = lambda: "12.535.161.08"
    module.nvmlDeviceGetCount = lambda: 1
    module.nvmlDeviceGetHandleByIndex = lambda index: "gpu"
    module.nvmlDeviceGetIndex = lambda handle: 0
    module.nvmlDeviceGetName = lambda handle: "NVIDIA A100-SXM4-40GB" + (" MIG 3g.20gb" if handle == "mig" else "")
    module.nvmlDeviceGetUUID = lambda handle: "GPU-00000000-0000-0000-0000-000000000001"
    module.nvmlDeviceGetPciInfo = lambda handle: types.SimpleNamespace(busId=b"00000000:07:00.0", pciDeviceId=0x20B010DE)
    module.nvmlDeviceGetMemoryInfo = memory
    module.nvmlDeviceGetCudaComputeCapability = lambda handle: (8, 0)
    module.nvmlDeviceGetArchitecture = lambda handle: 7
    module.nvmlDeviceGetMemoryBusWidth = bus_width
    module.nvmlDeviceGetMaxClockInfo = lambda handle, clock: 1215
    module.nvmlDeviceGetMigMode = lambda handle: [1, 1] if mig else [0, 0]
    module.nvmlDeviceGetEnforcedPowerLimit = lambda handle: 400000  # milliwatts: an A100 SXM4's default 400 W
    module.nvmlDeviceGetMaxPcieLinkGeneration = lambda handle: 4  # an A100 SXM4 on a PCIe 4.0 x16 host link
    module.nvmlDeviceGetMaxPcieLinkWidth = lambda handle: 16
    module.nvmlDeviceGetMaxMigDeviceCount = lambda handle: 2
    module.nvmlDeviceGetMigDeviceHandleByIndex = mig_handle
    module.nvmlDeviceGetGpuInstanceId = lambda handle: 2
    module.nvmlDeviceGetComputeInstanceId = lambda handle: 0
    return module, calls


def test_the_readout_turns_a_failed_nvml_start_into_data(monkeypatch):
    module, _ = fake_pynvml(init_error=9)
    monkeypatch.setitem(sys.modules, "pynvml", module)
    assert nvml_readout.read() == {"error": "NVML_ERROR_DRIVER_NOT_LOADED", "detail": "9", "call": "nvmlInit"}


def test_the_readout_falls_back_to_memory_info_v1_and_records_unsupported_fields(monkeypatch):
    module, calls = fake_pynvml(memory_v2_error=13, bus_width_error=3)
    monkeypatch.setitem(sys.modules, "pynvml", module)
    readout = nvml_readout.read()
    assert readout == {
        "driver_version": "535.161.08", "cuda_driver_version": 12020, "nvml_version": "12.535.161.08",
        "devices": [{
            "index": 0, "name": "NVIDIA A100-SXM4-40GB", "uuid": "GPU-00000000-0000-0000-0000-000000000001",
            "pci_bus_id": "00000000:07:00.0", "pci_device_id": 0x20B010DE,
            "memory": {"total": 40536 * MIB, "free": 40449 * MIB, "used": 87 * MIB, "version": 1},
            "compute_capability": [8, 0], "architecture": 7, "max_memory_clock_mhz": 1215, "mig_mode": [0, 0],
            "power_limit_mw": 400000, "pcie_max_link_generation": 4, "pcie_max_link_width": 16,
            "errors": {"memory_bus_width_bits": "NVML_ERROR_NOT_SUPPORTED"},
        }],
    }
    assert calls == ["shutdown"]


def test_an_old_pynvml_without_the_pcie_link_calls_leaves_the_link_unknown_not_the_gpu(monkeypatch):
    module, _ = fake_pynvml()
    del module.nvmlDeviceGetMaxPcieLinkGeneration
    monkeypatch.setitem(sys.modules, "pynvml", module)
    device = nvml_readout.read()["devices"][0]
    assert "pcie_max_link_generation" not in device and device["pcie_max_link_width"] == 16
    assert device["errors"]["pcie_max_link_generation"].startswith("AttributeError")
    gpus, _ = nvidia.parse_nvml({"devices": [device]})
    assert gpus[0].gpu.pcie_link_gt_s is None and gpus[0].gpu.pcie_link_width is None  # both or neither


@pytest.mark.parametrize(("generation", "width", "link"), [
    (4, 16, (16.0, 16, "nvml")), (3, 8, (8.0, 8, "nvml")), (5, 4, (32.0, 4, "nvml")), (1, 16, (2.5, 16, "nvml")),
    (7, 16, (None, None, None)), (4, 3, (None, None, None)), (4, 0, (None, None, None)), (True, 16, (None, None, None)),
    ("4", 16, (None, None, None)), (None, None, (None, None, None)),
])
def test_the_pcie_link_nvml_reports_is_kept_only_when_it_is_a_pcie_generation_and_width(generation, width, link):
    device = {"index": 0, "name": "NVIDIA GeForce RTX 4060 Ti", "memory": {"total": 8 * 2**30, "free": 7 * 2**30},
              "pcie_max_link_generation": generation, "pcie_max_link_width": width}
    gpus, _ = nvidia.parse_nvml({"devices": [device]})
    gpu = gpus[0].gpu
    assert (gpu.pcie_link_gt_s, gpu.pcie_link_width, gpu.pcie_link_source) == link


def test_no_pcie_link_on_a_jetson_is_an_answer_not_a_failed_call():
    device = {"index": 0, "name": "Orin", "memory": {"total": 8 * 2**30, "free": 7 * 2**30},
              "errors": {"pcie_max_link_generation": "NVML_ERROR_NOT_SUPPORTED", "pcie_max_link_width": "NVML_ERROR_NOT_SUPPORTED"}}
    _, problems = nvidia.parse_nvml({"devices": [device]})
    assert not [p for p in problems if "could not answer" in p.message]
    device["errors"]["pcie_max_link_width"] = "NVML_ERROR_UNKNOWN"
    _, problems = nvidia.parse_nvml({"devices": [device]})
    assert [p for p in problems if "nvmlDeviceGetMaxPcieLinkWidth: NVML_ERROR_UNKNOWN" in p.message]


def test_the_readout_lists_mig_instances_and_skips_empty_slots(monkeypatch):
    module, _ = fake_pynvml(mig=True)
    monkeypatch.setitem(sys.modules, "pynvml", module)
    instances = nvml_readout.read()["devices"][0]["mig_devices"]
    assert instances == [{
        "index": 0, "name": "NVIDIA A100-SXM4-40GB MIG 3g.20gb", "uuid": "GPU-00000000-0000-0000-0000-000000000001",
        "gpu_instance_id": 2, "compute_instance_id": 0,
        "memory": {"total": 20096 * MIB, "free": 20009 * MIB, "used": 87 * MIB, "reserved": 0, "version": 2},
    }]


def test_the_readout_says_so_when_pynvml_is_not_installed(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # makes `import pynvml` raise ImportError
    assert nvml_readout.read()["error"] == "PYNVML_NOT_INSTALLED"


def test_a_container_without_gpu_access_is_told_to_pass_the_gpus_in():
    files = pci_files("0000:01:00.0", "0x10de", "0x2684", driver="nvidia") | {"/.dockerenv": ""}
    _, problems = nvidia.probe(FakeHost(files=files, libraries={"nvml": {"error": "NVML_ERROR_LIBRARY_NOT_FOUND"}}))
    assert [p.hint for p in problems] == [nvidia.CONTAINER_HINT]


def test_a_jetson_board_without_nvml_is_found_from_its_device_tree_model():
    host = FakeHost(arch="arm64", files={
        "/proc/device-tree/model": "NVIDIA Jetson AGX Orin Developer Kit\x00",
        "/proc/meminfo": "MemTotal:       62841312 kB\nMemAvailable:   58000000 kB\n"})
    gpus, problems = nvidia.probe(host)
    assert gpus == [GPU(vendor="nvidia", name="NVIDIA Jetson AGX Orin", kind="unified", memory_total_bytes=62841312 * 1024,
                        memory_free_bytes=58000000 * 1024, memory_usable_bytes=58000000 * 1024, bandwidth_bytes_per_s=204_800_000_000,
                        bandwidth_source="table:jetson-agx-orin-64gb", driver="nvgpu", backends=("cuda",), source="devicetree+proc_meminfo")]
    assert [p.severity for p in problems] == ["info"]


def test_cuda_device_order_pci_bus_id_makes_indices_unambiguous():
    other = RTX_4090 | {"index": 1, "name": "NVIDIA RTX A5000", "uuid": "GPU-00000000-0000-0000-0000-000000000002", "max_memory_clock_mhz": 8001}
    host = FakeHost(environment={"CUDA_VISIBLE_DEVICES": "1", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"},
                    libraries={"nvml": READOUT | {"devices": [RTX_4090, other]}})
    gpus, problems = nvidia.probe(host)
    assert ([(g.name, g.counted) for g in gpus], problems) == ([("NVIDIA GeForce RTX 4090", False), ("NVIDIA RTX A5000", True)], [])


def test_a_recording_keeps_cuda_visible_devices_uuids_pointing_at_the_same_gpu(tmp_path):
    from gpuready.host import ReplayHost
    from gpuready.recording import RecordingHost

    real = "GPU-5e375e7e-b41f-155b-dcdc-534524c356fc"
    other = RTX_4090 | {"index": 1, "uuid": real}
    inner = FakeHost(environment={"CUDA_VISIBLE_DEVICES": real}, libraries={"nvml": READOUT | {"devices": [RTX_4090, other]}})
    recording = RecordingHost(inner, tmp_path, hostname="box")
    live_gpus, _ = nvidia.probe(recording)
    recording.finish("test", "0")
    replay = ReplayHost(tmp_path)
    replay_gpus, _ = nvidia.probe(replay)
    assert [g.counted for g in replay_gpus] == [g.counted for g in live_gpus] == [False, True]
    assert real not in (tmp_path / "libraries" / "nvml.json").read_text() + (tmp_path / "machine.toml").read_text()


def test_wsl2_with_the_windows_library_present_but_unloadable_points_at_the_library_path():
    host = FakeHost(files={"/proc/sys/kernel/osrelease": "5.15.153.1-microsoft-standard-WSL2\n", "/dev/dxg": "",
                           "/usr/lib/wsl/lib/libnvidia-ml.so.1": ""},
                    libraries={"nvml": {"error": "NVML_ERROR_LIBRARY_NOT_FOUND"}})
    _, problems = nvidia.probe(host)
    assert [p.hint for p in problems] == [nvidia.WSL_LIBRARY_HINT]
