"""Compute-bound encoder passes (Whisper's encoder, embedding models, diffusion denoisers):
the efficiency fitted on published measurements, and how a device's peak is stated in a basis."""

from __future__ import annotations

from gpuready.tasks import text_estimate
from gpuready.tasks.devices import ASSUMED_CPU_CLOCK_HZ, Device

# Share of peak FP16 (GPU) or estimated peak FP32 (CPU) throughput that a compute-bound
# encoder forward pass reaches, per backend. Fitted by benchmarks/score_speech.py as the
# median measured/theoretical ratio of the whisper.cpp `bench` encoder rows in
# benchmarks/validation/speech.toml (one 30 s window, encoder only) whose hardware is in the
# tables: cuda 24 rows (Tesla V100 v1.7.5 7, RTX 2060 11, RTX 5090 6; the V100 rows of a Nov 2023
# build, 2x slower than v1.7.5 on the same card, are kept out), cpu 10 rows (Raspberry Pi 5 8,
# Core i7-8700 2). Whisper itself uses a width-aware CUDA figure (tasks/speech.py
# WHISPER_ENCODER_EFFICIENCY); this plain median is the typical encoder's.
# Backends without rows of their own scale CUDA's figure by their text-generation prompt
# efficiency relative to CUDA's (same regime: batches of tokens through dense matrix
# multiplies), said so in each basis.
# Embedding models and image generation's text encoders use these too (no measurements of their own).
ENCODER_EFFICIENCY = {"cuda": 0.13, "cpu": 0.11}


def encoder_efficiency(backend: str) -> tuple[float, str]:
    """The fitted encoder efficiency; other backends scale CUDA's by their prompt efficiency relative to CUDA's."""
    if backend in ENCODER_EFFICIENCY:
        return ENCODER_EFFICIENCY[backend], f"{ENCODER_EFFICIENCY[backend]:.0%} {backend} efficiency (fitted on whisper.cpp encoder benchmarks)"
    relative = text_estimate.COMPUTE_EFFICIENCY.get(backend, text_estimate.COMPUTE_EFFICIENCY["cpu"]) / text_estimate.COMPUTE_EFFICIENCY["cuda"]
    value = ENCODER_EFFICIENCY["cuda"] * relative
    return value, (f"{value:.0%} {backend} efficiency (no encoder benchmark for {backend}: CUDA's fit x {backend}'s "
                   "text-generation prompt efficiency relative to CUDA's)")



def per_core_share(one_core: float, cores: int | None, exponent: float) -> tuple[float, int]:
    """A CPU's share of its peak when work is spread over `cores` (unknown: one): one core's share x
    cores^-exponent (each core's share falls as more of them split the work), and the cores counted."""
    used = max(1, cores or 1)
    return one_core * used**-exponent, used


def amdahl_factor(cores: int | None, serial: float) -> float:
    """Time on `cores` (unknown: one) relative to perfect scaling when a share `serial` of one core's work does not
    spread over them (Amdahl's law): serial x cores + 1 - serial, 1 on one core."""
    used = max(1, cores or 1)
    return serial * used + 1 - serial


# The basis's words where a CPU's peak is taken at its FMA pipes' rate (Device.fma_flops) rather than its flags'.
NARROWER_FMA = "FMA pipes narrower than its ISA flags imply: catalog/cpus.toml fma_flops_per_cycle"


def device_flops_basis(device: Device, fma: bool = False) -> str:
    """The peak an estimate divides by, in words: a CPU's flags' figure, which ggml's kernels (llama.cpp, whisper.cpp,
    stable-diffusion.cpp) and document search are counted at (Device.flops), or with ``fma`` the float peak text to
    speech is counted at (its FMA pipes' rate where catalog/cpus.toml gives a narrower one, Device.float_flops)."""
    if device.kind == "cpu":
        peak = device.float_flops if fma else device.flops
        narrower = f", {NARROWER_FMA}" if fma and device.fma_flops else ""
        return (f"{device.name}: {peak / 1e12:.2f} TFLOPS estimated peak (cores x "
                f"{ASSUMED_CPU_CLOCK_HZ / 1e9:.0f} GHz assumed x FMA width{narrower})")
    return f"{device.name}: {device.flops / 1e12:.1f} TFLOPS FP16 peak"


def gpu_weights_peak(device: Device, variant: str, exponent: float = 1.0) -> tuple[float, str]:
    """The peak a GPU runs weights of `variant` at. Any precision but fp32, and a GPU whose table gives no FP32 rate
    below its FP16 tensor peak: that peak (Device.flops). fp32 weights: the FP16 peak x (FP32 rate / FP16 peak)^exponent,
    so exponent 1 is the FP32 (non-tensor) rate itself (text to speech: PyTorch has left TF32 off for matrix multiplies
    by default since 1.12, and a GPU without TF32 has only its FP32 rate for them) and a fitted exponent below 1 says
    part of a pass gains nothing from the tensor cores (document search, search.FP32_GPU_EXPONENT)."""
    if variant != "fp32" or not (device.vector_flops and device.flops and device.vector_flops < device.flops):
        return device.flops, device_flops_basis(device)
    if exponent == 1.0:
        return device.vector_flops, (f"{device.vector_flops / 1e12:.1f} TFLOPS ({device.name}'s FP32 rate: fp32 weights "
                                     "do not run on its FP16 tensor cores)")
    peak = device.flops * (device.vector_flops / device.flops) ** exponent
    return peak, (f"{device.name}: {peak / 1e12:.1f} TFLOPS for fp32 weights (its FP16 peak {device.flops / 1e12:.1f} x "
                  f"(FP32 rate {device.vector_flops / 1e12:.1f} / FP16 peak)^{exponent:g}: part of a pass runs on "
                  "the tensor cores' FP32 path or off them, benchmarks/ACCURACY.md)")
