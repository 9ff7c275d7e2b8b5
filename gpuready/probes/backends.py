"""Backends probe: which software can drive the machine's GPUs and NPUs, and which GPU each
one reaches.

Sources:
* CUDA: ``/proc/driver/nvidia/version`` or the ``nvml`` readout's ``driver_version`` (the
  driver); ``/usr/local/cuda/version.json`` or ``version.txt`` (the toolkit and libcudart
  a framework would find).
* ROCm: ``/opt/rocm/.info/version``; each AMD GPU's gfx target (``GPU.gfx_target``, else
  ``/sys/class/kfd/kfd/topology/nodes/*/properties`` ``gfx_target_version``), judged
  against AMD's support matrix (:data:`ROCM_GFX_SINCE`); ``HSA_OVERRIDE_GFX_VERSION``.
* Metal: the Apple probe's findings (Apple silicon, Metal family, Rosetta).
* Vulkan: ``vulkaninfo --summary`` (loader present, and devices that are real GPUs, not
  llvmpipe/lavapipe or SwiftShader).
* DirectML: the ``windows`` readout's ``directml`` object: ``{"dll": true, "version": "1.15.2"}``
  (``%SystemRoot%\\System32\\DirectML.dll`` present, its file version or null).
* OpenVINO, PyTorch: ``python -m gpuready.probes.pyinfo`` with the given interpreter, in a
  subprocess with a timeout; ``--import`` (the `--torch` flag) adds ``torch.cuda``,
  ``torch.backends.mps``, ``torch.xpu`` and OpenVINO's device list.
"""

from __future__ import annotations

import dataclasses
import json
import re
import weakref

from gpuready.catalog.tables import find_gpus, typeable
from gpuready.hardware import GPU, Backend, Problem
from gpuready.host import Host
from gpuready.probes import apple, macos, pyinfo

PYINFO_TIMEOUT_S = 5.0
VULKANINFO_ARGV = ("vulkaninfo", "--summary")
TORCH_TIMEOUT_S = 30.0

# First ROCm release whose Linux support matrix lists each gfx target (AMD, "System
# requirements (Linux)" GPU tables, https://rocm.docs.amd.com/projects/install-on-linux/en/latest/reference/system-requirements.html
# and the per-release compatibility matrix https://rocm.docs.amd.com/en/latest/compatibility/compatibility-matrix.html).
# Targets not listed (gfx1031/1032 RX 6700/6600, gfx1102 RX 7600, gfx1103/gfx1150/gfx1151 iGPUs,
# ...) are taken as unsupported, which errs towards recommending Vulkan;
# HSA_OVERRIDE_GFX_VERSION makes some of them work unofficially. Keep this table in step
# with AMD's matrix: it is the part of this module most likely to age.
ROCM_GFX_SINCE = {
    "gfx908": (5, 0),  # Instinct MI100
    "gfx90a": (5, 0),  # Instinct MI200
    "gfx1030": (5, 0),  # Radeon PRO W6800 / V620
    "gfx940": (5, 7),
    "gfx941": (5, 7),
    "gfx942": (5, 7),  # Instinct MI300
    "gfx1100": (5, 7),  # Radeon RX 7900 XTX / XT, PRO W7900
    # Radeon RX 7800 XT / 7700 XT, PRO W7700: on Windows' HIP SDK since 6.0/6.2, but still not on
    # the Linux list at 6.2.3 (https://github.com/ROCm/ROCm/discussions/2599); listed for Linux
    # from the 6.4 series (6.4.2 by its release notes: 6.4.0/6.4.1 are counted too generously).
    "gfx1101": (6, 4),
    "gfx1200": (6, 4),  # Radeon RX 9060 XT
    "gfx1201": (6, 4),  # Radeon RX 9070 XT / 9070
    "gfx950": (7, 0),  # Instinct MI350
}
SOFTWARE_VULKAN = ("DRIVER_ID_MESA_LLVMPIPE", "DRIVER_ID_GOOGLE_SWIFTSHADER")
VENDOR_IDS = {"nvidia": 0x10DE, "amd": 0x1002, "intel": 0x8086, "apple": 0x106B}


# --- parsers (pure) -------------------------------------------------------------------


