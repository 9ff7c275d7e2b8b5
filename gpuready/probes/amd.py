"""AMD GPU probe without ROCm: the kernel's KFD topology and DRM sysfs.

Sources:
* ``/sys/class/drm/card*/device/``: ``vendor``, ``device``, ``revision``, ``uevent``
  (DRIVER=amdgpu, PCI_SLOT_NAME), ``mem_info_vram_total``/``_used``,
  ``mem_info_gtt_total``/``_used``, ``product_name``;
* ``/sys/class/kfd/kfd/topology/nodes/*/properties`` (``gfx_target_version``,
  ``simd_count``, ``location_id``, ``domain``): which cards ROCm can drive;
* ``/usr/share/libdrm/amdgpu.ids`` (marketing names by device and revision), and the
  optional ``amdsmi`` readout for cards it does not know;
* ``rocm-smi --showmeminfo vram --json`` when sysfs has no ``mem_info_vram_total``
  (:mod:`gpuready.probes.amd_tools`);
* ``/proc/meminfo`` (an APU's shared pool cannot exceed free system memory);
* ``/dev``, ``/proc/self/status``, ``/etc/group``: may this user open /dev/kfd?
* environment: ``HSA_OVERRIDE_GFX_VERSION``, ``ROCR_VISIBLE_DEVICES``, ``HIP_VISIBLE_DEVICES``.
"""

from __future__ import annotations

import dataclasses

from gpuready.hardware import GPU, Problem
from gpuready.host import DEVICE_GROUPS, Host
from gpuready.probes import amd_tools, fields, pci
from gpuready.probes.apu_memory import shared_pool
from gpuready.probes.memory import parse_meminfo

AMDGPU_IDS_PATHS = ("/usr/share/libdrm/amdgpu.ids", "/opt/amdgpu/share/libdrm/amdgpu.ids")
# GPU targets that are APUs (integrated graphics sharing system memory), from the
# processor table of https://llvm.org/docs/AMDGPUUsage.html#processors ("APU" column).
APU_TARGETS = {
    "gfx801", "gfx902", "gfx909", "gfx90c", "gfx1013", "gfx1033", "gfx1035", "gfx1036",
    "gfx1037", "gfx1103", "gfx1150", "gfx1151", "gfx1152", "gfx1153",
}
# APUs whose GPU is built to use most of system memory as one pool (Ryzen AI Max,
# "Strix Halo"): the table lists them as unified; fixture amd-strix-halo.
UNIFIED_TARGETS = {"gfx1151"}
# Targets in ROCm's Linux support matrix
# (https://rocm.docs.amd.com/projects/install-on-linux/en/latest/reference/system-requirements.html).
ROCM_SUPPORTED = {
    "gfx908", "gfx90a", "gfx942", "gfx950", "gfx1030", "gfx1100", "gfx1101", "gfx1102",
    "gfx1151", "gfx1200", "gfx1201",
}
RENDER_HINT = "Add yourself to the render and video groups (`sudo usermod -aG render,video $USER`), then log out and back in."


# --- pure parsing -------------------------------------------------------------------


def gfx_target(version: int | None) -> str | None:
    """KFD's gfx_target_version (decimal MMmmss) as a target name: 110000 -> gfx1100, 90012 -> gfx90c."""
    if not version or version < 10000:
        return None
    major, minor, stepping = version // 10000, (version // 100) % 100, version % 100
    return f"gfx{major}{minor}{stepping:x}"


def parse_properties(text: str) -> dict[str, int]:
    """A KFD topology node's ``properties``: one ``name value`` pair a line."""
    values = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2:
            try:
                values[parts[0]] = int(parts[1])
            except ValueError:
                continue
    return values


def parse_amdgpu_ids(text: str) -> dict[tuple[str, str], str]:
    """libdrm's amdgpu.ids: ``device_id,<tab>revision_id,<tab>name`` lines -> {(device, revision): name}."""
    names = {}
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        parts = [part.strip() for part in line.split(",", 2)]
        if len(parts) == 3:
            names[(parts[0].lower(), parts[1].lower())] = parts[2]
    return names


def location_id(address: str) -> tuple[int, int] | None:
    """PCI address 0000:03:00.0 -> (domain, KFD location_id = bus << 8 | device << 3 | function)."""
    try:
        domain, bus, rest = address.split(":")
        device, function = rest.split(".")
        return int(domain, 16), int(bus, 16) << 8 | int(device, 16) << 3 | int(function, 16)
    except ValueError:
        return None


