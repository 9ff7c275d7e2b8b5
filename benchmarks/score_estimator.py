#!/usr/bin/env python3
"""Score gpuready's estimators against the published measurements in benchmarks/validation/.

Each measured row becomes hypothetical hardware built from the GPU table (catalog/gpus.toml:
the row's gpu_id, else a unique gpuready.catalog.tables.find_gpus match of its gpu_hint) or, for
CPU rows, from CPU_SPECS below plus catalog/cpus.toml's bandwidth. Rows whose hardware or
model is not known are skipped and counted. For every task it prints the median and worst
absolute percentage error, and the efficiency each backend would need (measured /
theoretical at 100%) whose medians the constants in gpuready were fitted to.

Usage: python benchmarks/score_estimator.py > benchmarks/ACCURACY.md   (from the repository root)
The fits are in-sample: the constants were set to these medians over these same rows.
"""

from __future__ import annotations

import re
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gpuready.catalog.power import power_table  # noqa: E402
from gpuready.probes import apple  # noqa: E402
from gpuready.catalog.tables import find_gpus, gpu_table, match_cpu  # noqa: E402
from gpuready.tasks import devices  # noqa: E402
from gpuready.tasks.base import band_words  # noqa: E402
from gpuready.tasks import text_estimate as est  # noqa: E402
from gpuready.tasks.devices import APPLE_CPU_BANDWIDTH_SHARE  # noqa: E402
from gpuready.tasks.registry import load_catalog  # noqa: E402
from gpuready.tasks.text import LanguageModel  # noqa: E402
from gpuready.tomlcompat import tomllib  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import score_image  # noqa: E402
import score_search  # noqa: E402
import score_speech  # noqa: E402
import speed_report  # noqa: E402
import speedfit  # noqa: E402

GIB = 1024**3
# (constant name, key) -> (fitted median, the constant in gpuready), filled by each section;
# tests/test_score_estimator.py checks the two agree, so a changed formula or validation
# row without a refit fails loudly.
FITS: dict[tuple[str, str], tuple[float, float | None]] = {}
VALIDATION = ROOT / "benchmarks" / "validation"