def parse_vulkaninfo_summary(text: str) -> list[dict[str, str]]:
    """One dict per ``GPUn:`` block of `vulkaninfo --summary` (key = value lines)."""
    devices: list[dict[str, str]] = []
    for line in text.splitlines():
        stripped = line.strip()
        if re.fullmatch(r"GPU\d+:", stripped):
            devices.append({})
        elif devices and "=" in stripped:
            key, _, value = stripped.partition("=")
            devices[-1][key.strip()] = value.strip()
    return devices


def is_real_vulkan_device(device: dict[str, str]) -> bool:
    """A GPU, not a CPU rasteriser (llvmpipe/lavapipe, SwiftShader)."""
    if device.get("deviceType") == "PHYSICAL_DEVICE_TYPE_CPU" or device.get("driverID") in SOFTWARE_VULKAN:
        return False
    return not re.match(r"(llvmpipe|SwiftShader)", device.get("deviceName", ""), re.IGNORECASE)


def parse_cuda_version_json(text: str) -> str | None:
    """'12.4.1' from /usr/local/cuda/version.json ({"cuda": {"name": "CUDA SDK", "version": ...}})."""
    try:
        return str(json.loads(text)["cuda"]["version"])
    except (ValueError, KeyError, TypeError):
        return None


def parse_nvidia_proc_version(text: str) -> str | None:
    """'550.54.14' from /proc/driver/nvidia/version ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.14 ...")."""
    match = re.search(r"Kernel Module(?: for [\w-]+)?\s+(\d+(?:\.\d+)+)", text)
    return match.group(1) if match else None


def parse_rocm_version(text: str) -> tuple[int, int] | None:
    match = re.match(r"\s*(\d+)\.(\d+)", text)
    return (int(match.group(1)), int(match.group(2))) if match else None


def gfx_from_target_version(value: int) -> str | None:
    """KFD's gfx_target_version 110000 -> 'gfx1100', 90010 -> 'gfx90a'."""
    if not value:
        return None
    major, minor, step = value // 10000, (value // 100) % 100, value % 100
    return f"gfx{major}{minor:x}{step:x}"


def rocm_supports(gfx: str | None, version: tuple[int, int] | None) -> bool | None:
    """Whether this ROCm release lists the gfx target; None when either is unknown."""
    if gfx is None or version is None:
        return None
    since = ROCM_GFX_SINCE.get(gfx)
    return since is not None and version >= since


# --- gathering --------------------------------------------------------------------------


def cuda_backend(host: Host, gpus: tuple[GPU, ...] = ()) -> Backend | None:
    """CUDA: its version is the newest the driver supports (what a framework's bundled runtime may be)."""
    driver = parse_nvidia_proc_version(host.read_text("/proc/driver/nvidia/version") or "")
    if driver is None:
        driver = ((host.library("nvml") or {}).get("driver_version")) if host.platform != "darwin" else None
    if driver is None:
        return None
    runtime = parse_cuda_version_json(host.read_text("/usr/local/cuda/version.json") or "")
    if runtime is None:
        match = re.search(r"CUDA Version (\d+(?:\.\d+)+)", host.read_text("/usr/local/cuda/version.txt") or "")
        runtime = match.group(1) if match else None
    supported = next((gpu.cuda_version for gpu in gpus if gpu.vendor == "nvidia" and gpu.cuda_version), None)
    detail = f"driver {driver}" + (f" supports CUDA up to {supported}" if supported else "") + "; " + (
        f"CUDA toolkit {runtime} in /usr/local/cuda" if runtime else
        "no CUDA toolkit in /usr/local/cuda (frameworks bundle their own libcudart)")
    return Backend("cuda", True, version=supported or driver, detail=detail, source="nvidia-driver")


def kfd_gfx_targets(host: Host) -> list[str]:
    targets = []
    for node in host.list_dir("/sys/class/kfd/kfd/topology/nodes") or []:
        for line in (host.read_text(f"/sys/class/kfd/kfd/topology/nodes/{node}/properties") or "").splitlines():
            key, _, value = line.partition(" ")
            if key == "gfx_target_version" and value.strip().isdigit():
                gfx = gfx_from_target_version(int(value))
                if gfx and gfx not in targets:
                    targets.append(gfx)
    return targets


