"""NPU probe: Intel NPU, AMD XDNA (Ryzen AI), Qualcomm Hexagon and the Apple Neural Engine,
each with its generation, nominal TOPS (catalog/npus.toml), driver state and the runtimes
that could drive it.

Sources:
* Linux: ``/sys/class/accel/accel*/device/{vendor,device,revision,uevent}`` (the DRM accel
  class both ``intel_vpu`` and ``amdxdna`` register; ``DRIVER=`` in uevent); NPUs with no
  driver bound from ``/sys/bus/pci/devices/*/{vendor,device,revision}``; the Intel
  user-space driver ``libze_intel_vpu.so*`` and AMD's XRT plugin ``libxrt_driver_xdna.so*``
  by listing their library directories; ``/proc/cpuinfo`` "model name" to tell Phoenix
  from Hawk Point (same PCI id).
* Windows: the ``windows`` readout's ``compute_accelerators`` list, one object per device
  of the ComputeAccelerator class (Win32_PnPEntity where PNPClass = 'ComputeAccelerator',
  the class Device Manager shows as "Neural processors", joined with
  Win32_PnPSignedDriver.DriverVersion)::

      "compute_accelerators": [
        {"name": "Snapdragon(R) X Elite - X1E78100 - Qualcomm(R) Hexagon(TM) NPU",
         "manufacturer": "Qualcomm Technologies, Inc.",
         "pnp_device_id": null,            # PNPDeviceID, e.g. "PCI\\VEN_8086&DEV_7D1D&..."
         "driver_version": "30.0.140.0",   # or null
         "status": "OK"}                   # Win32_PnPEntity.Status
      ]

* macOS: the Neural Engine of the Apple chip (:func:`gpuready.probes.apple.probe_neural_engine`).
"""

from __future__ import annotations

import re

from gpuready.hardware import NPU, Problem
from gpuready.host import Host
from gpuready.probes import apple
from gpuready.probes.cpu import cpuinfo_model_name
from gpuready.catalog.tables import NPUSpec, npu_table

NPU_PCI_VENDORS = ("0x8086", "0x1022")
INTEL_USER_DRIVER_DIRS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib", "/usr/local/lib")
XRT_LIB_DIR = "/opt/xilinx/xrt/lib"

# amdxdna tells XDNA 2 parts apart by the PCI revision of 1022:17f0
# (drivers/accel/amdxdna/amdxdna_pci_drv.c: rev 0x10 npu4 Strix Point, 0x11 npu5 Strix
# Halo, 0x20 npu6 Krackan Point).
AMD_17F0_REVISIONS = {0x10: "amd-xdna2-strix-point", 0x11: "amd-xdna2-strix-halo", 0x20: "amd-xdna2-strix-point"}
# Hawk Point is the Ryzen 8040/8000 series; Phoenix the 7040 series (AMD product pages in npus.toml).
_HAWK_POINT = re.compile(r"Ryzen\s+\d\s+(?:PRO\s+)?8\d\d\d", re.IGNORECASE)

DRIVER_HINTS = {
    "intel": "The intel_vpu kernel driver is in Linux 6.3 and later; update the kernel or load it with `sudo modprobe intel_vpu`.",
    "amd": "The amdxdna kernel driver is in Linux 6.14 and later (or build it from https://github.com/amd/xdna-driver).",
}


def parse_uevent(text: str) -> dict[str, str]:
    """KEY=value lines of a sysfs uevent file."""
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def _hex(text: str | None) -> int | None:
    try:
        return int(text.strip(), 16) if text else None
    except ValueError:
        return None


def table_row(vendor_id: int, device_id: int, revision: int | None, cpu_name: str | None) -> NPUSpec | None:
    """The npus.toml row for a PCI NPU."""
    pci_id = f"{vendor_id:04x}:{device_id:04x}"
    rows = [row for row in npu_table() if pci_id in row.pci_ids]
    if len(rows) <= 1:
        return rows[0] if rows else None
    if pci_id == "1022:17f0":
        wanted = AMD_17F0_REVISIONS.get(revision or -1)
        return next((row for row in rows if row.id == wanted), None)
    if pci_id == "1022:1502":
        wanted = "amd-xdna-hawk-point" if cpu_name and _HAWK_POINT.search(cpu_name) else "amd-xdna-phoenix"
        return next((row for row in rows if row.id == wanted), None)
    return rows[0]


def runtimes_for(row: NPUSpec, platform: str) -> tuple[str, ...]:
    """The table's runtimes that exist on this platform (Windows ML only on Windows)."""
    if platform == "windows":
        return row.runtimes
    return tuple(r for r in row.runtimes if "Windows" not in r)


def _has_library(host: Host, directories: tuple[str, ...], prefix: str) -> bool:
    for directory in directories:
        if any(name.startswith(prefix) for name in host.list_dir(directory) or []):
            return True
    return False


