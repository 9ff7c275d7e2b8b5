"""Intel GPU probe: Arc discrete cards with their VRAM, integrated graphics as shared memory.

Sources:
* ``/sys/class/drm/card*/device/{vendor,device,uevent}`` (DRIVER=i915 or xe);
* xe VRAM: ``device/tile0/physical_vram_size_bytes`` (per tile, as igt's
  ``xe_sysfs_tile`` test reads it); i915 VRAM: ``lmem_total_bytes`` / ``lmem_avail_bytes``
  on the card or its device;
* names: ``/usr/share/hwdata/pci.ids`` or ``/usr/share/misc/pci.ids``;
* ``/proc/meminfo`` (integrated graphics borrow system memory).
"""

from __future__ import annotations

import re

from gpuready.hardware import GPU, Problem
from gpuready.host import Host
from gpuready.probes import pci
from gpuready.probes.cpu import cpuinfo_model_name
from gpuready.probes.memory import parse_meminfo

PCI_IDS_PATHS = ("/usr/share/hwdata/pci.ids", "/usr/share/misc/pci.ids", "/usr/share/pci.ids")
# Arc discrete GPUs by PCI device id (DG2 = Alchemist, BMG = Battlemage), from
# https://dgpu-docs.intel.com/devices/hardware-table.html: used when pci.ids is missing or old.
ARC_DEVICES = {
    "56a0": "Intel Arc A770", "56a1": "Intel Arc A750", "56a2": "Intel Arc A580",
    "56a5": "Intel Arc A380", "56a6": "Intel Arc A310", "e20b": "Intel Arc B580", "e20c": "Intel Arc B570",
}
# Arrow Lake-H's iGPU by PCI device id (Linux kernel include/drm/intel/pciids.h, INTEL_ARL_H_IDS). The Arc 130T
# (7 Xe cores, in the Core Ultra 5 225H and 235H) and the Arc 140T (8, in the Core Ultra 7 and 9 H parts) share both
# ids, and neither pci.ids ('Arrow Lake-P [Arc Pro 130T/140T]', '[Intel Graphics]'), Level Zero ('Intel(R) Arc(TM)
# Graphics', Meteor Lake's name too) nor Mesa ('Intel(R) Graphics (ARL)') tells them apart: the CPU model does.
ARROW_LAKE_H = frozenset({"7d51", "7dd1"})
ARROW_LAKE_130T_CPU = re.compile(r"\bUltra 5 2\d5H\b", re.IGNORECASE)
# Graphics before Gen12 (Xe-LP): Intel's compute runtime (oneAPI Level Zero / OpenCL) and
# llama.cpp's SYCL backend support Gen12 and later only
# (https://github.com/intel/compute-runtime#supported-platforms; Gen9-Gen11 moved to a
# legacy branch). Names as pci.ids spells them: "UHD Graphics 620", "HD Graphics 530",
# "Iris Plus Graphics 655", "Iris Pro Graphics 580".
PRE_GEN12 = re.compile(r"\bHD Graphics\b|\bUHD Graphics 6\d\d\b|\bIris\(?R?\)? (Plus|Pro)\b|\bIris Graphics\b", re.IGNORECASE)
PRE_GEN12_REASON = "graphics older than Gen12 (Xe): Intel's compute runtime and llama.cpp SYCL do not support it"


def parse_pci_ids(text: str, vendor: str = "8086") -> dict[str, str]:
    """Device names of one vendor from pci.ids (``\\tdddd  Name`` lines under ``vvvv  Vendor``)."""
    names = {}
    inside = False
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        if not line.startswith("\t"):
            inside = line[:4].lower() == vendor
            if not inside and names:
                break
            continue
        if inside and not line.startswith("\t\t"):
            device, _, name = line.strip().partition("  ")
            names[device.lower()] = name.strip()
    return names