# CPUs named by CPU rows: (name as a probe reports it, for catalog/cpus.toml's bandwidth;
# physical cores; ISA features as gpuready's CPU probe reports them). Cores from the
# vendors' spec pages: Intel ARK (i3-1315U 6 = 2P+4E, i7-12700K 12 = 8P+4E, i7-8700 6),
# Apple (M1 Max 10, M2 Max 12, M3 8, M3 Max 16 CPU cores), Raspberry Pi 5 datasheet
# (4 x Cortex-A76). Rows using fewer threads than cores use that many cores.
CPU_SPECS = {
    "Intel Core i3-1315U": ("13th Gen Intel(R) Core(TM) i3-1315U", 6, ("avx2", "fma")),
    "Intel Core i7-12700K": ("12th Gen Intel(R) Core(TM) i7-12700K", 12, ("avx2", "fma")),
    "Intel(R) Core(TM) i7-8700 CPU @ 3.20GHz (Ubuntu 20.04.4 LTS)": ("Intel(R) Core(TM) i7-8700 CPU @ 3.20GHz", 6, ("avx2", "fma")),
    "Raspberry Pi 5 (BCM2712, Cortex-A76)": ("Raspberry Pi 5", 4, ("dotprod", "fp16", "neon")),
    "Raspberry Pi 5 (BCM2712, active cooler)": ("Raspberry Pi 5", 4, ("dotprod", "fp16", "neon")),
    "Apple M1 Max": ("Apple M1 Max", 10, ("dotprod", "fp16", "neon")),
    "Apple M2 Max": ("Apple M2 Max", 12, ("bf16", "dotprod", "fp16", "i8mm", "neon")),
    "Apple M3": ("Apple M3", 8, ("bf16", "dotprod", "fp16", "i8mm", "neon")),
    "Apple M3 Max": ("Apple M3 Max", 16, ("bf16", "dotprod", "fp16", "i8mm", "neon")),
    # Cores from AMD's product pages (Ryzen 9 7950X 16, Ryzen 9 5900X 12, Ryzen 7 8840U 8; Zen 4
    # has AVX-512) and Intel ARK (i3-14100 4 P-cores, i5-9500 6).
    "AMD Ryzen 9 7950X 16-Core Processor": ("AMD Ryzen 9 7950X 16-Core Processor", 16, ("avx2", "avx512f", "fma")),
    "AMD Ryzen 9 5900X 12-Core Processor": ("AMD Ryzen 9 5900X 12-Core Processor", 12, ("avx2", "fma")),
    "AMD Ryzen 7 8840U w/ Radeon 780M Graphics": ("AMD Ryzen 7 8840U w/ Radeon 780M Graphics", 8, ("avx2", "avx512f", "fma")),
    "Intel(R) Core(TM) i3-14100": ("Intel(R) Core(TM) i3-14100", 4, ("avx2", "fma")),
    "Intel(R) Core(TM) i5-9500 CPU @ 3.00GHz": ("Intel(R) Core(TM) i5-9500 CPU @ 3.00GHz", 6, ("avx2", "fma")),
    # AMD EPYC 9554: 64 cores, Zen 4 (AMD product page); Apple M2 Ultra: 24 CPU cores (16P + 8E, Apple).
    "AMD EPYC 9554 64-Core Processor": ("AMD EPYC 9554 64-Core Processor", 64, ("avx2", "avx512f", "fma")),
    "Apple M2 Ultra": ("Apple M2 Ultra", 24, ("bf16", "dotprod", "fp16", "i8mm", "neon")),
    # AWS Graviton3: Neoverse V1 (SVE, bf16, i8mm), no SMT; rows give the instance's vCPUs as threads.
    "AWS Graviton3": ("AWS Graviton3 Processor", 64, ("bf16", "dotprod", "fp16", "i8mm", "neon", "sve")),
    # Raspberry Pi 4: 4 x Cortex-A72 (Raspberry Pi 4 product brief), no dotprod/fp16 arithmetic; both
    # hints are one board model (one device when a device is held out). EPYC 7763: Zen 3, AVX2 (AMD
    # product page); the text-to-speech row ran on 4 vCPUs of it (threads = 4). Ryzen 9 5950X: 16 cores,
    # Zen 3 (AMD product page).
    "Raspberry Pi 4 Model B Rev 1.5": ("Raspberry Pi 4 Model B", 4, ("neon",)),
    "Raspberry Pi 4 (4GB)": ("Raspberry Pi 4 Model B", 4, ("neon",)),
    "AMD Ryzen 9 5950X 16-Core Processor": ("AMD Ryzen 9 5950X 16-Core Processor", 16, ("avx2", "fma")),
    # Split-placement rows (split-placement.toml): Core i5-12600K 6 P + 4 E cores, AVX2 (Intel ARK); Ryzen 9 9950X3D
    # 16 cores, Zen 5 with AVX-512 (AMD product page).
    "Intel Core i5-12600K": ("12th Gen Intel(R) Core(TM) i5-12600K", 10, ("avx2", "fma")),
    "AMD Ryzen 9 9950X3D": ("AMD Ryzen 9 9950X3D 16-Core Processor", 16, ("avx2", "avx512f", "fma")),
    # GoodOlClint/homelab's llama-bench host: "6 P-cores" of an Intel hybrid CPU whose model the file does not name
    # (P-cores: Alder Lake or later, AVX2 without AVX-512); its rows ran 6 threads.
    "Intel Core, 6 P-cores (model not stated)": ("Intel Core (6 P-cores)", 6, ("avx2", "fma")),
    "AMD EPYC 7763 (4 vCPUs)": ("AMD EPYC 7763 64-Core Processor", 64, ("avx2", "fma")),
    # Xeon Platinum 8272CL: Cascade Lake (Xeon Scalable 2nd gen, AVX-512 with two FMA units as on the Platinum
    # 8280, Intel ARK); a cloud SKU not on ARK, 26 cores. Its text-to-speech rows ran on 4 cores of it (threads = 4).
    # Apple M4 Pro: a 12-core (8 performance + 4 efficiency) or 14-core CPU (Apple newsroom, Oct 2024); a row that does
    # not say which bin is scored as the 12-core one.
    "Apple M4 Pro": ("Apple M4 Pro", 12, ("bf16", "dotprod", "fp16", "i8mm", "neon")),
    "Intel Xeon Platinum 8272CL (4 cores)": ("Intel(R) Xeon(R) Platinum 8272CL CPU @ 2.60GHz", 26, ("avx2", "avx512f", "fma")),
    # Intel ARK: Core i7-11700 (Rocket Lake) 8 cores / 16 threads, base 2.5 GHz, AVX-512 among its instruction set
    # extensions (so gpuready reads avx512f from /proc/cpuinfo); its text-to-speech row ran on 8 ONNX Runtime threads.
    "11th Gen i7-11700 @ 2.5GHz": ("11th Gen Intel(R) Core(TM) i7-11700 @ 2.50GHz", 8, ("avx2", "avx512f", "fma")),
    # Intel ARK: Core i7-8750H 6 cores; catalog/cpus.toml row intel-core-8-9-mobile-h. Its rows are Whisper encoder
    # rows (speech.toml), compute bound: the table's bandwidth does not enter their score.
    "Intel(R) Core(TM) i7-8750H CPU @ 2.20GH (macOS Ventura 13.0.1)": ("Intel(R) Core(TM) i7-8750H CPU @ 2.20GHz", 6, ("avx2", "fma")),
    # Intel ARK: Core i7-11850H (Tiger Lake-H) 8 cores / 16 threads, Intel AVX-512 among its instruction set
    # extensions; catalog/cpus.toml row intel-core-11-mobile-h45. Its rows are compute-bound Whisper encoder rows
    # (speech-avx512.toml), so the table's bandwidth does not enter their score.
    "Intel Core i7-11850H (Dell Precision 5560, Ubuntu)": ("11th Gen Intel(R) Core(TM) i7-11850H @ 2.50GHz", 8, ("avx2", "avx512f", "fma")),
    # Intel ARK: Core i3-8100 (Coffee Lake) 4 cores / 4 threads, 3.60 GHz, Intel AVX2; the AVX2 reference beside
    # the i7-11850H in speech-avx512.toml (same whisper.cpp bench thread). catalog/cpus.toml row intel-core-8-9-desktop.
    "Intel Core i3-8100 @ 3.60GHz (Arch Linux home server)": ("Intel(R) Core(TM) i3-8100 CPU @ 3.60GHz", 4, ("avx2", "fma")),
    # Intel ARK: Core Ultra 7 258V (Lunar Lake) 8 cores (4 Performance + 4 Low Power Efficient), AVX2; the Lunar Lake rows.
    "Intel Core Ultra 7 258V": ("Intel(R) Core(TM) Ultra 7 258V", 8, ("avx2", "fma")),
    # Intel ARK: Core i9-12900H (Alder Lake-H) 14 cores (6 Performance + 8 Efficient), 20 threads, AVX2; its
    # text-to-speech rows (speech-tts-devices2.toml) ran on 1 to 8 PyTorch threads.
    "Intel Core i9-12900H": ("12th Gen Intel(R) Core(TM) i9-12900H", 14, ("avx2", "fma")),
    # normiebench's CPU-only llama-bench rows (text-generation.toml): cores from Intel ARK and AMD's product pages
    # (i5-1135G7 4 cores / 8 threads, AVX-512; i7-8550U 4 / 8; i7-7820HQ 4 / 8; i5-6500 4 / 4; i5-4278U 2 / 4;
    # N100 4 / 4, AVX2; Threadripper 3970X 32 / 64 and PRO 5975WX 32 / 64, Zen 2 / Zen 3, AVX2), each scored on
    # its catalog/cpus.toml row's bandwidth, as the rows' notes say.
    "11th Gen Intel(R) Core(TM) i5-1135G7 @ 2.40GHz": ("11th Gen Intel(R) Core(TM) i5-1135G7 @ 2.40GHz", 4, ("avx2", "avx512f", "fma")),
    "Intel(R) Core(TM) i7-8550U CPU @ 1.80GHz": ("Intel(R) Core(TM) i7-8550U CPU @ 1.80GHz", 4, ("avx2", "fma")),
    "Intel(R) Core(TM) i7-7820HQ CPU @ 2.90GHz": ("Intel(R) Core(TM) i7-7820HQ CPU @ 2.90GHz", 4, ("avx2", "fma")),
    "Intel(R) Core(TM) i5-6500 CPU @ 3.20GHz": ("Intel(R) Core(TM) i5-6500 CPU @ 3.20GHz", 4, ("avx2", "fma")),
    "Intel Core i5-4278U": ("Intel(R) Core(TM) i5-4278U CPU @ 2.60GHz", 2, ("avx2", "fma")),
    "Intel(R) N100": ("Intel(R) N100", 4, ("avx2", "fma")),
    "AMD Ryzen Threadripper 3970X 32-Core Processor": ("AMD Ryzen Threadripper 3970X 32-Core Processor", 32, ("avx2", "fma")),
    "AMD Ryzen Threadripper PRO 5975WX 32-Cores": ("AMD Ryzen Threadripper PRO 5975WX 32-Cores", 32, ("avx2", "fma")),
    # tts-bench's three machines (speech-tts-bench.toml), as their meta.json names them: Ryzen 9 5900XT 16 cores / 32
    # threads, Zen 3, AVX2; Ryzen 9 9950X3D 16 / 32, Zen 5 with AVX-512 (AMD product pages); Apple M4 with the 10 CPU
    # cores its meta.json counts (4 performance + 6 efficiency, Apple newsroom, May 2024).
    "AMD Ryzen 9 5900XT 16-Core Processor": ("AMD Ryzen 9 5900XT 16-Core Processor", 16, ("avx2", "fma")),
    "AMD Ryzen 9 9950X3D 16-Core Processor": ("AMD Ryzen 9 9950X3D 16-Core Processor", 16, ("avx2", "avx512f", "fma")),
    "Apple M4 (10-core CPU)": ("Apple M4", 10, ("bf16", "dotprod", "fp16", "i8mm", "neon")),
    # The development VM of speech-tts-measured-here.toml: 2 vCPUs (lscpu: 2 cores x 1 thread) of a Zen 3 EPYC (cpu
    # family 25 model 1) whose model name reads 'AMD EPYC' alone, avx2 and fma, no AVX-512 (/proc/cpuinfo flags).
    "AMD EPYC (KVM guest, Zen 3, 2 vCPUs)": ("AMD EPYC", 2, ("avx2", "fma")),
}
# Forks with their own CPU kernels: ik_llama.cpp is markedly faster than mainline on CPU
# (its PR #54 table: 1.2-1.5x prompt, up to 1.23x generation on the same Ryzen 7950X), and
# llamafile ships its own tinyBLAS matmuls. gpuready estimates mainline llama.cpp (what
# Ollama, LM Studio and llama.cpp releases run), so fork rows are scored and shown but kept
# out of the CPU fit.
FORKS = ("ik_llama.cpp", "llamafile")
# GeForce RTX cards: catalog/gpus.toml lists NVIDIA's FP16 tensor rate with FP32 accumulate, half
# the FP16-accumulate rate on GeForce (NVIDIA's Turing, Ampere and Ada whitepapers); llama.cpp's
# prompt kernels (FP16-compute cuBLAS, int8 MMQ, FP16-accumulate Vulkan cooperative matrices) run
# at the full rate. The prompt fit tries this factor as a term (PROMPT_GEFORCE_RATE).
GEFORCE_FULL_RATE = 2.0
# Until llama.cpp PR #8075 ("CUDA: use MMQ instead of cuBLAS by default", merged 2024-06-23), a CUDA build
# multiplied quantised weights by a batch of more than 32 tokens on a GPU of compute capability 7.0 (Volta)
# or newer by dequantising them to FP16 and calling cuBLAS (ggml_cuda_mul_mat: use_mul_mat_q is false when
# fp16_performance_good && src1->ne[1] > MMQ_MAX_BATCH_SIZE; ggml fe7ea027, January 2024); older GPUs
# kept the dp4a MMQ kernels. Since then MMQ's int8 tensor-core kernels run them. A row dated (`measured`)
# before this month on such a GPU ran the other kernel, so its quantised prompt is fitted as its own class
# ("cublas", the prompt term choice's "cublas" term): gpuready estimates today's builds and never uses it.
CUBLAS_PROMPT_UNTIL = "2024-06"
# Until llama.cpp PR #6122 ("llama : greatly reduce output buffer memory usage", merged 2024-03-26, commit
# 557410b) a batch computed the last layer's feed-forward and the output projection for every token; since
# then only for the tokens whose logits are asked for, the last one of a llama-bench prompt
# (text_estimate.prompt_params). A row dated before April 2024 ran both for each prompt token, so its prompt
# work counts them.
ALL_LOGITS_UNTIL = "2024-04"
PRE_VOLTA = ("Kepler", "Maxwell", "Pascal")
MEMORY = re.compile(r"^(?:LP)?DDR\d[A-Z]?-(\d{3,5}) (\d+)ch$")

