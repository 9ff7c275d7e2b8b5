"""Windows display-adapter probe: GPUs from the registry's display class, VRAM not capped at 4 GB.

Sources: the ``windows`` readout's ``display_adapters`` (registry class key
``{4d36e968-e325-11ce-bfc1-08002be10318}\\0000``...: DriverDesc, DriverVersion,
MatchingDeviceId, HardwareInformation.qwMemorySize, HardwareInformation.MemorySize) and
``memory``; the ``nvml`` readout, to leave NVIDIA cards to the NVIDIA probe when NVML works.
"""

from __future__ import annotations

import re

from gpuready.hardware import GPU, Problem
from gpuready.host import Host
from gpuready.probes import fields
from gpuready.probes.intel import PRE_GEN12, PRE_GEN12_REASON

VENDORS = {"10de": "nvidia", "1002": "amd", "8086": "intel", "5143": "qualcomm"}
_DEVICE = re.compile(r"ven_([0-9a-f]{4})&dev_([0-9a-f]{4})", re.IGNORECASE)
# Software and virtual adapters that no AI runtime can use.
_SOFTWARE = re.compile(r"Microsoft Basic (Display|Render)|Microsoft Remote Display|Hyper-V|Virtual Display|Parsec|Citrix", re.IGNORECASE)
# HardwareInformation.MemorySize is 32 bits: at or above 2 GiB it may be saturated or
# wrapped (an Arc A770 16GB stores 0x7FFFF000: https://github.com/oshi/oshi/issues/2907).
CAPPED_MEMORY_SIZE = 2 * 1024**3 - 64 * 1024**2
# Integrated graphics names: Intel iGPUs (not Arc A/B discrete), AMD APUs, Qualcomm Adreno.
_INTEGRATED = re.compile(
    r"Intel.*(UHD|Iris|\bHD Graphics|Arc\(TM\) (Graphics|1[34]0[VT]))|Radeon\(TM\) Graphics|Radeon Graphics|"
    r"Radeon\(TM\)? \d{3}M|Radeon \d{3}M|Radeon.*80[456]0S|Vega \d+ Graphics|Adreno",
    re.IGNORECASE,
)

# APUs built around one large memory pool (Ryzen AI Max, "Strix Halo"), as the table lists them.
_UNIFIED = re.compile(r"Radeon.*80[456]0S", re.IGNORECASE)


def _text(value) -> str:
    return value if isinstance(value, str) else ""


def parse_adapter(adapter: dict, available_bytes: int | None) -> tuple[GPU | None, list[Problem]]:
    """One registry display adapter as a GPU (None for software adapters)."""
    name = _text(adapter.get("driver_desc")).strip()
    matching = _text(adapter.get("matching_device_id"))
    if not name or _SOFTWARE.search(name) or matching.lower().startswith(("root\\", "swd\\")):
        return None, []
    ids = _DEVICE.search(matching)
    vendor_id, device_id = (ids.group(1).lower(), ids.group(2).lower()) if ids else (None, None)
    vendor = VENDORS.get(vendor_id or "")
    if vendor is None and _QUALCOMM_ACPI.search(matching):
        # Snapdragon X's Adreno is an ACPI device ("ACPI\VEN_QCOM&DEV_0C36"), not a PCI one: it was dropped unseen.
        return _adreno(name, adapter), []
    if vendor is None:
        return None, []
    problems = []
    integrated = bool(_INTEGRATED.search(name))
    qw, dword = fields.whole(adapter.get("qw_memory_size")), fields.whole(adapter.get("memory_size"))  # None when absurd
    total = None
    if not integrated:
        if isinstance(qw, int) and qw > 0:
            total = qw
        elif isinstance(dword, int) and 0 < dword < CAPPED_MEMORY_SIZE:
            total = dword
        elif isinstance(dword, int) and dword > 0:
            problems.append(Problem("windows-gpu", f"{name}: the registry only has the 32-bit memory size ({dword / 1024**3:.1f} GiB, likely capped); using the GPU table's size", severity="info"))
    old = vendor == "intel" and bool(PRE_GEN12.search(name))
    usable = total
    if integrated and not old:
        # What integrated graphics may use is system memory; a large BIOS carve-out (AMD's
        # "UMA frame buffer", up to 96 GB on Ryzen AI Max) is reported as qwMemorySize and
        # is taken out of system memory, so it adds to what is free there.
        carve_out = qw if isinstance(qw, int) and qw >= 2 * 1024**3 else 0
        usable = carve_out + available_bytes if available_bytes is not None else None
    elif old:
        usable = None
    backends = {"nvidia": ("cuda", "vulkan"), "amd": ("vulkan", "directml"), "intel": ("sycl", "vulkan"), "qualcomm": ("directml",)}[vendor]
    gpu = GPU(
        vendor=vendor,
        name=name,
        kind=("unified" if _UNIFIED.search(name) else "integrated") if integrated else "discrete",
        memory_total_bytes=total,
        memory_free_bytes=None,
        # The registry has no free-memory figure: a discrete card is assumed empty.
        memory_usable_bytes=usable,
        driver_version=_text(adapter.get("driver_version")) or None,
        pci_id=f"{vendor_id}:{device_id}" if ids else None,
        counted=not old,
        not_counted_reason=PRE_GEN12_REASON if old else None,
        backends=() if old else backends,
        source="registry",
    )
    return gpu, problems


# Snapdragon X's Adreno enumerates on ACPI, not PCI. llama.cpp's OpenCL backend runs on it (docs/backend/OPENCL.md,
# "Windows 11 Arm64"; ggml-opencl.cpp's X1E Adreno generation), and DirectML does, but gpuready has no measured speed
# on it to fit: the GPU is listed and not counted.
_QUALCOMM_ACPI = re.compile(r"^ACPI\\VEN_QCOM&", re.IGNORECASE)
ADRENO_REASON = ("gpuready has no speed model for Qualcomm's Adreno GPUs yet (llama.cpp's OpenCL backend and DirectML "
                 "run on them): work is judged on the CPU")


def _adreno(name: str, adapter: dict) -> GPU:
    """A Snapdragon X's Adreno GPU: listed, so the report does not say 'none found', but not counted."""
    return GPU(vendor="qualcomm", name=name, kind="integrated", driver_version=_text(adapter.get("driver_version")) or None,
               counted=False, not_counted_reason=ADRENO_REASON, source="registry")


def probe(host: Host) -> tuple[list[GPU], list[Problem]]:
    """GPUs Windows knows, except NVIDIA cards that NVML already reported."""
    if host.platform != "windows":
        return [], []
    readout = host.library("windows") or {}
    adapters = readout.get("display_adapters")
    if not isinstance(adapters, list):
        errors = readout.get("errors") if isinstance(readout.get("errors"), dict) else {}
        error = errors.get("display_adapters") or readout.get("error") or "no display adapters in the readout"
        return [], [Problem("windows-gpu", f"could not read the display adapters from the registry: {error}",
                            "Run `gpuready record DIR` and attach it to an issue.", "error")]
    nvml = host.library("nvml") if isinstance(host.library("nvml"), dict) else {}
    nvml_works = not nvml.get("error") and bool(nvml.get("devices"))
    memory = readout.get("memory") if isinstance(readout.get("memory"), dict) else {}
    available = fields.whole(memory.get("available_bytes"))
    gpus, problems = [], []
    for adapter in adapters:
        if not isinstance(adapter, dict):
            continue
        gpu, found = parse_adapter(adapter, available)
        if gpu is None or (gpu.vendor == "nvidia" and nvml_works):
            continue
        gpus.append(gpu)
        problems.extend(found)
    return gpus, problems