def parse_group_access(status: str, group_file: str) -> bool | None:
    """May this process open /dev/kfd (root:render 0660)? None when it cannot be told."""
    uid = gids = None
    for line in status.splitlines():
        key, _, value = line.partition(":")
        if key == "Uid":
            uid = value.split()[0] if value.split() else None
        elif key == "Gid":
            gids = set(value.split()[:1]) | (gids or set())
        elif key == "Groups":
            gids = set(value.split()) | (gids or set())
    if uid == "0":
        return True
    groups = {}
    for line in group_file.splitlines():
        parts = line.split(":")
        if len(parts) >= 3:
            groups[parts[0]] = parts[2]
    wanted = next((groups[name] for name in DEVICE_GROUPS if groups.get(name)), None)  # render, else video
    if wanted is None or gids is None:
        return None
    return wanted in gids


def fmt_gib(value: int | None) -> str:
    return f"{value / 1024**3:.1f} GiB" if value is not None else "unknown"


# --- gathering ----------------------------------------------------------------------


def _kfd_nodes(host: Host) -> list[dict[str, int]]:
    """GPU nodes of the KFD topology (simd_count > 0), in node order."""
    nodes = []
    base = "/sys/class/kfd/kfd/topology/nodes"
    for name in sorted(host.list_dir(base) or [], key=lambda n: int(n) if n.isdigit() else 1 << 30):
        properties = parse_properties(host.read_text(f"{base}/{name}/properties") or "")
        if properties.get("simd_count", 0) > 0 and properties.get("gfx_target_version"):
            nodes.append(properties)
    return nodes


def _amdgpu_ids(host: Host) -> dict[tuple[str, str], str]:
    for path in AMDGPU_IDS_PATHS:
        text = host.read_text(path)
        if text:
            return parse_amdgpu_ids(text)
    return {}


def _amdsmi_names(host: Host) -> dict[str, str]:
    """Market names by PCI address from the optional amdsmi readout."""
    readout = host.library("amdsmi") or {}
    names = {}
    for device in readout.get("devices") or []:
        if isinstance(device, dict) and isinstance(device.get("bdf"), str) and isinstance(device.get("market_name"), str):
            if device["market_name"].strip() and device["market_name"] != "N/A":
                names[device["bdf"].lower()] = device["market_name"].strip()
    return names


def _name(host: Host, device: pci.PCIDevice, ids: dict, target: str | None) -> str:
    """amdgpu.ids, then sysfs product_name, then amdsmi (only read when needed), then the ids."""
    revision = pci.parse_hex(host.read_text(f"{device.sysfs}/revision"), 2) or ""
    named = ids.get((device.device_id, revision))
    if named:
        return named
    product = (host.read_text(f"{device.sysfs}/product_name") or "").strip()
    if product:
        return product
    from_amdsmi = _amdsmi_names(host).get(device.address.lower())
    if from_amdsmi:
        return from_amdsmi if from_amdsmi.upper().startswith("AMD") else f"AMD {from_amdsmi}"
    same_device = sorted(name for (dev, _), name in ids.items() if dev == device.device_id)
    if len(set(same_device)) == 1:
        return same_device[0]
    return f"AMD GPU {target or ''} ({device.pci_id})".replace("  ", " ")


def _visible(entries: str | None, index: int | None) -> bool:
    """Whether ROCR/HIP_VISIBLE_DEVICES keeps this GPU; UUID entries cannot be checked, so they hide nothing."""
    if entries is None:
        return True
    wanted = [e.strip() for e in entries.split(",") if e.strip()]
    if any(not e.isdigit() for e in wanted):
        return True
    return index is not None and str(index) in wanted


def override_target(value: str) -> str:
    """HSA_OVERRIDE_GFX_VERSION "11.0.0" -> gfx1100, "9.0.10" -> gfx90a."""
    parts = value.strip().split(".")
    try:
        major, minor, stepping = (int(p) for p in parts)
    except ValueError:
        return value
    return f"gfx{major}{minor}{stepping:x}"


