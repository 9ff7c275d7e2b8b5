"""NVIDIA GPU probe: name, total and free memory, bandwidth, CUDA, MIG, unified memory.

Sources, in order:
* the ``nvml`` readout (:mod:`gpuready.readouts.nvml`, the one place pynvml is called);
* ``nvidia-smi --query-gpu=... --format=csv,noheader,nounits`` and ``nvidia-smi -L`` (MIG
  instances) when NVML is unusable (see :mod:`gpuready.probes.nvidia_smi_more`);
* ``/sys/bus/pci/devices/*/{vendor,device,class,uevent}`` to tell "no NVIDIA GPU" from
  "an NVIDIA GPU whose driver is not working", ``/dev/dxg`` for WSL2 and the device-tree
  model for Jetson boards (see :mod:`gpuready.probes.nvidia_fallback`);
* ``/proc/meminfo`` for unified-memory systems (GB10 / DGX Spark, Jetson) whose NVML
  reports no framebuffer;
* environment: ``CUDA_VISIBLE_DEVICES``, ``CUDA_DEVICE_ORDER``, ``NVIDIA_VISIBLE_DEVICES``.
"""

from __future__ import annotations

import dataclasses
import re

from gpuready.catalog import tables
from gpuready.hardware import GPU, PCIE_GENERATION_GT_S, PCIE_WIDTHS, Problem
from gpuready.host import Host
from gpuready.probes import fields
from gpuready.probes.memory import parse_meminfo
from gpuready.probes.nvidia_common import (  # noqa: F401 - also this module's names, as tests and callers use them
    CONTAINER_HINT,
    MIB,
    NVML_HINTS,
    SMI_ARGV,
    SMI_FIELDS,
    UNIFIED_NAMES,
    WSL_HINT,
    WSL_LIBRARY_HINT,
    Seen,
    pci_id,
)


# nvmlDeviceArchitecture_t values (nvml.h, NVML_DEVICE_ARCH_*).
ARCHITECTURES = {
    2: "Kepler", 3: "Maxwell", 4: "Pascal", 5: "Volta", 6: "Turing",
    7: "Ampere", 8: "Ada Lovelace", 9: "Hopper", 10: "Blackwell",
}
# NVML's "max memory clock" is half the data rate for GDDR5/5X/6/6X/7 and HBM alike:
# nvbench prints an RTX 4090 as "1008 GB/sec (384-bit DDR @10501MHz)" =
# 384 / 8 bytes x 10501 MHz x 2 (https://github.com/NVIDIA/nvbench/pull/207), and an
# A100 40GB's 5120-bit HBM2 at 1215 MHz gives its specified 1555 GB/s.
TRANSFERS_PER_CLOCK = 2

# A100 and H100 split into 7 compute slices; a "3g" profile holds 3 of them (NVIDIA MIG
# User Guide, "Supported MIG Profiles": https://docs.nvidia.com/datacenter/tesla/mig-user-guide/).
MIG_COMPUTE_SLICES = 7
_MIG_PROFILE = re.compile(r"\bMIG\s+(\d+g\.\d+gb)", re.IGNORECASE)


# --- pure parsing -------------------------------------------------------------------


def cuda_version(value: int | None) -> str | None:
    """NVML's CUDA driver version 12040 -> "12.4"."""
    if not isinstance(value, int) or value <= 0:
        return None
    return f"{value // 1000}.{(value % 1000) // 10}"


def power_limit_w(milliwatts) -> float | None:
    """NVML's enforced power limit (milliwatts) in watts; None when not reported."""
    if isinstance(milliwatts, bool) or not isinstance(milliwatts, int) or milliwatts <= 0:
        return None
    return milliwatts / 1000


def derived_bandwidth(bus_width_bits: int | None, max_memory_clock_mhz: int | None) -> int | None:
    """Peak memory bandwidth in bytes/s from NVML's bus width and max memory clock."""
    bus_width_bits, max_memory_clock_mhz = fields.whole(bus_width_bits), fields.whole(max_memory_clock_mhz)
    # No memory bus is wider than 2^16 bits or clocked above 10^6 MHz: a bigger value is a corrupt readout.
    if not bus_width_bits or not max_memory_clock_mhz or bus_width_bits > 1 << 16 or max_memory_clock_mhz > 10**6:
        return None
    return bus_width_bits // 8 * max_memory_clock_mhz * 1_000_000 * TRANSFERS_PER_CLOCK