def linux_npus(host: Host) -> tuple[list[NPU], list[Problem]]:
    found: dict[str, tuple[int, int, int | None, str | None]] = {}  # PCI slot -> ids and driver
    for accel in host.list_dir("/sys/class/accel") or []:
        base = f"/sys/class/accel/{accel}/device"
        uevent = parse_uevent(host.read_text(f"{base}/uevent") or "")
        vendor, device = _hex(host.read_text(f"{base}/vendor")), _hex(host.read_text(f"{base}/device"))
        if vendor is None or device is None:
            continue
        slot = uevent.get("PCI_SLOT_NAME", accel)
        found[slot] = (vendor, device, _hex(host.read_text(f"{base}/revision")), uevent.get("DRIVER"))
    for slot in host.list_dir("/sys/bus/pci/devices") or []:
        if slot in found:
            continue
        base = f"/sys/bus/pci/devices/{slot}"
        if (host.read_text(f"{base}/vendor") or "").strip() not in NPU_PCI_VENDORS:
            continue
        vendor, device = _hex(host.read_text(f"{base}/vendor")), _hex(host.read_text(f"{base}/device"))
        if vendor is None or device is None or not any(f"{vendor:04x}:{device:04x}" in r.pci_ids for r in npu_table()):
            continue
        uevent = parse_uevent(host.read_text(f"{base}/uevent") or "")
        found[slot] = (vendor, device, _hex(host.read_text(f"{base}/revision")), uevent.get("DRIVER"))

    npus: list[NPU] = []
    problems: list[Problem] = []
    cpu_name = cpuinfo_model_name(host) if any(v == 0x1022 for v, *_ in found.values()) else None
    for slot, (vendor, device, revision, driver) in found.items():
        row = table_row(vendor, device, revision, cpu_name)
        if row is None:
            if any(f"{vendor:04x}:{device:04x}" in r.pci_ids for r in npu_table()):
                # Seen, but which generation it is needs the revision (e.g. AMD 1022:17f0): never drop it silently.
                problems.append(Problem("npu", f"the NPU {vendor:04x}:{device:04x} at {slot} has an unreadable revision file, so which NPU it is is unknown",
                                        "Check `lspci -nn -s " + slot + "`; a sysfs file that reads garbage points at a kernel or driver fault.", "warning"))
            continue
        loaded = driver == row.linux_driver
        npus.append(
            NPU(
                vendor=row.vendor,
                name=row.name,
                generation=row.generation,
                tops_int8=row.tops_int8,
                driver=row.linux_driver,
                driver_loaded=loaded,
                runtimes=runtimes_for(row, "linux"),
                table_id=row.id,
                source="sysfs",
            )
        )
        if not loaded:
            problems.append(Problem("npu", f"{row.name} is present but its {row.linux_driver} driver is not loaded",
                                    DRIVER_HINTS.get(row.vendor), "warning"))
        elif row.vendor == "intel" and not _has_library(host, INTEL_USER_DRIVER_DIRS, "libze_intel_vpu.so"):
            problems.append(Problem(
                "npu", f"{row.name}: the kernel driver is loaded but the user-space NPU driver (libze_intel_vpu) is missing, so OpenVINO cannot use it",
                "Install the Level Zero NPU driver from https://github.com/intel/linux-npu-driver/releases.", "warning"))
        elif row.vendor == "amd" and not _has_library(host, (XRT_LIB_DIR,), "libxrt_driver_xdna.so"):
            problems.append(Problem(
                "npu", f"{row.name}: the amdxdna driver is loaded but AMD's XRT runtime with its XDNA plugin is not installed in /opt/xilinx/xrt",
                "Install XRT and the XDNA plugin (https://github.com/amd/xdna-driver) and AMD's Ryzen AI Software.", "info"))
    return npus, problems


_PNP_PCI = re.compile(r"VEN_([0-9A-F]{4})&DEV_([0-9A-F]{4})(?:&SUBSYS_[0-9A-F]+)?(?:&REV_([0-9A-F]{2}))?", re.IGNORECASE)


def parse_compute_accelerators(readout: dict | None) -> tuple[list[NPU], list[Problem]]:
    """NPUs from the Windows readout's ``compute_accelerators`` (format in the module docstring)."""
    npus: list[NPU] = []
    problems: list[Problem] = []
    listed = (readout or {}).get("compute_accelerators")
    if readout is not None and "compute_accelerators" in readout and not isinstance(listed, list):  # absent: an older recording
        problems.append(Problem("npu", "the Windows readout has no list of compute accelerators, so NPUs are unknown",
                                "Run `gpuready record DIR` and attach it to an issue.", "warning"))
    for device in listed if isinstance(listed, list) else []:
        if not isinstance(device, dict):
            continue
        name = str(device.get("name") or "").strip()
        row = None
        match = _PNP_PCI.search(str(device.get("pnp_device_id") or ""))
        if match:
            revision = int(match.group(3), 16) if match.group(3) else None
            row = table_row(int(match.group(1), 16), int(match.group(2), 16), revision, None)
        elif "hexagon" in name.lower() and "snapdragon(r) x" in name.lower():
            row = next((r for r in npu_table() if r.id == "qualcomm-hexagon-x-elite"), None)
        elif "hexagon" in name.lower():
            row = next((r for r in npu_table() if r.id == "qualcomm-hexagon-8cx-gen3"), None)
        loaded = device.get("status") == "OK"
        npus.append(
            NPU(
                vendor=row.vendor if row else _vendor(name, device.get("manufacturer")),
                name=row.name if row else name,
                generation=row.generation if row else None,
                tops_int8=row.tops_int8 if row else None,
                driver=device.get("driver_version"),
                driver_loaded=loaded,
                runtimes=row.runtimes if row else ("Windows ML",),
                table_id=row.id if row else None,
                source="windows",
            )
        )
        if not loaded:
            problems.append(Problem("npu", f"{name}: Windows reports the device status '{device.get('status')}'",
                                    "Install or update the NPU driver from the laptop maker or the chip vendor.", "warning"))
    return npus, problems


def _vendor(name: str, manufacturer) -> str:
    text = f"{name} {manufacturer or ''}".lower()
    return next((v for v in ("intel", "amd", "qualcomm") if v in text), "unknown")


def probe(host: Host) -> tuple[list[NPU], list[Problem]]:
    """Every NPU on the machine, on any platform."""
    if host.platform == "darwin":
        return apple.probe_neural_engine(host), []
    if host.platform == "windows":
        return parse_compute_accelerators(host.library("windows"))
    return linux_npus(host)
