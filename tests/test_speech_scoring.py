"""Speech estimates term by term (hand-computed), their invariants, and the cross-validated scoring
in benchmarks/score_speech.py (leave one device out refits without the held-out device)."""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import statistics
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from gpuready.tasks import devices, encoders, speech
from gpuready.tasks import text_estimate as est
from gpuready.tasks.registry import load_catalog

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
import score_speech  # noqa: E402

CATALOG = load_catalog()


def gpu(flops: float = 100e12, bandwidth: float = 1000e9, backend: str = "cuda") -> devices.Device:
    return devices.Device("gpu", "Test GPU", backend, 24 * 1024**3, bandwidth, flops)


# --- terms, hand computed ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model_id", "passes", "flops"),
    [
        # one pass of the 20M VITS outside its 1.66M-weight vocoder per frame, plus the vocoder's 3.91 GFLOPs
        ("piper-medium", None, 2 * (20e6 - 1.66e6) * 86.13 + 3.91e9),  # 7.069e9
        ("kokoro-82m", None, 2 * (82e6 - 17.26e6) * 80 + 49.19e9),  # 5.955e10
        ("f5-tts", None, 2 * 336e6 * 93.75 * 64),  # 4.032e12: 32 steps x 2 guidance passes (Vocos not counted)
        ("f5-tts", 14, 2 * 336e6 * 93.75 * 14),  # 8.82e11: a row that ran 7 steps x 2 passes
    ],
)
def test_tts_flops_per_second_of_audio(model_id, passes, flops):
    assert speech.tts_flops_per_audio_second(CATALOG.get(model_id), passes) == pytest.approx(flops)


def hifigan_generator(frame_rate, pre_channels, initial, rates, kernels, res_kernels, dilations, convs_per_dilation,
                      post_channels, noise=()):
    """(weights, FLOPs per second of audio) of a HiFi-GAN-style generator, layer by layer: 2 x C_in x C_out x k
    per output sample (transposed convolutions: / stride) at the layer's output rate."""
    weights = flops = 0.0
    if pre_channels:  # conv_pre, kernel 7, at the frame rate
        weights += pre_channels * initial * 7
        flops += 2 * pre_channels * initial * 7 * frame_rate
    rate = frame_rate
    for stage, (up, kernel) in enumerate(zip(rates, kernels)):
        c_in, c_out = initial // 2**stage, initial // 2 ** (stage + 1)
        rate *= up
        weights += c_in * c_out * kernel
        flops += 2 * c_in * c_out * kernel / up * rate
        convs = sum(len(d) * convs_per_dilation * k for k, d in zip(res_kernels, dilations))  # sum of kernel widths
        weights += convs * c_out * c_out
        flops += 2 * convs * c_out * c_out * rate
        if noise:  # iSTFTNet: a conv from the 22-channel source spectrum and one 6-conv resblock per stage
            source_kernel, res_kernel = noise[stage]
            weights += 22 * c_out * source_kernel + 6 * c_out * c_out * res_kernel
            flops += 2 * (22 * c_out * source_kernel + 6 * c_out * c_out * res_kernel) * rate
    weights += c_out * post_channels * 7
    flops += 2 * c_out * post_channels * 7 * rate
    return weights, flops


@pytest.mark.parametrize(
    ("model_id", "generator"),
    [
        # rhasspy/piper vits/lightning.py defaults (medium): inter_channels 192, upsample 256 / (8, 8, 4) / (16, 16, 8),
        # resblock "2" (one conv per dilation), kernels (3, 5, 7), dilations ((1, 2), (2, 6), (3, 12)), conv_post to 1
        ("piper-medium", (22050 / 256, 192, 256, (8, 8, 4), (16, 16, 8), (3, 5, 7), ((1, 2), (2, 6), (3, 12)), 1, 1)),
        # hexgrad/kokoro istftnet.py with Kokoro-82M config.json: 512 / (10, 6) / (20, 12), AdaINResBlock1 (two convs
        # per dilation), kernels (3, 7, 11), dilations (1, 3, 5); 80 Hz in (24,000 / (10 x 6 x 5)); noise convs k 12
        # then k 1 with k-7 then k-11 resblocks; conv_post to n_fft + 2 = 22
        ("kokoro-82m", (80, 0, 512, (10, 6), (20, 12), (3, 7, 11), ((1, 3, 5),) * 3, 2, 22, ((12, 7), (1, 11)))),
    ],
)
def test_the_catalogued_vocoder_counts_are_the_published_generators(model_id, generator):
    weights, flops = hifigan_generator(*generator)
    model = CATALOG.get(model_id)
    assert model.vocoder_params == pytest.approx(weights, rel=0.005)
    assert model.vocoder_flops_per_second == pytest.approx(flops, rel=0.005)


def test_kokoro_costs_what_sherpa_onnx_measures_against_piper_on_one_raspberry_pi():
    # sherpa-onnx's Raspberry Pi 4 table: Kokoro v0.19 / Piper libritts_r at 1 and 4 threads, 6.629 / 0.790 = 8.4
    # and 2.774 / 0.357 = 7.8; the catalogue's count puts Kokoro at 8.4x Piper (3.8x without the vocoder term)
    ratio = speech.tts_flops_per_audio_second(CATALOG.get("kokoro-82m")) / speech.tts_flops_per_audio_second(
        CATALOG.get("piper-medium"))
    assert 7.8 < ratio < 9.7


@pytest.mark.parametrize(
    ("device", "peak"),
    [
        # a Raspberry Pi 4: 4 cores x 16 FLOPs x 3.0 GHz = 192 GFLOPS assumed -> at its stated 1.8 GHz, 115.2
        (devices.Device("cpu", "Raspberry Pi 4 Model B", "cpu", None, 12.8e9, 192e9, clock_hz=1.8e9), 115.2e9),
        # no stated clock: the assumed 3.0 GHz peak stands
        (devices.Device("cpu", "AMD Ryzen 9 5950X", "cpu", None, 51.2e9, 1.536e12), 1.536e12),
        # a GPU's peak is its table figure, whatever its clock
        (gpu(44.1e12), 44.1e12),
    ],
)
def test_text_to_speech_peak_uses_a_cpus_stated_clock(device, peak):
    assert speech.tts_peak_flops(device)[0] == pytest.approx(peak)