# Base models the text-generation rows measure that are not in the catalogue, from each
# model's config.json on Hugging Face (meta-llama/Llama-2-7b-hf, Llama-2-13b-hf,
# Llama-2-70b-hf, Meta-Llama-3-8B, Meta-Llama-3-70B, mistralai/Mistral-7B-Instruct-v0.2,
# TinyLlama/TinyLlama-1.1B-intermediate-step-1431k-3T): params, layers, hidden, heads, KV heads, vocab.
# Every one of them has its own output matrix (config.json "tie_word_embeddings": false).
ARCHITECTURES = {
    "llama-2-7b": (6.74e9, 32, 4096, 32, 32, 32000),
    "llama-2-13b": (13.02e9, 40, 5120, 40, 40, 32000),
    "llama-2-70b": (68.98e9, 80, 8192, 64, 8, 32000),
    "llama-3-8b": (8.03e9, 32, 4096, 32, 8, 128256),
    "llama-3-70b": (70.55e9, 80, 8192, 64, 8, 128256),
    "mistral-7b-instruct-v0.2": (7.24e9, 32, 4096, 32, 8, 32000),
    "tinyllama-1.1b-1t-openorca": (1.1e9, 22, 2048, 32, 4, 32000),
    # deepseek-ai/DeepSeek-R1-Distill-Qwen-7B config.json (the Qwen2.5-Math-7B architecture).
    "deepseek-r1-distill-qwen-7b": (7.62e9, 28, 3584, 28, 4, 152064),
}
ALIASES = {"llama-7b": "llama-2-7b", "llama-13b": "llama-2-13b", "llama-8b": "llama-3-8b",
           "llama-3.2-3b-instruct": "llama-3.2-3b", "gemma-3-4b-it-qat": "gemma-3-4b",
           "qwen3-coder-30b-a3b": "qwen3-30b-a3b"}


