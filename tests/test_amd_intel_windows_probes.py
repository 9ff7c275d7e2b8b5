"""AMD, Intel and Windows GPU probes: parsing rules, access checks, and garbled input that must not crash."""

from __future__ import annotations

import pytest
from gpu_fakes import FakeHost

from gpuready.hardware import GPU, Problem
from gpuready.probes import amd, intel, probe_hardware, run_probe, windows

GIB = 1024**3


@pytest.mark.parametrize("version, target", [(110000, "gfx1100"), (110501, "gfx1151"), (90012, "gfx90c"), (90402, "gfx942"), (0, None), (None, None)])
def test_kfd_gfx_target_versions_become_target_names(version, target):
    assert amd.gfx_target(version) == target


def test_amdgpu_ids_lines_map_device_and_revision_to_a_name():
    text = "# List of AMDGPU IDs\n\n1.0.0\n744C,\tC8,\tAMD Radeon RX 7900 XTX\n1586,\tD1,\tAMD Radeon 8060S Graphics\n"
    assert amd.parse_amdgpu_ids(text) == {("744c", "c8"): "AMD Radeon RX 7900 XTX", ("1586", "d1"): "AMD Radeon 8060S Graphics"}


def test_a_pci_address_becomes_the_kfd_location_id():
    assert (amd.location_id("0000:03:00.0"), amd.location_id("0000:c3:00.0"), amd.location_id("garbage")) == ((0, 768), (0, 49920), None)


GROUP = "root:x:0:\nvideo:x:44:user\nrender:x:993:user\n"


@pytest.mark.parametrize(
    "status, access",
    [
        ("Uid:\t1000\t1000\t1000\t1000\nGid:\t1000\t1000\t1000\t1000\nGroups:\t44 993 1000\n", True),
        ("Uid:\t1000\t1000\t1000\t1000\nGid:\t1000\t1000\t1000\t1000\nGroups:\t1000\n", False),
        ("Uid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nGroups:\t0\n", True),
        ("", None),
    ],
)
def test_render_group_membership_decides_access_to_dev_kfd(status, access):
    assert amd.parse_group_access(status, GROUP) is access


def amd_host(groups="44 993 1000", env=None):
    from pathlib import Path

    from gpuready.host import ReplayHost

    replay = ReplayHost(Path(__file__).parent / "fixtures" / "machines" / "amd-rx7900xtx")
    files = {}
    for path in (replay.directory / "root").rglob("*"):
        if path.is_file():
            files["/" + str(path.relative_to(replay.directory / "root"))] = path.read_text()
    files["/proc/self/status"] = f"Uid:\t1000\t1000\t1000\t1000\nGid:\t1000\t1000\t1000\t1000\nGroups:\t{groups}\n"
    return FakeHost(files=files, environment=env or {})


def test_a_user_outside_the_render_group_gets_a_hint_and_the_gpu_is_not_counted():
    gpus, problems = amd.probe(amd_host(groups="1000"))
    assert [(g.name, g.counted, g.not_counted_reason) for g in gpus] == [
        ("AMD Radeon RX 7900 XTX", False, "this user may not open /dev/kfd or /dev/dri/renderD* (not in the render group)")]
    assert problems == [Problem("amd", "this user may not open /dev/kfd or the GPU render nodes", amd.RENDER_HINT, "warning")]


def test_hsa_override_gfx_version_is_reported():
    _, problems = amd.probe(amd_host(env={"HSA_OVERRIDE_GFX_VERSION": "11.0.0"}))
    assert problems == [Problem("amd", "HSA_OVERRIDE_GFX_VERSION=11.0.0: ROCm treats AMD Radeon RX 7900 XTX (gfx1100) as gfx1100", severity="info")]


def test_hip_visible_devices_hides_other_gpus_from_rocm():
    gpus, _ = amd.probe(amd_host(env={"HIP_VISIBLE_DEVICES": "1"}))
    assert [(g.counted, g.not_counted_reason) for g in gpus] == [(False, "hidden from ROCm by ROCR_VISIBLE_DEVICES/HIP_VISIBLE_DEVICES=1")]