def rocm_backend(host: Host, gpus: list[GPU]) -> tuple[Backend | None, list[Problem]]:
    text = host.read_text("/opt/rocm/.info/version")
    if host.platform != "linux" or text is None:
        return None, []
    version = parse_rocm_version(text)
    targets = [g.gfx_target for g in gpus if g.vendor == "amd" and g.gfx_target] or kfd_gfx_targets(host)
    override = host.env("HSA_OVERRIDE_GFX_VERSION")
    supported = [t for t in targets if rocm_supports(t, version)]
    problems = []
    for target in targets:
        if target not in supported and not override:
            problems.append(Problem(
                "backends", f"ROCm {text.strip()} does not support {target} (AMD's support matrix)",
                "llama.cpp with Vulkan runs on this GPU; HSA_OVERRIDE_GFX_VERSION may make ROCm work unofficially.", "warning"))
    detail = f"gfx targets {', '.join(targets) or 'none found'}; supported: {', '.join(supported) or 'none'}"
    if override:
        detail += f"; HSA_OVERRIDE_GFX_VERSION={override}"
    available = bool(supported) or bool(override and targets)
    return Backend("rocm", available, version=text.strip(), detail=detail, source="/opt/rocm"), problems


def metal_backend(host: Host) -> Backend | None:
    if host.platform != "darwin":
        return None
    values = macos.sysctl(host)
    chip = apple.parse_chip(values.get("machdep.cpu.brand_string"))
    if chip is None:
        return Backend("metal", False, detail=apple.INTEL_MAC_GPU_REASON, source="sysctl")
    if values.get("sysctl.proc_translated") == "1":
        return Backend("metal", False, detail="this Python runs under Rosetta 2 (x86_64): no MPS or MLX", source="sysctl")
    entry = next((e for e in apple.displays(host) or [] if e.get("sppci_cores") is not None), None)
    family = apple.metal_family(entry) if entry else None
    return Backend("metal", True, version=family, detail=f"Apple {chip[0]} GPU: llama.cpp (Metal), MLX, PyTorch MPS",
                   source="system_profiler" if entry else "sysctl")


_vulkan_cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def vulkan_backend(host: Host) -> tuple[Backend | None, list[dict[str, str]]]:
    """The Vulkan backend and its real devices, from one `vulkaninfo --summary` per host."""
    try:
        return _vulkan_cache[host]
    except (KeyError, TypeError):
        pass
    value = _vulkan(host)
    try:
        _vulkan_cache[host] = value
    except TypeError:
        pass
    return value


def _vulkan(host: Host) -> tuple[Backend | None, list[dict[str, str]]]:
    result = host.run(VULKANINFO_ARGV, timeout=5.0)
    if result.status == "not_found":
        return None, []
    if result.status != "ok" or result.returncode != 0:
        reason = "timed out" if result.status == "timeout" else (result.stderr.strip().splitlines() or ["failed"])[-1]
        return Backend("vulkan", False, detail=f"vulkaninfo: {reason}", source="vulkaninfo"), []
    devices = parse_vulkaninfo_summary(result.stdout)
    real = [d for d in devices if is_real_vulkan_device(d)]
    api = max((d.get("apiVersion", "") for d in real), default=None) or None
    if not real:
        names = ", ".join(d.get("deviceName", "?") for d in devices) or "no devices"
        return Backend("vulkan", False, detail=f"only software rendering ({names})", source="vulkaninfo"), []
    return Backend("vulkan", True, version=api, detail="; ".join(d.get("deviceName", "?") for d in real),
                   source="vulkaninfo"), real


GPU_DEVICE_TYPES = {
    "PHYSICAL_DEVICE_TYPE_DISCRETE_GPU": "discrete",
    "PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU": "integrated",
    "PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU": "virtual",
}


