"""Apple probe: the GPU of an Apple silicon Mac (and the GPUs of an Intel Mac), with the
memory Metal lets it use, plus the Neural Engine for the NPU probe.

Sources:
* ``sysctl`` keys, read once by :mod:`gpuready.probes.macos`: ``machdep.cpu.brand_string``
  (chip name), ``hw.memsize`` (unified memory), ``iogpu.wired_limit_mb`` (a raised GPU
  wired-memory limit), ``sysctl.proc_translated`` (this Python runs under Rosetta 2).
* ``system_profiler SPDisplaysDataType -json`` (GPU core count ``sppci_cores``, Metal
  support ``spdisplays_mtlgpufamilysupport`` / ``spdisplays_metalfamily``, VRAM of an
  Intel Mac's discrete GPU ``spdisplays_vram``), run once per host with a timeout.
* ``catalog/gpus.toml`` (bandwidth and throughput by chip *and* GPU-core bin) and
  ``catalog/npus.toml`` (Neural Engine generation and runtimes).

Metal's working set: a process may keep only ``recommendedMaxWorkingSetSize`` of unified
memory resident for the GPU. gpuready cannot ask Metal without Objective-C, so it uses
the rule the published values follow (:func:`metal_working_set_bytes`), or the
``iogpu.wired_limit_mb`` setting when the user raised it.
"""

from __future__ import annotations

import json
import re
import weakref
from fractions import Fraction

from gpuready.hardware import GPU, NPU, Problem
from gpuready.host import Host
from gpuready.probes import macos
from gpuready.catalog.tables import GPUSpec, gpu_table, npu_table

MIB = 1024**2
GIB = 1024**3

SYSTEM_PROFILER_ARGV = ("system_profiler", "SPDisplaysDataType", "-json")
# system_profiler answers SPDisplaysDataType in well under a second on Apple silicon,
# but it is a launch-services tool that can hang on a busy machine: bound it.
SYSTEM_PROFILER_TIMEOUT_S = 10.0

# Metal's recommendedMaxWorkingSetSize as llama.cpp's ggml_metal_init logs it:
#   16 GiB Mac: 10922.67 MB = 2/3 (https://github.com/ggml-org/llama.cpp/issues/2209,
#     https://github.com/abetlen/llama-cpp-python/issues/687)
#   32 GiB Mac: 21845.34 MB = 2/3 (https://github.com/ollama/ollama/issues/434,
#     https://github.com/ggml-org/llama.cpp/pull/2011)
#   64 GiB Mac: 49152.00 MB = 3/4 (llama-cpp-python server log; ~47 GB limit reported on
#     M1/M2 Max 64 GB in https://github.com/ggml-org/llama.cpp/issues/1870)
# GPUStack reads the same value and calls it "75% of total RAM" on its large Macs
# (https://github.com/gpustack/gpustack/issues/1375). Where the step lies between 32 and
# 64 GiB (36 and 48 GiB machines) is not published; gpuready puts it above 32 GiB.
# Newer macOS may give more (107.52 GiB of 128 GiB measured on macOS 26,
# https://github.com/antirez/ds4/issues/890): the rule errs on the safe side.
SMALL_MAC_LIMIT_BYTES = 32 * GIB
SMALL_MAC_SHARE = Fraction(2, 3)
LARGE_MAC_SHARE = Fraction(3, 4)
PAGE_BYTES = 16384  # Apple silicon's page size (hw.pagesize)

_CHIP = re.compile(r"^Apple (M\d+)(?: (Pro|Max|Ultra))?\b")
_METAL = re.compile(r"metal(\d+)")