def test_the_apu_pool_is_carve_out_plus_gtt_capped_by_free_system_memory():
    hardware, _ = probe_hardware(_replay("amd-strix-halo"))
    (gpu,) = hardware.gpus
    vram_free = 4294967296 - 312823808
    gtt_free = 103079215104 - 60243968  # below MemAvailable (121000000 kB), so not capped
    assert (gpu.kind, gpu.memory_total_bytes, gpu.memory_usable_bytes) == ("unified", 4294967296 + 103079215104, vram_free + gtt_free)


def _replay(name):
    from pathlib import Path

    from gpuready.host import ReplayHost

    return ReplayHost(Path(__file__).parent / "fixtures" / "machines" / name)


def test_pci_ids_names_become_display_names():
    text = "8086  Intel Corporation\n\t5917  UHD Graphics 620\n\ta780  Raptor Lake-S GT1 [UHD Graphics 770]\n\t\t1028 0001  subsystem\n10de  NVIDIA Corporation\n\t2684  AD102 [GeForce RTX 4090]\n"
    names = intel.parse_pci_ids(text)
    assert names == {"5917": "UHD Graphics 620", "a780": "Raptor Lake-S GT1 [UHD Graphics 770]"}
    assert [intel.display_name(names.get(d), d) for d in ("5917", "a780", "56a0", "ffff")] == [
        "Intel UHD Graphics 620", "Intel UHD Graphics 770", "Intel Arc A770", "Intel GPU (8086:ffff)"]


@pytest.mark.parametrize(
    ("device_id", "pci_ids_name", "cpu", "name", "table"),
    [
        # Arrow Lake-H (Linux kernel pciids.h INTEL_ARL_H_IDS): the 130T and 140T share both ids; the CPU names the bin
        ("7d51", "Arrow Lake-P [Arc Pro 130T/140T]", "Intel(R) Core(TM) Ultra 9 285H", "Intel Arc 140T GPU", "arc-140t"),
        ("7dd1", "Arrow Lake-P [Intel Graphics]", "Intel(R) Core(TM) Ultra 7 255H", "Intel Arc 140T GPU", "arc-140t"),
        ("7d51", None, "Intel(R) Core(TM) Ultra 5 225H", "Intel Arc 130T GPU", "arc-130t"),  # pci.ids too old to list it
        ("7dd1", None, "Intel(R) Core(TM) Ultra 5 235H", "Intel Arc 130T GPU", "arc-130t"),
        # Meteor Lake's Arc keeps its pci.ids name, which the table matches as before
        ("7d55", "Meteor Lake-P [Intel Arc Graphics]", "Intel(R) Core(TM) Ultra 7 155H", "Intel Arc Graphics",
         "arc-graphics-meteor-lake"),
    ],
)
def test_an_arrow_lake_h_igpu_is_named_by_its_cpu_and_found_in_the_table(device_id, pci_ids_name, cpu, name, table):
    from gpu_fakes import pci_files

    address = "0000:00:02.0"
    files = {f"/sys/class/drm/card0/device/{key.rsplit('/', 1)[1]}": value
             for key, value in pci_files(address, "0x8086", f"0x{device_id}", "xe").items()}
    files["/proc/cpuinfo"] = f"processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: {cpu}\n\n"
    files["/proc/meminfo"] = "MemTotal:       32000000 kB\nMemAvailable:   24000000 kB\n"
    if pci_ids_name:
        files["/usr/share/hwdata/pci.ids"] = f"8086  Intel Corporation\n\t{device_id}  {pci_ids_name}\n"
    gpus, problems = intel.probe(FakeHost(files=files))
    assert [(g.name, g.kind, g.counted) for g in gpus] == [(name, "integrated", True)] and problems == []
    from gpuready.catalog.tables import match_gpu

    assert match_gpu(gpus[0]).id == table


def test_old_intel_graphics_are_listed_but_not_counted():
    hardware, _ = probe_hardware(_replay("intel-uhd620-laptop"))
    assert [(g.name, g.counted, g.not_counted_reason, g.memory_total_bytes) for g in hardware.gpus] == [
        ("Intel UHD Graphics 620", False, intel.PRE_GEN12_REASON, None)]
    assert hardware.accelerators == ()