def unseen_vulkan_gpus(gpus: tuple[GPU, ...], host: Host) -> list[Problem]:
    """A GPU the Vulkan loader lists but no GPU probe found (a container without /sys/class/drm, WSL2's Direct3D 12
    bridge): without a Problem the report read 'GPUs: none found' while llama.cpp's Vulkan backend would use it.

    A Vulkan device is a probed GPU when its vendorID:deviceID is that GPU's PCI id; the rest are paired by vendor
    with the probed GPUs no id matched (a GPU without a PCI id, Apple's or a Jetson's, or a translation layer that
    reports other ids), and only a Vulkan device left over is unseen."""
    _, devices = vulkan_backend(host)
    listed = [(device, vendor, f"{vendor:04x}:{_hex(device.get('deviceID')) or 0:04x}") for device in devices
              if device.get("deviceType") in GPU_DEVICE_TYPES and (vendor := _hex(device.get("vendorID"))) is not None]
    matched = {pci_id for _, _, pci_id in listed} & {gpu.pci_id.lower() for gpu in gpus if gpu.pci_id}
    spare = [VENDOR_IDS.get(gpu.vendor) for gpu in gpus if (gpu.pci_id or "").lower() not in matched]
    problems: list[Problem] = []
    for device, vendor, pci_id in listed:
        if pci_id in matched:
            continue
        if vendor in spare:
            spare.remove(vendor)
            continue
        kind = GPU_DEVICE_TYPES[device["deviceType"]]
        name = device.get("deviceName", "?")
        problems.append(Problem(
            "vulkan",
            f"Vulkan lists {name} ({kind} GPU), which no GPU probe found: its memory could not be read, so gpuready "
            "leaves it out of the estimates",
            "gpuready reads GPUs through NVML, the kernel's /sys/class/drm (amdgpu, i915, xe) or the Windows registry, "
            "and none of them shows this one here (a container without /sys/class/drm, WSL2). Run gpuready where the "
            f"GPU's driver is visible, or see what it could run with {_what_if_flag(name)}.",
            "warning"))
    return problems


def _what_if_flag(vulkan_name: str) -> str:
    """`--gpu '890M'` for the table row a Vulkan device name means, else the generic flag and where names are listed.

    Vulkan drivers add their own words: RADV its codename ("AMD Radeon 890M Graphics (RADV GFX1150)"), Mesa's Intel
    driver the platform ("Intel(R) Arc(tm) Graphics (MTL)"), WSL2's Direct3D 12 bridge a wrapper ("Microsoft
    Direct3D12 (NVIDIA GeForce RTX 3080)")."""
    inner = re.fullmatch(r"Microsoft Direct3D12 \((.*)\)", vulkan_name)
    name = inner.group(1) if inner else vulkan_name
    rows = find_gpus(name) or find_gpus(re.sub(r"\s*\([^()]*\)\s*$", "", name))
    if rows:
        return f"--gpu '{typeable(rows[0])}'"
    return "--gpu NAME (`gpuready models --gpus` lists the names)"


def _hex(value: str | None) -> int | None:
    try:
        return int(value or "", 16)
    except ValueError:
        return None


def directml_backend(host: Host) -> Backend | None:
    if host.platform != "windows":
        return None
    info = (host.library("windows") or {}).get("directml")
    if not isinstance(info, dict):
        return None
    present = bool(info.get("dll"))
    return Backend("directml", present, version=info.get("version"),
                   detail="DirectML.dll in System32: ONNX Runtime (DirectML EP), Windows ML" if present else "DirectML.dll not found",
                   source="windows")


def python_backends(host: Host, python: str, torch: bool) -> tuple[list[Backend], list[Problem]]:
    """OpenVINO (and PyTorch on request) as the given interpreter sees them."""
    readout = None if torch else host.library("python")
    if isinstance(readout, dict) and isinstance(readout.get("packages"), dict):
        # Package versions need no child process: reading metadata in-process is cheap,
        # and a child interpreter would cost ~0.1 s on every run.
        return _python_backends_from(readout, torch=False), []
    argv = (python, "-m", "gpuready.probes.pyinfo", *(("--import",) if torch else ()))
    result = host.run(argv, timeout=TORCH_TIMEOUT_S if torch else PYINFO_TIMEOUT_S)
    what = "PyTorch/OpenVINO check" if torch else "Python package check"
    python = python.replace("\\", "/").rsplit("/", 1)[-1]  # no home directory in a report
    if result.status == "not_found":
        return [], ([Problem("backends", f"{what}: could not run {python}", None, "info")] if torch else [])
    if result.status == "timeout":
        limit = TORCH_TIMEOUT_S if torch else PYINFO_TIMEOUT_S
        return [], [Problem("backends", f"{what}: {python} did not answer within {limit:g} s",
                            "Importing torch can be slow on first run; try again, or run without --torch.", "warning")]
    try:
        info = pyinfo.parse(result.stdout)
    except ValueError as error:
        return [], [Problem("backends", f"{what}: {python} printed something gpuready cannot read ({error})",
                            "Run `python -m gpuready.probes.pyinfo --import` by hand to see the error.", "warning")]
    return _python_backends_from(info, torch), not_installed(info["packages"], python) if torch else []


