"""whisper-bench: its real published logs, the ggml model header, and the measured encoder in the speech verdict."""

from __future__ import annotations

import json
import os
import stat
import struct
from pathlib import Path

import pytest

from gpuready.bench.results import EncoderTime
from gpuready.bench.stats import Spread
from gpuready.bench.whisper import WhisperBenchError, encode_seconds, encoder_time, placement, read_header
from gpuready.tasks.registry import load_catalog
from gpuready.frontends.cli import main
from gpuready.tasks.speech import STT_UNCERTAINTY, WINDOW_SECONDS
from gpuready.testing import cpu_machine, with_test_gpu
from gpuready.tasks.registry import judge_model as judge_any
from gpuready.tasks.verdict import Options

LOGS = Path(__file__).parent / "fixtures" / "whisper-bench"
README_LOG = (LOGS / "readme-small-en.txt").read_text()
ISSUE_LOG = (LOGS / "issue-89-xeon-e3-1245-v5-large.txt").read_text()


def ggml_model(path: Path, state: int, layers: int, ftype: int) -> Path:
    """A whisper.cpp model header in convert-pt-to-ggml.py's layout (magic, then 11 int32), weights omitted."""
    hparams = (51864, 1500, state, state // 64, layers, 448, state, state // 64, layers, 80, ftype)
    path.write_bytes(struct.pack("<i", 0x67676D6C) + struct.pack("<11i", *hparams) + b"\0" * 64)
    return path


def test_both_published_log_forms_give_the_encoder_time():
    assert encode_seconds(README_LOG) == pytest.approx(1.06221)
    assert encode_seconds(ISSUE_LOG) == pytest.approx(41.36011)
    assert placement(README_LOG) == placement(ISSUE_LOG) == "cpu"
    # whisper.cpp's log line when a GPU backend runs it (src/whisper.cpp, whisper_backend_init_gpu)
    assert placement("whisper_backend_init_gpu: using CUDA0 backend\n" + ISSUE_LOG) == "gpu"


def test_a_log_without_an_encode_time_is_an_error():
    with pytest.raises(WhisperBenchError, match="whisper-bench printed no 'encode time'"):
        encode_seconds("error: failed to open 'model.bin'\n")


@pytest.mark.parametrize(("ftype", "variant"), [(1, "fp16"), (0, "fp32"), (1007, "q8_0"), (2008, "q5_0")])
def test_the_model_header_gives_shape_and_precision(tmp_path, ftype, variant):
    assert read_header(ggml_model(tmp_path / "m.bin", 768, 12, ftype)) == (768, 12, variant)


def test_a_file_that_is_not_a_whisper_model_is_refused(tmp_path):
    (tmp_path / "x.bin").write_bytes(b"GGUF" + b"\0" * 60)
    with pytest.raises(WhisperBenchError, match="not a whisper.cpp ggml model"):
        read_header(tmp_path / "x.bin")
    with pytest.raises(WhisperBenchError, match="ggml ftype 3 is not one the catalogue lists"):
        read_header(ggml_model(tmp_path / "q4_1.bin", 768, 12, 3))


def small_encoder(seconds: Spread, placement: str = "cpu", variant: str = "fp16") -> EncoderTime:
    return EncoderTime(768, 12, variant, placement, seconds, "whisper-bench (CPU), ggml-small.bin, 3 runs, 2026-12-03")


def test_a_measured_encoder_replaces_the_formula_for_whisper_cpp_on_the_cpu():
    catalog = load_catalog()
    small = catalog.models["whisper-small"]
    machine = cpu_machine(16)
    estimated = judge_any(small, catalog, machine, Options(quant="fp16"))
    encode = dict(estimated.estimate.details)["encoder_seconds_per_window"]
    measured = Spread(0.9, 1.0, 1.1, 3)
    verdict = judge_any(small, catalog, machine, Options(quant="fp16", measured_speeds=(small_encoder(measured),)))
    decoder = WINDOW_SECONDS / estimated.speed - encode
    assert verdict.speed == pytest.approx(WINDOW_SECONDS / (1.0 + decoder))
    assert verdict.uncertainty == pytest.approx((0.1 * 1.0 + STT_UNCERTAINTY * decoder) / (1.0 + decoder))
    assert ("encoder: 1.00 s per 30 s window measured on this machine (0.90-1.10; whisper-bench (CPU), "
            "ggml-small.bin, 3 runs, 2026-12-03)") in verdict.estimate.basis


def test_a_measured_encoder_does_not_apply_to_another_runtime_precision_or_placement():
    catalog = load_catalog()
    small = catalog.models["whisper-small"]
    encoder = small_encoder(Spread(0.9, 1.0, 1.1, 3), placement="gpu")
    gpu_machine = with_test_gpu(cpu_machine(16), 24, 1000)
    # CUDA fp16 runs in faster-whisper, not whisper.cpp
    assert judge_any(small, catalog, gpu_machine, Options(quant="fp16", measured_speeds=(encoder,))).speed == \
        judge_any(small, catalog, gpu_machine, Options(quant="fp16")).speed
    # a CPU machine: the measurement was taken on a GPU
    assert judge_any(small, catalog, cpu_machine(16), Options(quant="fp16", measured_speeds=(encoder,))).speed == \
        judge_any(small, catalog, cpu_machine(16), Options(quant="fp16")).speed
    # another precision
    cpu_encoder = small_encoder(Spread(0.9, 1.0, 1.1, 3))
    assert judge_any(small, catalog, cpu_machine(16), Options(quant="q5_0", measured_speeds=(cpu_encoder,))).speed == \
        judge_any(small, catalog, cpu_machine(16), Options(quant="q5_0")).speed


@pytest.mark.skipif(os.name == "nt", reason="a shell script stands in for whisper-bench")
def test_whisper_bench_runs_are_kept_with_the_models_shape(capsys, monkeypatch, tmp_path):
    script = tmp_path / "whisper-bench"
    script.write_text(f"#!/bin/sh\ncat {LOGS / 'issue-89-xeon-e3-1245-v5-large.txt'} >&2\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    model = ggml_model(tmp_path / "ggml-large.bin", 1280, 32, 1)
    assert main(["bench", "--whisper-bench", str(model), "--json"]) == 0
    (encoder,) = json.loads(capsys.readouterr().out)["measurements"]["encoders"]
    assert encoder["seconds_per_window"] == {"min": 41.36011, "median": 41.36011, "max": 41.36011, "samples": 3}
    assert (encoder["d_model"], encoder["encoder_layers"], encoder["variant"], encoder["placement"]) == (1280, 32, "fp16", "cpu")


def test_whisper_bench_missing_is_a_one_line_error(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    model = ggml_model(tmp_path / "ggml-small.bin", 768, 12, 1)
    assert main(["bench", "--whisper-bench", str(model)]) == 2
    assert capsys.readouterr().err == "gpuready: error: whisper-bench (whisper.cpp) is not on PATH\n"


def test_encoder_time_names_the_backend_that_ran_it(tmp_path):
    model = ggml_model(tmp_path / "ggml-small.bin", 768, 12, 1)
    result = encoder_time(model, ["whisper_backend_init_gpu: using Metal backend\n" + README_LOG], "2026-12-03")
    assert result == EncoderTime(768, 12, "fp16", "gpu", Spread(1.06221, 1.06221, 1.06221, 1),
                                 "whisper-bench (Metal), ggml-small.bin, 1 runs, 2026-12-03")