def parse_visible_devices(value: str | None) -> list[str] | None:
    """CUDA_VISIBLE_DEVICES as CUDA reads it: None when unset; CUDA stops at the first invalid entry."""
    if value is None:
        return None
    entries = []
    for raw in value.split(","):
        entry = raw.strip()
        if re.fullmatch(r"\d+", entry):
            entries.append(entry)
        elif entry.upper().startswith(("GPU-", "MIG-")):
            entries.append(entry)
        else:
            break  # "-1", "" or anything else ends the list
    return entries


def _selected(entries: list[str], index: int | None, uuid: str | None, parent_uuid: str | None = None) -> bool:
    for entry in entries:
        if entry.isdigit() and index is not None and int(entry) == index:
            return True
        lowered = entry.lower()
        if uuid and uuid.lower().startswith(lowered):  # CUDA accepts a unique UUID prefix
            return True
        if parent_uuid and lowered.startswith("mig-gpu-") and lowered[4:].startswith(parent_uuid.lower()):
            return True  # legacy MIG-GPU-<uuid>/<gi>/<ci> form
    return False


def _memory(device: dict) -> tuple[int | None, int | None]:
    memory = device.get("memory")
    if not isinstance(memory, dict):
        return None, None
    total, free = fields.whole(memory.get("total")), fields.whole(memory.get("free"))
    return total or None, free


def parse_nvml(readout: dict, meminfo: dict[str, int] | None = None) -> tuple[list[Seen], list[Problem]]:
    """GPUs from an NVML readout; MIG instances become GPUs of their own, memory per instance."""
    gpus: list[Seen] = []
    problems: list[Problem] = []
    system_errors = _failed_calls(readout.get("errors") if isinstance(readout.get("errors"), dict) else {})
    if system_errors:
        problems.append(Problem("nvidia", f"NVML could not answer: {system_errors}", FAILED_CALL_HINT, "info"))
    driver_version = readout.get("driver_version") if isinstance(readout.get("driver_version"), str) else None
    cuda = cuda_version(readout.get("cuda_driver_version"))
    for position, device in enumerate(readout.get("devices") or []):
        if not isinstance(device, dict):
            continue
        errors = device.get("errors") if isinstance(device.get("errors"), dict) else {}
        index = device.get("index") if isinstance(device.get("index"), int) else position
        name = device.get("name") if isinstance(device.get("name"), str) else None
        if name is None:
            problems.append(Problem("nvidia", f"NVML could not read GPU {index}: {_failed_calls(errors) or 'no name'}",
                                    "Run `nvidia-smi -q` to see whether the driver can talk to this GPU.", "warning"))
            continue

        total, free = _memory(device)
        kind = "discrete"
        usable = free
        memory_source = "nvml"
        if total is None and (UNIFIED_NAMES.search(name) or errors.get("memory") == "NVML_ERROR_NOT_SUPPORTED"):
            kind = "unified"
            total, free = (meminfo or {}).get("MemTotal"), (meminfo or {}).get("MemAvailable")
            usable = free
            memory_source = "proc_meminfo"
        elif UNIFIED_NAMES.search(name):
            kind = "unified"
        capability = device.get("compute_capability")
        capability_text = f"{capability[0]}.{capability[1]}" if isinstance(capability, list) and len(capability) == 2 else None
        bandwidth = derived_bandwidth(device.get("memory_bus_width_bits"), device.get("max_memory_clock_mhz"))
        link = pcie_link(device)
        gpu = GPU(
            vendor="nvidia",
            name=name,
            kind=kind,
            index=index,
            memory_total_bytes=total,
            memory_free_bytes=free,
            memory_usable_bytes=usable,
            architecture=ARCHITECTURES.get(device["architecture"]) if isinstance(device.get("architecture"), int) else None,
            compute_capability=capability_text,
            driver="nvidia",
            driver_version=driver_version,
            cuda_version=cuda,
            pci_id=pci_id(device.get("pci_device_id")),
            power_limit_w=power_limit_w(device.get("power_limit_mw")),
            pcie_link_gt_s=link[0],
            pcie_link_width=link[1],
            pcie_link_source="nvml" if link[0] else None,
            backends=("cuda",),
            source="nvml" if memory_source == "nvml" else "nvml+proc_meminfo",
        )
        value, source, note = tables.reconcile_bandwidth(gpu, bandwidth, "nvml")
        gpu = dataclasses.replace(gpu, bandwidth_bytes_per_s=value, bandwidth_source=source)
        if note:
            problems.append(Problem("nvidia", note, severity="info"))
        if total is None:
            problems.append(Problem("nvidia", f"NVML reports no memory size for {name} ({'nvmlDeviceGetMemoryInfo: ' + str(errors['memory']) if 'memory' in errors else 'no value'})",
                                    "Verdicts use the GPU table's memory size, if the GPU is listed there.", "warning"))
        # A memory size NVML cannot read has the warning above; every other failed call is named here.
        failed = _failed_calls({k: v for k, v in errors.items() if not (k == "memory" and total is None)})
        if failed:
            problems.append(Problem("nvidia", f"NVML could not answer every question about {name}: {failed}", FAILED_CALL_HINT, "info"))
        mig_mode = device.get("mig_mode")
        if isinstance(mig_mode, list) and mig_mode and mig_mode[0] == 1:
            found, unread = _mig_gpus(gpu, device, device.get("uuid"))
            gpus.extend(found)
            if unread:
                problems.append(Problem("nvidia", f"NVML could not read every MIG instance of {name}: {unread}",
                                        "Run `nvidia-smi -L` to list the MIG instances the driver sees.", "warning"))
        else:
            gpus.append(Seen(gpu, _text(device.get("uuid"))))
    return gpus, problems


