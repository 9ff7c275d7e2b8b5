"""Where a model can run: the best GPU group and the CPU as estimator Devices, from Hardware.

Pure. A group is identical accelerators that llama.cpp can split layers across; MIG
instances are never pooled, integrated graphics count only when nothing better exists,
and unified memory is capped by what the system has free.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from gpuready.catalog.tables import SYSTEM_MEMORY, CPUPlatform, match_cpu
from gpuready.hardware import GPU, Hardware, pcie_words

MIB = 1024**2

# How gpuready.bench.apply marks a figure it measured: "measured on this machine, DATE, ±N%".
MEASURED_HERE = "measured on this machine"
_SPREAD = re.compile(r"±(\d+(?:\.\d+)?)%")

# Memory a runtime takes beyond the model's own buffers, per device.
# CUDA/ROCm: the driver context with lazily loaded kernels, ~300 MB (PyTorch maintainers,
# https://github.com/pytorch/pytorch/issues/107667; 320 MB measured with PyCUDA in
# https://github.com/pytorch/pytorch/issues/28394). CPU and Metal: an allowance for the
# runtime process itself (an assumption, stated as such in every basis).
RUNTIME_OVERHEAD_BYTES = {
    "cuda": 350 * MIB,
    "rocm": 350 * MIB,
    "vulkan": 300 * MIB,
    "sycl": 300 * MIB,
    "metal": 150 * MIB,
    "cpu": 200 * MIB,
}


# Unified memory a non-Apple GPU leaves free (AMD APUs such as Strix Halo, NVIDIA GB10 and
# Jetson, Intel and AMD integrated graphics). Its "free" figure is the whole system's available
# memory, which the runtime's host buffers and every other process draw on too, so an exact fit
# can still run out: `--fit on` did on Strix Halo (https://github.com/ggml-org/llama.cpp/issues/21801),
# and llama.cpp's free-memory reading there tracks system RAM rather than what the GPU may map
# (https://github.com/ggml-org/llama.cpp/issues/24626). llama.cpp's own planner keeps 1024 MiB free
# on every device by default (common/common.h fit_params_target; `--fit-target`, "target margin
# per device for --fit option, default: 1024"); gpuready keeps the same. Apple silicon's usable
# figure is Metal's working-set limit, which already leaves a quarter to a third to the system.
UNIFIED_MEMORY_MARGIN_BYTES = 1024 * MIB
# The same margin where llama.cpp's planner splits a model too big for a discrete GPU (text_estimate.estimate): it
# fills the GPU to 1024 MiB short of its free memory ("cannot fulfill margin of 1024 MiB, need to reduce device
# memory by ...", tools/fit-params/README.md), so the layers or experts it places there leave that free.
FIT_MARGIN_BYTES = UNIFIED_MEMORY_MARGIN_BYTES


@dataclass(frozen=True)
class Device:
    """Where (part of) a model runs: a GPU, a group of identical GPUs, unified memory, or the CPU."""

    kind: str  # gpu | cpu
    name: str
    backend: str  # cuda | rocm | metal | vulkan | sycl | cpu
    usable_memory_bytes: int | None
    bandwidth_bytes_per_s: float | None
    flops: float | None
    bandwidth_source: str = "table"  # driver (NVML's memory clock x bus width, ...) | table | this-machine | assumed
    # Identical GPUs splitting the layers. `flops`, `vector_flops` and `power_watts` stay one card's:
    # llama.cpp's layer split runs the cards one after another for a token (and for a prompt of one
    # micro-batch), and the one-GPU runtimes (diffusers, faster-whisper, sentence-transformers) use one
    # card; `usable_memory_bytes` is the group's (see one_card).
    count: int = 1
    unified: bool = False  # shares memory with the CPU (Apple silicon, APUs)
    memory_type: str | None = None  # GDDR6X, HBM3, LPDDR5 ...: HBM GPUs get their own speed constants where the fit keeps that class
    # bandwidth_source "this-machine" (gpuready bench): where and when, and the relative spread.
    bandwidth_detail: str | None = None
    bandwidth_spread: float | None = None
    cores: int | None = None  # CPU: physical cores the peak counts (compute-bound work splits across them)
    # The vector (FP32 shader / CUDA-core) rate, where the table gives one: dequantising weights
    # runs there, not on the tensor cores that `flops` (the FP16 matrix rate) counts.
    vector_flops: float | None = None
    # The board's power limit in watts (NVML's enforced limit, else catalog/power.toml; Apple: the
    # whole Mac): sustained tensor throughput is at most this over the energy of a FLOP.
    power_watts: float | None = None
    # llama.cpp's Vulkan backend only (docs/vulkan-capabilities.md): whether it multiplies matrices on this GPU's
    # matrix cores (cooperative matrix; False: the scalar shader on the vector units), and whether it has BF16
    # matrix shapes (False or None: BF16 weights are promoted to FP32 there). None: not known.
    matrix_cores: bool | None = None
    bf16_matrix: bool | None = None
    # CPU: the clock catalog/cpus.toml states for the platform (Raspberry Pi boards), else None.
    # `flops` keeps ASSUMED_CPU_CLOCK_HZ (what text generation's constants were fitted on); estimates
    # that use the stated clock say so (tasks/speech.py stated_clock_peak).
    clock_hz: float | None = None
    vendor: str | None = None  # GPU: nvidia | amd | intel | apple ... (Intel GPUs under Vulkan have their own constants)
    # GPU: NVIDIA's compute capability ("8.9") and AMD's gfx target ("gfx1151"), where known:
    # which weight formats vLLM-class servers can load here (tasks/text.py format_unsupported).
    compute_capability: str | None = None
    gfx_target: str | None = None

    # CPU: the FP32 peak of its FMA pipes, where narrower than the ISA flags' `flops` (catalog/cpus.toml
    # fma_flops_per_cycle: Zen 4, Intel client AVX-512 cores); None elsewhere.
    fma_flops: float | None = None
    # GPU: where `flops` came from when it is not a table's figure: derived from the core count (Apple M3/M4, whose
    # maker states none) or measured here (`gpuready bench`); None for a table's figure. Said in the prompt basis.
    flops_detail: str | None = None
    # GPU: the operating system of the machine it was probed on (linux, darwin, windows); None for a GPU from the
    # table alone (a what-if card, a scored row). Which ONNX Runtime execution provider drives a GPU depends on it
    # (tasks/speech.py onnx_provider: DirectML on Windows).
    host_platform: str | None = None
    # GPU: its architecture as catalog/gpus.toml names it ("Xe-LP (Gen12)", "Ada Lovelace"), where the table has it.
    architecture: str | None = None
    # GPU: its PCIe link to the host as the driver reports it (GPU.pcie_link_*): GT/s a lane and lanes; None unknown.
    pcie_link_gt_s: float | None = None
    pcie_link_width: int | None = None

    @property
    def pcie_link_bytes_per_s(self) -> float | None:
        """The PCIe link's bytes a second one way (link_bytes_per_s), where the driver reported the link."""
        if not self.pcie_link_gt_s or not self.pcie_link_width or self.pcie_link_gt_s < 0 or self.pcie_link_width < 0:
            return None
        return link_bytes_per_s(self.pcie_link_gt_s, self.pcie_link_width)

    @property
    def copy_words(self) -> str:
        """How host_copy_bytes_per_s came about, in words."""
        if not self.pcie_link_words:
            return "pageable memory over a PCIe 4.0 x16 link, assumed: the driver did not report the link"
        if host_copy_bytes_per_s(self) < HOST_TO_GPU_BYTES_PER_S:
            return f"the most its {self.pcie_link_words} link as the driver reports it allows"
        return f"pageable memory over its {self.pcie_link_words} link as the driver reports it"

    @property
    def pcie_link_words(self) -> str | None:
        """'PCIe 4.0 x16' for the link the driver reported, None where unknown."""
        return pcie_words(self.pcie_link_gt_s, self.pcie_link_width)

    @property
    def unpack_flops(self) -> float | None:
        """The rate quantised weights are unpacked at: the vector rate, else the only rate known."""
        return self.vector_flops or self.flops

    @property
    def float_flops(self) -> float | None:
        """The peak text to speech's FP32 work (PyTorch, ONNX Runtime) runs against: a CPU's FMA pipes' rate where its
        platform row gives one, else `flops` (ggml's kernels, in llama.cpp, whisper.cpp and stable-diffusion.cpp, keep
        `flops`, and so does document search, whose core-scaling fit was made at it)."""
        return self.fma_flops or self.flops