@pytest.mark.parametrize(
    ("name", "clock"),
    [("Raspberry Pi 4 Model B Rev 1.5", 1.8e9), ("Raspberry Pi 5 Model B Rev 1.0", 2.4e9),
     ("AMD Ryzen 9 5950X 16-Core Processor", None), (None, None)],
)
def test_a_cpu_clock_comes_from_catalog_cpus_where_stated(name, clock):
    assert devices.stated_cpu_clock_hz(name) == clock


@pytest.mark.parametrize(
    ("backend", "expected"),
    [
        ("cuda", speech.TTS_EFFICIENCY["cuda"]),
        ("cpu", speech.TTS_EFFICIENCY["cpu"]),  # no thread count: one thread's share
        # no rows: CUDA's fit x the backend's prompt efficiency relative to CUDA's
        ("metal", speech.TTS_EFFICIENCY["cuda"] * est.COMPUTE_EFFICIENCY["metal"] / est.COMPUTE_EFFICIENCY["cuda"]),
    ],
)
def test_tts_efficiency_per_backend_and_its_fallback(backend, expected):
    assert speech.tts_efficiency(backend)[0] == pytest.approx(expected)


@pytest.mark.parametrize(
    ("backend", "model_id", "expected"),
    [
        # a model with its own GPU rows takes its own share of peak there
        ("cuda", "f5-tts", 0.2),
        ("cuda", "kokoro-82m", 0.04),
        # a model without GPU rows (Piper) takes the backend's
        ("cuda", "piper-medium", 0.1),
        # a backend with no rows: the model's own CUDA figure x the backend's prompt efficiency relative to CUDA's
        ("rocm", "f5-tts", 0.2 * est.COMPUTE_EFFICIENCY["rocm"] / est.COMPUTE_EFFICIENCY["cuda"]),
        ("rocm", "piper-medium", 0.1 * est.COMPUTE_EFFICIENCY["rocm"] / est.COMPUTE_EFFICIENCY["cuda"]),
        # a CPU keeps one figure whatever the model
        ("cpu", "f5-tts", 0.3),
    ],
)
def test_a_models_own_gpu_efficiency_where_the_term_is_kept(monkeypatch, backend, model_id, expected):
    monkeypatch.setattr(speech, "TTS_EFFICIENCY", {"cpu": 0.3, "cuda": 0.1})
    monkeypatch.setattr(speech, "TTS_MODEL_EFFICIENCY", {("f5-tts", "cuda"): 0.2, ("kokoro-82m", "cuda"): 0.04})
    value, why = speech.tts_efficiency(backend, None, model_id)
    assert value == pytest.approx(expected)
    assert (model_id in why) == (backend != "cpu" and model_id != "piper-medium")


def test_the_model_term_is_carried_exactly_when_the_scorer_keeps_it():
    # F5-TTS's rows imply several times Kokoro's share of FP16 peak on CUDA: the reason the term is tried
    tts = [r for r in scorer_rows() if r.kind == "tts" and r.in_fit]
    at_fp16_peak = score_speech.tts_variant(tts, True, True, fp32=False)
    assert score_speech.tts_fit(at_fp16_peak, (0.0,), "gpu")["table"]["f5-tts", "cuda"] > 3 * score_speech.tts_fit(
        at_fp16_peak, (0.0,), "gpu")["table"]["kokoro-82m", "cuda"]
    table = score_speech.tts_fit(tts, (0.0,), "gpu")["table"]
    # per model, a backend's own figure is the median of its models' medians (each model once)
    assert table["cuda"] == pytest.approx(statistics.median([table["f5-tts", "cuda"], table["kokoro-82m", "cuda"]]))
    # gpuready carries the per-model table only where the held-out rule keeps the term
    terms = score_speech.gpu_chain(tts).terms
    threads = score_speech.thread_term(tts, terms)
    _, kept = score_speech.model_term(tts, threads.carried, threads.form, terms)
    if kept:
        assert speech.TTS_MODEL_EFFICIENCY == pytest.approx({k: v for k, v in table.items() if isinstance(k, tuple)}, abs=0.005)
    else:
        assert speech.TTS_MODEL_EFFICIENCY == {}


@pytest.mark.parametrize(
    ("threads", "serial", "exponent", "share"),
    [
        (1, 0.2, 0.0, 0.5),  # one thread keeps one thread's share
        (4, 0.2, 0.0, 0.5 / 1.6),  # Amdahl: 4 threads take (0.2 x 4 + 0.8) / 4 of one thread's time
        (16, 0.2, 0.0, 0.5 / 4.0),  # 0.2 x 16 + 0.8 = 4: a 16-core CPU is 4x one core
        (16, 0.0, 0.25, 0.25),  # the power form: 16^-0.25 = 0.5 of one thread's share each
        (16, 0.0, 0.0, 0.5),  # neither: every thread the same share
    ],
)
def test_a_cpu_threads_share_falls_with_the_threads_by_the_term_kept(monkeypatch, threads, serial, exponent, share):
    monkeypatch.setattr(speech, "TTS_EFFICIENCY", {"cpu": 0.5, "cuda": 0.1})
    monkeypatch.setattr(speech, "TTS_CPU_SERIAL_SHARE", serial)
    monkeypatch.setattr(speech, "TTS_CPU_THREAD_EXPONENT", exponent)
    value, why = speech.tts_efficiency("cpu", threads)
    assert value == pytest.approx(share)
    # the basis names the threads and the term kept only (a term at 0 is not shown)
    assert ("(Amdahl)" in why) == bool(serial) and ("threads^-" in why) == bool(exponent)
    assert ("at the same share" in why) == (not serial and not exponent) and f"{threads} threads" in why
    # a GPU backend has no thread term
    assert speech.tts_efficiency("cuda", threads)[0] == 0.1


def test_tts_realtime_is_peak_times_efficiency_over_flops_per_audio_second():
    kokoro = CATALOG.get("kokoro-82m")
    cpu = devices.Device("cpu", "Test CPU", "cpu", None, 50e9, 2e12, cores=16)
    realtime, basis = speech.tts_realtime(kokoro, cpu)
    serial = speech.TTS_CPU_SERIAL_SHARE  # 16 physical cores, one thread each
    share = speech.TTS_EFFICIENCY["cpu"] * 16**-speech.TTS_CPU_THREAD_EXPONENT / (serial * 16 + 1 - serial)
    assert realtime == pytest.approx(2e12 * share / 5.95484e10)
    assert "59.5 GFLOPs per second of audio" in basis[0] and "vocoder's 49.2 GFLOPs" in basis[0]