ADAPTER = {"driver_desc": "NVIDIA GeForce RTX 4080", "driver_version": "32.0.15.6094",
           "matching_device_id": "PCI\\VEN_10DE&DEV_2704", "qw_memory_size": 17171480576, "memory_size": 4293918720}


@pytest.mark.parametrize(
    "changes, total",
    [
        ({}, 17171480576),  # the 64-bit value wins over the saturated 32-bit one
        ({"qw_memory_size": None}, None),  # only a capped 32-bit value: unknown, the table fills it
        ({"qw_memory_size": None, "memory_size": 0x7FFFF000}, None),  # Arc A770's wrapped REG_BINARY value
        ({"qw_memory_size": None, "memory_size": 1073741824}, 1073741824),  # small and therefore exact
    ],
)
def test_windows_vram_prefers_the_64_bit_size_and_never_trusts_a_capped_one(changes, total):
    gpu, problems = windows.parse_adapter(ADAPTER | changes, 8 * GIB)
    assert (gpu.memory_total_bytes, gpu.memory_usable_bytes, len(problems)) == (total, total, 1 if changes.get("qw_memory_size", 0) is None and total is None else 0)


@pytest.mark.parametrize(
    "desc, matching",
    [("Microsoft Basic Display Adapter", "PCI\\CC_0300"), ("Microsoft Remote Display Adapter", "SWD\\RemoteDisplayEnum"),
     ("Parsec Virtual Display Adapter", "Root\\Parsec\\VDA"), ("", "PCI\\VEN_10DE&DEV_2704")],
)
def test_software_and_virtual_adapters_are_skipped(desc, matching):
    assert windows.parse_adapter({"driver_desc": desc, "matching_device_id": matching}, None) == (None, [])


def test_a_snapdragon_adreno_on_acpi_is_listed_but_not_counted():
    # Snapdragon X's Adreno enumerates on ACPI ("ACPI\\VEN_QCOM&DEV_0C36"), which the PCI vendor table skipped, so a
    # Surface Laptop 7 read "GPUs: none found".
    adapter = {"driver_desc": "Qualcomm(R) Adreno(TM) X1-85 GPU", "matching_device_id": "ACPI\\VEN_QCOM&DEV_0C36",
               "driver_version": "31.0.24.0", "qw_memory_size": None}
    gpu, problems = windows.parse_adapter(adapter, 18 * GIB)
    assert (gpu.vendor, gpu.kind, gpu.counted, gpu.backends, problems) == ("qualcomm", "integrated", False, (), [])
    assert gpu.not_counted_reason.startswith("gpuready has no speed model for Qualcomm's Adreno GPUs yet")
    # Another ACPI display device (no vendor gpuready knows) is still skipped.
    assert windows.parse_adapter(adapter | {"matching_device_id": "ACPI\\VEN_ABCD&DEV_0001"}, None) == (None, [])


def test_windows_leaves_nvidia_cards_to_nvml_when_it_works():
    host = FakeHost(platform="windows", libraries={
        "windows": {"display_adapters": [ADAPTER], "memory": {"total_bytes": 32 * GIB, "available_bytes": 20 * GIB}},
        "nvml": {"devices": [{"index": 0, "name": "NVIDIA GeForce RTX 4080"}]}})
    assert windows.probe(host) == ([], [])
    host.libraries["nvml"] = {"error": "NVML_ERROR_LIBRARY_NOT_FOUND"}
    gpus, _ = windows.probe(host)
    assert gpus == [GPU(vendor="nvidia", name="NVIDIA GeForce RTX 4080", memory_total_bytes=17171480576, memory_usable_bytes=17171480576,
                        driver_version="32.0.15.6094", pci_id="10de:2704", backends=("cuda", "vulkan"), source="registry")]