# Assumed all-core clock: CPUs do not report a sustained frequency without privileges.
ASSUMED_CPU_CLOCK_HZ = 3.0e9


def cpu_flops_per_cycle(features: tuple[str, ...]) -> int:
    """FP32 FLOPs a core retires per cycle with its widest FMA units (two FMA pipes assumed)."""
    if "avx512f" in features:
        return 64  # 2 x 512-bit FMA = 2 x 16 lanes x 2 FLOPs
    if "avx2" in features and "fma" in features:
        return 32  # 2 x 256-bit FMA
    if "sve" in features or "dotprod" in features:
        return 32  # e.g. Neoverse V1: 2 x 256-bit SVE, or 4 x 128-bit NEON FMA
    if "neon" in features:
        return 16
    return 8


def cpu_peak_flops(physical_cores: int | None, features: tuple[str, ...], name: str | None = None) -> float | None:
    """FP32 peak of ``physical_cores`` at the assumed clock: the ISA flags' FLOPs a cycle, or fewer where the CPU's
    platform row states its cores are narrower (catalog/cpus.toml fp32_flops_per_cycle: Intel N100's Gracemont)."""
    if not physical_cores:
        return None
    per_cycle = cpu_flops_per_cycle(features)
    platform = match_cpu(name)
    if platform is not None and platform.fp32_flops_per_cycle:
        per_cycle = min(per_cycle, platform.fp32_flops_per_cycle)
    return physical_cores * ASSUMED_CPU_CLOCK_HZ * per_cycle