def test_a_raspberry_pi_4_speaks_at_its_stated_clock():
    # Piper on a Raspberry Pi 4: 57.6 GFLOPS (4 Cortex-A72 cores x 8 FP32 FLOPs a cycle at 1.8 GHz) x the CPU
    # efficiency at 4 threads / 7.069 GFLOPs per second of audio
    piper = CATALOG.get("piper-medium")
    peak = devices.cpu_peak_flops(4, ("neon",), "Raspberry Pi 4 Model B Rev 1.4")
    assert peak == 4 * 8 * 3.0e9  # catalog/cpus.toml fp32_flops_per_cycle, at the assumed clock
    pi = devices.Device("cpu", "Raspberry Pi 4 Model B", "cpu", None, 12.8e9, peak, clock_hz=1.8e9, cores=4)
    realtime, basis = speech.tts_realtime(piper, pi)
    serial = speech.TTS_CPU_SERIAL_SHARE
    share = speech.TTS_EFFICIENCY["cpu"] * 4**-speech.TTS_CPU_THREAD_EXPONENT / (serial * 4 + 1 - serial)
    assert realtime == pytest.approx(57.6e9 * share / 7.0692484e9)
    assert "stated 1.8 GHz" in basis[0]


def test_a_cortex_a76_speaks_at_its_fma_pipes_rate_while_ggml_keeps_the_flags():
    # Raspberry Pi 5: dotprod's flags imply 32 FP32 FLOPs a cycle, its two 128-bit pipes retire 16 (catalog/cpus.toml
    # fma_flops_per_cycle); text to speech counts the 16, whisper.cpp's and llama.cpp's fp16 kernels the flags' 32
    features = ("dotprod", "fp16", "neon")
    name = "Raspberry Pi 5 Model B Rev 1.0"
    assert devices.cpu_peak_flops(4, features, name) == 4 * 32 * 3.0e9
    assert devices.cpu_float_flops(4, features, name) == 4 * 16 * 3.0e9
    pi = devices.Device("cpu", name, "cpu", None, 17.1e9, devices.cpu_peak_flops(4, features, name), clock_hz=2.4e9,
                        cores=4, fma_flops=devices.cpu_fma_flops(4, features, name))
    peak, basis = speech.tts_peak_flops(pi, "fp32")
    assert peak == pytest.approx(4 * 16 * 2.4e9) and "FMA pipes narrower than its ISA flags imply" in basis


@pytest.mark.parametrize(
    ("width", "share"),
    [(384, 0.3), (512, 0.4), (768, 0.6), (1024, 0.8), (1280, 1.0), (2560, 1.0)],  # d / 1,280, at most 1
)
def test_whisper_width_share(width, share):
    assert speech.width_share(width) == pytest.approx(share)


def test_whisper_encoder_seconds_on_cuda_scale_the_width_1280_efficiency_by_width():
    tiny = CATALOG.get("whisper-tiny")
    # 12 x 384^2 x 4 = 7,077,888 encoder parameters: 2 x that x 1,500 + 4 x 1,500^2 x 384 x 4
    flops = 2 * 7_077_888 * 1500 + 4 * 1500**2 * 384 * 4
    seconds, basis = speech.encoder_seconds(tiny, gpu(flops=50e12))
    assert seconds == pytest.approx(flops / (50e12 * speech.WHISPER_ENCODER_EFFICIENCY["cuda"] * 384 / 1280))
    assert "x 384 / 1280" in basis


@pytest.mark.parametrize("backend", ["cpu", "metal", "rocm"])
def test_whisper_encoder_without_a_width_fit_keeps_the_plain_encoder_efficiency(backend):
    assert speech.whisper_encoder_efficiency(backend, 384) == encoders.encoder_efficiency(backend)


# --- invariants ----------------------------------------------------------------------------------


@pytest.mark.parametrize("model_id", ["whisper-tiny", "whisper-large-v3", "distil-whisper-large-v3"])
def test_more_flops_or_bandwidth_never_makes_speech_to_text_slower(model_id):
    whisper = CATALOG.get(model_id)
    base, _, _ = speech.stt_realtime(whisper, "fp16", gpu(50e12, 500e9))
    assert speech.stt_realtime(whisper, "fp16", gpu(100e12, 500e9))[0] > base
    assert speech.stt_realtime(whisper, "fp16", gpu(50e12, 1000e9))[0] > base


@pytest.mark.parametrize("model_id", ["piper-medium", "kokoro-82m", "f5-tts"])
def test_more_flops_never_makes_text_to_speech_slower(model_id):
    tts = CATALOG.get(model_id)
    assert speech.tts_realtime(tts, gpu(100e12))[0] > speech.tts_realtime(tts, gpu(50e12))[0]


@pytest.mark.parametrize(
    ("device", "variant", "peak"),
    [
        # an fp32 run on a GPU with tensor cores: its FP32 (non-tensor) rate, not the FP16 tensor peak
        (devices.Device("gpu", "RTX 3090 Ti", "cuda", None, 1008e9, 80e12, vector_flops=40e12), "fp32", 40e12),
        (devices.Device("gpu", "H200", "cuda", None, 4800e9, 989e12, vector_flops=67e12), "fp32", 67e12),
        # fp16 keeps the tensor peak
        (devices.Device("gpu", "RTX 3090 Ti", "cuda", None, 1008e9, 80e12, vector_flops=40e12), "fp16", 80e12),
        # no FP32 figure in the table, or FP16 no faster than FP32 (Pascal): the peak as it is
        (gpu(44.1e12), "fp32", 44.1e12),
        (devices.Device("gpu", "GTX 1080 Ti", "cuda", None, 484e9, 11.3e12, vector_flops=11.3e12), "fp32", 11.3e12),
        # a CPU's peak is FP32 already
        (devices.Device("cpu", "AMD Ryzen 9 5950X", "cpu", None, 51.2e9, 1.536e12), "fp32", 1.536e12),
    ],
)
def test_an_fp32_run_on_a_gpu_is_counted_at_its_fp32_rate(device, variant, peak):
    assert speech.tts_peak_flops(device, variant)[0] == pytest.approx(peak)