def test_an_unreadable_registry_is_an_error_problem():
    host = FakeHost(platform="windows", libraries={"windows": {"errors": {"display_adapters": "PermissionError: denied"}}})
    assert windows.probe(host) == ([], [Problem("windows-gpu", "could not read the display adapters from the registry: PermissionError: denied",
                                                "Run `gpuready record DIR` and attach it to an issue.", "error")])


def test_windows_readout_reads_binary_registry_numbers_little_endian():
    from gpuready.readouts.windows import registry_number

    assert [registry_number(v) for v in (b"\x00\xf0\xff\x7f", 17163091968, b"", "text", None)] == [0x7FFFF000, 17163091968, None, None, None]


GARBLED = [
    "\x00\x00\xff", "", "not a number\n", "0xZZZZ\n", "-1\n", "99999999999999999999999999999999\n", "1 2 3\n",
]


@pytest.mark.parametrize("junk", GARBLED)
@pytest.mark.parametrize("probe_name", ["nvidia", "amd", "intel"])
def test_garbled_sysfs_never_becomes_a_traceback(junk, probe_name):
    from gpuready.probes import _gpu_probes

    files = {}
    for card, vendor in (("card0", "0x1002"), ("card1", "0x8086")):
        base = f"/sys/class/drm/{card}/device"
        for name in ("vendor", "device", "revision", "class", "mem_info_vram_total", "mem_info_vram_used", "mem_info_gtt_total",
                     "mem_info_gtt_used", "product_name", "lmem_total_bytes", "tile0/physical_vram_size_bytes"):
            files[f"{base}/{name}"] = junk
        files[f"{base}/vendor"] = vendor + "\n"
        files[f"{base}/device"] = "0x744c\n"
        files[f"{base}/uevent"] = junk + "\nDRIVER=amdgpu\nPCI_SLOT_NAME=" + junk
    files["/sys/class/kfd/kfd/topology/nodes/1/properties"] = "simd_count 192\ngfx_target_version " + junk + "\nlocation_id x\n"
    files["/sys/bus/pci/devices/0000:01:00.0/vendor"] = "0x10de\n"
    files["/sys/bus/pci/devices/0000:01:00.0/class"] = junk
    files["/proc/meminfo"] = junk
    files["/usr/share/libdrm/amdgpu.ids"] = junk + "\n744C,\t" + junk
    files["/usr/share/hwdata/pci.ids"] = "8086  Intel\n\t" + junk
    host = FakeHost(files=files, libraries={"nvml": {"devices": [{"name": junk, "memory": junk, "compute_capability": [junk], "mig_mode": [1], "mig_devices": [junk, {"name": 3}]}]}})
    function = dict(_gpu_probes())[probe_name]
    problems: list[Problem] = []
    run_probe(probe_name, function, host, problems, [])
    assert not [p for p in problems if "crashed" in p.message], problems


def test_a_crashing_probe_becomes_an_error_problem_and_the_others_still_run(monkeypatch):
    def boom(host):
        raise ValueError("garbled")

    monkeypatch.setattr(amd, "probe", boom)
    hardware, problems = probe_hardware(_replay("amd-780m-plus-7900xtx"))
    assert [p.probe for p in problems if p.severity == "error"] == ["amd"]
    assert hardware.cpu.name == "AMD Ryzen 7 8700G w/ Radeon 780M Graphics"


def test_amdsmi_names_a_card_that_amdgpu_ids_does_not_know():
    host = amd_host()
    host.files["/usr/share/libdrm/amdgpu.ids"] = "1.0.0\n"
    host.libraries["amdsmi"] = {"devices": [{"bdf": "0000:03:00.0", "market_name": "Radeon RX 7900 XTX", "target_graphics_version": "gfx1100"}]}
    gpus, _ = amd.probe(host)
    assert [g.name for g in gpus] == ["AMD Radeon RX 7900 XTX"]


def test_without_any_name_source_an_amd_gpu_is_named_by_target_and_pci_id():
    host = amd_host()
    host.files["/usr/share/libdrm/amdgpu.ids"] = "1.0.0\n"
    gpus, _ = amd.probe(host)
    assert [g.name for g in gpus] == ["AMD GPU gfx1100 (1002:744c)"]