def probe(host: Host) -> tuple[list[GPU], list[Problem]]:
    """AMD GPUs with VRAM (discrete) or the shared pool (APUs); Problems for access and ROCm support."""
    if host.platform != "linux":
        return [], []
    cards = [(name, device) for name, device in pci.drm_cards(host, "amd") if device.driver in ("amdgpu", None)]
    if not cards:
        return [], []
    problems: list[Problem] = []
    nodes = _kfd_nodes(host)
    by_location = {(n.get("domain", 0), n.get("location_id")): (i, n) for i, n in enumerate(nodes)}
    ids = _amdgpu_ids(host)
    meminfo = parse_meminfo(host.read_text("/proc/meminfo") or "")
    override = host.env("HSA_OVERRIDE_GFX_VERSION")
    visible = host.env("ROCR_VISIBLE_DEVICES") or host.env("HIP_VISIBLE_DEVICES")
    access = None
    if nodes and "kfd" in (host.list_dir("/dev") or []):
        access = parse_group_access(host.read_text("/proc/self/status") or "", host.read_text("/etc/group") or "")
        if access is False:
            problems.append(Problem("amd", "this user may not open /dev/kfd or the GPU render nodes", RENDER_HINT, "warning"))
    gpus = []
    smi_vram, smi_said = None, ""  # rocm-smi or amd-smi, asked only when sysfs lacks a card's VRAM size
    for position, (_, device) in enumerate(cards):
        key = location_id(device.address)
        index, node = by_location.get(key, (None, None)) if key else (None, None)
        target = gfx_target(node.get("gfx_target_version")) if node else None
        vram_total = pci.read_int(host, f"{device.sysfs}/mem_info_vram_total")
        vram_used = pci.read_int(host, f"{device.sysfs}/mem_info_vram_used")
        from_smi = False
        if vram_total is None:
            if smi_vram is None and not smi_said:
                smi_vram, smi_said = amd_tools.tool_vram(host, len(cards))  # smi_said: the tool, or what failed
            if smi_vram and smi_vram[position][0] is not None:
                (vram_total, vram_used), from_smi = smi_vram[position], True
        gtt_total = pci.read_int(host, f"{device.sysfs}/mem_info_gtt_total")
        gtt_used = pci.read_int(host, f"{device.sysfs}/mem_info_gtt_used")
        vram_free = vram_total - vram_used if vram_total is not None and vram_used is not None else None
        name = _name(host, device, ids, target)
        apu = target in APU_TARGETS if target else (vram_total is not None and vram_total <= 2 * 1024**3 and "Graphics" in name)
        kind = "unified" if target in UNIFIED_TARGETS else ("integrated" if apu else "discrete")
        total, free, carveout_free = vram_total, vram_free, None
        if apu and gtt_total is not None:
            # Carve-out plus GTT, GTT capped by what the OS has and can still give (apu_memory).
            pool = shared_pool(vram_total, vram_used, gtt_total, gtt_used, meminfo.get("MemTotal"), meminfo.get("MemAvailable"))
            total, free, carveout_free = pool.total_bytes, pool.free_bytes, pool.carveout_free_bytes
            if pool.capped:
                problems.append(Problem("amd", f"{name}: shared memory {pool.basis}", severity="info"))
        backends = (("rocm",) if node else ()) + ("vulkan",)
        if apu and gtt_total and vram_total and gtt_total > 2 * vram_total and node:
            # ROCm has reported only part of the GTT pool on Strix Halo
            # (https://github.com/ROCm/legacy-rocm-build/issues/5595); Vulkan sees all of it.
            problems.append(Problem("amd", f"{name}: {fmt_gib(free)} of shared memory assumes the runtime can use GTT; some ROCm versions see only the {fmt_gib(vram_total)} carve-out",
                                    "If a ROCm build reports less, use llama.cpp's Vulkan backend or raise the BIOS carve-out (UMA frame buffer).", "info"))
        gpu = GPU(
            vendor="amd",
            name=name,
            kind=kind,
            index=index,
            memory_total_bytes=total,
            memory_free_bytes=free,
            memory_usable_bytes=free,
            memory_carveout_free_bytes=carveout_free,
            gfx_target=target,
            driver=device.driver,
            pci_id=device.pci_id,
            backends=backends,
            source=("sysfs+kfd" if node else "sysfs") + (f"+{smi_said}" if from_smi else ""),
        )
        if total is None:
            problems.append(Problem("amd", f"{name}: cannot read its VRAM size ({device.sysfs}/mem_info_vram_total is missing; {smi_said if not smi_vram else smi_said + ' gave no figure for it'})",
                                    "Verdicts use the GPU table's memory size where it lists this GPU; `rocm-smi --showmeminfo vram` shows what ROCm sees.", "warning"))
        if access is False:
            gpu = dataclasses.replace(gpu, counted=False, not_counted_reason="this user may not open /dev/kfd or /dev/dri/renderD* (not in the render group)")
        elif not _visible(visible, index):
            gpu = dataclasses.replace(gpu, counted=False, not_counted_reason=f"hidden from ROCm by ROCR_VISIBLE_DEVICES/HIP_VISIBLE_DEVICES={fields.without_device_ids(visible)}")
        gpus.append(gpu)
        if target and override:
            problems.append(Problem("amd", f"HSA_OVERRIDE_GFX_VERSION={override}: ROCm treats {name} ({target}) as {override_target(override)}", severity="info"))
        elif target and target not in ROCM_SUPPORTED and gpu.counted:
            problems.append(Problem("amd", f"{name} ({target}) is not in ROCm's support list",
                                    "llama.cpp's Vulkan backend works on it; ROCm may work with HSA_OVERRIDE_GFX_VERSION set to a supported target.", "info"))
    if not nodes and any(gpu.kind == "discrete" for gpu in gpus):
        problems.append(Problem("amd", "amdgpu is loaded but the KFD compute interface is missing (/sys/class/kfd)",
                                "ROCm needs a kernel with CONFIG_HSA_AMD; Vulkan still works.", "info"))
    return gpus, problems