@pytest.mark.parametrize(
    ("backend", "fixed"),
    [("cuda", 0.01), ("rocm", 0.01), ("metal", 0.01), ("cpu", 0.0)],  # other GPU backends take CUDA's; a CPU none
)
def test_the_fixed_gpu_time_adds_exactly_its_seconds_per_second_of_audio(monkeypatch, backend, fixed):
    monkeypatch.setattr(speech, "TTS_FIXED_SECONDS", {"cuda": 0.01})
    monkeypatch.setattr(speech, "TTS_EFFICIENCY", {"cpu": 0.25, "cuda": 0.2})
    monkeypatch.setattr(speech, "TTS_MODEL_EFFICIENCY", {})
    kind = "cpu" if backend == "cpu" else "gpu"
    device = devices.Device(kind, "Test", backend, None, 1e12, 100e12, vector_flops=50e12, cores=None)
    piper = CATALOG.get("piper-medium")
    efficiency = speech.tts_efficiency(backend, None, "piper-medium")[0]
    peak = 100e12 if kind == "cpu" else 50e12  # Piper's fp32 weights run at the FP32 rate on a GPU
    # 7.0692484e9 FLOPs per second of audio / (peak x efficiency) + the fixed time
    realtime, basis = speech.tts_realtime(piper, device, "fp32")
    assert realtime == pytest.approx(1 / (7.0692484e9 / (peak * efficiency) + fixed))
    assert ("ms per second of audio" in basis[0]) == bool(fixed)


def test_a_gpus_text_to_speech_speed_never_passes_one_over_the_fixed_time():
    for model_id in ("piper-medium", "kokoro-82m", "f5-tts"):
        fastest = speech.tts_realtime(CATALOG.get(model_id), gpu(1e18), "fp16")[0]
        assert fastest < 1 / speech.TTS_FIXED_SECONDS["cuda"]


@pytest.mark.parametrize("variant", ["fp16", "fp32"])
@pytest.mark.parametrize(
    "device",
    [gpu(100e12), devices.Device("gpu", "H200", "cuda", None, 4800e9, 989e12, vector_flops=67e12),
     devices.Device("cpu", "AMD Ryzen 9 5950X", "cpu", None, 51.2e9, 1.536e12, cores=16)],
)
def test_a_model_costing_more_flops_per_second_of_audio_is_never_faster(device, variant):
    # with no per-model efficiency, speed falls as FLOPs per second of audio rise: Piper, then Kokoro, then F5-TTS
    models = sorted((CATALOG.get(m) for m in ("piper-medium", "kokoro-82m", "f5-tts")), key=speech.tts_flops_per_audio_second)
    speeds = [speech.tts_realtime(m, device, variant)[0] for m in models]
    if not speech.TTS_MODEL_EFFICIENCY:
        assert speeds == sorted(speeds, reverse=True)
    bigger = dataclasses.replace(models[1], params=2 * models[1].params)
    assert speech.tts_realtime(bigger, device, variant)[0] < speech.tts_realtime(models[1], device, variant)[0]


def test_an_h200_speaks_piper_and_kokoro_at_fp32_within_the_fixed_times_ceiling():
    # before the FP32 rate and the fixed time, fp32 Piper and Kokoro on an H200 came out at 26,592x and 3,157x real time
    h200 = devices.Device("gpu", "H200", "cuda", None, 4800e9, 989e12, vector_flops=67e12)
    for model_id in ("piper-medium", "kokoro-82m"):
        realtime, basis = speech.tts_realtime(CATALOG.get(model_id), h200, "fp32")
        assert realtime < 1 / speech.TTS_FIXED_SECONDS["cuda"]
        assert "FP32 rate" in basis[0]


@pytest.mark.parametrize("backend", ["metal", "rocm", "vulkan", "sycl"])
def test_a_tts_model_runs_on_the_cpu_beside_a_gpu_its_runtime_does_not_drive(backend):
    # Piper's ONNX Runtime session has the CUDA execution provider or none (rhasspy/piper src/cpp/piper.cpp)
    piper, cpu = CATALOG.get("piper-medium"), devices.Device("cpu", "Test CPU", "cpu", 32 * 1024**3, 80e9, 1e12, cores=8)
    beside = speech.estimate(piper, "fp32", gpu(backend=backend), cpu)
    alone = speech.estimate(piper, "fp32", None, cpu)
    assert beside.placement == "cpu" and beside.speed == alone.speed
    assert speech.runtime_name(piper, beside, gpu(backend=backend)) == "Piper (ONNX Runtime, CPU)"
    # on a CUDA GPU it runs there; kokoro-onnx (Kokoro's fp16 file) runs wherever an ONNX Runtime execution provider
    # drives the GPU (CoreML, ROCm, OpenVINO for an XPU), and a GPU driven only through Vulkan, not on Windows (where
    # DirectML would), has none
    on_cuda = speech.estimate(piper, "fp32", gpu(), cpu)
    assert on_cuda.placement == "gpu" and speech.runtime_name(piper, on_cuda, gpu()) == "Piper (ONNX Runtime, CUDA)"
    onnx = speech.estimate(CATALOG.get("kokoro-82m"), "fp16", gpu(backend=backend), cpu)
    assert onnx.placement == ("cpu" if backend == "vulkan" else "gpu")
    assert speech.runtime_name(CATALOG.get("kokoro-82m"), onnx, gpu(backend=backend)) == {
        "metal": "kokoro-onnx (ONNX Runtime, CoreML)", "rocm": "kokoro-onnx (ONNX Runtime, ROCm)",
        "sycl": "kokoro-onnx (ONNX Runtime, OpenVINO)", "vulkan": "kokoro-onnx (ONNX Runtime)"}[backend]
    # PyTorch (Kokoro's fp32 model, F5-TTS) drives CUDA, ROCm, MPS and XPU devices, no Vulkan one
    pytorch = "cpu" if backend == "vulkan" else "gpu"
    for model_id, variant in (("kokoro-82m", "fp32"), ("f5-tts", "fp16")):
        model = CATALOG.get(model_id)
        estimate = speech.estimate(model, variant, gpu(backend=backend), cpu)
        assert estimate.placement == pytorch
        assert speech.runtime_name(model, estimate, gpu(backend=backend)) == {
            "metal": "PyTorch (MPS) or MLX", "rocm": "PyTorch (ROCm)", "sycl": "PyTorch (XPU)", "vulkan": "PyTorch (CPU)"}[backend]


def test_bands_are_at_least_the_median_held_out_error():
    # the bands are 80th percentiles of the LODO errors, so at least their medians (ACCURACY.md headlines)
    assert speech.STT_UNCERTAINTY >= 0.25 and speech.TTS_UNCERTAINTY >= 0.25


# --- scoring ---------------------------------------------------------------------------------------