def cpu_fma_flops(physical_cores: int | None, features: tuple[str, ...], name: str | None = None) -> float | None:
    """FP32 peak of ``physical_cores`` at the assumed clock counted at the FMA pipes' width, where the CPU's platform
    row states it is narrower than the flags imply (catalog/cpus.toml fma_flops_per_cycle: AVX-512 on Zen 4's 256-bit
    pipes, Intel client cores' one 512-bit FMA); None where the flags' figure (cpu_peak_flops) holds."""
    return platform_fma_flops(match_cpu(name), physical_cores, cpu_peak_flops(physical_cores, features, name))


def platform_fma_flops(platform: CPUPlatform | None, physical_cores: int | None, peak: float | None) -> float | None:
    """``physical_cores`` of ``platform`` at the assumed clock and its fma_flops_per_cycle, where that is below
    ``peak`` (the flags' figure for the same cores); None where the platform gives no narrower rate."""
    if peak is None or platform is None or not platform.fma_flops_per_cycle:
        return None
    narrower = physical_cores * ASSUMED_CPU_CLOCK_HZ * platform.fma_flops_per_cycle
    return narrower if narrower < peak else None


def cpu_float_flops(physical_cores: int | None, features: tuple[str, ...], name: str | None = None) -> float | None:
    """The FP32 peak an FP32 matmul runs against: the FMA pipes' rate where narrower, else the flags' figure."""
    return cpu_fma_flops(physical_cores, features, name) or cpu_peak_flops(physical_cores, features, name)



BACKEND_BY_VENDOR = {"nvidia": "cuda", "amd": "rocm", "apple": "metal", "intel": "sycl"}