def not_installed(packages: dict, python: str) -> list[Problem]:
    """--torch asked PyTorch and OpenVINO which devices they see: where neither is installed there was nobody to ask,
    which the report says rather than showing nothing."""
    if packages.get("torch") or packages.get("openvino"):
        return []
    return [Problem("backends", f"--torch: neither PyTorch nor OpenVINO is installed for {python}, so no framework was asked "
                                "which devices it sees",
                    "pip install 'gpuready[torch]' (or torch, or openvino) into this Python, then run with --torch again.", "info")]


def _python_backends_from(info: dict, torch: bool) -> list[Backend]:
    backends = []
    packages = info["packages"]
    if packages.get("openvino"):
        devices = info.get("openvino_devices")
        detail = f"devices: {', '.join(devices)}" if isinstance(devices, list) else info.get("openvino_devices_error")
        backends.append(Backend("openvino", True, version=packages["openvino"], detail=detail, source="python"))
    if torch and packages.get("torch"):
        view = info.get("torch")
        if isinstance(view, dict):
            seen = [name for name, key in (("cuda", "cuda_available"), ("mps", "mps_available"), ("xpu", "xpu_available")) if view.get(key)]
            kind = "ROCm" if view.get("hip") else "CUDA"
            detail = "devices: " + (", ".join(seen) or "CPU only")
            if view.get("cuda_devices"):
                detail += f" ({kind}: {', '.join(view['cuda_devices'])})"
            backends.append(Backend("torch", True, version=view.get("version"), detail=detail, source="python"))
        else:
            backends.append(Backend("torch", False, version=packages["torch"], detail=info.get("torch_error"), source="python"))
    return backends


def probe(host: Host, python: str | None = None, torch: bool = False, gpus: tuple[GPU, ...] = ()) -> tuple[list[Backend], list[Problem]]:
    """Every backend found; ``python`` is the interpreter to ask about OpenVINO and (``torch``) PyTorch."""
    backends: list[Backend] = []
    problems: list[Problem] = []
    for found in (cuda_backend(host, gpus), metal_backend(host), directml_backend(host)):
        if found:
            backends.append(found)
    rocm, rocm_problems = rocm_backend(host, list(gpus))
    if rocm:
        backends.append(rocm)
        problems += rocm_problems
    vulkan, _ = vulkan_backend(host)
    if vulkan:
        backends.append(vulkan)
    if python:
        found, python_problems = python_backends(host, python, torch)
        backends += found
        problems += python_problems
    return backends, problems


# --- which GPU each backend reaches ---------------------------------------------------------


def assign(gpus: tuple[GPU, ...], backends: tuple[Backend, ...], host: Host) -> tuple[GPU, ...]:
    """GPUs with ``backends`` set to what was found usable for them (probes that set it keep theirs)."""
    available = {b.name for b in backends if b.available}
    rocm = next((b for b in backends if b.name == "rocm"), None)
    vulkan_vendors: set[int] = set()
    if "vulkan" in available:
        _, real = vulkan_backend(host)
        vulkan_vendors = {int(d.get("vendorID", "0"), 16) for d in real if d.get("vendorID", "").startswith("0x")}
    assigned = []
    for gpu in gpus:
        if gpu.backends or not gpu.counted:
            assigned.append(gpu)
            continue
        names = []
        if gpu.vendor == "nvidia" and "cuda" in available:
            names.append("cuda")
        if gpu.vendor == "amd" and rocm and rocm.available and (
            rocm_supports(gpu.gfx_target, parse_rocm_version(rocm.version or "")) is not False or host.env("HSA_OVERRIDE_GFX_VERSION")
        ):
            names.append("rocm")
        if VENDOR_IDS.get(gpu.vendor) in vulkan_vendors:
            names.append("vulkan")
        if host.platform == "windows" and "directml" in available:
            names.append("directml")
        assigned.append(dataclasses.replace(gpu, backends=tuple(names)) if names else gpu)
    return tuple(assigned)