def row(device: str, measured: float, work: float = 1e12, peak: float = 10e12, backend: str = "cpu", source: str = "s"):
    return score_speech.Row(kind="tts", backend=backend, device=device, source=source, label="m (v)",
                            measured=measured, work=work, peak=peak)


def test_tts_fit_is_the_median_implied_efficiency():
    # implied efficiency = work x (x real time) / peak: 0.1, 0.2, 0.4 -> median 0.2 (one thread each: no thread term)
    rows = [row("a", 1.0), row("b", 2.0), row("c", 4.0)]
    fits = score_speech.tts_fit(rows)
    assert fits["table"] == {"cpu": pytest.approx(0.2)} and fits["exponent"] == 0.0
    assert score_speech.tts_predict(rows[0], fits) == pytest.approx(2.0)


def test_the_thread_exponent_is_recovered_from_rows_that_follow_it():
    # rows made to follow one thread's share 0.3 x threads^-0.5: x real time = peak x 0.3 x threads^-0.5 / work
    def threaded(device, threads):
        peak = threads * 10e9
        return score_speech.Row(kind="tts", backend="cpu", device=device, source="s", label="m (v)",
                                measured=peak * 0.3 * threads**-0.5 / 1e9, work=1e9, peak=peak, cores=threads)
    rows = [threaded("a", 1), threaded("a", 4), threaded("b", 16), threaded("c", 64)]
    fits = score_speech.tts_fit(rows)
    assert fits["exponent"] == pytest.approx(0.5) and fits["table"]["cpu"] == pytest.approx(0.3)
    assert score_speech.tts_predict(rows[2], fits) == pytest.approx(rows[2].measured)


def test_leave_one_device_out_never_sees_the_held_out_device():
    # device "c" is 4x faster than "a" and "b": held out, it is predicted from their median (0.15) only
    rows = [row("a", 1.0), row("b", 2.0), row("c", 8.0)]
    errors = score_speech.held_out(rows, lambda r: r.device, score_speech.tts_fit, score_speech.tts_predict)
    assert set(errors) == {0, 1, 2}
    assert errors[2] == pytest.approx(abs(1.5 - 8.0) / 8.0 * 100)
    # "a" is predicted from b and c: median of 0.2 and 0.8 = 0.5 -> 5x real time against 1x measured
    assert errors[0] == pytest.approx(400.0)


def test_a_backend_left_without_rows_falls_back_as_gpuready_does():
    table = {"cpu": 0.05}
    expected = 0.05 * est.COMPUTE_EFFICIENCY["cuda"] / est.COMPUTE_EFFICIENCY["cpu"]
    assert score_speech.fallback_efficiency(table, "cuda") == pytest.approx(expected)
    assert score_speech.fallback_efficiency({"cuda": 0.4, "cpu": 0.05}, "cuda") == 0.4


def test_the_encoder_width_fit_is_the_median_of_the_width_1280_share():
    def encoder(device, width, measured):
        return score_speech.Row(kind="encoder", backend="cuda", device=device, source="s", label="w", measured=measured,
                                work=1e12, peak=10e12, width=width)
    # implied shares 0.1 / 0.2 / 0.25 at widths 384 / 768 / 1280 -> at width 1,280: 0.333, 0.333, 0.25
    rows = [encoder("a", 384, 1.0), encoder("b", 768, 0.5), encoder("c", 1280, 0.4)]
    fits = score_speech.encoder_fit(rows)
    assert fits["plain"] == {"cuda": pytest.approx(0.2)}
    assert fits["wide"] == {"cuda": pytest.approx(1 / 3)}
    assert score_speech.encoder_predict(rows[0], fits) == pytest.approx(1e12 / (10e12 * (1 / 3) * 0.3))
    assert score_speech.encoder_fit(rows, width_backends=())["wide"] == {}


@functools.cache
def scorer_rows() -> tuple:
    """Every speech row as benchmarks/score_estimator.py builds it from benchmarks/validation/ (built once)."""
    se = importlib.util.spec_from_file_location("score_estimator_speech", BENCHMARKS / "score_estimator.py")
    module = importlib.util.module_from_spec(se)
    se.loader.exec_module(module)
    helpers = SimpleNamespace(load=module.load, cpu_device=module.cpu_device, gpu_device=module.gpu_device,
                              device_key=module.device_key, source_key=module.source_key, CPU_SPECS=module.CPU_SPECS, FITS={})
    return tuple(score_speech.speech_rows(helpers, CATALOG)[0])