def load(task: str) -> list[dict]:
    """The rows of benchmarks/validation/<task>.toml and of any <task>-<more>.toml beside it (rows measured
    on machines we ran, or one source's batch, kept in their own file), in file-name order."""
    rows = []
    for path in sorted(VALIDATION.glob(f"{task}*.toml")):
        if path.stem != task and not path.stem.startswith(f"{task}-"):
            continue
        with open(path, "rb") as handle:
            rows.extend(tomllib.load(handle)["measurements"])
    return rows


ape = speedfit.error  # absolute percentage error, the one definition every scorer uses


# --- hardware from the tables -----------------------------------------------------------


def gpu_spec(row: dict):
    table = {spec.id: spec for spec in gpu_table()}
    if row.get("gpu_id"):
        return table.get(row["gpu_id"])
    hint = row.get("gpu_hint", "")
    if hint == "cpu" or "variant not stated" in hint:
        return None
    matches = find_gpus(hint)
    return matches[0] if len(matches) == 1 else None


def gpu_device(row: dict, backend: str) -> devices.Device | None:
    spec = gpu_spec(row)
    if spec is None:
        return None
    # Vulkan: what the run's own ggml_vulkan line states (vulkan_matrix_cores, vulkan_bf16), else what gpuready
    # assumes for the architecture (devices.VULKAN_MATRIX_CORES); BF16 matrix shapes only where the line says bf16: 1.
    stated = row.get("vulkan_matrix_cores")
    matrix_cores = (stated.lower() != "none") if stated else devices.vulkan_matrix_cores(spec.vendor, spec.architecture)
    flops, flops_source = gpu_flops(spec)
    return devices.Device(kind="gpu", name=spec.name, backend=backend, usable_memory_bytes=spec.memory_bytes or None,
                      vendor=spec.vendor, flops_detail=devices.flops_detail(flops_source),
                      bandwidth_bytes_per_s=spec.bandwidth_bytes_per_s, flops=flops,
                      unified=spec.vendor == "apple", memory_type=spec.memory_type, vector_flops=spec.fp32_flops,
                      power_watts=power.watts if (power := power_table().gpu(spec.id)) else None,
                      matrix_cores=matrix_cores if backend == "vulkan" else None,
                      bf16_matrix=bool(row.get("vulkan_bf16")) and bool(matrix_cores) if backend == "vulkan" else None)


def gpu_flops(spec) -> tuple[float | None, str | None]:
    """The FP16 rate gpuready estimates with and where it came from: the table's, else for an Apple GPU the floor its
    probe derives from the core count (probes/apple.py gpu_flops: Apple publishes no TFLOPS for M3 and M4)."""
    if spec.vendor == "apple":
        return apple.gpu_flops(spec)
    flops = spec.fp16_flops or spec.fp32_flops
    return flops, f"table:{spec.id}" if flops else None


def vendor_class(device: devices.Device) -> str:
    """"intel" for an Intel GPU under Vulkan (gpuready's own test, text_estimate.is_intel_vulkan), else ""."""
    return "intel" if est.is_intel_vulkan(device) else ""


def counted_prompt_params(row: dict, model) -> float:
    """Parameters a row's prompt token multiplied through: the output token's own work too where its build predates
    llama.cpp PR #6122 (ALL_LOGITS_UNTIL); an undated row is taken as a later build."""
    if row.get("measured", "9999") < ALL_LOGITS_UNTIL:
        return est.matmul_params(model)
    return est.prompt_params(model)