@pytest.mark.parametrize(
    "desc, kind",
    [
        ("Intel(R) UHD Graphics 770", "integrated"),
        ("Intel(R) Iris(R) Xe Graphics", "integrated"),
        ("Intel(R) Arc(TM) Graphics", "integrated"),
        ("Intel(R) Arc(TM) 140V GPU (16GB)", "integrated"),
        ("Intel(R) Arc(TM) A770 Graphics", "discrete"),
        ("Intel(R) Arc(TM) B580 Graphics", "discrete"),
        ("AMD Radeon(TM) Graphics", "integrated"),
        ("AMD Radeon(TM) 780M", "integrated"),
        ("AMD Radeon(TM) 8060S Graphics", "unified"),
        ("AMD Radeon RX 7600M XT", "discrete"),
        ("AMD Radeon RX 7900 XTX", "discrete"),
        ("NVIDIA GeForce RTX 4060 Laptop GPU", "discrete"),
    ],
)
def test_windows_adapter_names_tell_integrated_from_discrete(desc, kind):
    vendor_id = {"Intel": "8086", "AMD ": "1002", "NVIDI": "10DE"}[next(k for k in ("Intel", "AMD ", "NVIDI") if desc.startswith(k))]
    gpu, _ = windows.parse_adapter({"driver_desc": desc, "matching_device_id": f"PCI\\VEN_{vendor_id}&DEV_0001", "qw_memory_size": 8 * GIB}, 20 * GIB)
    assert gpu.kind == kind


def test_a_windows_apu_carve_out_adds_to_free_system_memory():
    gpu, _ = windows.parse_adapter({"driver_desc": "AMD Radeon(TM) 8060S Graphics", "matching_device_id": "PCI\\VEN_1002&DEV_1586",
                                    "qw_memory_size": 96 * GIB}, 20 * GIB)
    assert (gpu.kind, gpu.memory_total_bytes, gpu.memory_usable_bytes) == ("unified", None, 116 * GIB)


GARBLED_READOUTS = [
    {"devices": "not a list"},
    {"devices": [None, 3, "x", {"name": None}, {"name": "NVIDIA GeForce RTX 4090", "memory": {"total": "24GB", "free": -1}}]},
    {"devices": [{"name": "NVIDIA A100-SXM4-40GB", "mig_mode": "on", "mig_devices": "x", "errors": ["x"],
                  "architecture": [7], "compute_capability": "8.0", "memory_bus_width_bits": "wide", "max_memory_clock_mhz": 1.5}]},
    {"devices": [{"name": "NVIDIA A100-SXM4-40GB", "mig_mode": [1], "mig_devices": [{"name": "MIG", "memory": None}, {"name": 1}]}]},
    {"driver_version": 5, "cuda_driver_version": "12.4", "devices": []},
]


@pytest.mark.parametrize("readout", GARBLED_READOUTS)
def test_a_garbled_nvml_readout_never_becomes_a_traceback(readout):
    from gpuready.probes import nvidia

    problems: list[Problem] = []
    run_probe("nvidia", nvidia.probe, FakeHost(libraries={"nvml": readout}), problems, [])
    assert not [p for p in problems if "crashed" in p.message], problems


@pytest.mark.parametrize(
    "readout",
    [
        {"display_adapters": [None, "x", {"driver_desc": 5}, {"driver_desc": "AMD Radeon RX 7900 XTX", "matching_device_id": None,
                                                            "qw_memory_size": "big", "memory_size": [1]}]},
        {"display_adapters": [{"driver_desc": "AMD Radeon RX 7900 XTX", "matching_device_id": "PCI\\VEN_1002&DEV_744C",
                               "qw_memory_size": "big", "memory_size": [1]}], "memory": "lots"},
        {"display_adapters": {}},
        {"error": "not Windows"},
    ],
)
def test_a_garbled_windows_readout_never_becomes_a_traceback(readout):
    problems: list[Problem] = []
    run_probe("windows-gpu", windows.probe, FakeHost(platform="windows", libraries={"windows": readout}), problems, [])
    assert not [p for p in problems if "crashed" in p.message], problems