def test_superseded_builds_and_vendor_blas_rows_are_scored_but_not_fitted():
    rows = scorer_rows()
    old = [r for r in rows if r.kept_out and r.kept_out.startswith("ae1bd69")]
    assert len(old) == 12 and all(r.kind == "encoder" and r.device == "Tesla V100-PCIE-16GB" for r in old)
    blas = [r for r in rows if r.kept_out == score_speech.VENDOR_BLAS]
    assert len(blas) == 10 and all(r.backend == "cpu" for r in blas)
    assert all(r.in_fit == (r.kept_out is None) for r in rows)
    # every text-to-speech row of the speech-tts*.toml files has its hardware and model in the tables
    tts = [r for r in rows if r.kind == "tts"]
    assert len(tts) == 59
    # 57 fitted on 16 devices: 11 CPUs (the Xeon Platinum 8272CL and Apple M4 Pro of speech-tts-devices.toml, the
    # Core i7-11700 of speech-tts-cpus.toml, the Core i9-12900H of speech-tts-devices2.toml, the Ryzen 9 5900XT, Ryzen 9
    # 9950X3D and Apple M4 of speech-tts-bench.toml and the development VM's EPYC of speech-tts-measured-here.toml among
    # them) and 5 GPUs (the RTX 3090 Ti of speech-tts-devices2.toml,
    # the L20 of speech-tts-more.toml and the RTX 5090 of speech-tts-bench.toml among them); the 9 rows of
    # speech-tts-kokoro-fastapi.toml are more runs on two of them (the i7-11700 and the RTX 4060 Ti 16GB)
    fitted = [r for r in tts if r.in_fit]
    assert len(fitted) == 57 and len({r.device for r in fitted}) == 16
    # the development VM: 'AMD EPYC' is not in catalog/cpus.toml, so its rows are counted compute bound on the cores
    # CPU_SPECS gives (2, AVX2: 32 FP32 FLOPs a cycle at the assumed 3.0 GHz), each row's threads of them
    here = sorted((r for r in tts if r.device == "cpu: AMD EPYC"), key=lambda r: r.cores)
    assert [r.cores for r in here] == [1, 2] and [r.peak for r in here] == pytest.approx([96e9, 192e9])
    assert [r.measured for r in here] == pytest.approx([42.5 / 5.408, 42.5 / 3.55])
    # a Raspberry Pi 4's Cortex-A72 at the 8 FP32 FLOPs a cycle it retires (catalog/cpus.toml), where NEON's flags
    # imply 16 (extra[3]: the same count at the flags' width), and at its stated 1.8 GHz
    pi = [r for r in tts if r.device == "cpu: Raspberry Pi 4 Model B" and r.in_fit]
    assert all(r.peak == pytest.approx(r.cores * 8 * 1.8e9) and r.extra[3] == pytest.approx(2 * r.peak) for r in pi)
    # tts-bench's rows: seconds of audio over seconds of synthesis summed over the warm runs of five prompts, on every
    # core (no thread count set); the 9950X3D (Zen 5) at its AVX-512 flag's 64 FP32 FLOPs a cycle, the 5900XT (Zen 3)
    # at AVX2's 32, the RTX 5090's fp32 Kokoro at its 104.8 TFLOPS FP32
    bench = {(r.device, score_speech.tts_model(r)): r for r in tts if "tts-bench" in r.source}
    assert len(bench) == 8
    x3d = bench["cpu: AMD Ryzen 9 9950X3D 16-Core Processor", "kokoro-82m"]
    assert x3d.cores == 16 and x3d.peak == pytest.approx(16 * 64 * 3.0e9) and x3d.measured == pytest.approx(76.8 / 5.321)
    xt = bench["cpu: AMD Ryzen 9 5900XT 16-Core Processor", "piper-medium"]
    assert xt.peak == pytest.approx(16 * 32 * 3.0e9) and xt.measured == pytest.approx(65.471 / 1.8029)
    assert bench["rtx-5090", "kokoro-82m"].peak == pytest.approx(104.8e12)
    assert bench["cpu: Apple M4", "kokoro-82m"].cores == 10
    # the i9-12900H's thread sweep: each row's peak counts the threads it ran on (AVX2: 32 FLOPs a cycle at 3.0 GHz)
    i9 = sorted((r for r in tts if "i9-12900H" in r.device), key=lambda r: r.cores)
    assert [r.cores for r in i9] == [1, 2, 3, 4, 8]
    assert all(r.peak == pytest.approx(r.cores * 32 * 3.0e9) for r in i9)
    assert [r.measured for r in i9] == pytest.approx([1.6, 2.9, 3.7, 4.8, 3.9])  # x_realtime as printed
    # the RTX 3090 Ti row prints two timings and no ratio: x real time = 5.625 s of audio / 0.197 s of synthesis
    ti = [r for r in tts if r.device == "rtx-3090-ti"]
    assert len(ti) == 1 and ti[0].backend == "cuda" and ti[0].measured == pytest.approx(5.625 / 0.197)
    assert {r.device for r in fitted if r.backend == "cpu"} >= {
        "cpu: Intel(R) Xeon(R) Platinum 8272CL CPU @ 2.60GHz", "cpu: Apple M4 Pro",
        "cpu: 11th Gen Intel(R) Core(TM) i7-11700 @ 2.50GHz"}
    # the i7-11700's rows ran on 8 or 4 ONNX Runtime threads: the peak counts those cores
    i7 = sorted((r for r in tts if "i7-11700" in r.device), key=lambda r: (r.cores, r.measured))
    assert [r.cores for r in i7] == [4, 4, 8, 8]
    # Rocket Lake's one 512-bit FMA: 32 FP32 FLOPs a cycle (catalog/cpus.toml), where its AVX-512 flag implies 64
    assert all(r.peak == pytest.approx(r.cores * 32 * 3.0e9) for r in i7)
    assert all(r.extra[2] == pytest.approx(r.cores * 64 * 3.0e9) for r in i7)
    # x_realtime as printed (1.81, not inverted), or seconds of audio over seconds of synthesis where the file prints
    # its totals (Kokoro-FastAPI's benchmark files at commits e4d8e74, 7df2a68 and 93aa205)
    assert [r.measured for r in i7] == pytest.approx([1741.65 / 831.07, 710.80 / 332.81, 1.81, 568.53 / 244.10])
    # Supertonic's README Kokoro ONNX rows on the M4 Pro: threads not stated, so all 12 cores of the 12-core part;
    # rtf as printed, inverted to x real time
    m4 = sorted(r.measured for r in tts if r.device == "cpu: Apple M4 Pro" and "supertonic" in r.source)
    assert m4 == pytest.approx([1 / 0.144, 1 / 0.126, 1 / 0.124])
    assert all(r.cores == 12 for r in tts if r.device == "cpu: Apple M4 Pro")
    # the Xeon's rows ran on 4 of its 26 cores: the peak and the thread term count those 4 (AVX-512: 64 FLOPs a cycle)
    xeon = [r for r in tts if "8272CL" in r.device]
    assert len(xeon) == 2 and all(r.cores == 4 and r.peak == pytest.approx(4 * 64 * 3.0e9) for r in xeon)
    # Piper run through PyTorch (rhasspy/piper issue #33) is scored but not fitted: gpuready estimates ONNX Runtime
    torch = [r for r in tts if r.kept_out == score_speech.PIPER_PYTORCH]
    assert len(torch) == 2 and all(r.label.startswith("piper-medium") for r in torch)
    # a text-to-speech row on a Raspberry Pi carries its peak at the stated 1.8 GHz, the plain one in `extra`
    pi = next(r for r in tts if r.device == "cpu: Raspberry Pi 4 Model B" and r.cores == 1)
    assert pi.peak == pytest.approx(1 * 8 * 1.8e9) and pi.extra[1] == pytest.approx(1 * 8 * 3.0e9)


def test_a_tts_row_is_timed_as_its_source_prints_it():
    assert score_speech.tts_measured({"x_realtime": 1.81}) == pytest.approx(1.81)
    assert score_speech.tts_measured({"rtf": 0.5}) == pytest.approx(2.0)
    assert score_speech.tts_measured({"audio_seconds": 5.625, "wall_seconds": 0.197}) == pytest.approx(28.553, rel=1e-4)
    # two timings make a text-to-speech row only for a catalogue text-to-speech model: faster-whisper's speech-to-text
    # rows carry audio_seconds and wall_seconds too
    timed = {"audio_seconds": 10.0, "wall_seconds": 1.0}
    assert score_speech.is_tts_row({"model": "kokoro-82m", **timed}, CATALOG)
    assert not score_speech.is_tts_row({"model": "whisper-large-v3", **timed}, CATALOG)
    assert not score_speech.is_tts_row({"model": "kokoro-82m"}, CATALOG)
    assert score_speech.is_tts_row({"model": "not-in-the-catalogue", "rtf": 0.3}, CATALOG)


