"""NPU probe against recorded machines: Intel NPU, AMD XDNA, Qualcomm Hexagon, Apple Neural Engine."""

from __future__ import annotations

import shutil
from pathlib import Path

from gpuready.hardware import NPU, Problem
from gpuready.host import ReplayHost
from gpuready.probes import npu

FIXTURES = Path(__file__).parent / "fixtures" / "machines"


def machine(name: str) -> ReplayHost:
    return ReplayHost(FIXTURES / name)


def copy(name: str, tmp_path: Path) -> Path:
    target = tmp_path / name
    shutil.copytree(FIXTURES / name, target)
    return target


METEOR_LAKE_NPU = NPU(
    vendor="intel",
    name="Intel AI Boost NPU (Meteor Lake)",
    generation="NPU 3720 (NPU 3)",
    tops_int8=11.0,
    driver="intel_vpu",
    driver_loaded=True,  # uevent DRIVER=intel_vpu
    runtimes=("OpenVINO", "ONNX Runtime (OpenVINO EP)"),  # Windows ML dropped on Linux
    table_id="intel-npu-3720",
    source="sysfs",
)


def test_a_meteor_lake_laptop_reports_its_npu_with_the_driver_loaded():
    assert npu.probe(machine("linux-meteor-lake-npu")) == ([METEOR_LAKE_NPU], [])


def test_an_intel_npu_without_the_user_space_driver_is_a_warning(tmp_path):
    root = copy("linux-meteor-lake-npu", tmp_path)
    (root / "root/usr/lib/x86_64-linux-gnu/libze_intel_vpu.so.1").unlink()
    npus, problems = npu.probe(ReplayHost(root))
    assert npus == [METEOR_LAKE_NPU]
    assert [(p.probe, p.severity) for p in problems] == [("npu", "warning")]
    assert "libze_intel_vpu" in problems[0].message
    assert "linux-npu-driver" in problems[0].hint


def test_an_npu_on_the_pci_bus_without_a_driver_is_listed_as_not_loaded(tmp_path):
    root = copy("linux-meteor-lake-npu", tmp_path)
    shutil.rmtree(root / "root/sys/class/accel")
    device = root / "root/sys/bus/pci/devices/0000:00:0b.0"
    device.mkdir(parents=True)
    (device / "vendor").write_text("0x8086\n")
    (device / "device").write_text("0x7d1d\n")
    (device / "uevent").write_text("PCI_CLASS=120000\nPCI_ID=8086:7D1D\nPCI_SLOT_NAME=0000:00:0b.0\n")
    other = root / "root/sys/bus/pci/devices/0000:00:02.0"
    other.mkdir(parents=True)
    (other / "vendor").write_text("0x8086\n")
    (other / "device").write_text("0x7d55\n")  # the iGPU: not an NPU
    npus, problems = npu.probe(ReplayHost(root))
    assert npus == [NPU(**{**METEOR_LAKE_NPU.__dict__, "driver_loaded": False})]
    assert problems == [
        Problem("npu", "Intel AI Boost NPU (Meteor Lake) is present but its intel_vpu driver is not loaded", npu.DRIVER_HINTS["intel"], "warning")
    ]


def test_a_strix_point_laptop_reports_its_xdna2_npu_by_pci_revision():
    assert npu.probe(machine("linux-strix-ryzen-ai-370")) == (
        [
            NPU(
                vendor="amd",
                name="AMD Ryzen AI NPU (Strix Point / Krackan Point)",
                generation="XDNA 2 (NPU4)",  # 1022:17f0 rev 0x10
                tops_int8=50.0,
                driver="amdxdna",
                driver_loaded=True,
                runtimes=("ONNX Runtime (Vitis AI EP / Ryzen AI Software)",),
                table_id="amd-xdna2-strix-point",
                source="sysfs",
            )
        ],
        [],
    )


def test_a_strix_npu_without_xrt_says_what_to_install(tmp_path):
    root = copy("linux-strix-ryzen-ai-370", tmp_path)
    shutil.rmtree(root / "root/opt")
    _, problems = npu.probe(ReplayHost(root))
    assert [(p.severity, "XRT" in p.message) for p in problems] == [("info", True)]


def test_amd_npus_sharing_a_pci_id_are_told_apart_by_revision_and_cpu():
    assert npu.table_row(0x1022, 0x17F0, 0x11, None).id == "amd-xdna2-strix-halo"
    assert npu.table_row(0x1022, 0x17F0, 0x20, None).id == "amd-xdna2-strix-point"
    assert npu.table_row(0x1022, 0x17F0, 0x00, None) is None  # npu2: no row, not guessed
    assert npu.table_row(0x1022, 0x1502, 0x00, "AMD Ryzen 7 8840U w/ Radeon 780M Graphics").id == "amd-xdna-hawk-point"
    assert npu.table_row(0x1022, 0x1502, 0x00, "AMD Ryzen 9 7940HS w/ Radeon 780M Graphics").id == "amd-xdna-phoenix"


def test_a_snapdragon_x_elite_reports_its_hexagon_npu_from_the_compute_accelerator_class():
    assert npu.probe(machine("windows-snapdragon-x-elite")) == (
        [
            NPU(
                vendor="qualcomm",
                name="Qualcomm Hexagon NPU (Snapdragon X Elite / X Plus)",
                generation="Hexagon (Snapdragon X)",
                tops_int8=45.0,
                driver="30.0.145.1000",
                driver_loaded=True,  # status "OK"
                runtimes=("ONNX Runtime (QNN EP)", "Qualcomm AI Engine Direct (QNN)", "Windows ML"),
                table_id="qualcomm-hexagon-x-elite",
                source="windows",
            )
        ],
        [],
    )


def test_a_windows_intel_npu_is_matched_by_its_pnp_pci_id():
    readout = {
        "compute_accelerators": [
            {"name": "Intel(R) AI Boost", "manufacturer": "Intel Corporation",
             "pnp_device_id": "PCI\\VEN_8086&DEV_643E&SUBSYS_00000000&REV_04\\3&11583659&0&58",
             "driver_version": "32.0.100.3104", "status": "Error"}
        ]
    }
    npus, problems = npu.parse_compute_accelerators(readout)
    assert [(n.table_id, n.driver, n.driver_loaded, n.tops_int8) for n in npus] == [("intel-npu-4-lunar-lake", "32.0.100.3104", False, 48.0)]
    assert [p.severity for p in problems] == ["warning"]


def test_a_windows_machine_without_npus_has_none():
    assert npu.probe(machine("windows-directml-only")) == ([], [])


def test_every_apple_silicon_mac_has_a_neural_engine_and_an_intel_mac_none():
    assert [n.name for n in npu.probe(machine("mac-m2-air-16gb"))[0]] == ["Apple Neural Engine (M2)"]
    assert npu.probe(machine("mac-intel-i9")) == ([], [])