# What llama.cpp's Vulkan backend gets, per (vendor, architecture of catalog/gpus.toml), with today's drivers
# (docs/vulkan-capabilities.md, section 2: ggml_vk_khr_cooperative_matrix_support and the device lines quoted
# there). Matrix cores: NVIDIA Turing and later expose VK_KHR_cooperative_matrix; AMD RDNA3/3.5/4 get it (RADV
# since Mesa 23.3, AMD's drivers only for RDNA3-class); Intel Xe2 is allowed, Arc Alchemist is blocked by
# llama.cpp ("older hardware (ex. Arc A770) has performance regressions"); RDNA2 and older, CDNA, Xe-LP and
# Gen9 have none. Architectures not listed: unknown (None), and the table's FLOPS stand.
VULKAN_MATRIX_CORES = {
    ("nvidia", "Turing"): True, ("nvidia", "Ampere"): True, ("nvidia", "Ada Lovelace"): True,
    ("nvidia", "Hopper"): True, ("nvidia", "Blackwell"): True, ("nvidia", "Pascal"): False,
    ("amd", "RDNA 3"): True, ("amd", "RDNA 3.5"): True, ("amd", "RDNA 4"): True,
    ("amd", "RDNA 2"): False, ("amd", "CDNA"): False, ("amd", "CDNA 2"): False, ("amd", "CDNA 3"): False,
    ("intel", "Xe2-HPG (Battlemage)"): True, ("intel", "Xe2-LPG (Lunar Lake)"): True,
    ("intel", "Xe-HPG (Alchemist)"): False, ("intel", "Xe-LP (Gen12)"): False, ("intel", "Gen9.5"): False,
}


def vulkan_matrix_cores(vendor: str | None, architecture: str | None) -> bool | None:
    """Whether llama.cpp's Vulkan backend uses this architecture's matrix cores today; None when not known."""
    return VULKAN_MATRIX_CORES.get((vendor or "", architecture or ""))


# Intel GPUs PyTorch's XPU device is validated on: the Arc A- and B-series, Core Ultra processors with Arc graphics
# (Xe-LPG, Xe2-LPG) and the Data Center GPU Max (https://docs.pytorch.org/docs/stable/notes/get_start_xpu.html,
# "Validated Hardware"); not the Xe-LP Iris Xe of 11th to 14th gen Core processors or older UHD graphics (Gen9-Gen11),
# which llama.cpp's SYCL and Vulkan backends and OpenVINO still drive.
PYTORCH_XPU_UNVALIDATED = ("Xe-LP (", "Gen")


def pytorch_drives(gpu: Device) -> bool:
    """Whether PyTorch has a device for this GPU: CUDA (NVIDIA, and AMD under ROCm), MPS (Apple), XPU (Intel GPUs
    of the validated architectures; one the table does not name counts as validated). No Vulkan device."""
    if gpu.backend in ("cuda", "rocm", "metal"):
        return True
    return gpu.backend == "sycl" and not (gpu.architecture or "").startswith(PYTORCH_XPU_UNVALIDATED)


def backend_for(gpu: GPU) -> str:
    """The backend llama.cpp would use for this GPU: what the probe found usable, else the vendor's."""
    for preferred in ("cuda", "metal", "rocm", "sycl", "vulkan"):
        if preferred in gpu.backends:
            return preferred
    return BACKEND_BY_VENDOR.get(gpu.vendor, "vulkan")


def _table_spec(gpu: GPU):
    """The GPU's catalog/gpus.toml row, if it was matched to one: its memory type (HBM GPUs get their own
    speed constants where the fit keeps that class) and its FP32 vector rate (where quantised weights are unpacked).
    A MIG instance is not a row of its own: its card's row, matched by the card's name."""
    from gpuready.catalog.tables import gpu_table, match_gpu

    if gpu.mig_profile and not gpu.table_id:
        card = gpu.name.split(" MIG ")[0]
        return match_gpu(replace(gpu, name=card, memory_total_bytes=None, mig_profile=None))
    if not gpu.table_id:
        return None
    return next((spec for spec in gpu_table() if spec.id == gpu.table_id), None)


def mig_compute_share(gpu: GPU) -> float:
    """A MIG instance's share of its card's compute: a "3g" profile holds 3 of the 7 compute slices (the probe's
    MIG_COMPUTE_SLICES); 1.0 for a whole GPU."""
    from gpuready.probes.nvidia import MIG_COMPUTE_SLICES

    slices = re.match(r"(\d+)g\.", gpu.mig_profile or "")
    return min(1.0, int(slices.group(1)) / MIG_COMPUTE_SLICES) if slices else 1.0


