"""Real encoder time from whisper.cpp's own benchmark: run `whisper-bench` on a model file and read its log.

whisper-bench runs the encoder on 30 s of random audio and prints (on stderr) e.g.
``whisper_print_timings:   encode time = 41360.11 ms /     1 runs (41360.11 ms per run)``
(whisper.cpp issue #89; older builds: ``encode time =  1062.21 ms / 88.52 ms per layer``,
examples/bench/README.md), and ``whisper_backend_init_gpu: using CUDA0 backend`` when a GPU
runs it (``no GPU found`` otherwise). The model's shape comes from the file's header: the
magic 0x67676d6c, then int32 n_vocab, n_audio_ctx, n_audio_state, n_audio_head,
n_audio_layer, n_text_ctx, n_text_state, n_text_head, n_text_layer, n_mels, ftype
(whisper.cpp models/convert-pt-to-ggml.py); quantize adds 1000 x a version to ftype.
"""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
from pathlib import Path

from gpuready.bench.results import EncoderTime
from gpuready.bench.stats import summarise

MAGIC = 0x67676D6C
# ggml's enum ggml_ftype (ggml.h): 0 all F32, 1 mostly F16, 7 Q8_0, 8 Q5_0 -- the catalogue's whisper.cpp precisions.
FTYPES = {0: "fp32", 1: "fp16", 7: "q8_0", 8: "q5_0"}
QUANT_VERSION_FACTOR = 1000
TIMEOUT_S = 600.0
_PER_RUN = re.compile(r"encode time\s*=\s*[\d.]+\s*ms\s*/\s*\d+\s*runs\s*\(\s*([\d.]+)\s*ms per run")
_TOTAL = re.compile(r"encode time\s*=\s*([\d.]+)\s*ms")
_GPU = re.compile(r"whisper_backend_init_gpu: using (\S+) backend")


class WhisperBenchError(ValueError):
    """whisper-bench could not run, or the model file or its output is not what whisper.cpp writes."""


def read_header(path: Path) -> tuple[int, int, str]:
    """(n_audio_state, n_audio_layer, precision) from a whisper.cpp ggml model file."""
    try:
        with path.open("rb") as stream:
            data = stream.read(48)
    except OSError as error:
        raise WhisperBenchError(f"{path}: cannot read: {error.strerror or error}") from None
    if len(data) < 48 or struct.unpack("<i", data[:4])[0] != MAGIC:
        raise WhisperBenchError(f"{path}: not a whisper.cpp ggml model (no 'ggml' magic)")
    values = struct.unpack("<11i", data[4:48])
    state, layers, ftype = values[2], values[4], values[10] % QUANT_VERSION_FACTOR
    if ftype not in FTYPES:
        raise WhisperBenchError(f"{path}: ggml ftype {ftype} is not one the catalogue lists (f32, f16, q8_0, q5_0)")
    return state, layers, FTYPES[ftype]


def encode_seconds(log: str) -> float:
    """Seconds one encoder run took, from whisper-bench's timings."""
    match = _PER_RUN.search(log) or _TOTAL.search(log)
    if not match:
        raise WhisperBenchError("whisper-bench printed no 'encode time'")
    return float(match[1]) / 1000


def placement(log: str) -> str:
    return "gpu" if _GPU.search(log) else "cpu"


def run_whisper_bench(model: Path, executable: str | None = None, timeout_s: float = TIMEOUT_S) -> str:
    """One whisper-bench run; its whole log (stdout and stderr)."""
    executable = executable or shutil.which("whisper-bench")
    if not executable:
        raise WhisperBenchError("whisper-bench (whisper.cpp) is not on PATH")
    try:
        done = subprocess.run([executable, "-m", str(model)], capture_output=True, text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        raise WhisperBenchError(f"whisper-bench did not finish within {timeout_s:g} s") from None
    except OSError as error:
        raise WhisperBenchError(f"could not run {executable}: {error.strerror or error}") from None
    if done.returncode != 0:
        from gpuready.host import failure_words

        raise WhisperBenchError(failure_words("whisper-bench", done.returncode, done.stderr))
    return done.stdout + done.stderr


def encoder_time(model: Path, logs: list[str], when: str) -> EncoderTime:
    """An EncoderTime from the model file's header and whisper-bench logs of it."""
    state, layers, variant = read_header(model)
    seconds = summarise([encode_seconds(log) for log in logs])
    where = placement(logs[0])
    backend = _GPU.search(logs[0])
    return EncoderTime(state, layers, variant, where, seconds,
                       f"whisper-bench ({backend[1] if backend else 'CPU'}), {model.name}, {len(logs)} runs, {when}")


def measure_encoder(model: Path, when: str, quick: bool = False, executable: str | None = None) -> EncoderTime:
    read_header(model)  # a wrong file fails before the slow part
    return encoder_time(model, [run_whisper_bench(model, executable) for _ in range(1 if quick else 3)], when)
