"""Speech: speech-to-text (Whisper family) and text-to-speech, speed as a real-time factor.

Speed is "x real time": seconds of audio handled per second of wall time (5 = an hour of
audio in 12 minutes, i.e. 5 minutes of audio per minute). Speech-to-text runs Whisper's
encoder-decoder on 30 s windows: the encoder is compute bound (2 x encoder parameters x
1,500 frames, plus attention over the frames), the decoder is bandwidth bound (every
generated token reads the decoder's weights once, as in text generation). Text-to-speech
is compute bound: 2 x parameters x output frames per second of audio x passes over the peak the
variant runs at, plus on a GPU a fixed time per second of audio.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from gpuready.catalog.loader import CatalogError, Entry
from gpuready.tasks import text_estimate
from gpuready.tasks.base import Group, MemoryParts, ModelEntry, Task, TaskEstimate, bits_quality, level_at_least, listed_variants, place_whole, without_cpu_fp16
from gpuready.tasks.devices import ASSUMED_CPU_CLOCK_HZ, Device, pytorch_drives
from gpuready.tasks.encoders import (NARROWER_FMA, amdahl_factor, device_flops_basis, encoder_efficiency, gpu_weights_peak,
                                     per_core_share)
from gpuready.tasks.measured import with_measured_encoder

# Whisper processes audio in 30 s windows of 1,500 encoder frames (n_audio_ctx = 1500;
# openai/whisper whisper/model.py ModelDimensions, 3,000 mel frames halved by the conv stem).
WINDOW_SECONDS = 30.0
ENCODER_FRAMES = 1500
# Tokens the decoder writes per 30 s window: about 150 spoken words a minute (a commonly
# quoted conversational English rate; an assumption) x ~1.3 tokens a word = ~100.
TOKENS_PER_WINDOW = 100
# Beam size 5: the default of faster-whisper's transcribe() and of the benchmarks in
# benchmarks/validation/speech.toml. The beams share each weight read (one batched step).
BEAM_SIZE = 5
# Share of peak bandwidth Whisper's decoder reaches per generated token, beam search,
# timestamp tokens and per-step overheads included. Fitted by benchmarks/score_speech.py
# on the faster-whisper rows of benchmarks/validation/speech.toml (SYSTRAN/faster-whisper
# README benchmark: 13 minutes of audio, beam 5, batch 1; RTX 3070 Ti fp16 and int8): the
# time left after the estimated encoder time, against the decoder's weight reads. Far below
# text generation's: Whisper's decoder spends its time in per-step overheads (beam search,
# timestamp rules), not in reading weights. One device only: its leave-one-device-out error
# (the held-out RTX 3070 Ti falls back to text generation's bandwidth constant) is in
# benchmarks/ACCURACY.md. CPU keeps the text-generation constant (its two faster-whisper rows,
# one device, are shown there beside it).
DECODER_EFFICIENCY = {"cuda": 0.10}
# Whisper's encoder on a GPU reaches a share of peak FP16 that grows in proportion to the model's
# width: 1,500 frames x d_model matrices fill a GPU's SMs in proportion to d_model, and the
# per-layer element-wise work and kernel launches (which scale with layers x width, not width^2)
# weigh more on narrow models. WHISPER_ENCODER_EFFICIENCY is the share at Whisper large's width
# (d_model 1,280, the widest); a model of width d gets it x d / 1,280 (width_share). Fitted by
# benchmarks/score_speech.py as the median over the whisper.cpp `bench` encoder rows of
# benchmarks/validation/speech.toml (V100 v1.7.5, RTX 2060, RTX 5090); kept because it lowers the
# leave-one-device-out error (benchmarks/ACCURACY.md, "Encoder terms tried"). CPU cores are
# few enough to be filled at any Whisper width: the term did not lower the CPU's held-out error,
# so CPU keeps tasks/encoders.py's plain ENCODER_EFFICIENCY.
WHISPER_ENCODER_EFFICIENCY = {"cuda": 0.27}
WHISPER_REFERENCE_WIDTH = 1280  # Whisper large's d_model (openai/whisper-large-v3 config.json)
VARIANT_BITS = {"fp32": 32.0, "fp16": 16.0, "int8": 8.0, "q8_0": 8.5, "q5_0": 5.5}
# The relative band of a speech-to-text speed: the 80th percentile of the leave-one-device-out
# errors of all fitted speech-to-text rows (benchmarks/ACCURACY.md, speech-to-text headline).
STT_UNCERTAINTY = 0.39
# Text to speech: seconds per second of audio = FLOPs per second of audio / (peak x efficiency).
# The FLOPs count the acoustic network once per output frame and pass (2 x its parameters x frames),
# and the upsampling vocoder at the rates it really runs at (SpeechModel.vocoder_flops_per_second,
# derived in catalog/speech.toml from the published HiFi-GAN / iSTFTNet configurations: Piper's
# generator 3.9 GFLOPs per second of audio, Kokoro's 49.2). A CPU's peak uses the clock
# catalog/cpus.toml states for its platform where it states one (Raspberry Pi boards; tts_peak_flops),
# else the assumed 3.0 GHz, and counts a core at the FP32 FLOPs a cycle the table states where the ISA flags
# overstate it (a Raspberry Pi 4's Cortex-A72 retires 8, not NEON's 16: catalog/cpus.toml fp32_flops_per_cycle).
# On a CPU the share of that peak falls with the threads the runtime spreads over (ONNX Runtime and PyTorch
# use one per physical core by default): one thread reaches TTS_EFFICIENCY["cpu"] of a core's peak, and a
# share TTS_CPU_SERIAL_SHARE of one thread's work does not spread over the threads (Amdahl's law: the time is
# (s x threads + 1 - s) / threads of one thread's), so each thread's share is divided by (s x threads + 1 - s);
# sherpa-onnx's Raspberry Pi 4 table has Piper and Kokoro only 2.2x to 2.4x faster on four threads than on
# one, and Piper on gpuready's 2-vCPU development VM is 1.5x faster on two than on one
# (speech-tts-measured-here.toml, benchmarks/measure_tts.py). A power of the threads (each thread's share x
# threads^-TTS_CPU_THREAD_EXPONENT, document search's CPU term) was tried beside it and also passes the rule
# below, with a higher held-out error (benchmarks/ACCURACY.md, "Text to speech", terms tried), so its exponent
# is 0. TTS_EFFICIENCY and the serial share are fitted together by benchmarks/score_speech.py over the
# published rows of benchmarks/validation/speech-tts*.toml that gpuready's runtimes describe (cpu:
# Piper and Kokoro through ONNX Runtime on a Raspberry Pi 4 at 1-4 threads (sherpa-onnx), Piper on a
# Raspberry Pi 4 and a Ryzen 9 5950X (Piper's author), Kokoro in PyTorch and ONNX Runtime on 4 cores
# of an EPYC 7763 and of a Xeon Platinum 8272CL (heyneo's CPU benchmarks), Kokoro in PyTorch on an
# Apple M4 Pro (FluidAudio's benchmarks) and in ONNX Runtime on the same chip (Supertonic's README),
# Kokoro v0.19 in ONNX Runtime on 4 and 8 threads of a Core i7-11700 (Kokoro-FastAPI's CPU benchmarks, four runs),
# Kokoro in PyTorch on 1 to 8 threads of a Core i9-12900H (yapit's thread-scaling table, speech-tts-devices2.toml),
# Kokoro in PyTorch and Piper on a Ryzen 9 5900XT, a Ryzen 9 9950X3D and an Apple M4 (tts-bench's per-run files,
# speech-tts-bench.toml), Piper on 1 and 2 threads of the development VM's Zen 3 EPYC (measured here);
# cuda: F5-TTS on an RTX 3090 (7 steps on the Fast F5-TTS page; 16 and 32 steps in the F5-TTS paper) and an
# L20 (16 steps, F5-TTS's own PyTorch benchmark), Kokoro through Kokoro-FastAPI on an RTX 4060 Ti (its benchmarks,
# seven runs from 13.5x to 46x real time, speech-tts-kokoro-fastapi.toml) and on an RTX 3090 Ti (a one-request smoke
# test, speech-tts-devices2.toml), Kokoro's own KPipeline on an RTX 3090 and an RTX 5090 (tts-bench); Kokoro counted
# at the FP32 rate it runs at and after the fixed GPU time below (TTS_FIXED_SECONDS)). Each figure is a median over
# devices, each device's own median first (11 CPUs, 5 GPUs), so a device with many rows (the Raspberry Pi 4's thread
# sweeps, one repository's seven runs on an RTX 4060 Ti) does not decide its backend's share alone: kept because it
# lowers the leave-one-device-out error (27% -> 21%) without raising the leave-one-source-out one (18%). Held out:
# leave-one-device-out 20.8% over 57 rows on 16 devices, leave-one-source-out 18% (benchmarks/ACCURACY.md, "Text to
# speech"). The vocoder count, the stated clock and the thread term were kept
# because each lowers the leave-one-device-out error without raising the leave-one-source-out one (the thread term
# judged on the CPU rows it acts on). TTS_UNCERTAINTY is the 80th percentile of the rows' leave-one-device-out errors.
TTS_EFFICIENCY = {"cpu": 0.54, "cuda": 0.115}
# On a GPU the share of peak depends on the model's kernels, not only the backend: F5-TTS's DiT runs as
# a few large matrix multiplies (once the fixed GPU time below is taken off, its rows imply 0.12-0.46 of FP16 peak: an
# RTX 3090 at 16 and 32 steps in the F5-TTS paper and at 7 on the Fast F5-TTS page, an L20 at 16 steps in F5-TTS's own
# PyTorch benchmark), Kokoro's LSTMs and small convolutions as many short kernels (0.04-0.26 of FP32 peak: an RTX
# 4060 Ti, an RTX 3090 Ti, an RTX 3090 and an RTX 5090). TTS_MODEL_EFFICIENCY holds each catalogue model's own median on a GPU backend,
# with the backend's figure the median of those, where the scorer keeps that term: it lowers the
# leave-one-device-out error and does not raise the leave-one-source-out one (benchmarks/ACCURACY.md,
# "Text to speech", terms tried). Once Kokoro is counted at the FP32 rate it runs at and the fixed GPU time is
# taken off (TTS_FIXED_SECONDS), the term no longer lowers the first (judged on the GPU rows: 28% -> 111%), so the
# table is empty and every model takes the backend's figure, the median over the CUDA devices, until rows show the
# term again.
TTS_MODEL_EFFICIENCY: dict[tuple[str, str], float] = {}
TTS_CPU_THREAD_EXPONENT = 0.0
TTS_CPU_SERIAL_SHARE = 0.15
# A GPU's fp32 run is counted at its FP32 (non-tensor) rate, not the FP16 tensor peak `Device.flops` holds
# (tts_peak_flops): Kokoro's PyTorch model runs in fp32 (hexgrad/kokoro builds it so and Kokoro-FastAPI moves it to the
# GPU uncast), and PyTorch leaves TF32 off for matrix multiplies by default (torch.backends.cuda.matmul.allow_tf32,
# https://pytorch.org/docs/stable/notes/cuda.html#tensorfloat-32-tf32-on-ampere-and-later-devices); its cuDNN
# convolutions may use TF32, whose dense rate on a GeForce card equals the FP32 rate, so a data-center GPU's fp32
# estimate leans slow. Kept because it lowers the leave-one-device-out error without raising the leave-one-source-out
# one (benchmarks/ACCURACY.md, "Text to speech", terms tried).
# TTS_FIXED_SECONDS: seconds a GPU backend spends per second of audio however fast the GPU is. A small model's pass
# on a GPU is many short kernels (Kokoro's LSTMs, AdaIN layers and vocoder convolutions), each dispatched from Python
# and launched at a cost a faster GPU does not shorten, so its speed stops following peak FLOPS: Kokoro's KPipeline
# speaks 106x real time on an RTX 3090 (36 TFLOPS FP32) and 114x on an RTX 5090 (105 TFLOPS) in tts-bench's runs of
# the same five prompts. It plays the part of text generation's per-layer fixed time (tasks/text_estimate.py
# LAYER_SECONDS). Fitted by benchmarks/score_speech.py with the CUDA share on the CUDA rows (the value on a 0.1 ms
# grid that gives them the least median error, refitting the share at each; a value above a row's whole measured
# time is refuted by it); kept because it lowers the leave-one-device-out error of the GPU rows it acts on without
# raising the leave-one-source-out one (66% -> 41%, 31% -> 31%). Kokoro-FastAPI's rows (RTX 4060 Ti, RTX 3090 Ti)
# spend more a second of audio than the KPipeline rows (22 to 35 ms, one run 74, against 9), what the server adds,
# and are predicted fast. A form paying it once per network pass (F5-TTS's 64) was tried and not kept (ACCURACY.md,
# terms tried). A GPU backend without rows takes CUDA's; a CPU has none.
TTS_FIXED_SECONDS = {"cuda": 0.0029}
# A CPU whose AVX-512 runs on narrower FMA pipes than its flag implies (Zen 4, Intel's client Ice Lake, Tiger Lake and
# Rocket Lake) is counted at its FMA pipes' rate (Device.float_flops, catalog/cpus.toml fma_flops_per_cycle), as
# PyTorch's and ONNX Runtime's FP32 kernels run: the Rocket Lake i7-11700's four Kokoro rows, held out, have a
# median error of 46% with it and 192% without; the LODO median is 21% with it and 31% without, LOSO's 18% and 19%
# (ACCURACY.md, terms tried). Whisper's encoder (whisper.cpp) keeps the flags' figure, as llama.cpp and
# stable-diffusion.cpp do: ggml's kernels, which the held-out rows favour at it.
TTS_UNCERTAINTY = 0.54


@dataclass(frozen=True, kw_only=True)
class SpeechModel(ModelEntry):
    kind: str  # stt | tts
    params: float
    d_model: int | None = None  # stt: Whisper width
    encoder_layers: int | None = None
    decoder_layers: int | None = None
    frames_per_second: float | None = None  # tts: output frames per second of audio
    passes_per_frame: int = 1  # tts: e.g. flow-matching steps x guidance passes
    # tts: the upsampling vocoder (HiFi-GAN / iSTFTNet generator) runs its convolutions at rates above the
    # frame rate, so 2 x parameters x frames undercounts it: its parameters and its own FLOPs per second of
    # audio, derived in catalog/speech.toml from the published generator configuration (0: no such vocoder).
    vocoder_params: float = 0.0
    vocoder_flops_per_second: float = 0.0
    task: str = "speech"

    @property
    def encoder_params(self) -> float:
        """Per encoder layer: attention 4 d^2 + MLP 8 d^2 (Whisper's MLP is 4 d wide)."""
        return 12 * self.d_model**2 * self.encoder_layers

    @property
    def decoder_params(self) -> float:
        """Everything that is not the encoder: decoder layers, cross-attention and token embeddings."""
        return self.params - self.encoder_params


def parse_speech_model(entry: Entry, quants=None) -> SpeechModel:
    kind = entry.choice("kind", ("stt", "tts"))
    variants = entry.known_names("variants", VARIANT_BITS, "precision")
    needed = ("d_model", "encoder_layers", "decoder_layers") if kind == "stt" else ("frames_per_second",)
    for key in needed:
        if not entry.has(key):
            raise CatalogError(f"{entry.where}: a '{kind}' model needs '{key}'")
    model = SpeechModel(
        kind=kind,
        params=entry.number("params"),
        variants=variants,
        d_model=entry.integer("d_model", required=False),
        encoder_layers=entry.integer("encoder_layers", required=False),
        decoder_layers=entry.integer("decoder_layers", required=False),
        frames_per_second=entry.number("frames_per_second", required=False),
        passes_per_frame=entry.integer("passes_per_frame", required=False) or 1,
        vocoder_params=entry.number("vocoder_params", required=False) or 0.0,
        vocoder_flops_per_second=entry.number("vocoder_flops_per_second", required=False) or 0.0,
        **entry.card(),
    )
    if kind == "stt" and model.decoder_params <= 0:
        raise CatalogError(f"{entry.where}: 'params' is smaller than the encoder implied by d_model and encoder_layers")
    if model.vocoder_params >= model.params:
        raise CatalogError(f"{entry.where}: 'vocoder_params' must be smaller than 'params'")
    return model


# --- formulas --------------------------------------------------------------------------


def weights_bytes(model: SpeechModel, variant: str) -> int:
    return int(model.params * VARIANT_BITS[variant] / 8)


def encoder_flops_per_window(model: SpeechModel) -> float:
    """2 x encoder parameters x 1,500 frames + attention 4 x 1,500^2 x width x layers."""
    return 2 * model.encoder_params * ENCODER_FRAMES + 4 * ENCODER_FRAMES**2 * model.d_model * model.encoder_layers


def cross_attention_cache_bytes(model: SpeechModel) -> int:
    """K and V of the encoder output for every decoder layer and beam, fp16."""
    return 2 * ENCODER_FRAMES * model.d_model * model.decoder_layers * 2 * BEAM_SIZE


def width_share(width: int) -> float:
    """The share of the width-1,280 efficiency a Whisper encoder of this width reaches: width / 1,280, at most 1."""
    return min(1.0, width / WHISPER_REFERENCE_WIDTH)


def whisper_encoder_efficiency(backend: str, width: int) -> tuple[float, str]:
    """The share of peak a Whisper encoder of this width reaches: the width-1,280 fit x width / 1,280 where the
    backend has that fit (CUDA); otherwise tasks/encoders.py's plain per-backend figure."""
    if backend not in WHISPER_ENCODER_EFFICIENCY:
        return encoder_efficiency(backend)
    value = WHISPER_ENCODER_EFFICIENCY[backend] * width_share(width)
    return value, (f"{value:.0%} {backend} efficiency ({WHISPER_ENCODER_EFFICIENCY[backend]:.0%} at width "
                   f"{WHISPER_REFERENCE_WIDTH} x {width} / {WHISPER_REFERENCE_WIDTH}; fitted on whisper.cpp encoder benchmarks)")


def encoder_seconds(model: SpeechModel, device: Device) -> tuple[float, str]:
    efficiency, why = whisper_encoder_efficiency(device.backend, model.d_model)
    flops = encoder_flops_per_window(model)
    # whisper.cpp runs ggml's kernels, counted as llama.cpp's are (the ISA flags' figure, `flops`), which the held-out
    # speech-to-text rows favour over the FMA pipes' rate (benchmarks/ACCURACY.md, "Speech to text").
    return flops / (device.flops * efficiency), (f"encoder: {flops / 1e12:.2f} TFLOPs per 30 s window; "
                                                 f"{device_flops_basis(device)} x {why}")


def decoder_efficiency(backend: str, table: dict[str, float] | None = None) -> tuple[float, str]:
    """The bandwidth share Whisper's decoder reaches on ``backend``: its own fit (``table``, DECODER_EFFICIENCY);
    for a GPU backend without one, CUDA's fit x this backend's text-generation bandwidth constant relative to CUDA's
    (the decoder's per-step overheads, which put CUDA's fit far below text generation's, are a GPU runtime's too:
    text generation's own constant held out predicted the RTX 3070 Ti 5x fast, benchmarks/ACCURACY.md); else, and
    on a CPU, text generation's bandwidth constant."""
    table = DECODER_EFFICIENCY if table is None else table
    bandwidth = text_estimate.BANDWIDTH_EFFICIENCY
    own = bandwidth.get(backend, bandwidth["cpu"])
    if backend in table:
        return table[backend], "fitted on faster-whisper benchmarks"
    if backend != "cpu" and "cuda" in table:
        value = table["cuda"] * own / bandwidth["cuda"]
        return value, (f"no Whisper decoder benchmark for {backend}: CUDA's faster-whisper fit x {backend}'s "
                       "text-generation bandwidth constant relative to CUDA's")
    return own, f"no Whisper decoder benchmark for {backend}: text-generation bandwidth constant"


def decoder_seconds_per_token(model: SpeechModel, variant: str, device: Device) -> tuple[float, str]:
    efficiency, why = decoder_efficiency(device.backend)
    if device.bandwidth_source == "this-machine":  # a measured bandwidth, not a peak: rescale as text generation does
        efficiency *= text_estimate.bandwidth_efficiency(device) / text_estimate.BANDWIDTH_EFFICIENCY.get(device.backend, text_estimate.BANDWIDTH_EFFICIENCY["cpu"])
        why += ", rescaled to a measured bandwidth"
    read = model.decoder_params * VARIANT_BITS[variant] / 8
    return read / (device.bandwidth_bytes_per_s * efficiency), (
        f"decoder: {read / 1e6:.0f} MB read per token at {device.bandwidth_bytes_per_s / 1e9:.0f} GB/s x {efficiency:.0%}"
        f" ({why}); {TOKENS_PER_WINDOW} tokens per window"
    )


def stt_realtime(model: SpeechModel, variant: str, device: Device) -> tuple[float | None, float | None, list[str]]:
    """(x real time, encoder seconds per window, basis) for speech-to-text on one device."""
    if not device.flops or not device.bandwidth_bytes_per_s:
        return None, None, [f"throughput or bandwidth of {device.name} unknown: speed not estimated"]
    encode, why_encoder = encoder_seconds(model, device)
    per_token, why_decoder = decoder_seconds_per_token(model, variant, device)
    window = encode + TOKENS_PER_WINDOW * per_token
    return WINDOW_SECONDS / window, encode, [why_encoder, why_decoder]


def tts_flops_per_audio_second(model: SpeechModel, passes: int | None = None) -> float:
    """2 x the parameters outside the vocoder x output frames per second of audio x network passes per frame,
    plus the vocoder's own FLOPs per second of audio (catalog/speech.toml; it runs once, at its upsampled rates)."""
    frame_params = model.params - model.vocoder_params
    return 2 * frame_params * model.frames_per_second * (passes or model.passes_per_frame) + model.vocoder_flops_per_second


def tts_peak_flops(device: Device, variant: str = "fp16") -> tuple[float, str]:
    """The peak text to speech is estimated against: a CPU's peak at the clock catalog/cpus.toml states for its
    platform (Raspberry Pi boards) in place of the assumed all-core clock; a GPU running fp32 weights at its FP32
    (non-tensor) rate where the table gives one (FP32_ON_GPU); any other device's peak as it is."""
    if device.kind != "cpu":
        return gpu_weights_peak(device, variant)
    if not device.clock_hz:
        return device.float_flops, device_flops_basis(device, fma=True)
    peak = device.float_flops * device.clock_hz / ASSUMED_CPU_CLOCK_HZ
    narrower = f"; {NARROWER_FMA}" if device.fma_flops else ""
    return peak, (f"{peak / 1e9:.0f} GFLOPS ({device.name} at its stated {device.clock_hz / 1e9:g} GHz, not the assumed "
                  f"{ASSUMED_CPU_CLOCK_HZ / 1e9:g} GHz{narrower})")


def tts_fixed_seconds(backend: str) -> tuple[float, str]:
    """Seconds a GPU runtime spends per second of audio whatever the GPU's speed (TTS_FIXED_SECONDS; a GPU backend
    without a fit takes CUDA's); none on a CPU."""
    if backend == "cpu":
        return 0.0, ""
    value = TTS_FIXED_SECONDS.get(backend, TTS_FIXED_SECONDS.get("cuda", 0.0))
    if not value:
        return 0.0, ""
    own = "" if backend in TTS_FIXED_SECONDS else f" (no TTS measurement for {backend}: CUDA's)"
    return value, (f" + a fixed {value * 1e3:.1f} ms per second of audio{own} (short kernels launched one after another, "
                   "which a faster GPU does not shorten; fitted on published TTS real-time factors)")


def tts_efficiency(backend: str, threads: int | None = None, model_id: str | None = None) -> tuple[float, str]:
    """The fitted text-to-speech efficiency: on a CPU, one thread's share / (s x threads + 1 - s) x threads^-a, s =
    TTS_CPU_SERIAL_SHARE (Amdahl's serial share) and a = TTS_CPU_THREAD_EXPONENT (threads: the physical cores the peak
    counts; unknown: one); on a GPU backend the model's own figure where it has one
    (TTS_MODEL_EFFICIENCY), else the backend's; other backends without a fit scale CUDA's (the model's own where it
    has one) by their prompt efficiency relative to CUDA's."""
    if backend == "cpu":
        one = TTS_EFFICIENCY["cpu"]
        value, used = per_core_share(one, threads, TTS_CPU_THREAD_EXPONENT)
        serial = TTS_CPU_SERIAL_SHARE
        value /= amdahl_factor(used, serial)
        terms = []
        if serial:
            terms.append(f"{serial:.0%} of one thread's work not spread over the {used} threads (Amdahl)")
        if TTS_CPU_THREAD_EXPONENT:
            terms.append(f"x {used} threads^-{TTS_CPU_THREAD_EXPONENT:.2f}")
        if not terms:
            # The thread terms are dropped (their rule, benchmarks/score_speech.py): every thread the same share.
            return value, (f"{value:.1%} cpu efficiency (each of {used} threads at the same share of its core's peak; "
                           "fitted on published TTS real-time factors)")
        return value, (f"{value:.1%} cpu efficiency ({one:.0%} for one thread, {'; '.join(terms)}; "
                       "fitted on published TTS real-time factors)")
    if (model_id, backend) in TTS_MODEL_EFFICIENCY:
        value = TTS_MODEL_EFFICIENCY[model_id, backend]
        return value, f"{value:.1%} {backend} efficiency (fitted on published {model_id} real-time factors on {backend})"
    if backend in TTS_EFFICIENCY:
        return TTS_EFFICIENCY[backend], f"{TTS_EFFICIENCY[backend]:.1%} {backend} efficiency (fitted on published TTS real-time factors)"
    prompt = text_estimate.COMPUTE_EFFICIENCY
    own = (model_id, "cuda") in TTS_MODEL_EFFICIENCY
    value = TTS_MODEL_EFFICIENCY.get((model_id, "cuda"), TTS_EFFICIENCY["cuda"]) * prompt.get(backend, prompt["cpu"]) / prompt["cuda"]
    return value, (f"{value:.1%} {backend} efficiency (no TTS measurement for {backend}: CUDA's fit"
                   f"{f' for {model_id}' if own else ''} x {backend}'s text-generation prompt efficiency relative to CUDA's)")


def tts_realtime(model: SpeechModel, device: Device, variant: str = "fp16") -> tuple[float | None, list[str]]:
    """x real time = 1 / (FLOPs per second of audio / (peak x efficiency) + the fixed seconds per second of audio)."""
    if not device.flops:
        return None, [f"throughput of {device.name} unknown: speed not estimated"]
    # Every output frame of an utterance goes through the network at once (compute bound, like a
    # prompt); the efficiency is fitted on the rows of benchmarks/validation/speech-tts.toml.
    efficiency, why = tts_efficiency(device.backend, device.cores if device.kind == "cpu" else None, model.id)
    flops = tts_flops_per_audio_second(model)
    peak, peak_basis = tts_peak_flops(device, variant)
    fixed, why_fixed = tts_fixed_seconds(device.backend)
    seconds = flops / (peak * efficiency) + fixed
    frame_params = model.params - model.vocoder_params
    count = (f"2 x {frame_params / 1e6:.0f}M parameters x {model.frames_per_second:g} frames x {model.passes_per_frame} passes"
             + (f" + the vocoder's {model.vocoder_flops_per_second / 1e9:.1f} GFLOPs at its upsampled rates"
                if model.vocoder_flops_per_second else ""))
    return 1.0 / seconds, [f"{flops / 1e9:.1f} GFLOPs per second of audio ({count}); {peak_basis} x {why}{why_fixed}"]


# The GPU backends a text-to-speech runtime drives (runtime_name): on any other GPU the model runs on the CPU. Piper
# runs its ONNX voice through ONNX Runtime with the CUDA execution provider or none (rhasspy/piper at 73c04d8:
# src/cpp/piper.cpp loadModel appends only OrtCUDAProviderOptions, under --use-cuda; the Python package's
# PiperVoice.load takes use_cuda, its CLI --cuda), so on a Mac's, a Radeon's or an Intel GPU it speaks on the CPU.
# PyTorch (Kokoro's fp32 model, F5-TTS) drives CUDA, ROCm (as its "cuda" device), Apple's MPS and Intel's XPU, and no
# Vulkan device (https://pytorch.org/docs/stable/notes/mps.html, https://pytorch.org/docs/stable/notes/get_start_xpu.html).
# kokoro-onnx (Kokoro's fp16 file) runs on the ONNX Runtime execution provider of the onnxruntime build installed beside
# it (thewh1teagle/kokoro-onnx src/kokoro_onnx/session.py resolve_providers: onnxruntime-gpu, -directml, -openvino,
# -rocm or -qnn, or the one ONNX_PROVIDER names; plain CPU otherwise): onnx_provider says which one drives this GPU.
PIPER_GPU_BACKENDS = ("cuda",)


# What makes kokoro-onnx use each provider (resolve_providers): one of the accelerated onnxruntime builds it looks for
# installed, or ONNX_PROVIDER naming the provider. macOS's plain onnxruntime wheel carries the CoreML provider
# (https://onnxruntime.ai/docs/execution-providers/CoreML-ExecutionProvider.html), but kokoro-onnx reaches it only
# through ONNX_PROVIDER.
ONNX_PROVIDER_SETUP = {
    "CUDA": "pip install onnxruntime-gpu (kokoro-onnx[gpu])",
    "ROCm": "pip install onnxruntime-rocm",
    "DirectML": "pip install onnxruntime-directml",
    "OpenVINO": "pip install onnxruntime-openvino",
    "CoreML": "ONNX_PROVIDER=CoreMLExecutionProvider",
}


def onnx_provider(gpu: Device) -> str | None:
    """The ONNX Runtime execution provider that drives `gpu`, or None where none does (the model runs on the CPU).
    CUDA for NVIDIA's CUDA GPUs and CoreML for Apple's; on Windows DirectML, which runs on any DirectX 12 GPU
    (onnxruntime-directml; https://onnxruntime.ai/docs/execution-providers/DirectML-ExecutionProvider.html); on Linux
    ROCm for a Radeon with ROCm (onnxruntime-rocm) and OpenVINO for an Intel GPU (onnxruntime-openvino,
    https://onnxruntime.ai/docs/execution-providers/OpenVINO-ExecutionProvider.html: Intel CPUs, GPUs and NPUs). A
    GPU driven only through Vulkan on Linux (a Radeon without ROCm) has no provider: ONNX Runtime has no Vulkan one."""
    if gpu.backend == "cuda":
        return "CUDA"
    if gpu.backend == "metal":
        return "CoreML"
    if gpu.host_platform == "windows":
        return "DirectML"
    if gpu.backend == "rocm":
        return "ROCm"
    if gpu.vendor == "intel" or gpu.backend == "sycl":
        return "OpenVINO"
    return None


def tts_gpu(model: SpeechModel, variant: str, gpu: Device | None) -> Device | None:
    """The GPU a text-to-speech model's runtime can run at `variant` on: `gpu`, unless that runtime does not drive it
    (PIPER_GPU_BACKENDS, onnx_provider, devices.pytorch_drives), in which case None (the CPU)."""
    if gpu is None:
        return None
    if model.id.startswith("piper"):
        return gpu if gpu.backend in PIPER_GPU_BACKENDS else None
    if model.id.startswith("kokoro") and variant == "fp16":
        return gpu if onnx_provider(gpu) else None
    return gpu if pytorch_drives(gpu) else None


def estimate(model: SpeechModel, variant: str, gpu: Device | None, cpu: Device, measured: tuple = ()) -> TaskEstimate:
    if model.kind == "tts":
        gpu = tts_gpu(model, variant, gpu)
    weights = weights_bytes(model, variant)
    working = cross_attention_cache_bytes(model) if model.kind == "stt" else int(model.params * 2)
    basis = [f"weights: {model.params / 1e6:.0f}M parameters at {variant} ({VARIANT_BITS[variant]:g} bits)"]
    if model.kind == "stt":
        basis.append(f"working memory: cross-attention K/V for {BEAM_SIZE} beams x {model.decoder_layers} decoder layers x 1,500 frames, fp16")
    else:
        basis.append("working memory: assumed equal to the fp16 weights (activations of one utterance)")
    placement, device, parts = place_whole({f"weights ({variant})": weights, "working memory": working}, gpu, cpu)
    memory = MemoryParts(parts)
    basis.append(f"on {device.name} ({device.backend})")
    if placement == "gpu" and model.id.startswith("kokoro") and variant == "fp16" and (provider := onnx_provider(device)):
        basis.append(f"kokoro-onnx uses {provider} only when set up for it ({ONNX_PROVIDER_SETUP[provider]}); otherwise it "
                     "runs on the CPU (kokoro-onnx's session.py, resolve_providers)")
    if model.kind == "stt":
        speed, encode, lines = stt_realtime(model, variant, device)
        uncertainty = STT_UNCERTAINTY
        if measured and speed:
            speed, encode, uncertainty, lines = with_measured_encoder(model, variant, placement, device.backend, speed, encode,
                                                                      lines, measured, WINDOW_SECONDS, STT_UNCERTAINTY)
        details = (("encoder_seconds_per_window", encode or 0.0), ("tokens_per_window", float(TOKENS_PER_WINDOW)))
    else:
        speed, lines = tts_realtime(model, device, variant)
        details = ()
        uncertainty = TTS_UNCERTAINTY
    return TaskEstimate(model.id, variant, placement, memory, memory.on("gpu"), memory.on("system"), speed,
                        "x realtime", uncertainty, details, tuple(basis + lines))


# --- judging ---------------------------------------------------------------------------

# x real time. Speech-to-text: 10x turns an hour of recording around in 6 minutes; 2x keeps up
# with live speech with room to spare; 0.5x (a recording takes twice its length) is the
# floor of usable for batch transcription. Text-to-speech: 1.5x speaks without stalling.
# Product judgements, not measurements.
STT_FLOORS = {"runs-well": 10.0, "runs": 2.0, "slow": 0.5}
TTS_FLOORS = {"runs-well": 5.0, "runs": 1.5, "slow": 0.5}


def runtime_name(model: SpeechModel, estimate: TaskEstimate, gpu: Device | None) -> str:
    backend = gpu.backend if gpu and estimate.placement != "cpu" else "cpu"
    if model.kind == "tts":
        if model.id.startswith("piper"):
            return "Piper (ONNX Runtime, CUDA)" if backend == "cuda" else "Piper (ONNX Runtime, CPU)"
        if model.id.startswith("kokoro") and estimate.quant == "fp16":
            # hexgrad/kokoro and Kokoro-FastAPI run the PyTorch model in fp32; the fp16 weights are kokoro-onnx's
            # kokoro-v1.0.fp16.onnx (https://github.com/thewh1teagle/kokoro-onnx/releases, model-files-v1.0)
            provider = onnx_provider(gpu) if gpu and backend != "cpu" else None
            return f"kokoro-onnx (ONNX Runtime, {provider})" if provider else "kokoro-onnx (ONNX Runtime)"
        return {"cuda": "PyTorch (CUDA)", "rocm": "PyTorch (ROCm)", "metal": "PyTorch (MPS) or MLX", "sycl": "PyTorch (XPU)",
                "cpu": "PyTorch (CPU)"}.get(backend, f"PyTorch ({backend})")
    whisper_cpp = {"cuda": "whisper.cpp (CUDA)", "metal": "whisper.cpp (Metal)", "rocm": "whisper.cpp (ROCm/HIP)",
                   "vulkan": "whisper.cpp (Vulkan)", "sycl": "whisper.cpp (SYCL)"}
    if estimate.quant.startswith("q"):
        return whisper_cpp.get(backend, "whisper.cpp (CPU)")
    if backend == "cuda":
        return f"faster-whisper (CUDA {estimate.quant})"
    if backend == "cpu":
        # CTranslate2 has no fp16 on CPU; whisper.cpp's default ggml models are F16 and run there.
        return "whisper.cpp (CPU)" if estimate.quant == "fp16" else f"faster-whisper (CPU {estimate.quant})"
    if backend == "metal":
        return "whisper.cpp (Metal) or mlx-whisper"
    return whisper_cpp.get(backend, f"whisper.cpp ({backend})")


def _describe(model: SpeechModel, estimate: TaskEstimate, options) -> str:
    what = "transcribes" if model.kind == "stt" else "speaks"
    return f"{what} about {estimate.speed:.1f}x real time ({estimate.speed:.1f} min of audio per minute)"


def variants(model: SpeechModel, catalog, gpu: Device | None, options) -> list[str]:
    """The listed variants; with no GPU, text to speech only at fp32 where it has it (see refuse)."""
    listed = listed_variants(model, catalog, gpu, options)
    return without_cpu_fp16(listed, gpu, options) if model.kind == "tts" else listed


def refuse(model: SpeechModel, variant: str, estimate: TaskEstimate, gpu: Device | None, catalog=None) -> str | None:
    """fp16 text to speech is a GPU precision: on a CPU the runtimes named for it (PyTorch for Kokoro and
    F5-TTS) run the published fp32 weights (hexgrad/Kokoro-82M ships its 82M parameters as a 327 MB fp32
    file), so a CPU placement is judged at fp32. Whisper's fp16 on a CPU is whisper.cpp's F16 model, which runs."""
    if model.kind == "tts" and estimate.placement == "cpu" and variant == "fp16" and "fp32" in model.quants:
        return f"fp16 {model.name} runs on a GPU; on the CPU {runtime_name(model, replace(estimate, quant='fp32'), None)} runs its fp32 weights"
    return None


def _level(model: SpeechModel, estimate: TaskEstimate, options) -> tuple[str, list[str]]:
    return level_at_least(estimate.speed, STT_FLOORS if model.kind == "stt" else TTS_FLOORS), []


TASK = Task(
    name="speech",
    title="Speech",
    parse=parse_speech_model,
    variants=variants,
    estimate=lambda model, variant, catalog, gpu, cpu, options: estimate(model, variant, gpu, cpu, options.measured_speeds),
    level=_level,
    describe=_describe,
    runtime=lambda model, estimate, gpu, catalog: runtime_name(model, estimate, gpu),
    quality=bits_quality(VARIANT_BITS),
    refuse=refuse,
    groups=(Group("speech-to-text", "Speech to text", "stt", "transcribe"),
            Group("text-to-speech", "Text to speech", "tts", "speak")),
)