def _power_watts(gpu: GPU, spec) -> float | None:
    """The GPU's power limit: NVML's enforced limit where read, else the board power of its table row. A MIG
    instance gets its compute slices' share of the card's: the board's limit is shared by every instance on it, and
    a slice's prompt speed must not come out above the whole card's under that limit."""
    watts = gpu.power_limit_w
    if not watts and spec is not None:
        from gpuready.catalog.power import power_table

        power = power_table().gpu(spec.id)
        watts = power.watts if power else None
    return watts * mig_compute_share(gpu) if watts else None


def gpu_usable_bytes(gpu: GPU) -> int | None:
    for value in (gpu.memory_usable_bytes, gpu.memory_free_bytes, gpu.memory_total_bytes):
        if value:
            return value
    return None


def is_unified(gpu: GPU) -> bool:
    """Whether the GPU's memory is the system's (Apple Silicon, an APU, Jetson, GB10), not VRAM of its own."""
    return gpu.kind in ("unified", "integrated") or gpu.vendor == "apple"


def group_usable_bytes(gpus: list[GPU], hardware: Hardware) -> int | None:
    """What a model may take on these identical GPUs together: their usable memory; on unified memory at most
    what the system has free now (plus an APU's free carve-out), less llama.cpp's fit margin off Apple."""
    first = gpus[0]
    usable = [gpu_usable_bytes(g) for g in gpus]
    total_usable = sum(u for u in usable if u) if all(usable) else None
    unified = is_unified(first)
    system_free = hardware.memory.usable_bytes
    if unified and total_usable and system_free is not None:
        # Unified memory is shared with everything else running: the GPU gets at most
        # its own limit (e.g. Metal's working set) and at most what is free right now. An APU's
        # free carve-out is not system memory (the OS never sees it), so it stands beside that cap.
        carveout = sum(g.memory_carveout_free_bytes or 0 for g in gpus)
        total_usable = min(total_usable, system_free + carveout)
    if unified and first.vendor != "apple" and system_free is None:
        # A shared pool (Jetson, GB10, Strix Halo) is the system's memory: with that unread, what is free for
        # a model is unknown, whatever size the chip's table row or driver states for the whole pool.
        total_usable = None
    if unified and total_usable and first.vendor != "apple":
        total_usable = max(0, total_usable - UNIFIED_MEMORY_MARGIN_BYTES)
    return total_usable


def usable_now(gpu: GPU, hardware: Hardware) -> int | None:
    """What a model may take on this one GPU as the verdicts count it: its usable (else free) memory; on Apple silicon
    at most what the system has free now (group_usable_bytes), since Metal's working-set limit is not what is free."""
    own = gpu.memory_usable_bytes if gpu.memory_usable_bytes is not None else gpu.memory_free_bytes
    return group_usable_bytes([gpu], hardware) if own is not None and gpu.vendor == "apple" else own


# Host-to-GPU copies of weights (llama.cpp's op offload of a split model, diffusers' model offload), from pageable
# memory over PCIe 4.0 x16 (31.5 GB/s a direction, PCI-SIG): an RTX 4090 measured
# 13.73, 17.07, 18.42 and 12.88 GB/s for 1, 4, 16 and 64 MiB pageable copies (23.9 GB/s pinned), NVlabs/cuda-oxide
# PR #976. The 64 MiB figure, the largest measured, is taken: a layer's weight tensors are tens to hundreds of MiB
# (Llama 3 70B's Q4_K_M feed-forward matrices about 130 MB, Qwen3-30B-A3B's expert tensors about 110 MB). A slower
# link than PCIe 4.0 x16 caps it where NVML reports the link (LINK_COPY_SHARE); elsewhere (AMD, Intel, WSL's copies)
# a slower machine is not seen.
HOST_TO_GPU_BYTES_PER_S = 12.88e9
# The same copies from page-locked memory, where llama.cpp runs with --no-mmap (the system-memory weights then sit in
# the GPU backend's pinned host buffer): 23.85 GB/s at 16 MiB in the same measurement. Used by the validation rows
# that state --no-mmap (benchmarks/score_estimator.py); a verdict assumes the default, memory-mapped file.
HOST_TO_GPU_PINNED_BYTES_PER_S = 23.85e9
# The pinned copy's share of its PCIe 4.0 x16 link (23.85 of 31.5 GB/s). Where the driver reports a narrower or older
# link (NVML: an x8 card, an x16 card in an x8 slot, a PCIe 3.0 board, a laptop's x4), copies run at most this share
# of it: pageable copies stay at HOST_TO_GPU_BYTES_PER_S, and none runs faster than its link allows.
LINK_COPY_SHARE = HOST_TO_GPU_PINNED_BYTES_PER_S / 31.5e9