def test_a_terms_variant_swaps_in_the_plain_count_and_the_assumed_clock_peak():
    # a row as gpuready estimates it (vocoder counted, stated clock) keeps the plain figures in `extra`
    estimated = score_speech.Row(kind="tts", backend="cpu", device="pi", source="s", label="m (v)", measured=1.0,
                                 work=7.0e9, peak=115.2e9, extra=(3.4e9, 192e9))
    assert [(r.work, r.peak) for r in score_speech.tts_variant([estimated], vocoder=True, clock=True)] == [(7.0e9, 115.2e9)]
    assert [(r.work, r.peak) for r in score_speech.tts_variant([estimated], vocoder=False, clock=True)] == [(3.4e9, 115.2e9)]
    assert [(r.work, r.peak) for r in score_speech.tts_variant([estimated], vocoder=True, clock=False)] == [(7.0e9, 192e9)]


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        ({"model": "piper-medium", "implementation": "Piper (PyTorch)"}, score_speech.PIPER_PYTORCH),
        ({"model": "piper-medium", "implementation": "Piper (ONNX Runtime)"}, None),
        # Kokoro's PyTorch pipeline is what gpuready estimates for it
        ({"model": "kokoro-82m", "implementation": "kokoro (PyTorch, CPU)"}, None),
    ],
)
def test_only_runtimes_gpuready_estimates_are_fitted(raw, why):
    assert score_speech.tts_kept_out(raw) == why


@pytest.mark.parametrize(
    ("cores", "backend", "exponent", "share"),
    [
        (4, "cpu", 0.5, 0.5),  # 4^-0.5
        (16, "cpu", 0.25, 0.5),  # 16^-0.25
        (1, "cpu", 0.4, 1.0),  # one thread keeps its whole share
        (0, "cuda", 0.5, 1.0),  # GPUs carry no thread term
    ],
)
def test_the_thread_term_tried_is_a_power_of_the_threads_used(cores, backend, exponent, share):
    tried = score_speech.Row(kind="tts", backend=backend, device="d", source="s", label="m (v)", measured=1.0,
                             work=1e9, peak=1e11, cores=cores)
    assert score_speech.thread_share(tried, exponent) == pytest.approx(share)
    fits = {"table": {backend: 0.2}, "serial": 0.0, "exponent": exponent}
    assert score_speech.tts_predict_terms(tried, fits) == pytest.approx(1e11 * 0.2 * share / 1e9)


def test_gpuready_speaks_each_fitted_cpu_row_as_the_scorer_predicts_it_with_gpuready_constants():
    # the scorer's formula and tasks/speech.py's are one: a CPU with the row's threads as its cores, its peak at the
    # assumed clock (`extra`) and its stated clock, gets the speed the scorer predicts from gpuready's own constants
    rows = scorer_rows()
    constants = {"table": dict(speech.TTS_EFFICIENCY), "serial": speech.TTS_CPU_SERIAL_SHARE,
                 "exponent": speech.TTS_CPU_THREAD_EXPONENT}
    checked = 0
    for tts in (r for r in rows if r.kind == "tts" and r.backend == "cpu" and r.in_fit):
        name = tts.device.removeprefix("cpu: ")
        # the FMA pipes' rate where the row's peak is narrower than the flags' (extra[2]: the same count at the flags)
        fma = tts.extra[1] * tts.peak / tts.extra[2] if tts.peak != tts.extra[2] else None
        cpu = devices.Device("cpu", name, "cpu", None, 1e9, tts.extra[1], clock_hz=devices.stated_cpu_clock_hz(name),
                             cores=tts.cores, fma_flops=fma)
        realtime, _ = speech.tts_realtime(CATALOG.get(score_speech.tts_model(tts)), cpu)
        assert realtime == pytest.approx(score_speech.tts_predict(tts, constants))
        checked += 1
    assert checked == 43


@pytest.mark.parametrize(
    ("model_id", "precision", "variant"),
    [
        ("kokoro-82m", "not stated", "fp32"),  # hexgrad/kokoro and Kokoro-FastAPI run the fp32 weights uncast
        ("f5-tts", "not stated", "fp16"),  # F5-TTS's loader casts to fp16 on a CUDA GPU of compute capability >= 7
        ("piper-medium", "not stated", "fp32"),
        ("kokoro-82m", "fp16", "fp16"),  # a stated precision stands
        ("f5-tts", "fp32", "fp32"),
    ],
)
def test_a_rows_precision_is_as_stated_else_its_runtimes_default(model_id, precision, variant):
    assert score_speech.tts_precision({"precision": precision}, CATALOG.get(model_id)) == variant


def gpu_row(device: str, peak: float, measured: float, passes: int = 1, work: float = 1e12, source: str = "s"):
    return score_speech.Row(kind="tts", backend="cuda", device=device, source=source, label="m (v)", measured=measured,
                            work=work, peak=peak, passes=passes)


def test_the_fixed_gpu_time_and_share_are_recovered_from_rows_that_follow_them():
    # x real time = 1 / (1e12 / (peak x 0.2) + 5 ms): 20, 40 and 80 TFLOPS GPUs
    rows = [gpu_row(d, p, 1 / (1e12 / (p * 0.2) + 0.005)) for d, p in (("a", 20e12), ("b", 40e12), ("c", 80e12))]
    fits = score_speech.tts_fit(rows, (0.0,), gpu=score_speech.GpuTerms(fixed_grid=score_speech.FIXED_SECONDS))
    assert fits["fixed"] == pytest.approx(0.005) and fits["table"]["cuda"] == pytest.approx(0.2)
    assert score_speech.tts_predict_terms(rows[1], fits) == pytest.approx(rows[1].measured)
    # without the fixed grid the share alone is fitted
    assert score_speech.tts_fit(rows, (0.0,))["fixed"] == 0.0


