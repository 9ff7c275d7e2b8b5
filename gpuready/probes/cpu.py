"""CPU probe: name, vendor, cores and the ISA features that matter for local inference.

Sources:
* Linux: ``/proc/cpuinfo``; ``/sys/devices/cpu_core/cpus`` and ``/sys/devices/cpu_atom/cpus``
  (Intel hybrid P/E cores); ``/sys/firmware/devicetree/base/model`` (ARM boards);
  ``/sys/devices/virtual/dmi/id/sys_vendor`` (to name AWS Graviton cores).
* macOS: ``sysctl`` keys (see :mod:`gpuready.probes.macos`).
* Windows: the ``windows`` readout (registry ProcessorNameString, IsProcessorFeaturePresent,
  GetLogicalProcessorInformationEx via psutil).
"""

from __future__ import annotations

from gpuready.hardware import CPU, Problem
from gpuready.host import Host
from gpuready.probes import cpu_counts, fields, macos
from gpuready.probes.failure import ProbeFailure

# x86 /proc/cpuinfo flags -> the names gpuready reports.
X86_FEATURES = {
    "avx": "avx",
    "avx2": "avx2",
    "fma": "fma",
    "f16c": "f16c",
    "avx512f": "avx512f",
    "avx512bw": "avx512bw",
    "avx512_vnni": "avx512_vnni",
    "avx512_bf16": "avx512_bf16",
    "avx512_fp16": "avx512_fp16",
    "avx_vnni": "avx_vnni",
    "amx_tile": "amx",
    "amx_int8": "amx_int8",
    "amx_bf16": "amx_bf16",
}
# ARM /proc/cpuinfo "Features" -> names (Linux arch/arm64/kernel/cpuinfo.c hwcap strings).
ARM_FEATURES = {
    "asimd": "neon",
    "asimddp": "dotprod",
    "i8mm": "i8mm",
    "sve": "sve",
    "sve2": "sve2",
    "bf16": "bf16",
    "asimdhp": "fp16",
    "sme": "sme",
}
# (implementer, part) -> core name, from the ARM_CPU_PART_* / *_CPU_PART_* defines in Linux
# arch/arm64/include/asm/cputype.h (linux-next 2025 for the Cortex/Neoverse list through Neoverse-N3;
# the 6.18-stable backports "arm64: cputype: Add Neoverse-V3AE / C1-Ultra definitions" for 0xD83,
# 0xD89 (Cortex-A720AE), 0xD8B (C1-Pro) and 0xD8C). 0xD0F is ARM_CPU_PART_AEM_V8 (Arm's
# architecture envelope model, a simulator), not a core: it is left out.
ARM_PARTS = {
    (0x41, 0xD03): "Cortex-A53",
    (0x41, 0xD04): "Cortex-A35",
    (0x41, 0xD05): "Cortex-A55",
    (0x41, 0xD07): "Cortex-A57",
    (0x41, 0xD08): "Cortex-A72",
    (0x41, 0xD09): "Cortex-A73",
    (0x41, 0xD0A): "Cortex-A75",
    (0x41, 0xD0B): "Cortex-A76",
    (0x41, 0xD0C): "Neoverse-N1",
    (0x41, 0xD0D): "Cortex-A77",
    (0x41, 0xD0E): "Cortex-A76AE",
    (0x41, 0xD40): "Neoverse-V1",
    (0x41, 0xD41): "Cortex-A78",
    (0x41, 0xD42): "Cortex-A78AE",  # NVIDIA Jetson Orin
    (0x41, 0xD44): "Cortex-X1",
    (0x41, 0xD46): "Cortex-A510",
    (0x41, 0xD47): "Cortex-A710",
    (0x41, 0xD48): "Cortex-X2",
    (0x41, 0xD49): "Neoverse-N2",
    (0x41, 0xD4B): "Cortex-A78C",
    (0x41, 0xD4C): "Cortex-X1C",
    (0x41, 0xD4D): "Cortex-A715",
    (0x41, 0xD4E): "Cortex-X3",
    (0x41, 0xD4F): "Neoverse-V2",
    (0x41, 0xD80): "Cortex-A520",
    (0x41, 0xD81): "Cortex-A720",
    (0x41, 0xD82): "Cortex-X4",
    (0x41, 0xD83): "Neoverse-V3AE",
    (0x41, 0xD84): "Neoverse-V3",
    (0x41, 0xD85): "Cortex-X925",  # NVIDIA GB10 (DGX Spark) performance cores
    (0x41, 0xD87): "Cortex-A725",  # NVIDIA GB10 (DGX Spark) efficiency cores
    (0x41, 0xD89): "Cortex-A720AE",
    (0x41, 0xD8B): "C1-Pro",
    (0x41, 0xD8C): "C1-Ultra",
    (0x41, 0xD8E): "Neoverse-N3",
    (0x4E, 0x004): "Carmel",  # NVIDIA_CPU_PART_CARMEL (Jetson Xavier)
    (0x51, 0x001): "Oryon",
    (0xC0, 0xAC3): "AmpereOne",
}
ARM_IMPLEMENTERS = {0x41: "ARM", 0x42: "Broadcom", 0x4E: "NVIDIA", 0x51: "Qualcomm", 0x61: "Apple", 0xC0: "Ampere"}
# AWS names its Graviton generations by core: N1 = Graviton2, V1 = Graviton3, V2 = Graviton4
# (https://github.com/aws/aws-graviton-getting-started, "Graviton processors" table).
GRAVITON = {"Neoverse-N1": "AWS Graviton2", "Neoverse-V1": "AWS Graviton3", "Neoverse-V2": "AWS Graviton4"}


