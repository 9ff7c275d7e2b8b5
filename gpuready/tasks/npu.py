"""An NPU as a place to run: where a cited runtime runs a model on a detected NPU, the verdict
offers that placement with its own speed estimate, basis and band, next to its GPU or CPU
placement; where the driver or the runtime is missing, it says which. Pure over Hardware.

Covered: speech-to-text (Whisper's encoder through OpenVINO on Intel NPUs: whisper.cpp's
OpenVINO encoder, OpenVINO GenAI's WhisperPipeline; the decoder stays on the CPU) and
embedding models (OpenVINO on Intel NPUs). Other NPUs and tasks get no offer: Stable
Diffusion on Qualcomm Hexagon and AMD XDNA runs only vendor-converted models, which the
catalogue does not list, and gpuready has no speed measurement for them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from gpuready.hardware import Hardware
from gpuready.tasks import search, speech
from gpuready.tasks.devices import cpu_device

# Share of the NPU's INT8 TOPS an encoder pass reaches. One published measurement: Parakeet
# TDT 0.6B through OpenVINO (onnx-asr) on the Arrow Lake NPU of a Core Ultra 7 265K (13 TOPS)
# transcribed 10 s of audio in 204 ms (Miguel Camba, "Running ASR for smart homes in the NPU
# of Intel processors", https://dev.to/cibernox/running-asr-for-smart-homes-in-the-npu-of-intel-processors-2iec,
# May 2026). Its FastConformer encoder, about 0.6B parameters at 12.5 frames a second, is
# about 2 x 0.6e9 x 125 = 150 GFLOPs for 10 s: 0.74 TOPS reached, 5.7% of 13. One model on
# one NPU, decoder and pre-processing included: a wide band.
NPU_EFFICIENCY = 0.057
NPU_UNCERTAINTY = 0.6
RUNTIMES = {
    ("speech", "intel"): "OpenVINO (whisper.cpp's OpenVINO encoder or OpenVINO GenAI WhisperPipeline)",
    ("document-search", "intel"): "OpenVINO (optimum-intel or OpenVINO GenAI TextEmbeddingPipeline)",
}
# A reranker is a cross-encoder: OpenVINO GenAI runs it with its own pipeline, not the embedding one
# (https://openvinotoolkit.github.io/openvino.genai/docs/use-cases/text-rerank: TextRerankPipeline).
RERANKER_RUNTIME = "OpenVINO (optimum-intel or OpenVINO GenAI TextRerankPipeline)"
RUNTIME_SOURCES = {
    "speech": "https://github.com/ggml-org/whisper.cpp (README, 'OpenVINO support': the encoder runs on an OpenVINO device, NPU included)",
    "document-search": "https://docs.openvino.ai (OpenVINO supported devices: NPU plugin runs inference of exported models)",
}


@dataclass(frozen=True)
class NpuOffer:
    npu: str  # the NPU's name
    runtime: str
    available: bool  # driver and runtime present
    missing: tuple[str, ...]  # what is missing, when not available
    speed: float | None  # in the verdict's unit
    speed_unit: str
    uncertainty: float
    basis: tuple[str, ...]


def missing_parts(npu, hardware: Hardware) -> list[str]:
    """What the NPU placement still needs here: its kernel driver, the OpenVINO runtime."""
    found = []
    if npu.driver_loaded is False:
        found.append(f"the {npu.driver or 'NPU'} driver is not loaded")
    openvino = next((b for b in hardware.backends if b.name == "openvino"), None)
    if openvino is None or not openvino.available:
        found.append("the OpenVINO runtime was not seen (pip install openvino; `gpuready report --torch` looks for it)")
    elif openvino.detail and "NPU" not in openvino.detail:
        found.append(f"OpenVINO does not list the NPU ({openvino.detail})")
    return found


def offer(verdict, model, hardware: Hardware) -> NpuOffer | None:
    """The NPU placement of this verdict's model, or None where no cited runtime runs it on a detected NPU."""
    npu = next((n for n in hardware.npus if (verdict.task, n.vendor) in RUNTIMES and n.tops_int8), None)
    if npu is None or verdict.quant is None:
        return None
    if verdict.task == "speech" and getattr(model, "kind", None) != "stt":
        return None
    flops = npu.tops_int8 * 1e12 * NPU_EFFICIENCY
    peak = f"{npu.name}: {npu.tops_int8:g} TOPS INT8 x {NPU_EFFICIENCY:.1%} (one published OpenVINO NPU measurement)"
    if verdict.task == "speech":
        cpu = cpu_device(hardware)
        on_cpu = speech.estimate(model, verdict.quant, None, cpu)
        details = dict(on_cpu.details)
        encoder_cpu = details.get("encoder_seconds_per_window") or 0.0
        if not on_cpu.speed or not encoder_cpu:
            return None
        decoder_cpu = speech.WINDOW_SECONDS / on_cpu.speed - encoder_cpu
        encoder_npu = 2 * model.encoder_params * speech.ENCODER_FRAMES / flops
        speed = speech.WINDOW_SECONDS / (encoder_npu + max(0.0, decoder_cpu))
        basis = (f"encoder on the NPU: 2 x {model.encoder_params / 1e6:.0f}M parameters x {speech.ENCODER_FRAMES:,} frames "
                 f"= {encoder_npu:.2f} s a 30 s window on {peak}",
                 f"decoder on the CPU: {max(0.0, decoder_cpu):.2f} s a window (as the CPU estimate)")
        unit = "x realtime"
    else:
        per_chunk = search.flops_per_chunk(model)
        speed = flops / per_chunk
        basis = (f"{per_chunk / 1e9:.1f} GFLOPs per chunk on {peak}",)
        unit = verdict.speed_unit or "chunks/s"
    missing = missing_parts(npu, hardware)
    runtime = RUNTIMES[(verdict.task, npu.vendor)]
    if getattr(model, "kind", None) == "reranker":
        runtime = RERANKER_RUNTIME
    basis += (f"runtime: {runtime}; {RUNTIME_SOURCES[verdict.task]}",)
    return NpuOffer(npu.name, runtime, not missing, tuple(missing), speed, unit, NPU_UNCERTAINTY, basis)


def with_npu(verdict, model, hardware: Hardware):
    found = offer(verdict, model, hardware) if hardware.npus else None
    return verdict if found is None else replace(verdict, npu=found)