def display_name(pci_ids_name: str | None, device_id: str, cpu_name: str | None = None) -> str:
    """'DG2 [Arc A770]' -> 'Intel Arc A770'; 'UHD Graphics 620' -> 'Intel UHD Graphics 620'; an Arrow Lake-H iGPU ->
    'Intel Arc 130T GPU' or 'Intel Arc 140T GPU' by the CPU model it sits in."""
    if device_id in ARC_DEVICES:
        return ARC_DEVICES[device_id]
    if device_id in ARROW_LAKE_H:
        return f"Intel Arc {'130T' if ARROW_LAKE_130T_CPU.search(cpu_name or '') else '140T'} GPU"
    if not pci_ids_name:
        return f"Intel GPU (8086:{device_id})"
    bracket = re.search(r"\[([^\]]+)\]", pci_ids_name)
    name = bracket.group(1) if bracket else pci_ids_name
    return name if name.lower().startswith("intel") else f"Intel {name}"


def _pci_ids(host: Host) -> dict[str, str]:
    for path in PCI_IDS_PATHS:
        text = host.read_text(path)
        if text:
            return parse_pci_ids(text)
    return {}


def _vram(host: Host, card: str, device: pci.PCIDevice) -> tuple[int | None, int | None]:
    """Dedicated memory (total, free) for xe or i915; (None, None) when none is published."""
    if device.driver == "xe":
        total = 0
        for tile in sorted(t for t in host.list_dir(device.sysfs) or [] if re.fullmatch(r"tile\d+", t)):
            for path in (f"{device.sysfs}/{tile}/physical_vram_size_bytes", f"{device.sysfs}/{tile}/vram0/physical_vram_size_bytes"):
                value = pci.read_int(host, path)
                if value:
                    total += value
                    break
        return (total or None), None
    for base in (f"/sys/class/drm/{card}", device.sysfs):
        total = pci.read_int(host, f"{base}/lmem_total_bytes")
        if total:
            return total, pci.read_int(host, f"{base}/lmem_avail_bytes")
    return None, None


def probe(host: Host) -> tuple[list[GPU], list[Problem]]:
    """Intel GPUs: Arc cards with VRAM; integrated graphics sharing system memory; old ones not counted."""
    if host.platform != "linux":
        return [], []
    cards = [(card, device) for card, device in pci.drm_cards(host, "intel") if device.driver in ("i915", "xe")]
    if not cards:
        return [], []
    names = _pci_ids(host)
    cpu_name = cpuinfo_model_name(host) if any(device.device_id in ARROW_LAKE_H for _, device in cards) else None
    available = parse_meminfo(host.read_text("/proc/meminfo") or "").get("MemAvailable")
    gpus, problems = [], []
    for card, device in cards:
        name = display_name(names.get(device.device_id), device.device_id, cpu_name)
        total, free = _vram(host, card, device)
        discrete = total is not None or device.device_id in ARC_DEVICES
        if discrete:
            usable = free if free is not None else total
            if total is None:
                problems.append(Problem("intel", f"{name}: the {device.driver} driver does not publish the VRAM size in sysfs",
                                        "The GPU table's size is used where the model name is unambiguous; the xe driver publishes it.", "info"))
            elif free is None:
                problems.append(Problem("intel", f"{name}: the {device.driver} driver does not publish free VRAM; assuming all {total / 1024**3:.1f} GiB is free", severity="info"))
            gpu = GPU(vendor="intel", name=name, kind="discrete", memory_total_bytes=total, memory_free_bytes=free,
                      memory_usable_bytes=usable, driver=device.driver, pci_id=device.pci_id,
                      backends=("sycl", "vulkan"), source="sysfs")
        else:
            old = bool(PRE_GEN12.search(name))
            gpu = GPU(
                vendor="intel",
                name=name,
                kind="integrated",
                memory_usable_bytes=None if old else available,
                driver=device.driver,
                pci_id=device.pci_id,
                counted=not old,
                not_counted_reason=PRE_GEN12_REASON if old else None,
                backends=() if old else ("sycl", "vulkan"),
                source="sysfs",
            )
        gpus.append(gpu)
    return gpus, problems