ANSWERED_BY_NOT_SUPPORTED = ("mig_mode", "pcie_max_link_generation", "pcie_max_link_width")


def pcie_link(device: dict) -> tuple[float | None, int | None]:
    """The PCIe link NVML reports possible with this GPU and this machine: (GT/s a lane, lanes), both None unless both
    are read and are a PCIe generation and width."""
    generation, width = device.get("pcie_max_link_generation"), device.get("pcie_max_link_width")
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (generation, width)) or width not in PCIE_WIDTHS:
        return None, None
    gt_s = PCIE_GENERATION_GT_S.get(generation)
    return (gt_s, width) if gt_s else (None, None)


FAILED_CALL_HINT = ("What NVML could not say comes from the GPU table where it lists this GPU, or stays unknown; "
                    "`nvidia-smi -q` shows what the driver itself reports.")


def _failed_calls(errors: dict) -> str:
    """'nvmlDeviceGetMemoryBusWidth: NVML_ERROR_NOT_SUPPORTED, ...' for a device's failed fields.

    A GPU without MIG answers nvmlDeviceGetMigMode with NOT_SUPPORTED, and one without a PCIe link (Jetson, GB10) the
    PCIe link calls: that is an answer, not a failure.
    """
    from gpuready.readouts.nvml import CALLS

    calls: dict[str, str] = {}
    for field, error in errors.items():
        if field in ANSWERED_BY_NOT_SUPPORTED and error == "NVML_ERROR_NOT_SUPPORTED":
            continue
        calls.setdefault(CALLS.get(str(field), str(field)), str(error))
    return ", ".join(f"{call}: {error}" for call, error in calls.items())


def _text(value) -> str | None:
    return value if isinstance(value, str) else None