def cpu_row(device: str, share: float) -> score_speech.Row:
    # one thread at `share` of a 10 GFLOPS core: 1 GFLOP per second of audio runs at share x 10 x real time
    return score_speech.Row(kind="tts", backend="cpu", device=device, source=device, label="m (v)",
                            measured=share * 10, work=1e9, peak=1e10, cores=1)


def test_a_device_with_many_rows_counts_once_where_the_fit_is_over_devices():
    # five rows of one machine at 0.1 and one row each of two others at 0.4 and 0.5: over rows the median is the
    # many-row machine's 0.1, over devices (each device's median first) 0.4
    rows = [cpu_row("pi", 0.1) for _ in range(5)] + [cpu_row("desktop", 0.4), cpu_row("laptop", 0.5)]
    assert score_speech.tts_fit(rows, (0.0,))["table"]["cpu"] == pytest.approx(0.1)
    fits = score_speech.tts_fit(rows, (0.0,), by_device=True)
    assert fits["table"]["cpu"] == pytest.approx(0.4)
    assert score_speech.tts_predict(cpu_row("new", 0.4), fits) == pytest.approx(4.0)
    # one row per device: both fits are the same median
    single = [cpu_row("a", 0.2), cpu_row("b", 0.3), cpu_row("c", 0.6)]
    assert (score_speech.tts_fit(single, (0.0,))["table"]["cpu"]
            == score_speech.tts_fit(single, (0.0,), by_device=True)["table"]["cpu"] == pytest.approx(0.3))


@pytest.mark.parametrize(
    ("fixed", "per_pass", "passes", "share"),
    [
        (0.0, False, 1, 1e12 * 10 / 50e12),  # 0.1 s per second of audio, all compute: 0.2 of a 50 TFLOPS peak
        (0.05, False, 64, 1e12 / (50e12 * 0.05)),  # half of it fixed: the share doubles
        (0.001, True, 50, 1e12 / (50e12 * 0.05)),  # 1 ms x 50 passes is the same 50 ms
        (0.1, False, 1, None),  # the fixed time alone takes all the row measured: refuted
        (0.2, False, 1, None),
    ],
)
def test_a_gpu_rows_share_is_read_after_the_fixed_time(fixed, per_pass, passes, share):
    row = gpu_row("a", 50e12, 10.0, passes)
    value = score_speech.implied_share(row, 0.0, 0.0, fixed, per_pass)
    assert value == (None if share is None else pytest.approx(share))


def test_a_cpu_row_pays_no_fixed_gpu_time():
    cpu_row = row("a", 2.0)
    assert score_speech.fixed_units(cpu_row, False) == 0.0 and score_speech.fixed_units(cpu_row, True) == 0.0
    fits = {"table": {"cpu": 0.2}, "serial": 0.0, "exponent": 0.0, "fixed": 0.5, "per_pass": False}
    assert score_speech.tts_predict_terms(cpu_row, fits) == pytest.approx(10e12 * 0.2 / 1e12)


def test_gpuready_speaks_each_fitted_gpu_row_as_the_scorer_predicts_it_with_gpuready_constants():
    # a GPU with the row's FP16 peak (`extra`) and, for an fp32 run, its FP32 rate (the row's peak) gets the speed the
    # scorer predicts from gpuready's constants, the fixed GPU time included (rows at the catalogue's passes only)
    constants = {"table": dict(speech.TTS_EFFICIENCY), "serial": 0.0, "exponent": 0.0,
                 "fixed": speech.TTS_FIXED_SECONDS.get("cuda", 0.0), "per_pass": False}
    checked = 0
    for tts in (r for r in scorer_rows() if r.kind == "tts" and r.backend == "cuda" and r.in_fit):
        model = CATALOG.get(score_speech.tts_model(tts))
        if tts.passes != model.passes_per_frame or speech.TTS_MODEL_EFFICIENCY:
            continue
        fp32 = tts.peak != tts.extra[1]
        device = devices.Device("gpu", tts.device, "cuda", None, 1e12, tts.extra[1], vector_flops=tts.peak if fp32 else None)
        realtime, _ = speech.tts_realtime(model, device, "fp32" if fp32 else "fp16")
        assert realtime == pytest.approx(score_speech.tts_predict_terms(tts, constants))
        checked += 1
    assert checked == 11  # Kokoro on the RTX 3090 Ti, 4060 Ti (7 runs), 3090 and 5090 (fp32), F5-TTS at 32 steps on the RTX 3090
    # (the L20 row ran 16 steps, F5-TTS's benchmark.py at the cited commit, so it is not at the catalogue's passes)


@pytest.mark.parametrize(("backend", "runtime"), [("rocm", "whisper.cpp (ROCm/HIP)"), ("sycl", "whisper.cpp (SYCL)"),
                                                  ("vulkan", "whisper.cpp (Vulkan)"), ("cuda", "faster-whisper (CUDA fp16)")])
def test_whisper_at_fp16_names_its_runtime_as_the_quantised_files_do(backend, runtime):
    # whisper.cpp's GPU builds, named the same whether the ggml file is F16 or quantised (it read "whisper.cpp (rocm)")
    cpu = devices.Device("cpu", "Test CPU", "cpu", 32 * 1024**3, 80e9, 1e12, cores=8)
    model = CATALOG.get("whisper-large-v3")
    estimate = speech.estimate(model, "fp16", gpu(backend=backend), cpu)
    assert estimate.placement == "gpu" and speech.runtime_name(model, estimate, gpu(backend=backend)) == runtime


@pytest.mark.parametrize(("backend", "setup"), [("cuda", "pip install onnxruntime-gpu"),
                                                ("metal", "ONNX_PROVIDER=CoreMLExecutionProvider"),
                                                ("sycl", "pip install onnxruntime-openvino")])
def test_kokoros_onnx_estimate_on_a_gpu_says_how_kokoro_onnx_is_set_up_to_use_it(backend, setup):
    # kokoro-onnx runs on the CPU unless an accelerated onnxruntime build is installed or ONNX_PROVIDER names one
    cpu = devices.Device("cpu", "Test CPU", "cpu", 32 * 1024**3, 80e9, 1e12, cores=8)
    estimate = speech.estimate(CATALOG.get("kokoro-82m"), "fp16", gpu(backend=backend), cpu)
    assert estimate.placement == "gpu"
    assert any(setup in line and "otherwise it runs on the CPU" in line for line in estimate.basis)
    on_cpu = speech.estimate(CATALOG.get("kokoro-82m"), "fp32", None, cpu)
    assert not any("kokoro-onnx uses" in line for line in on_cpu.basis)