def metal_working_set_bytes(total_bytes: int, wired_limit_mb: int | None = None) -> int:
    """What Metal lets the GPU keep resident: ``iogpu.wired_limit_mb`` when raised, else 2/3 or 3/4 of memory."""
    # A raised limit is what Metal then reports, exactly: 12000/14000 MiB on a 16 GB M3
    # (https://github.com/AlexsJones/llmfit/pull/754), 114688 MiB -> 112.00 GiB on 128 GB
    # (https://github.com/antirez/ds4/pull/893). 0 means "the default".
    if wired_limit_mb:
        return min(wired_limit_mb * MIB, total_bytes)
    share = SMALL_MAC_SHARE if total_bytes <= SMALL_MAC_LIMIT_BYTES else LARGE_MAC_SHARE
    # Rounded up to whole 16 KiB pages: that is what turns 2/3 of 32 GiB (21845.33 MiB)
    # into the 21845.34 MiB Metal reports.
    pages = -(-total_bytes * share.numerator // (share.denominator * PAGE_BYTES))
    return int(pages * PAGE_BYTES)


def parse_chip(brand: str | None) -> tuple[str, str | None] | None:
    """('M3', 'Max') from 'Apple M3 Max'; None for anything that is not Apple silicon."""
    match = _CHIP.match((brand or "").strip())
    return (match.group(1), match.group(2)) if match else None


def parse_displays(text: str) -> list[dict] | None:
    """The GPU entries of `system_profiler SPDisplaysDataType -json`; None when it is not that JSON."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return None
    entries = data.get("SPDisplaysDataType") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        return None
    return [entry for entry in entries if isinstance(entry, dict)]


def metal_family(entry: dict) -> str | None:
    """'Metal 3' from 'spdisplays_metal3' (key renamed in macOS 14/15: mtlgpufamilysupport, was metalfamily)."""
    value = entry.get("spdisplays_mtlgpufamilysupport") or entry.get("spdisplays_metalfamily") or ""
    match = _METAL.search(str(value))
    return f"Metal {match.group(1)}" if match else None


def parse_size_bytes(text: str | None) -> int | None:
    """'4 GB' or '1536 MB' as system_profiler prints VRAM (binary units)."""
    match = re.match(r"^\s*(\d+(?:\.\d+)?)\s*(GB|MB)\b", text or "")
    if not match:
        return None
    return int(float(match.group(1)) * (GIB if match.group(2) == "GB" else MIB))


_displays_cache: weakref.WeakKeyDictionary[object, list[dict] | None] = weakref.WeakKeyDictionary()


def displays(host: Host) -> list[dict] | None:
    """system_profiler's GPU entries, read once per host; None when it failed or timed out."""
    try:
        return _displays_cache[host]
    except (KeyError, TypeError):
        pass
    result = host.run(SYSTEM_PROFILER_ARGV, timeout=SYSTEM_PROFILER_TIMEOUT_S)
    value = parse_displays(result.stdout) if result.status == "ok" and result.returncode == 0 else None
    try:
        _displays_cache[host] = value
    except TypeError:
        pass
    return value


# --- tables ------------------------------------------------------------------------


def chip_spec(generation: str, tier: str | None, gpu_cores: int | None) -> GPUSpec | None:
    """The gpus.toml row of this chip and GPU-core bin; without a core count, only when the bins agree."""
    name = f"Apple {generation}" + (f" {tier}" if tier else "")
    rows = [spec for spec in gpu_table() if spec.vendor == "apple" and spec.name == name]
    if gpu_cores is not None:
        rows = [spec for spec in rows if spec.gpu_cores == gpu_cores]
        return rows[0] if rows else None
    same = {(spec.bandwidth_bytes_per_s, spec.fp16_flops) for spec in rows}
    return rows[0] if len(same) == 1 else None


def neural_engine(generation: str, spec: GPUSpec | None) -> NPU:
    """The Neural Engine of an Mx chip: npus.toml's row, with the chip's own TOPS (Ultra has two)."""
    row = next((r for r in npu_table() if r.id == f"apple-ane-{generation.lower()}"), None)
    tops = spec.neural_engine_tops if spec is not None else (row.tops_int8 if row else None)
    if spec is not None and spec.neural_engine_tops is None:
        tops = None  # e.g. M3 Ultra: Apple names no figure
    return NPU(
        vendor="apple",
        name=f"Apple Neural Engine ({spec.name.removeprefix('Apple ') if spec else generation})",
        # An Ultra is two Max dies: 32 Neural Engine cores (Apple's M1/M2 Ultra announcements in gpus.toml).
        generation=(row.generation.replace("16-core", "32-core") if spec and spec.name.endswith("Ultra") else row.generation) if row else None,
        tops_int8=tops,
        driver="macOS",
        driver_loaded=True,
        runtimes=row.runtimes if row else ("Core ML",),
        table_id=row.id if row else None,
        source="table",
    )


def apple_hardware(spec: GPUSpec, memory_bytes: int | None = None, wired_limit_mb: int | None = None) -> tuple[GPU, NPU]:
    """The GPU and Neural Engine of an Apple chip from its table row (what-if: `--gpu "M3 Max 40-core"`).

    ``memory_bytes`` defaults to the chip's smallest configuration.
    """
    if spec.vendor != "apple":
        raise ValueError(f"{spec.name} is not an Apple chip")
    memory = memory_bytes or spec.smallest_memory_bytes
    generation = (parse_chip(spec.name) or (spec.name.split()[-1], None))[0]
    flops, flops_source = gpu_flops(spec)
    gpu = GPU(
        vendor="apple",
        name=gpu_name(spec.name, spec.gpu_cores),
        kind="unified",
        memory_total_bytes=memory,
        memory_usable_bytes=metal_working_set_bytes(memory, wired_limit_mb),
        bandwidth_bytes_per_s=spec.bandwidth_bytes_per_s,
        bandwidth_source=f"table:{spec.id}",
        fp16_flops=flops,
        flops_source=flops_source,
        architecture=spec.architecture,
        table_id=spec.id,
        backends=("metal",),
        source="table",
    )
    return gpu, neural_engine(generation, spec)


# Apple publishes no TFLOPS figure for M3 and M4 GPUs. The newest it does publish is the M2 generation's:
# 13.6 TFLOPS for the M2 Max's 38-core GPU (https://www.apple.com/newsroom/2023/01/apple-unveils-m2-pro-and-m2-max-next-generation-chips-for-next-level-workflows/),
# 0.358 TFLOPS a core, as its 10-core (3.6), 19-core (6.8) and 76-core (27.2) figures give too (M1's was 0.325).
# Third-party GPU databases (hmc-tech.com) list M3 and M4 GPU cores with M2's 128 FP32 lanes at M2's 1.398 GHz (M3)
# or more (M4, 1.47 GHz), so a core count times M2's per-core rate is a floor, labelled as derived.
APPLE_FLOPS_PER_GPU_CORE = 13.6e12 / 38


def gpu_flops(spec: GPUSpec) -> tuple[float | None, str | None]:
    """FP16 throughput of an Apple GPU and where it came from: the table, else derived from its core count."""
    if spec.fp16_flops:
        return spec.fp16_flops, f"table:{spec.id}"
    if spec.gpu_cores:
        return spec.gpu_cores * APPLE_FLOPS_PER_GPU_CORE, f"derived:{spec.gpu_cores} cores x M2's 0.358 TFLOPS a core"
    return None, None


def gpu_name(chip: str, gpu_cores: int | None) -> str:
    """'Apple M3 Max (40-core GPU)': the core count names the bin, and tables.match_gpu reads it back."""
    return f"{chip} ({gpu_cores}-core GPU)" if gpu_cores else chip


# --- probing ------------------------------------------------------------------------

ROSETTA_HINT = (
    "Install an arm64 (native) Python, e.g. from python.org or `brew install python`, and "
    "reinstall gpuready and your AI packages with it: PyTorch's MPS, MLX and llama.cpp's "
    "Metal builds need a native arm64 process."
)


def rosetta_problem(values: dict[str, str]) -> Problem | None:
    """An x86_64 Python translated by Rosetta 2 on Apple silicon cannot use Metal acceleration."""
    if values.get("sysctl.proc_translated") != "1":
        return None
    return Problem(
        "apple",
        "this Python is an x86_64 build running under Rosetta 2: Metal acceleration (MPS, MLX, "
        "llama.cpp Metal) is unavailable to it, and CPU code runs translated",
        ROSETTA_HINT,
        "warning",
    )


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def apple_silicon_gpu(values: dict[str, str], entries: list[dict] | None) -> tuple[GPU | None, list[Problem]]:
    """The unified-memory GPU of an Apple silicon Mac from sysctl values and system_profiler entries."""
    problems: list[Problem] = []
    brand = values.get("machdep.cpu.brand_string")
    if parse_chip(brand) is None:  # sysctl failed: system_profiler names the chip too
        brand = next((str(e.get("sppci_model")) for e in entries or [] if parse_chip(str(e.get("sppci_model")))), brand)
    chip = parse_chip(brand)
    if chip is None:
        return None, problems
    entry = next((e for e in entries or [] if str(e.get("sppci_model", e.get("_name", ""))).startswith("Apple")), None)
    cores = _int(str(entry.get("sppci_cores"))) if entry and entry.get("sppci_cores") is not None else None
    if entries is None:
        problems.append(
            Problem("apple", "system_profiler did not answer, so the GPU core count (and the exact chip bin) is unknown",
                    "Run `system_profiler SPDisplaysDataType` once by hand to see whether it works.", "info")
        )
    spec = chip_spec(chip[0], chip[1], cores)
    total = _int(values.get("hw.memsize"))
    wired = _int(values.get("iogpu.wired_limit_mb"))
    usable = metal_working_set_bytes(total, wired) if total else None
    flops, flops_source = gpu_flops(spec) if spec else (None, None)
    gpu = GPU(
        vendor="apple",
        name=gpu_name(brand.strip(), cores),
        kind="unified",
        memory_total_bytes=total,
        memory_usable_bytes=usable,
        bandwidth_bytes_per_s=spec.bandwidth_bytes_per_s if spec else None,
        bandwidth_source=f"table:{spec.id}" if spec else None,
        fp16_flops=flops,
        flops_source=flops_source,
        architecture=spec.architecture if spec else None,
        driver="Metal",
        driver_version=metal_family(entry) if entry else None,
        table_id=spec.id if spec else None,
        backends=("metal",),
        source="system_profiler" if entry else "sysctl",
    )
    if wired:
        problems.append(
            Problem("apple", f"iogpu.wired_limit_mb is raised to {wired} MB: the GPU may use {usable / GIB:.1f} GiB "
                    f"of {total / GIB:.0f} GiB, so little is left for macOS and other programs", None, "info")
        )
    return gpu, problems


# An AMD GPU in an Intel Mac is found by llama.cpp's Metal backend but lacks simdgroup
# matrix multiplication, and its output is garbage (https://github.com/ggml-org/llama.cpp/issues/8886,
# https://github.com/ollama/ollama/issues/1016: "simdgroup matrix mul. support = false").
INTEL_MAC_GPU_REASON = (
    "Metal on Intel Macs lacks the simdgroup matrix support llama.cpp and PyTorch MPS rely on; "
    "runtimes fall back to the CPU"
)


def intel_mac_gpus(entries: list[dict]) -> list[GPU]:
    """The GPUs of an Intel Mac, listed but not counted: no maintained AI runtime uses them."""
    gpus = []
    for index, entry in enumerate(entries):
        name = str(entry.get("sppci_model") or entry.get("_name") or "").strip()
        if not name:
            continue
        vendor_text = str(entry.get("spdisplays_vendor", "")).lower()
        vendor = next((v for v in ("amd", "intel", "nvidia") if v in vendor_text or v in name.lower()), "unknown")
        discrete = entry.get("sppci_bus") == "spdisplays_pcie_device" or "spdisplays_vram" in entry
        device_id = str(entry.get("spdisplays_device-id", "")).lower().removeprefix("0x")
        vendor_id = {"amd": "1002", "intel": "8086", "nvidia": "10de"}.get(vendor)
        gpus.append(
            GPU(
                vendor=vendor,
                name=name,
                kind="discrete" if discrete else "integrated",
                index=index,
                memory_total_bytes=parse_size_bytes(entry.get("spdisplays_vram")),
                driver="Metal" if metal_family(entry) else None,
                driver_version=metal_family(entry),
                pci_id=f"{vendor_id}:{device_id}" if vendor_id and device_id else None,
                counted=False,
                not_counted_reason=INTEL_MAC_GPU_REASON,
                source="system_profiler",
            )
        )
    return gpus


def probe(host: Host) -> tuple[list[GPU], list[Problem]]:
    """The Mac's GPUs: the Apple silicon GPU with Metal's usable memory, or an Intel Mac's GPUs."""
    if host.platform != "darwin":
        return [], []
    values = macos.sysctl(host)
    problems: list[Problem] = []
    rosetta = rosetta_problem(values)
    if rosetta:
        problems.append(rosetta)
    entries = displays(host)
    gpu, found = apple_silicon_gpu(values, entries)
    problems += found
    if gpu is not None:
        return [gpu], problems
    if entries is None:
        problems.append(Problem("apple", "system_profiler SPDisplaysDataType gave no answer, so this Mac's GPUs are unknown",
                                "Run `system_profiler SPDisplaysDataType` by hand to see what it says.", "warning"))
    return intel_mac_gpus(entries or []), problems


def probe_neural_engine(host: Host) -> list[NPU]:
    """The Neural Engine every Apple silicon Mac has (for the NPU probe)."""
    if host.platform != "darwin":
        return []
    values = macos.sysctl(host)
    chip = parse_chip(values.get("machdep.cpu.brand_string"))
    if chip is None:
        return []
    entries = displays(host) or []
    entry = next((e for e in entries if e.get("sppci_cores") is not None), None)
    spec = chip_spec(chip[0], chip[1], _int(str(entry["sppci_cores"])) if entry else None)
    if spec is None:  # the bins of one chip share their Neural Engine
        spec = next((s for s in gpu_table() if s.vendor == "apple" and s.name == f"Apple {chip[0]}" + (f" {chip[1]}" if chip[1] else "")), None)
    return [neural_engine(chip[0], spec)]