def cublas_prompt(row: dict, family: str) -> bool:
    """Whether a CUDA row's quantised prompt ran dequantise-to-FP16 + cuBLAS (CUBLAS_PROMPT_UNTIL)."""
    if row["backend"] != "cuda" or family == "float" or not row.get("measured"):
        return False
    spec = gpu_spec(row)
    return row["measured"] < CUBLAS_PROMPT_UNTIL and spec is not None and spec.architecture not in PRE_VOLTA


def cpu_device(row: dict) -> devices.Device | None:
    known = CPU_SPECS.get(row.get("cpu_hint", ""))
    if known is None:
        return None
    name, cores, features = known
    bandwidth = stated_bandwidth(row)
    if bandwidth is None:
        platform = match_cpu(name)
        if platform is None:
            return None
        bandwidth = platform.bandwidth_bytes_per_s
        if name.startswith("Apple "):
            # What gpuready itself assumes for Apple CPU cores (gpuready/devices.py).
            bandwidth = int(bandwidth * APPLE_CPU_BANDWIDTH_SHARE)
    used = min(cores, row["threads"]) if row.get("threads") else cores
    return devices.Device(kind="cpu", name=name, backend="cpu", usable_memory_bytes=None,
                      bandwidth_bytes_per_s=bandwidth, flops=devices.cpu_peak_flops(used, features, name),
                      fma_flops=devices.cpu_fma_flops(used, features, name))


def stated_bandwidth(row: dict) -> int | None:
    """Theoretical bandwidth of the memory a row states ("DDR5-6000 2ch": 2 x 6000 MT/s x 8 bytes), else None.

    What the machine really ran beats the platform's table maximum: a DDR5-3600 7950X has
    57.6 GB/s, not the 83.2 GB/s of DDR5-5200 that catalog/cpus.toml assumes.
    """
    match = MEMORY.match(row.get("memory", ""))
    if match is None:
        return None
    transfers_per_s, channels = int(match.group(1)) * 10**6, int(match.group(2))
    return channels * transfers_per_s * 8


# --- text generation ---------------------------------------------------------------------


def language_model(row: dict, catalog) -> LanguageModel | None:
    base = row["model"].split(" (")[0]
    base = ALIASES.get(base, base)
    if base in ARCHITECTURES:
        params, layers, hidden, heads, kv, vocab = ARCHITECTURES[base]
        model = LanguageModel(id=base, name=base, params=params, active_params=params, layers=layers,
                              hidden_size=hidden, attention_heads=heads, kv_heads=kv, head_dim=hidden // heads,
                              context_length=4096, quants=(), source="config.json", vocab_size=vocab,
                              tied_embeddings=False)
    else:
        model = catalog.get(base)
        if model is None or model.task != "text-generation":
            return None
    if row.get("params") and abs(row["params"] - model.params) / model.params > 0.02 and not model.is_moe:
        model = LanguageModel(**{**model.__dict__, "params": row["params"], "active_params": row["params"]})
    return model


def real_size(row: dict) -> float | None:
    # XiongjieDai's model_size_gb values (4.58 for Llama 3 8B Q4_K_M) are llama.cpp's GiB
    # figures (the same 4.58 GiB quantize's table lists, see catalog/quants.toml), so both are GiB.
    size = row.get("model_size_gib") or row.get("model_size_gb")
    return size * GIB if size else None


TEST = re.compile(r"^(tg|pp)(\d*)(?:@d(\d+))?$")


def test_shape(row: dict) -> tuple[str, int, int]:
    """(kind, tokens, depth) of a row's test: "tg128@d4096" -> ("generation", 128, 4096); unstated counts: 128."""
    match = TEST.match(row["test"].replace(" ", ""))
    kind = "generation" if match.group(1) == "tg" else "prompt"
    return kind, int(match.group(2) or 128), int(match.group(3) or row.get("depth", 0))


def device_key(row: dict, device: devices.Device) -> str:
    return f"cpu: {device.name}" if device.kind == "cpu" else (row.get("gpu_id") or device.name)


def source_key(row: dict) -> str:
    return row["source"].split(" (")[0].split("#")[0].strip()