@pytest.mark.parametrize("value, target", [("11.0.0", "gfx1100"), ("10.3.0", "gfx1030"), ("9.0.10", "gfx90a"), ("junk", "junk")])
def test_hsa_override_values_name_the_target_rocm_will_use(value, target):
    assert amd.override_target(value) == target


def test_a_rocm_uuid_in_hip_visible_devices_hides_nothing_we_cannot_check():
    gpus, _ = amd.probe(amd_host(env={"HIP_VISIBLE_DEVICES": "GPU-b85e402c0fb3757f"}))
    assert [g.counted for g in gpus] == [True]


def test_an_arc_card_on_i915_without_a_published_vram_size_gets_its_size_from_the_table():
    files = {
        "/sys/class/drm/card1/device/vendor": "0x8086\n", "/sys/class/drm/card1/device/device": "0x56a1\n",
        "/sys/class/drm/card1/device/class": "0x030000\n", "/sys/class/drm/card1/device/uevent": "DRIVER=i915\nPCI_SLOT_NAME=0000:03:00.0\n",
    }
    hardware, problems = probe_hardware(FakeHost(files=files | {"/proc/cpuinfo": "processor\t: 0\nmodel name\t: x\n", "/proc/meminfo": "MemTotal: 1 kB\n"}))
    (gpu,) = hardware.gpus
    assert (gpu.name, gpu.kind, gpu.memory_total_bytes, gpu.table_id) == ("Intel Arc A750", "discrete", 8 * GIB, "arc-a750")
    assert [p.message for p in problems if p.probe == "intel"] == ["Intel Arc A750: the i915 driver does not publish the VRAM size in sysfs"]


class FakeKey:
    def __init__(self, values=None, subkeys=None):
        self.values, self.subkeys = values or {}, subkeys or {}

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class FakeWinreg:
    """The parts of winreg the readout uses, over a dict of keys."""

    HKEY_LOCAL_MACHINE = "HKLM"

    def __init__(self, root: FakeKey):
        self.root = root

    def OpenKey(self, parent, name):
        key = self.root if parent == "HKLM" else parent.subkeys.get(name)
        if key is None:
            raise OSError(f"no key {name}")
        return key

    def EnumKey(self, key, index):
        names = list(key.subkeys)
        if index >= len(names):
            raise OSError("no more")
        return names[index]

    def QueryValueEx(self, key, name):
        if name not in key.values:
            raise OSError(f"no value {name}")
        return key.values[name], 0


def test_the_windows_readout_reads_display_adapters_from_the_class_key():
    from gpuready.readouts import windows as readout

    adapters = FakeKey(subkeys={
        "0000": FakeKey({"DriverDesc": "Intel(R) Arc(TM) A770 Graphics", "DriverVersion": "32.0.101.5972",
                         "MatchingDeviceId": "pci\\ven_8086&dev_56a0", "ProviderName": "Intel Corporation",
                         "HardwareInformation.MemorySize": b"\x00\xf0\xff\x7f"}),
        "0001": FakeKey({"DriverDesc": "AMD Radeon RX 7800 XT", "HardwareInformation.qwMemorySize": 17163091968}),
        "Properties": FakeKey(),
    })
    assert readout._display_adapters(FakeWinreg(adapters)) == [
        {"key": "0000", "driver_desc": "Intel(R) Arc(TM) A770 Graphics", "driver_version": "32.0.101.5972",
         "matching_device_id": "pci\\ven_8086&dev_56a0", "provider_name": "Intel Corporation", "qw_memory_size": None, "memory_size": 0x7FFFF000},
        {"key": "0001", "driver_desc": "AMD Radeon RX 7800 XT", "driver_version": None, "matching_device_id": None,
         "provider_name": None, "qw_memory_size": 17163091968, "memory_size": None},
    ]


@pytest.mark.skipif(__import__("sys").platform == "win32", reason="reads the real registry on Windows")
def test_the_windows_readout_refuses_to_run_elsewhere():
    from gpuready.readouts import windows as readout

    assert readout.read() == {"error": "not Windows"}
