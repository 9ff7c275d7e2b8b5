"""A CPU whose AVX-512 runs on narrower FMA pipes than its flag implies: text to speech (PyTorch and ONNX Runtime FP32)
is counted at the pipes' rate, ggml's kernels and the embedding fit at the flags' figure (catalog/cpus.toml
fma_flops_per_cycle)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gpuready.hardware import CPU, Hardware, Memory
from gpuready.tasks import devices, encoders, image, search, speech
from gpuready.tasks import text_estimate as est
from gpuready.tasks.registry import load_catalog

AVX512 = ("avx2", "avx512f", "fma")
CLOCK = devices.ASSUMED_CPU_CLOCK_HZ


@pytest.mark.parametrize(
    "name",
    [
        "AMD Ryzen 9 7950X 16-Core Processor",  # Zen 4 desktop: two 256-bit FMA pipes, AVX-512 double-pumped
        "AMD Ryzen 7 7840HS w/ Radeon 780M Graphics",  # Zen 4 mobile
        "AMD Ryzen 7 8700G w/ Radeon 780M Graphics",  # Zen 4 desktop APU
        "AMD EPYC 9654 96-Core Processor",  # Zen 4 server
        "AMD Ryzen Threadripper PRO 7995WX 96-Cores",  # Zen 4 workstation
        "11th Gen Intel(R) Core(TM) i7-11700K @ 3.60GHz",  # Rocket Lake: one 512-bit FMA
        "11th Gen Intel(R) Core(TM) i5-1135G7 @ 2.40GHz",  # Tiger Lake UP3
        "11th Gen Intel(R) Core(TM) i7-11800H @ 2.30GHz",  # Tiger Lake-H
        "Intel(R) Core(TM) i7-1065G7 CPU @ 1.30GHz",  # Ice Lake client
    ],
)
def test_an_avx512_cpu_with_narrower_fma_pipes_gets_their_rate_for_float_work(name):
    # 8 cores x 3.0 GHz x 32 FP32 FLOPs a cycle (two 256-bit FMAs, or one 512-bit): half the flags' 64
    assert devices.cpu_peak_flops(8, AVX512, name) == 8 * CLOCK * 64
    assert devices.cpu_fma_flops(8, AVX512, name) == 8 * CLOCK * 32


@pytest.mark.parametrize(
    ("name", "features"),
    [
        ("Intel(R) Xeon(R) Platinum 8272CL CPU @ 2.60GHz", AVX512),  # two 512-bit FMAs: the flags' figure is right
        ("AMD Ryzen 9 9950X 16-Core Processor", AVX512),  # Zen 5 desktop: a full 512-bit datapath
        ("AMD Ryzen 9 5950X 16-Core Processor", ("avx2", "fma")),  # no AVX-512: nothing to narrow
        ("AMD Ryzen 9 7950X 16-Core Processor", ("avx2", "fma")),  # a VM that hides AVX-512: already 32 a cycle
        ("AMD EPYC", AVX512),  # a name that says no model: no platform row, the flags' figure stands
    ],
)
def test_the_flags_figure_stands_where_no_row_narrows_it(name, features):
    assert devices.cpu_fma_flops(8, features, name) is None


def zen4_machine() -> devices.Device:
    cpu = CPU(name="AMD Ryzen 9 7950X 16-Core Processor", arch="x86_64", physical_cores=16, logical_cores=32,
              features=AVX512, memory_bandwidth_bytes_per_s=int(83.2e9), bandwidth_source="table:amd-ryzen-7000-desktop")
    hardware = Hardware(platform="linux", arch="x86_64", cpu=cpu, memory=Memory(64 * 1024**3, 60 * 1024**3))
    return devices.cpu_device(hardware)


def test_the_probed_cpu_device_carries_both_rates():
    device = zen4_machine()
    assert device.flops == 16 * CLOCK * 64
    assert device.fma_flops == device.float_flops == 16 * CLOCK * 32
    assert "fma_flops_per_cycle" in encoders.device_flops_basis(device, fma=True)
    assert "fma_flops_per_cycle" not in encoders.device_flops_basis(device)


CATALOG = load_catalog()


def test_text_to_speech_halves_while_ggml_runtimes_and_embeddings_keep_the_flags_figure():
    zen4 = zen4_machine()
    flags = replace(zen4, fma_flops=None)  # the same machine counted at its AVX-512 flag, as before
    kokoro = CATALOG.get("kokoro-82m")
    # text to speech (PyTorch / ONNX Runtime FP32): a CPU pays no fixed time, so the speed is the peak's share
    assert speech.tts_realtime(kokoro, zen4, "fp32")[0] == pytest.approx(speech.tts_realtime(kokoro, flags, "fp32")[0] / 2)
    # document search keeps the flags' figure its core-scaling fit was made at (benchmarks/ACCURACY.md, caveats)
    minilm = CATALOG.get("all-minilm-l6-v2")
    assert search.chunks_per_second(minilm, zen4)[0] == search.chunks_per_second(minilm, flags)[0]
    # whisper.cpp's encoder and stable-diffusion.cpp run ggml's kernels: counted as llama.cpp's are
    whisper = CATALOG.get("whisper-base")
    assert speech.encoder_seconds(whisper, zen4)[0] == speech.encoder_seconds(whisper, flags)[0]
    sdxl = CATALOG.get("sdxl-turbo")
    assert image.seconds_per_step(sdxl, 512, 512, zen4)[0] == image.seconds_per_step(sdxl, 512, 512, flags)[0]
    # llama.cpp's prompt and generation: unchanged
    llama = CATALOG.get("llama-3.1-8b")
    quant = CATALOG.quants["Q4_K_M"]
    on_zen4 = est.estimate(llama, quant, 4096, None, zen4, 64 * 1024**3).speed
    on_flags = est.estimate(llama, quant, 4096, None, flags, 64 * 1024**3).speed
    assert (on_zen4.generation_tokens_per_s, on_zen4.prompt_tokens_per_s) == (on_flags.generation_tokens_per_s,
                                                                              on_flags.prompt_tokens_per_s)