def host_copy_bytes_per_s(gpu: Device) -> float:
    """How fast weights in pageable system memory copy to this GPU: HOST_TO_GPU_BYTES_PER_S, at most LINK_COPY_SHARE
    of the PCIe link the driver reported."""
    link = gpu.pcie_link_bytes_per_s
    return min(HOST_TO_GPU_BYTES_PER_S, link * LINK_COPY_SHARE) if link else HOST_TO_GPU_BYTES_PER_S


def link_bytes_per_s(gt_s: float, width: int) -> float:
    """A PCIe link's bytes a second in one direction: GT/s x lanes x the line code's share / 8 (PCI-SIG: 8b/10b up to
    5 GT/s, 128b/130b for 8 to 32 GT/s, 242/256 of a FLIT for PCIe 6.0's 64 GT/s PAM4)."""
    code = 0.8 if gt_s <= 5.0 else (242 / 256 if gt_s >= 64.0 else 128 / 130)
    return gt_s * 1e9 * width * code / 8


def gpu_device(hardware: Hardware) -> Device | None:
    """The best GPU for a model: the group of identical accelerators with the most usable memory."""
    groups: dict[tuple, list[GPU]] = {}
    for position, gpu in enumerate(hardware.accelerators):
        # A CUDA process uses one MIG instance, so instances are never pooled.
        key = (gpu.name, position) if gpu.mig_profile else (gpu.name,)
        groups.setdefault(key, []).append(gpu)
    # Integrated graphics only when nothing better exists: a discrete card (or a unified
    # system) always wins, and an iGPU's shared memory is never added to system memory.
    dedicated = {key: gpus for key, gpus in groups.items() if gpus[0].kind != "integrated"}
    groups = dedicated or groups
    best: Device | None = None
    for (name, *_), gpus in groups.items():
        first = gpus[0]
        unified = is_unified(first)
        total_usable = group_usable_bytes(gpus, hardware)
        label = f"{len(gpus)} x {name}" if len(gpus) > 1 else name
        spec = _table_spec(first)
        device = Device(
            kind="gpu",
            name=label,
            backend=backend_for(first),
            usable_memory_bytes=total_usable,
            bandwidth_bytes_per_s=first.bandwidth_bytes_per_s,
            flops=first.fp16_flops or None,
            bandwidth_source=_source_kind(first.bandwidth_source),
            count=len(gpus),
            unified=unified,
            memory_type=spec.memory_type if spec else None,
            vector_flops=spec.fp32_flops * mig_compute_share(first) if spec and spec.fp32_flops else None,
            power_watts=_power_watts(first, spec),
            matrix_cores=vulkan_matrix_cores(spec.vendor, spec.architecture) if spec else None,
            vendor=first.vendor,
            compute_capability=first.compute_capability or (spec.compute_capability if spec else None),
            gfx_target=first.gfx_target or (spec.gfx_target if spec else None),
            **_measured(first.bandwidth_source),
            flops_detail=flops_detail(first.flops_source),
            host_platform=hardware.platform,
            architecture=spec.architecture if spec else None,
            pcie_link_gt_s=first.pcie_link_gt_s,
            pcie_link_width=first.pcie_link_width,
        )
        if best is None or (device.usable_memory_bytes or 0) > (best.usable_memory_bytes or 0):
            best = device
    return best