def cpuinfo_model_name(host: Host) -> str | None:
    """The first /proc/cpuinfo 'model name' (x86 Linux), for probes whose device ids do not name a part alone: an
    Arrow Lake-H iGPU (130T or 140T), an AMD NPU (XDNA or XDNA 2)."""
    for line in (host.read_text("/proc/cpuinfo") or "").splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "model name":
            return value.strip()
    return None


def parse_cpu_list(text: str) -> int:
    """Count the CPUs in a Linux cpu list such as ``0-15,24``."""
    count = 0
    for part in text.strip().split(","):
        if not part:
            continue
        low, _, high = part.partition("-")
        count += (int(high) - int(low) + 1) if high else 1
    return count


def parse_proc_cpuinfo(text: str) -> list[dict[str, str]]:
    """Split /proc/cpuinfo into one dict per processor block (plus any trailing global block)."""
    blocks: list[dict[str, str]] = []
    current: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if current:
                blocks.append(current)
                current = {}
            continue
        key, sep, value = line.partition(":")
        if sep:
            if key.strip() == "processor" and "processor" in current:
                blocks.append(current)  # no blank line between blocks (some ARM kernels): a processor line starts one
                current = {}
            current[key.strip()] = value.strip()
    if current:
        blocks.append(current)
    return blocks