def text_generation(catalog, out: list[str]) -> None:
    groups: dict[tuple[str, str], list[float]] = defaultdict(list)
    memory_errors: list[float] = []
    forks: dict[tuple[str, str], list[tuple[float, float]]] = defaultdict(list)
    cpu_rows: dict[str, list[tuple]] = defaultdict(list)
    gen_rows: list[speedfit.GenRow] = []
    prompt_rows: list[speedfit.PromptRow] = []
    baseline: list[float] = []
    skipped = defaultdict(int)
    derived: set[str] = set()  # GPUs scored at the FLOPS gpuready derives, the table giving none (Apple M3, M4)
    for row in load("text-generation"):
        if row.get("superseded"):
            # A before/after table of a merged change: the "before" build is code no release runs any more.
            skipped["superseded by a merged change in the same table"] += 1
            continue
        if row.get("host"):
            # A GPU behind a single-board computer: its per-token host work (graph building, launches) is not modelled.
            skipped["GPU behind a Raspberry Pi or other weak host (host work not modelled)"] += 1
            continue
        kind, tokens, depth = test_shape(row)
        backend = row["backend"]
        model = language_model(row, catalog)
        if model is None:
            skipped["model not known"] += 1
            continue
        device = cpu_device(row) if backend == "cpu" else gpu_device(row, backend)
        if device is None:
            skipped["hardware not in the tables"] += 1
            continue
        size = real_size(row)
        quant_id = row["quant"].split(" (")[0]
        quant = catalog.quants.get(quant_id)
        if size and quant and quant.id not in ("MXFP4",):
            estimated, _ = est.weights_bytes(model, quant)
            memory_errors.append(ape(estimated, size))
        if size is None and quant is None:
            skipped["quantisation unknown and no file size"] += 1
            continue
        if kind == "prompt" and not device.flops:
            skipped["no FLOPS figure for the hardware"] += 1
            continue
        if kind == "prompt" and depth:
            skipped["prompt at depth (attention cost not modelled)"] += 1
            continue
        weights = int(size) if size else est.weights_bytes(model, quant)[0]
        # Generating N tokens after a D-token prompt reads, on average, the KV cache of D + N/2 tokens.
        kv_read = est.kv_cache_bytes(model, depth + tokens // 2)
        memory = est.MemoryBreakdown(weights, kv_read, 0, 0)
        gpu = device if device.kind == "gpu" else None
        speed = est.speed(model, memory, depth + tokens // 2, gpu, device if gpu is None else cpu_placeholder(),
                          1.0 if gpu else 0.0, quant_id)
        predicted = speed.generation_tokens_per_s_full_context if kind == "generation" else speed.prompt_tokens_per_s
        where = "Apple" if backend == "metal" else ("CPU" if backend == "cpu" else "GPU")
        family = est.quant_family(quant_id)
        if device.flops_detail:  # the rate gpuready derives where the table states none (gpu_flops)
            derived.add(device_key(row, device))
        bytes_read = est.weights_read_bytes(model, weights) + kv_read
        # A prompt token's work: 2 x the parameters it multiplies through; the output token's own only where the
        # build ran it for every token (ALL_LOGITS_UNTIL), and what it would add kept for the report's comparison.
        counted = counted_prompt_params(row, model)
        work = 2 * counted
        # Vulkan without (BF16) matrix cores: the scalar shader at the vector rate (est.vulkan_rate).
        bf16 = est.is_bf16(quant_id)
        vector_share = est.vulkan_rate(device, bf16)
        if kind == "generation":
            implied = row["tokens_per_s"] * bytes_read / device.bandwidth_bytes_per_s
        else:
            implied = row["tokens_per_s"] * work / (device.flops * vector_share)
        fork = next((name for name in FORKS if name in row.get("implementation", "")), None)
        if fork:
            forks[(kind, fork)].append((ape(predicted, row["tokens_per_s"]), implied))
            continue
        groups[(kind, where)].append(ape(predicted, row["tokens_per_s"]))
        if kind == "generation":
            gen_rows.append(speedfit.GenRow(backend, family, bytes_read / device.bandwidth_bytes_per_s, model.layers,
                                            1 / row["tokens_per_s"], device_key(row, device), source_key(row),
                                            "hbm" if "HBM" in (device.memory_type or "") else "", model.is_moe,
                                            f"{model.id} {quant_id}" if depth == 0 else "",
                                            est.matmul_params(model) / device.unpack_flops if device.unpack_flops else 0.0,
                                            known_s=est.padded_expert_seconds(model, device, bf16),
                                            vendor_class=vendor_class(device),
                                            kv_s=kv_read / device.bandwidth_bytes_per_s, depth=depth,
                                            label=f"{model.id} {quant_id}"))
            if device.kind == "gpu" and not model.is_moe:
                baseline.append(ape(0.72 * device.bandwidth_bytes_per_s / weights, row["tokens_per_s"]))
        else:
            prompt_family = est.prompt_kernel_family(family)
            prompt_rows.append(speedfit.PromptRow(backend, prompt_family, implied, device_key(row, device), source_key(row),
                                                  work / (device.flops * vector_share), work / 1e12, f"{model.id} {quant_id}",
                                                  GEFORCE_FULL_RATE if est.is_geforce_rtx(device) and vector_share == 1.0
                                                  else 1.0, model.is_moe,
                                                  work / device.power_watts if device.power_watts else 0.0,
                                                  vendor_class=vendor_class(device), cublas=cublas_prompt(row, family),
                                                  output_share=est.matmul_params(model) / counted - 1))
        if backend == "cpu":
            cpu_rows[kind].append((row["cpu_hint"], row["model"].split(" (")[0], quant_id, row["test"],
                                   row.get("threads"), device.bandwidth_bytes_per_s, "memory" if stated_bandwidth(row) else "table",
                                   row["tokens_per_s"], implied))
    out.append("## Text generation (llama.cpp)\n")
    speed_report.speed_model_report(gen_rows, prompt_rows, baseline, out, FITS, derived)
    out.append("### In-sample errors of gpuready's committed constants\n")
    out.append("| speed | hardware | rows | median error | worst error |\n|---|---|---:|---:|---:|")
    for (kind, where), errors in sorted(groups.items()):
        out.append(f"| {kind} | {where} | {len(errors)} | {statistics.median(errors):.0f}% | {max(errors):.0f}% |")
    out.append(f"\nSkipped: {dict(sorted(skipped.items()))}.\n")
    out.append("Weights memory (parameters x bits per weight from catalog/quants.toml) against the real file size the row "
               f"reports: {len(memory_errors)} rows, median error {statistics.median(memory_errors):.1f}%, "
               f"worst {max(memory_errors):.1f}%.\n")
    cpu_table(cpu_rows, forks, out)


def cpu_table(cpu_rows: dict[str, list[tuple]], forks: dict[tuple[str, str], list[tuple[float, float]]], out: list[str]) -> None:
    """Every fitted CPU row with the efficiency it implies, and the fork rows kept out of the fit."""
    out.append("CPU rows in the fit (mainline llama.cpp; bandwidth from the row's stated memory where it gives one, "
               "else catalog/cpus.toml):\n")
    out.append("| speed | CPU | model | quant | test | threads | GB/s (from) | measured t/s | implied efficiency |\n"
               "|---|---|---|---|---|---:|---:|---:|---:|")
    for kind in sorted(cpu_rows):
        for cpu, model, quant, test, threads, bandwidth, origin, measured, implied in sorted(cpu_rows[kind], key=lambda r: r[-1]):
            out.append(f"| {kind} | {cpu} | {model} | {quant} | {test} | {threads or 'all'} | {bandwidth / 1e9:.1f} ({origin}) "
                       f"| {measured} | {implied:.2f} |")
    out.append("\nFork rows, scored against the same constants but not fitted (faster CPU kernels than mainline):\n")
    out.append("| speed | implementation | rows | median error | implied efficiency, median |\n|---|---|---:|---:|---:|")
    for (kind, fork), values in sorted(forks.items()):
        errors, implied = zip(*values)
        out.append(f"| {kind} | {fork} | {len(values)} | {statistics.median(errors):.0f}% | {statistics.median(implied):.2f} |")
    out.append("")


def cpu_placeholder() -> devices.Device:
    return devices.Device("cpu", "unused", "cpu", None, 1.0, None)


# --- split placements ---------------------------------------------------------------------


def split_rows() -> list[dict]:
    with open(VALIDATION / "split-placement.toml", "rb") as handle:
        return tomllib.load(handle)["measurements"]


def split_prediction(row: dict, catalog) -> tuple[float, float] | None:
    """gpuready's speed for a split row and the band a verdict states with it: its generation (text_estimate.speed
    with the row's experts in system memory) or its prompt (text_estimate.host_prompt_seconds at the row's
    micro-batch, from pinned memory where the row ran --no-mmap). Nothing is fitted to these rows."""
    model = catalog.get(row["model"])
    gpu = gpu_device(row, row["backend"])
    if model is None or gpu is None:
        return None
    weights = row["model_size_gib"] * 2**30
    layers = row.get("cpu_expert_layers", 0)
    on_gpu = split_gpu_fraction(row, model)
    memory = est.MemoryBreakdown(int(weights), 0, 0, 0)
    if row["test"].startswith("pp"):
        rate = devices.HOST_TO_GPU_PINNED_BYTES_PER_S if row["host_copy"] == "pinned" else devices.HOST_TO_GPU_BYTES_PER_S
        seconds = est.host_prompt_seconds(model, weights, gpu, 1.0 if layers else 1.0 - on_gpu, layers,
                                          est.quant_family(row["quant"]), ubatch=row["ubatch"], copy_bytes_per_s=rate)
        band = est.speed(model, memory, 0, gpu, cpu_placeholder(), on_gpu, row["quant"], layers).prompt_uncertainty
        return (1 / seconds, band) if seconds else None
    cpu = cpu_device(row)
    if cpu is None:
        return None
    speed = est.speed(model, memory, 0, gpu, cpu, on_gpu, row["quant"], layers)
    return (speed.generation_tokens_per_s, speed.uncertainty) if speed else None


def split_gpu_fraction(row: dict, model) -> float:
    """The share of a row's layers on the GPU: all of them for an expert split, else -ngl's, which counts the output
    layer as one (llama.cpp's i_gpu_start = n_layer + 1 - n_gpu_layers: -ngl N keeps N - 1 repeating layers there)."""
    if "gpu_layers" not in row:
        return 1.0
    return min(1.0, max(0.0, (row["gpu_layers"] - 1) / model.layers))


def split_words(row: dict, model) -> str:
    """Where a split row's weights were: 'experts of 31 layers' or '33 of 64 layers'."""
    if row.get("cpu_expert_layers"):
        return f"experts of {row['cpu_expert_layers']} layers"
    return f"{model.layers - round(split_gpu_fraction(row, model) * model.layers)} of {model.layers} layers"


def in_band(predicted: float, measured: float, band: float) -> bool:
    """Whether a measurement is inside the band as a verdict words it (band_words): +/-band of the measurement below
    100%, and from 100% up "within (1 + band)x", a factor either way."""
    if band >= 1:
        return max(predicted / measured, measured / predicted) <= 1 + band
    return abs(predicted - measured) <= band * measured


def split_placements(catalog, out: list[str]) -> None:
    rows = split_rows()
    scored = [(row, split_prediction(row, catalog)) for row in rows]
    out += ["", "## Split placements (out of sample)", "",
            "A model too big for the GPU, placed as llama.cpp places it (benchmarks/validation/split-placement.toml): a "
            "mixture of experts keeps every layer on the GPU and the routed experts of some layers in system memory "
            "(--fit, --n-cpu-moe); a generated token is the GPU's part plus the CPU's (the generation fit's constants), "
            "a prompt token is the GPU's compute for every layer plus its share of copying the system-memory experts to "
            "the GPU once per micro-batch (llama.cpp's op offload; 12.9 GB/s from pageable memory, 23.9 GB/s pinned "
            "with --no-mmap, a PCIe 4.0 x16 microbenchmark). No constant is fitted to these rows: every error is a "
            "prediction's.", "",
            "| device | model | in system memory | micro-batch | copies | test | measured | gpuready | error | in its band |",
            "|---|---|---:|---:|---|---|---:|---:|---:|---|"]
    errors: dict[str, list[tuple[float, bool]]] = defaultdict(list)
    for row, found in scored:
        if found is None:
            continue
        predicted, band = found
        kind = "prompt" if row["test"].startswith("pp") else "generation"
        miss = ape(predicted, row["tokens_per_s"])
        hit = in_band(predicted, row["tokens_per_s"], band)
        errors[kind].append((miss, hit))
        out.append(f"| {row['hardware'].split(' + ')[0].split(' (')[0]} | {row['model']} {row['quant']} | "
                   f"{split_words(row, catalog.get(row['model']))} | {row['ubatch']} | {row['host_copy']} | {row['test']} | "
                   f"{row['tokens_per_s']:,.1f} | {predicted:,.1f} | {predicted / row['tokens_per_s'] - 1:+.0%} | "
                   f"{'yes' if hit else 'no'} ({band_words(band)}) |")
    out += ["", "| speed | rows | devices | median error | worst | inside the stated band |", "|---|---:|---:|---:|---:|---:|"]
    for kind in ("generation", "prompt"):
        found = errors[kind]
        devices_seen = {row["gpu_id"] for row, result in scored if result is not None
                        and row["test"].startswith("pp") == (kind == "prompt")}
        if found:
            misses = [miss for miss, _ in found]
            inside = sum(hit for _, hit in found)
            out.append(f"| {kind} | {len(found)} | {len(devices_seen)} | {statistics.median(misses):.1f}% | "
                       f"{max(misses):.0f}% | {inside} of {len(found)} |")
    out += ["", "Generation: gpt-oss-120b lands within 3% on both machines that ran it; Qwen3-30B-A3B comes out 26-41% "
            "slow on the Quadro RTX 5000 machine, and there the faster memory clock raised the measured speed 16-21% "
            "but gpuready's only 5-8%: a CPU layer holding only experts is charged a whole CPU layer's fixed cost and "
            "unpacking (fitted on CPU-only rows), which the measurements there do not bear out. A dense "
            "model's prompt split by layers lands within 8 to 21% on two GPUs (Qwen2.5 32B, ik_llama.cpp rows: the "
            "fork's offload rule for dense layers is mainline's). The Quadro's prompts come out 50-81% fast: its "
            "PCIe 3.0 x16 link (not in its table row) copies slower than the PCIe 4.0 rate assumed, and the rest "
            "of the gap is the GPU's own prompt compute. A mixture of experts' prompt "
            "(gpt-oss-120b) comes out 2-3x slow at 256 to 2,048-token micro-batches: gpuready copies every expert a uniform router "
            "would use (practically all of them from 256 tokens on), and llama.cpp copies only the experts the "
            "micro-batch used (PR #15346). At the copy rates above these rows imply a third to two thirds of "
            "gpt-oss-120b's experts a micro-batch, for llama-bench's prompts of random token ids. The prompt figures "
            "are therefore a floor for such prompts; how many experts real prompts use is not measured here. A band is a "
            "share of the measurement, here as everywhere, so an estimate 2-3x below it still falls inside +/-92%: the "
            "prompt rows' coverage says little.", ""]


# --- image generation --------------------------------------------------------------------


def image_generation(catalog, out: list[str]) -> None:
    score_image.report(load("image-generation"), catalog, gpu_device, source_key, FITS, out)


def report() -> str:
    """The whole accuracy report as Markdown (and FITS filled in)."""
    catalog = load_catalog()
    out = ["# Estimator accuracy", "",
           "Generated by `python benchmarks/score_estimator.py`: every row of benchmarks/validation/*.toml whose hardware "
           "is in the tables, through gpuready's estimators on hypothetical hardware built from catalog/gpus.toml "
           "(and catalog/cpus.toml for CPU rows). Errors are absolute percentage errors of the estimate against the "
           "measurement. Text-generation speeds are scored by cross-validation (fit on the other devices or "
           "publications, predict the held-out one) beside the in-sample figures; `python benchmarks/write_constants.py` "
           "copies the fit into gpuready/tasks/text_estimate.py. Image generation, speech and document search are cross-validated the same way (benchmarks/score_image.py, benchmarks/score_speech.py, benchmarks/score_search.py).", ""]
    text_generation(catalog, out)
    split_placements(catalog, out)
    image_generation(catalog, out)
    score_speech.report(SimpleNamespace(load=load, cpu_device=cpu_device, gpu_device=gpu_device, device_key=device_key,
                                        source_key=source_key, CPU_SPECS=CPU_SPECS, FITS=FITS), catalog, out)
    out += score_search.section(catalog, load("document-search"), FITS)
    return "\n".join(out)


def constants_text() -> str:
    """The fitted speed constants as the Python literals gpuready/tasks/text_estimate.py holds (--constants)."""
    report()
    tables: dict[str, dict[str, float]] = defaultdict(dict)
    for (name, key), (fitted, _) in FITS.items():
        if name == "LAYER_SECONDS (microseconds)":
            tables["LAYER_SECONDS"][key] = f"{fitted:.1f}e-6"
        elif name == "PROMPT_SECONDS_PER_TFLOP (milliseconds)":
            tables["PROMPT_SECONDS_PER_TFLOP"][key] = f"{fitted:.2f}e-3"
        elif name == "PROMPT_JOULES_PER_FLOP (picojoules)":
            tables["PROMPT_JOULES_PER_FLOP"][key] = f"{fitted:.4f}e-12"
        elif name in ("MOE_LAYER_FACTOR", "PROMPT_GEFORCE_RATE", "PROMPT_MOE_EFFICIENCY", "KV_READ_EXTRA"):
            tables[name] = f"{fitted:.2f}"
        elif name in ("BANDWIDTH_EFFICIENCY", "QUANT_FAMILY_EFFICIENCY", "COMPUTE_EFFICIENCY", "PROMPT_EFFICIENCY", "UNPACK_OPS_PER_WEIGHT",
                      "PROMPT_FAMILY_EFFICIENCY", "SPEED_BAND", "PROMPT_BAND", "QUANT_FAMILY_BAND", "PROMPT_FAMILY_BAND"):
            tables[name][key] = f"{fitted:.2f}"
    return "\n".join(f"{name} = {values}" if isinstance(values, str) else
                     f"{name} = {{" + ", ".join(f'"{k}": {v}' for k, v in sorted(values.items())) + "}"
                     for name, values in sorted(tables.items()))


def main() -> int:
    print(constants_text() if "--constants" in sys.argv[1:] else report())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