def _mig_gpus(parent: GPU, device: dict, parent_uuid: str | None) -> tuple[list[Seen], str]:
    """One GPU per MIG instance, with the instance's memory and its share of the bandwidth.

    Each memory slice of a MIG instance carries the same share of the GPU's memory
    bandwidth as of its memory (NVIDIA MIG User Guide, "Terminology": memory slice =
    1/8 of the memory, with proportional bandwidth; https://docs.nvidia.com/datacenter/tesla/mig-user-guide/).
    """
    listed = [m for m in device.get("mig_devices") or [] if isinstance(m, dict)]
    instances = [m for m in listed if isinstance(m.get("name"), str)]
    unread = "; ".join(
        f"{m['name'] if isinstance(m.get('name'), str) else 'an instance'}: {calls or 'no name'}"
        for m in listed
        if (calls := _failed_calls(m.get("errors") if isinstance(m.get("errors"), dict) else {})) or not isinstance(m.get("name"), str)
    )
    if not instances:
        reason = ("MIG mode is on but NVML could not list its instances" if unread else
                  "MIG mode is on but no MIG instance exists, so CUDA cannot use this GPU")
        return [Seen(dataclasses.replace(parent, counted=False, not_counted_reason=reason), _text(parent_uuid))], unread
    spec = tables.match_gpu(parent)
    gpus = []
    for instance in instances:
        total, free = _memory(instance)
        share = (total / parent.memory_total_bytes) if total and parent.memory_total_bytes else None
        bandwidth = int(parent.bandwidth_bytes_per_s * share) if parent.bandwidth_bytes_per_s and share else None
        profile = _MIG_PROFILE.search(instance["name"])
        slices = int(profile.group(1).split("g")[0]) if profile else None
        flops = spec.fp16_flops * slices / MIG_COMPUTE_SLICES if spec and spec.fp16_flops and slices else None
        gpu = dataclasses.replace(
            parent,
            name=instance["name"],
            index=parent.index,
            memory_total_bytes=total,
            memory_free_bytes=free,
            memory_usable_bytes=free,
            bandwidth_bytes_per_s=bandwidth,
            bandwidth_source=f"{parent.bandwidth_source} x MIG memory share" if bandwidth else None,
            mig_profile=profile.group(1).lower() if profile else None,
            fp16_flops=flops,
            flops_source=f"table:{spec.id} x {slices}/{MIG_COMPUTE_SLICES} MIG compute slices" if flops else None,
        )
        gpus.append(Seen(gpu, _text(instance.get("uuid")), _text(parent_uuid)))
    return gpus, unread


def apply_visibility(
    gpus: list[Seen], cuda_visible: str | None, nvidia_visible: str | None, cuda_order: str | None = None
) -> tuple[list[GPU], list[Problem]]:
    """Mark GPUs hidden by CUDA_VISIBLE_DEVICES / NVIDIA_VISIBLE_DEVICES as not counted.

    Indices in CUDA_VISIBLE_DEVICES are taken in NVML (PCI bus) order, which is CUDA's
    order under CUDA_DEVICE_ORDER=PCI_BUS_ID. NVIDIA_VISIBLE_DEVICES is applied by the
    container runtime before NVML sees the GPUs, so only "none"/"void" and UUIDs are checked.
    """
    problems: list[Problem] = []
    result = []
    cuda_entries = parse_visible_devices(cuda_visible)
    nvidia = (nvidia_visible or "").strip().lower()
    nvidia_uuids = [e.strip() for e in nvidia.split(",") if e.strip().startswith(("gpu-", "mig-"))]
    quoted = fields.without_device_ids(cuda_visible)  # a report carries no UUIDs: quoted with them replaced
    for seen in gpus:
        gpu, uuid, parent_uuid = seen.gpu, seen.uuid, seen.parent_uuid
        reason = None
        if nvidia in ("none", "void"):
            reason = f"NVIDIA_VISIBLE_DEVICES={fields.without_device_ids(nvidia_visible)} hides every GPU"
        elif nvidia_uuids and not _selected(nvidia_uuids, None, uuid, parent_uuid):
            reason = "not in NVIDIA_VISIBLE_DEVICES"
        elif cuda_entries is not None and not _selected(cuda_entries, None if gpu.mig_profile else gpu.index, uuid, parent_uuid):
            reason = f"not in CUDA_VISIBLE_DEVICES={quoted}"
        if reason and gpu.counted:
            gpu = dataclasses.replace(gpu, counted=False, not_counted_reason=reason)
        result.append(gpu)
    names = {seen.gpu.name for seen in gpus}
    if cuda_entries and any(e.isdigit() for e in cuda_entries) and len(names) > 1 and (cuda_order or "").upper() != "PCI_BUS_ID":
        problems.append(Problem("nvidia", f"CUDA_VISIBLE_DEVICES={quoted} uses indices, read here in PCI bus order; CUDA itself "
                                "orders different GPUs fastest first, so an index may mean another GPU",
                                "Set CUDA_DEVICE_ORDER=PCI_BUS_ID (or use GPU UUIDs) so indices mean the same GPU everywhere.", "info"))
    if cuda_entries == [] and gpus:
        problems.append(Problem("nvidia", f"CUDA_VISIBLE_DEVICES={quoted!r} hides every NVIDIA GPU",
                                "Unset CUDA_VISIBLE_DEVICES (or list the GPUs to use) to run models on the GPU.", "warning"))
    return result, problems


