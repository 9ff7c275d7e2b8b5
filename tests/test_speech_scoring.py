"""Speech estimates term by term (hand-computed), their invariants, and the cross-validated scoring
in benchmarks/score_speech.py (leave one device out refits without the held-out device)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

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
        ("piper-medium", None, 2 * 20e6 * 86.13 * 1),  # 3.4452e9: one pass of a 20M VITS per frame
        ("kokoro-82m", None, 2 * 82e6 * 80 * 1),  # 1.312e10
        ("f5-tts", None, 2 * 336e6 * 93.75 * 64),  # 4.032e12: 32 steps x 2 guidance passes
        ("f5-tts", 14, 2 * 336e6 * 93.75 * 14),  # 8.82e11: a row that ran 7 steps x 2 passes
    ],
)
def test_tts_flops_per_second_of_audio(model_id, passes, flops):
    assert speech.tts_flops_per_audio_second(CATALOG.get(model_id), passes) == pytest.approx(flops)


@pytest.mark.parametrize(
    ("backend", "expected"),
    [
        ("cuda", speech.TTS_EFFICIENCY["cuda"]),
        ("cpu", speech.TTS_EFFICIENCY["cpu"]),
        # no rows: CUDA's fit x the backend's prompt efficiency relative to CUDA's
        ("metal", speech.TTS_EFFICIENCY["cuda"] * est.COMPUTE_EFFICIENCY["metal"] / est.COMPUTE_EFFICIENCY["cuda"]),
    ],
)
def test_tts_efficiency_per_backend_and_its_fallback(backend, expected):
    assert speech.tts_efficiency(backend)[0] == pytest.approx(expected)


def test_tts_realtime_is_peak_times_efficiency_over_flops_per_audio_second():
    kokoro = CATALOG.get("kokoro-82m")
    cpu = devices.Device("cpu", "Test CPU", "cpu", None, 50e9, 2e12)
    realtime, basis = speech.tts_realtime(kokoro, cpu)
    assert realtime == pytest.approx(2e12 * speech.TTS_EFFICIENCY["cpu"] / 1.312e10)
    assert "13.1 GFLOPs per second of audio" in basis[0]


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


def test_bands_are_at_least_the_median_held_out_error():
    # the bands are 80th percentiles of the LODO errors, so at least their medians (ACCURACY.md headlines)
    assert speech.STT_UNCERTAINTY >= 0.25 and speech.TTS_UNCERTAINTY >= 0.25


# --- scoring ---------------------------------------------------------------------------------------


def row(device: str, measured: float, work: float = 1e12, peak: float = 10e12, backend: str = "cpu", source: str = "s"):
    return score_speech.Row(kind="tts", backend=backend, device=device, source=source, label="m (v)",
                            measured=measured, work=work, peak=peak)


def test_tts_fit_is_the_median_implied_efficiency():
    # implied efficiency = work x (x real time) / peak: 0.1, 0.2, 0.4 -> median 0.2
    rows = [row("a", 1.0), row("b", 2.0), row("c", 4.0)]
    assert score_speech.tts_fit(rows) == {"cpu": pytest.approx(0.2)}
    assert score_speech.tts_predict(rows[0], {"cpu": 0.2}) == pytest.approx(2.0)


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


def test_superseded_builds_and_vendor_blas_rows_are_scored_but_not_fitted():
    se = importlib.util.spec_from_file_location("score_estimator_speech", BENCHMARKS / "score_estimator.py")
    module = importlib.util.module_from_spec(se)
    se.loader.exec_module(module)
    from types import SimpleNamespace

    helpers = SimpleNamespace(load=module.load, cpu_device=module.cpu_device, gpu_device=module.gpu_device,
                              device_key=module.device_key, source_key=module.source_key, CPU_SPECS=module.CPU_SPECS, FITS={})
    rows, _ = score_speech.speech_rows(helpers, CATALOG)
    old = [r for r in rows if r.kept_out and r.kept_out.startswith("ae1bd69")]
    assert len(old) == 12 and all(r.kind == "encoder" and r.device == "Tesla V100-PCIE-16GB" for r in old)
    blas = [r for r in rows if r.kept_out == score_speech.VENDOR_BLAS]
    assert len(blas) == 10 and all(r.backend == "cpu" for r in blas)
    assert all(r.in_fit == (r.kept_out is None) for r in rows)
    # every text-to-speech row of speech-tts.toml has its hardware and model in the tables
    assert sum(1 for r in rows if r.kind == "tts") == 23