def _int(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        return int(value, 0)
    except ValueError:
        return None


def logical_count(host: Host, processors: list[dict[str, str]]) -> tuple[int, str]:
    """Logical CPUs and the source that won: the kernel's online list, else cpuinfo's blocks or its ``siblings`` x packages.

    A /proc/cpuinfo with one block (or blocks the kernel printed without blank lines) must not
    make a 96-core Xeon a 1-core machine; the largest credible count wins.
    """
    blocks = len(processors)
    for path in ("/sys/devices/system/cpu/online", "/sys/devices/system/cpu/present"):
        text = host.read_text(path)
        try:
            listed = parse_cpu_list(text) if text and text.strip() else 0
        except ValueError:
            listed = 0
        if 0 < listed <= 65536:  # the kernel's own list wins over cpuinfo's per-package "siblings"
            return (listed, path) if listed > blocks else (blocks, "/proc/cpuinfo")
    siblings = _int(processors[0].get("siblings"))
    packages = len({b.get("physical id") for b in processors if "physical id" in b}) or 1
    if siblings and 0 < siblings * packages <= 65536 and siblings * packages > blocks:
        return siblings * packages, "/proc/cpuinfo siblings"
    return blocks, "/proc/cpuinfo"


def linux_cpu(host: Host, arch: str) -> tuple[CPU, list[Problem]]:
    text = host.read_text("/proc/cpuinfo")
    if text is None:
        raise ProbeFailure("cannot read /proc/cpuinfo", "Is /proc mounted? gpuready needs it to identify the CPU.")
    blocks = parse_proc_cpuinfo(text)
    processors = [b for b in blocks if "processor" in b and _int(b["processor"]) is not None]
    if not processors:
        raise ProbeFailure("/proc/cpuinfo lists no processors", "The file looks garbled; please report it with `gpuready record`.")
    globals_ = {k: v for b in blocks if "processor" not in b for k, v in b.items()}
    first = processors[0]
    problems: list[Problem] = []
    logical, counted_by = logical_count(host, processors)
    if counted_by != "/proc/cpuinfo":
        problems.append(Problem("cpu", f"/proc/cpuinfo lists {len(processors)} processor(s) but {counted_by} counts {logical}; "
                                f"using {counted_by}", severity="info"))

    if arch == "x86_64":
        name = first.get("model name")
        vendor = {"GenuineIntel": "Intel", "AuthenticAMD": "AMD"}.get(first.get("vendor_id", ""), first.get("vendor_id"))
        flags = set(first.get("flags", "").split())
        features = sorted({X86_FEATURES[f] for f in flags if f in X86_FEATURES})
        cores = {(b.get("physical id"), b.get("core id")) for b in processors if "core id" in b}
        physical = len(cores) if cores else None
        # "cpu cores" is per package: it still counts every core when cpuinfo holds fewer blocks than CPUs.
        per_package = _int(first.get("cpu cores"))
        packages = len({b.get("physical id") for b in processors if "physical id" in b}) or 1
        if per_package and per_package * packages > (physical or 0) and logical > len(processors):
            physical = min(per_package * packages, logical)
    else:
        features_raw = set((first.get("Features") or globals_.get("Features") or "").split())
        features = sorted({ARM_FEATURES[f] for f in features_raw if f in ARM_FEATURES})
        implementer = _int(first.get("CPU implementer"))
        parts = []
        for block in processors:
            part = ARM_PARTS.get((_int(block.get("CPU implementer")) or 0, _int(block.get("CPU part")) or -1))
            if part and part not in parts:
                parts.append(part)
        vendor = ARM_IMPLEMENTERS.get(implementer or -1)
        name = " + ".join(parts) if parts else None
        if name and vendor and vendor not in ("ARM",):
            name = f"{vendor} {name}"
        sys_vendor = (host.read_text("/sys/devices/virtual/dmi/id/sys_vendor") or "").strip()
        if sys_vendor == "Amazon EC2" and len(parts) == 1 and parts[0] in GRAVITON:
            name = f"{GRAVITON[parts[0]]} ({parts[0]})"
        board = fields.label(host.read_text("/sys/firmware/devicetree/base/model")) or ""
        model_line = fields.label(globals_.get("Model") or first.get("Model"))
        board = board or model_line or ""
        if board:
            name = f"{board} ({name})" if name else board
        physical = logical  # ARM cores have no SMT in the parts above

    counts = cpu_counts.cross_check(logical, physical, counted_by, host.library("psutil"))
    logical, physical = counts.logical, counts.physical
    problems.extend(counts.problems)

    performance = efficiency = None
    core_list = host.read_text("/sys/devices/cpu_core/cpus")
    atom_list = host.read_text("/sys/devices/cpu_atom/cpus")
    if core_list and atom_list:
        try:
            p_threads, efficiency = parse_cpu_list(core_list), parse_cpu_list(atom_list)
            # P-cores carry two threads when SMT is on; E-cores one.
            smt = physical is not None and logical > physical
            performance = p_threads // 2 if smt else p_threads
        except ValueError:
            problems.append(Problem("cpu", "could not parse the hybrid core lists in /sys/devices/cpu_core", severity="info"))
    name = fields.label(name)
    if not name:
        problems.append(Problem("cpu", "the CPU model name is not in /proc/cpuinfo", severity="info"))
    cpu = CPU(
        name=name,
        arch=arch,
        vendor=vendor,
        physical_cores=physical,
        logical_cores=logical,
        performance_cores=performance,
        efficiency_cores=efficiency,
        features=tuple(features),
        source="proc_cpuinfo" if counts.source is None else f"proc_cpuinfo; counts: {counts.source}",
    )
    return cpu, problems


def darwin_cpu(host: Host, arch: str) -> tuple[CPU, list[Problem]]:
    values = macos.sysctl(host)
    if not values:
        raise ProbeFailure("sysctl returned nothing", "gpuready reads CPU facts with `sysctl`; is /usr/sbin on PATH?")
    features = []
    if values.get("hw.optional.arm64") == "1" or arch == "arm64":
        features.append("neon")
        for key, feature in (
            ("hw.optional.arm.FEAT_DotProd", "dotprod"),
            ("hw.optional.arm.FEAT_I8MM", "i8mm"),
            ("hw.optional.arm.FEAT_BF16", "bf16"),
            ("hw.optional.arm.FEAT_FP16", "fp16"),
            ("hw.optional.arm.FEAT_SME", "sme"),
        ):
            if values.get(key) == "1":
                features.append(feature)
    else:
        for key, feature in (("hw.optional.avx1_0", "avx"), ("hw.optional.avx2_0", "avx2"), ("hw.optional.fma", "fma"), ("hw.optional.avx512f", "avx512f")):
            if values.get(key) == "1":
                features.append(feature)
    name = values.get("machdep.cpu.brand_string")
    vendor = "Apple" if name and name.startswith("Apple") else ("Intel" if name and "Intel" in name else None)
    physical = _int(values.get("hw.physicalcpu"))
    performance = _int(values.get("hw.perflevel0.physicalcpu"))
    efficiency = _int(values.get("hw.perflevel1.physicalcpu"))
    if efficiency is None:
        performance = None
    cpu = CPU(
        name=name,
        arch=arch,
        vendor=vendor,
        physical_cores=physical,
        logical_cores=_int(values.get("hw.logicalcpu")) or _int(values.get("hw.ncpu")),
        performance_cores=performance,
        efficiency_cores=efficiency,
        features=tuple(sorted(features)),
        source="sysctl",
    )
    return cpu, []


def windows_cpu(host: Host, arch: str) -> tuple[CPU, list[Problem]]:
    readout = fields.mapping(host.library("windows"))
    info = readout.get("cpu")
    if not isinstance(info, dict):
        error = fields.text(readout.get("error"))
        raise ProbeFailure(f"could not read the Windows CPU information{': ' + error if error else ''}",
                           "gpuready reads the CPU from the registry and psutil; run `gpuready record DIR` and attach it to an issue.")
    features = sorted(name for name, present in fields.mapping(info.get("features")).items() if present is True)
    if "avx2" in features and "fma" not in features:
        # IsProcessorFeaturePresent has no constant for FMA3 (winnt.h's PF_* list), and every x86 CPU with AVX2 has it:
        # Intel added both in Haswell, AMD had FMA3 (Piledriver) before AVX2 (Excavator), and the x86-64 psABI's
        # x86-64-v3 level requires them together (https://gitlab.com/x86-psABIs/x86-64-ABI). Without it a Windows
        # CPU's FP32 peak was counted without its FMA pipes (tasks/devices.py cpu_flops_per_cycle): 4x too low.
        features = sorted([*features, "fma"])
    vendor = fields.text(info.get("vendor"))
    cpu = CPU(
        name=(fields.text(info.get("name")) or "").strip() or None,
        arch=arch,
        vendor={"GenuineIntel": "Intel", "AuthenticAMD": "AMD"}.get(vendor or "", vendor),
        physical_cores=fields.whole(info.get("physical_cores")) or None,
        logical_cores=fields.whole(info.get("logical_cores")) or None,
        performance_cores=fields.whole(info.get("performance_cores")),
        efficiency_cores=fields.whole(info.get("efficiency_cores")),
        features=tuple(features),
        source="windows",
    )
    return cpu, []


def probe(host: Host) -> tuple[CPU, list[Problem]]:
    """Identify the CPU on any platform."""
    if host.platform == "darwin":
        return darwin_cpu(host, host.arch)
    if host.platform == "windows":
        return windows_cpu(host, host.arch)
    return linux_cpu(host, host.arch)