def one_card(gpu: Device | None) -> Device | None:
    """One GPU of a group of identical ones: what a runtime that puts a model on one device gets
    (faster-whisper's device_index, sentence-transformers' device, a diffusers pipeline without a device map)."""
    if gpu is None or gpu.count == 1:
        return gpu
    usable = gpu.usable_memory_bytes // gpu.count if gpu.usable_memory_bytes else gpu.usable_memory_bytes
    return replace(gpu, name=gpu.name.split(" x ", 1)[1], usable_memory_bytes=usable, count=1)


def memory_word(gpu: Device) -> str:
    """How a reason names GPU memory: free VRAM, or the unified pool the GPU may use."""
    if gpu.unified:
        return "of memory the GPU may use"
    return f"free VRAM across {gpu.count} GPUs" if gpu.count > 1 else "free VRAM"


def _source_kind(source: str | None) -> str:
    if not source:
        return "assumed"
    source = source.removeprefix(SYSTEM_MEMORY)  # an integrated GPU at its CPU platform's figure: that figure's kind
    if source.startswith(MEASURED_HERE):
        return "this-machine"
    if source.startswith("table"):
        return "table"
    if source == "assumed":
        return "assumed"
    # what a driver reports (NVML's memory clock x bus width, a tool's figure): a specification read from the
    # device, not a speed measured on it (that is `gpuready bench`'s "this-machine")
    return "driver"


# On Apple silicon the table's bandwidth is the whole SoC's; the CPU cores alone reach about
# half of it (AnandTech, "Apple's M1 Pro, M1 Max SoCs Investigated", section "Huge Memory
# Bandwidth, but not for every Block": the M1 Max's CPU clusters cannot use its 400 GB/s).
APPLE_CPU_BANDWIDTH_SHARE = 0.5


def flops_detail(source: str | None) -> str | None:
    """What an estimate's basis says of a GPU's FLOPS figure that no table states: a derived floor, or a measurement."""
    if not source:
        return None
    if source.startswith("derived:"):
        return f"derived from {source.removeprefix('derived:')}, a floor: the maker states no figure"
    return source if source.startswith(MEASURED_HERE) else None


def _measured(source: str | None) -> dict:
    """The Device fields of a figure measured on this machine (its source text and relative spread), or of one a
    driver reported (its source text)."""
    if not source or not source.startswith(MEASURED_HERE):
        # what the driver reported is named as it is ('nvml'), so an estimate's basis does not call it measured
        return {"bandwidth_detail": source} if _source_kind(source) == "driver" else {}
    match = _SPREAD.search(source)
    return {"bandwidth_detail": source, "bandwidth_spread": float(match[1]) / 100 if match else None}


def cpu_device(hardware: Hardware) -> Device:
    cpu = hardware.cpu
    bandwidth = cpu.memory_bandwidth_bytes_per_s
    measured = _measured(cpu.bandwidth_source)
    if bandwidth and not measured and hardware.platform == "darwin" and hardware.arch == "arm64":
        bandwidth = int(bandwidth * APPLE_CPU_BANDWIDTH_SHARE)
    return Device(
        kind="cpu",
        name=cpu.name or "CPU",
        backend="cpu",
        usable_memory_bytes=hardware.memory.usable_bytes,
        bandwidth_bytes_per_s=bandwidth,
        flops=cpu_peak_flops(cpu.physical_cores, cpu.features, cpu.name),
        fma_flops=cpu_fma_flops(cpu.physical_cores, cpu.features, cpu.name),
        bandwidth_source=_source_kind(cpu.bandwidth_source),
        cores=cpu.physical_cores,
        clock_hz=stated_cpu_clock_hz(cpu.name),
        **measured,
    )


def stated_cpu_clock_hz(name: str | None) -> float | None:
    """The clock catalog/cpus.toml states for this CPU's platform, or None (then ASSUMED_CPU_CLOCK_HZ holds)."""
    platform = match_cpu(name)
    return platform.clock_hz if platform else None
