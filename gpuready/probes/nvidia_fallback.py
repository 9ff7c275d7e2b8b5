"""When NVML cannot be used: nvidia-smi's CSV, and telling "no NVIDIA GPU" from "a GPU whose driver is not working".

Sources: ``nvidia-smi --query-gpu=... --format=csv,noheader,nounits`` and its error
messages; ``/sys/bus/pci/devices/*`` (vendor 0x10de, class 03xxxx, uevent DRIVER=);
``/proc/sys/kernel/osrelease``, ``/proc/version``, ``WSL_DISTRO_NAME``/``WSL_INTEROP``, ``/usr/lib/wsl`` and ``/dev/dxg`` (WSL2); ``/proc/device-tree/model`` or
``/sys/firmware/devicetree/base/model``, ``/proc/meminfo`` and ``/etc/nv_tegra_release``
(Jetson boards, whose GPU is not on a PCI bus).
"""

from __future__ import annotations

import dataclasses
import re

from gpuready.catalog import tables
from gpuready.hardware import GPU, Problem
from gpuready.host import Host
from gpuready.probes import fields, pci
from gpuready.probes.memory import parse_meminfo
from gpuready.probes.nvidia_smi_more import l4t_version, split_row
from gpuready.probes.nvidia_common import (
    CONTAINER_HINT,
    MIB,
    NVML_HINTS,
    SMI_FIELDS,
    UNIFIED_NAMES,
    WSL_HINT,
    WSL_LIBRARY_HINT,
    Seen,
    pci_id,
)

# What the NVML readout and nvidia-smi say on a machine with no NVIDIA driver at all.
NOTHING_NVIDIA = ("not_found", "PYNVML_NOT_INSTALLED", "NVML_ERROR_LIBRARY_NOT_FOUND", "no devices")

DEVICE_TREE_MODELS = ("/proc/device-tree/model", "/sys/firmware/devicetree/base/model")


def parse_smi_csv(text: str) -> list[Seen]:
    """GPUs from ``nvidia-smi --query-gpu=<SMI_FIELDS> --format=csv,noheader,nounits``."""
    gpus = []
    for line in text.splitlines():
        values = split_row(line)  # a name with commas joined back, "[N/A]" cells empty
        if values is None:
            continue

        def mib(key: str) -> int | None:
            try:
                return int(float(values[key])) * MIB
            except ValueError:  # "[N/A]", "[Not Supported]" (read as "")
                return None

        try:
            index = int(values["index"])
        except ValueError:
            continue
        device_id = values["pci.device_id"]
        gpu = GPU(
            vendor="nvidia",
            name=values["name"] or f"NVIDIA GPU {index}",
            kind="unified" if UNIFIED_NAMES.search(values["name"]) else "discrete",
            index=index,
            memory_total_bytes=mib("memory.total"),
            memory_free_bytes=mib("memory.free"),
            memory_usable_bytes=mib("memory.free"),
            driver="nvidia",
            driver_version=values["driver_version"] or None,
            pci_id=pci_id(int(device_id, 16)) if re.fullmatch(r"0x[0-9a-fA-F]+", device_id) else None,
            backends=("cuda",),
            source="nvidia-smi",
        )
        value, source, _ = tables.reconcile_bandwidth(gpu, None, "")
        gpus.append(Seen(dataclasses.replace(gpu, bandwidth_bytes_per_s=value, bandwidth_source=source)))
    return gpus


def smi_error(stdout: str, stderr: str, returncode: int | None) -> str:
    """The NVML error name nvidia-smi's message stands for."""
    text = f"{stdout}\n{stderr}".lower()
    if "version mismatch" in text:
        return "NVML_ERROR_LIB_RM_VERSION_MISMATCH"
    if "couldn't communicate with the nvidia driver" in text or "driver not loaded" in text:
        return "NVML_ERROR_DRIVER_NOT_LOADED"
    if "insufficient permissions" in text or "no permission" in text:
        return "NVML_ERROR_NO_PERMISSION"
    return f"nvidia-smi exit code {returncode}"


def _is_wsl(host: Host) -> bool:
    """WSL, from the kernel release or version (Microsoft's kernels say so), WSL's own variables, or /usr/lib/wsl."""
    if any("microsoft" in (host.read_text(path) or "").lower() for path in ("/proc/sys/kernel/osrelease", "/proc/version")):
        return True
    return bool(host.env("WSL_DISTRO_NAME") or host.env("WSL_INTEROP")) or host.list_dir("/usr/lib/wsl") is not None