def _listed_migs(gpus: list[Seen], listed) -> tuple[list[Seen], list[Problem]]:
    """Each GPU that ``nvidia-smi -L`` shows with MIG instances becomes those instances (memory from the profile name)."""
    by_index = {entry.index: entry for entry in listed if entry.migs}
    result: list[Seen] = []
    problems: list[Problem] = []
    for seen in gpus:
        entry = by_index.get(seen.gpu.index)
        if entry is None:
            result.append(seen)
            continue
        from gpuready.probes import nvidia_smi_more as more

        parent = dataclasses.replace(seen.gpu, source="nvidia-smi")
        migs, _ = _mig_gpus(parent, {"mig_devices": more.mig_devices(entry)}, entry.uuid)
        result.extend(dataclasses.replace(m, gpu=dataclasses.replace(m.gpu, source="nvidia-smi -L")) for m in migs)
        named = ", ".join(sorted({profile for profile, _, _ in entry.migs}))
        problems.append(Problem("nvidia", f"{seen.gpu.name} is split into {len(migs)} MIG instance(s) ({named}); without NVML each "
                                "instance's memory is the size its profile names (3g.40gb: 40 GB) and its free memory is unknown",
                                "Install nvidia-ml-py (`pip install nvidia-ml-py`) for each instance's exact memory.", "info"))
    return result, problems


def probe(host: Host) -> tuple[list[GPU], list[Problem]]:
    """NVIDIA GPUs with total and free memory; a Problem with a hint when the driver is present but unusable."""
    if host.platform == "darwin":
        return [], []
    readout = host.library("nvml")
    problems: list[Problem] = []
    error, detail = "not_found", None
    if isinstance(readout, dict) and not readout.get("error") and isinstance(readout.get("devices"), list):
        meminfo = parse_meminfo(host.read_text("/proc/meminfo") or "") if host.platform == "linux" else {}
        gpus, problems = parse_nvml(readout, meminfo)
    else:
        if isinstance(readout, dict):
            # A readout with neither an error nor a device list did not come from readouts.nvml: say so.
            error, detail = str(readout.get("error") or "NVML_READOUT_MALFORMED"), readout.get("detail")
            call = readout.get("call")
            detail = f"{call}: {detail}" if isinstance(call, str) and detail else (call if isinstance(call, str) else detail)
        from gpuready.probes import nvidia_fallback as fallback

        from gpuready.probes import nvidia_smi_more as more

        result = host.run(SMI_ARGV, timeout=10.0)
        parsed = fallback.parse_smi_csv(result.stdout) if result.ok else []
        if parsed:
            gpus = more.with_meminfo(parsed, parse_meminfo(host.read_text("/proc/meminfo") or ""))
            listed, list_problems = more.read_list(host, [seen.gpu.name for seen in gpus])
            gpus, problems = _listed_migs(gpus, listed)
            problems += list_problems + more.csv_problems(result.stdout)
            if error not in ("not_found", "PYNVML_NOT_INSTALLED"):
                problems.append(Problem("nvidia", f"NVML failed ({error}); read the GPUs with nvidia-smi instead", NVML_HINTS.get(error), "info"))
            elif gpus:
                problems.append(Problem("nvidia", "NVML is not available; read the GPUs with nvidia-smi (no bandwidth, and no exact memory per MIG instance)", NVML_HINTS["PYNVML_NOT_INSTALLED"], "info"))
        else:
            if result.status == "ok" and error in ("not_found", "PYNVML_NOT_INSTALLED", "NVML_ERROR_LIBRARY_NOT_FOUND"):
                said = fallback.smi_error(result.stdout, result.stderr, result.returncode)
                error = said if said.startswith("NVML_") or error == "not_found" else error
            if result.ok:  # exit code 0 but not one GPU row it could read
                detail = detail or "nvidia-smi printed no GPU row gpuready could read"
            gpus, problems = fallback.unusable(host, error, detail, started=isinstance(readout, dict) and readout.get("call") not in (None, "nvmlInit"))
            return gpus, problems + (more.csv_problems(result.stdout) if result.ok else [])
    visible, visibility = apply_visibility(
        gpus, host.env("CUDA_VISIBLE_DEVICES"), host.env("NVIDIA_VISIBLE_DEVICES"), host.env("CUDA_DEVICE_ORDER")
    )
    return visible, problems + visibility