def _in_container(host: Host) -> bool:
    return host.read_text("/.dockerenv") is not None or host.read_text("/run/.containerenv") is not None


def jetson(host: Host) -> GPU | None:
    """A Jetson board's integrated GPU, named from the device-tree model ("NVIDIA Jetson AGX Orin Developer Kit")."""
    if host.arch != "arm64":
        return None
    model = next((fields.label(text) or "" for path in DEVICE_TREE_MODELS if (text := host.read_text(path))), "")
    release = l4t_version(host)
    if "jetson" not in model.lower():
        if release is None:
            return None
        model = "NVIDIA Jetson"  # /etc/nv_tegra_release marks a Jetson even when the device-tree model is unreadable
    name = re.sub(r"\s*Developer Kit.*$", "", model, flags=re.IGNORECASE).strip()
    name = name if name.upper().startswith("NVIDIA") else f"NVIDIA {name}"
    meminfo = parse_meminfo(host.read_text("/proc/meminfo") or "")
    gpu = GPU(vendor="nvidia", name=name, kind="unified", memory_total_bytes=meminfo.get("MemTotal"),
              memory_free_bytes=meminfo.get("MemAvailable"), memory_usable_bytes=meminfo.get("MemAvailable"),
              driver="nvgpu", driver_version=release, backends=("cuda",), source="devicetree+proc_meminfo")
    value, source, _ = tables.reconcile_bandwidth(gpu, None, "")
    return dataclasses.replace(gpu, bandwidth_bytes_per_s=value, bandwidth_source=source)


def unusable(host: Host, error: str, detail: str | None, started: bool = False) -> tuple[list[GPU], list[Problem]]:
    """NVML and nvidia-smi both failed: is there an NVIDIA GPU at all? (``started``: NVML itself started, then failed.)"""
    board = jetson(host)
    if board is not None:
        return [board], [Problem("nvidia", f"NVML is not available on this Jetson ({error}); memory is read from /proc/meminfo", severity="info")]
    devices = pci.display_devices(host, "nvidia") if host.platform == "linux" else []
    wsl = host.platform == "linux" and _is_wsl(host) and "dxg" in (host.list_dir("/dev") or [])
    hint = NVML_HINTS.get(error, "Run `nvidia-smi` to see what the driver says.")
    if not devices and not wsl:
        if error in NOTHING_NVIDIA and not started:
            return [], []  # no NVIDIA library and no NVIDIA GPU: nothing to say
        # NVML is installed and failed: a broken driver, or a container or VM that hides the PCI bus.
        why = f"{error}{f' ({detail})' if detail else ''}"
        return [], [Problem("nvidia", f"NVML failed ({why}) and no NVIDIA GPU is visible on the PCI bus", hint, "warning")]
    drivers = {d.driver for d in devices}
    if devices and drivers == {"nouveau"}:
        hint = "The open-source nouveau driver is bound to the GPU; CUDA needs NVIDIA's driver. Install it and reboot."
    elif devices and drivers == {None} and error in ("NVML_ERROR_LIBRARY_NOT_FOUND", "PYNVML_NOT_INSTALLED", "not_found"):
        hint = NVML_HINTS["NVML_ERROR_DRIVER_NOT_LOADED"]
    if wsl and not devices:
        has_library = "libnvidia-ml.so.1" in (host.list_dir("/usr/lib/wsl/lib") or [])
        hint = WSL_LIBRARY_HINT if has_library else WSL_HINT
    elif devices and error in ("NVML_ERROR_LIBRARY_NOT_FOUND", "not_found") and _in_container(host):
        hint = CONTAINER_HINT
    why = f"{error}{f' ({detail})' if detail else ''}"
    gpus = [
        GPU(
            vendor="nvidia",
            name=f"NVIDIA GPU {device.pci_id}",
            index=None,
            driver=device.driver,
            pci_id=device.pci_id,
            counted=False,
            not_counted_reason=f"the NVIDIA driver is not usable: {error}",
            source="sysfs",
        )
        for device in devices
    ]
    what = f"{len(devices)} NVIDIA GPU(s) on the PCI bus" if devices else "a WSL2 GPU (/dev/dxg)"
    problems = [Problem("nvidia", f"{what} but the driver cannot be used: {why}", hint, "warning")]
    return gpus, problems
