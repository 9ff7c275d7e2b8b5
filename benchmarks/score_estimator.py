#!/usr/bin/env python3
"""Score gpuready's estimators against the published measurements in benchmarks/validation/.

Each measured row becomes hypothetical hardware built from the GPU table (catalog/gpus.toml:
the row's gpu_id, else a unique gpuready.tables.find_gpus match of its gpu_hint) or, for
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

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gpuready import estimate as est  # noqa: E402
from gpuready.catalog import LanguageModel, Quant, load_catalog  # noqa: E402
from gpuready.devices import APPLE_CPU_BANDWIDTH_SHARE  # noqa: E402
from gpuready.tables import find_gpus, gpu_table, match_cpu  # noqa: E402
from gpuready.tasks import common, image, speech  # noqa: E402
from gpuready.tomlcompat import tomllib  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
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
}
# Forks with their own CPU kernels: ik_llama.cpp is markedly faster than mainline on CPU
# (its PR #54 table: 1.2-1.5x prompt, up to 1.23x generation on the same Ryzen 7950X), and
# llamafile ships its own tinyBLAS matmuls. gpuready estimates mainline llama.cpp (what
# Ollama, LM Studio and llama.cpp releases run), so fork rows are scored and shown but kept
# out of the CPU fit.
FORKS = ("ik_llama.cpp", "llamafile")
MEMORY = re.compile(r"^(?:LP)?DDR\d[A-Z]?-(\d{3,5}) (\d+)ch$")

# Base models the text-generation rows measure that are not in the catalogue, from each
# model's config.json on Hugging Face (meta-llama/Llama-2-7b-hf, Llama-2-13b-hf,
# Llama-2-70b-hf, Meta-Llama-3-8B, Meta-Llama-3-70B, mistralai/Mistral-7B-Instruct-v0.2,
# TinyLlama/TinyLlama-1.1B-intermediate-step-1431k-3T): params, layers, hidden, heads, KV heads, vocab.
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
    with open(VALIDATION / f"{task}.toml", "rb") as handle:
        return tomllib.load(handle)["measurements"]


def ape(estimated: float, measured: float) -> float:
    return abs(estimated - measured) / measured * 100


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


def gpu_device(row: dict, backend: str) -> est.Device | None:
    spec = gpu_spec(row)
    if spec is None:
        return None
    return est.Device(kind="gpu", name=spec.name, backend=backend, usable_memory_bytes=spec.memory_bytes or None,
                      bandwidth_bytes_per_s=spec.bandwidth_bytes_per_s, flops=spec.fp16_flops or spec.fp32_flops,
                      unified=spec.vendor == "apple", memory_type=spec.memory_type)


def cpu_device(row: dict) -> est.Device | None:
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
    return est.Device(kind="cpu", name=name, backend="cpu", usable_memory_bytes=None,
                      bandwidth_bytes_per_s=bandwidth, flops=est.cpu_peak_flops(used, features))


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
                              context_length=4096, quants=(), source="config.json", vocab_size=vocab)
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


def device_key(row: dict, device: est.Device) -> str:
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
    for row in load("text-generation"):
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
        bytes_read = weights * model.active_params / model.params + kv_read
        if kind == "generation":
            implied = row["tokens_per_s"] * bytes_read / device.bandwidth_bytes_per_s
        else:
            implied = row["tokens_per_s"] * 2 * model.active_params / device.flops
        fork = next((name for name in FORKS if name in row.get("implementation", "")), None)
        if fork:
            forks[(kind, fork)].append((ape(predicted, row["tokens_per_s"]), implied))
            continue
        groups[(kind, where)].append(ape(predicted, row["tokens_per_s"]))
        if kind == "generation":
            gen_rows.append(speedfit.GenRow(backend, family, bytes_read / device.bandwidth_bytes_per_s, model.layers,
                                            1 / row["tokens_per_s"], device_key(row, device), source_key(row),
                                            "hbm" if "HBM" in (device.memory_type or "") else "", model.is_moe,
                                            f"{model.id} {quant_id}" if depth == 0 else ""))
            if device.kind == "gpu" and not model.is_moe:
                baseline.append(ape(0.72 * device.bandwidth_bytes_per_s / weights, row["tokens_per_s"]))
        else:
            prompt_rows.append(speedfit.PromptRow(backend, family, implied, device_key(row, device), source_key(row),
                                                  2 * model.active_params / device.flops, 2 * model.active_params / 1e12,
                                                  f"{model.id} {quant_id}"))
        if backend == "cpu":
            cpu_rows[kind].append((row["cpu_hint"], row["model"].split(" (")[0], quant_id, row["test"],
                                   row.get("threads"), device.bandwidth_bytes_per_s, "memory" if stated_bandwidth(row) else "table",
                                   row["tokens_per_s"], implied))
    out.append("## Text generation (llama.cpp)\n")
    speed_model_report(gen_rows, prompt_rows, baseline, out)
    out.append("### In-sample errors of gpuready's committed constants\n")
    out.append("| speed | hardware | rows | median error | worst error |\n|---|---|---:|---:|---:|")
    for (kind, where), errors in sorted(groups.items()):
        out.append(f"| {kind} | {where} | {len(errors)} | {statistics.median(errors):.0f}% | {max(errors):.0f}% |")
    out.append(f"\nSkipped: {dict(sorted(skipped.items()))}.\n")
    out.append("Weights memory (parameters x bits per weight from catalog/quants.toml) against the real file size the row "
               f"reports: {len(memory_errors)} rows, median error {statistics.median(memory_errors):.1f}%, "
               f"worst {max(memory_errors):.1f}%.\n")
    cpu_table(cpu_rows, forks, out)


MIN_BAND_DEVICES = 3


def choose_terms(rows: list, cross_validate, fit_terms: tuple[str, ...]) -> tuple[dict, list[tuple[str, float, float]]]:
    """Start with every term; drop each one whose removal does not raise the held-out error.

    The held-out error is the mean of the leave-one-device-out and leave-one-source-out
    medians: a term stays only if it predicts new hardware and new publications better.
    """
    terms = {name: True for name in fit_terms}
    trials = []

    def lodo(chosen: dict) -> float:
        return (statistics.median(err for _, err in cross_validate(rows, "device", **chosen))
                + statistics.median(err for _, err in cross_validate(rows, "source", **chosen))) / 2

    best = lodo(terms)
    trials.append(("all terms", best, None))
    for name in fit_terms:
        without = {**terms, name: False}
        score = lodo(without)
        trials.append((f"without {name}", score, best))
        if score <= best:
            terms, best = without, score
    return terms, trials


def error_line(label: str, rows: int, devices: int, errors: list[float]) -> str:
    return f"| {label} | {rows} | {devices} | {statistics.median(errors):.1f}% | {max(errors):.0f}% |"


def speed_model_report(gen_rows: list, prompt_rows: list, baseline: list[float], out: list[str]) -> None:
    """Fit the generation and prompt models, cross-validate them, choose terms, derive bands; fill FITS."""
    gen_terms, gen_trials = choose_terms(gen_rows, speedfit.cross_validate_generation, ("layers", "families", "hbm", "moe"))
    # The prompt model in the generation model's form: seconds per token = (2 x active params / peak FLOPS) / e
    # + (2 x active params in TFLOP) x s, where s (seconds per TFLOP, the "layers" slot) is a backend's software
    # ceiling that no faster GPU lifts (an H100 reads a 7B prompt no faster than an RTX 4090 in these rows).
    legacy_pfit = speedfit.fit_prompt(prompt_rows, families=False)
    prompt_rows = [speedfit.GenRow(r.backend, r.family, r.ideal_s, r.tflop, r.ideal_s / r.implied, r.device, r.source,
                                   variant=r.variant) for r in prompt_rows]

    def prompt_cv(rows, key, ceiling=True, families=True):
        return speedfit.cross_validate_generation(rows, key, layers=ceiling, families=families, hbm=False, moe=False)

    prompt_terms, prompt_trials = choose_terms(prompt_rows, prompt_cv, ("ceiling", "families"))
    fit = speedfit.fit_generation(gen_rows, **gen_terms)
    pfit = speedfit.fit_generation(prompt_rows, layers=prompt_terms["ceiling"], families=prompt_terms["families"],
                                   hbm=False, moe=False)
    lodo = speedfit.cross_validate_generation(gen_rows, "device", **gen_terms)
    loso = speedfit.cross_validate_generation(gen_rows, "source", **gen_terms)
    inside = [(row, speedfit.error(speedfit.predict_generation(row, fit), 1 / row.measured_s)) for row in gen_rows]
    p_lodo = prompt_cv(prompt_rows, "device", **prompt_terms)
    p_loso = prompt_cv(prompt_rows, "source", **prompt_terms)
    p_inside = [(row, speedfit.error(speedfit.predict_generation(row, pfit), 1 / row.measured_s)) for row in prompt_rows]
    devices = {row.device for row in gen_rows}
    backends = sorted({row.backend for row in gen_rows})
    out.append("Every figure below is a prediction for hardware the constants were not fitted on, unless it says "
               "in-sample. Leave-one-device-out (LODO): fit on every other device, predict the held-out device's rows. "
               "Leave-one-source-out (LOSO): the same per publication (the row's source URL).\n")
    out.append("### Headline (cross-validated)\n")
    out.append("| task | rows | devices | backends | LODO median | LODO worst | LOSO median | LOSO worst | in-sample median |\n"
               "|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for task, rows, a, b, c in (("generation", gen_rows, lodo, loso, inside), ("prompt", prompt_rows, p_lodo, p_loso, p_inside)):
        ea, eb, ec = ([e for _, e in x] for x in (a, b, c))
        out.append(f"| {task} | {len(rows)} | {len({r.device for r in rows})} | {len({r.backend for r in rows})} | "
                   f"{statistics.median(ea):.1f}% | {max(ea):.0f}% | {statistics.median(eb):.1f}% | {max(eb):.0f}% | "
                   f"{statistics.median(ec):.1f}% |")
    e_gen = [e for _, e in lodo]
    e_pp = [e for _, e in p_lodo]
    coverage = [hit for _, _, hit in speedfit.band_coverage(lodo, "device", min_devices=MIN_BAND_DEVICES,
                                                             floor=est.SPEED_UNCERTAINTY["assumed"] * 100)]
    share = sum(coverage) / len(coverage)
    out.append("\nTargets (issue 10), leave-one-device-out:\n")
    out.append("| target | goal | measured | met |\n|---|---|---|---|")
    for label, goal, measured, met in (
        ("generation median", "<= 8%", f"{statistics.median(e_gen):.1f}%", statistics.median(e_gen) <= 8),
        ("generation worst", "<= 35%", f"{max(e_gen):.0f}%", max(e_gen) <= 35),
        ("generation devices / backends", ">= 30 / >= 3", f"{len(devices)} / {len(backends)}", len(devices) >= 30 and len(backends) >= 3),
        ("prompt median", "<= 15%", f"{statistics.median(e_pp):.1f}%", statistics.median(e_pp) <= 15),
        ("band coverage", "70-90%", f"{share:.0%}", 0.7 <= share <= 0.9),
    ):
        out.append(f"| {label} | {goal} | {measured} | {'yes' if met else 'no'} |")
    out.append("\nWhere a target is missed, the largest errors below say why: the worst generation rows are early-2024 "
               "Vulkan builds (RX 6700 XT, before and at PR #5835, since rewritten), a two-GPU Arc A770 Vulkan MoE run, "
               "two-thread and laptop CPU runs that cannot draw the platform's bandwidth, and the M1 Max's slow K-quant "
               "kernels. Prompt speed mixes publications whose FLOPS columns mean different things (GeForce FP32-accumulate "
               "vs workstation full-rate tensor figures) and software from Dec 2023 to 2026; its leave-one-source-out error "
               "is the honest measure of how well it transfers.\n")
    out.append(f"\nBaseline, one line (0.72 x peak bandwidth / file size, GPU rows of dense models, {len(baseline)} rows): "
               f"median {statistics.median(baseline):.1f}%, worst {max(baseline):.0f}%.\n")
    for task, a, b, c in (("Generation", lodo, loso, inside), ("Prompt processing", p_lodo, p_loso, p_inside)):
        out.append(f"### {task} per backend\n")
        out.append("| backend | rows | devices | LODO median | LODO worst | LOSO median | LOSO worst | in-sample median | in-sample worst |\n"
                   "|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        for backend in sorted({row.backend for row, _ in a}):
            ea, eb, ec = ([e for r, e in x if r.backend == backend] for x in (a, b, c))
            n_dev = len({r.device for r, _ in a if r.backend == backend})
            out.append(f"| {backend} | {len(ea)} | {n_dev} | {statistics.median(ea):.1f}% | {max(ea):.0f}% | "
                       f"{statistics.median(eb):.1f}% | {max(eb):.0f}% | {statistics.median(ec):.1f}% | {max(ec):.0f}% |")
        out.append("")
        out.append(f"{task} per quant family (LODO):\n")
        out.append("| family | rows | median | worst |\n|---|---:|---:|---:|")
        for family in sorted({row.family for row, _ in a}):
            ea = [e for r, e in a if r.family == family]
            out.append(f"| {family} | {len(ea)} | {statistics.median(ea):.1f}% | {max(ea):.0f}% |")
        out.append("")
    time_to_first_token(gen_rows, prompt_rows, gen_terms, prompt_terms, out)
    out.append("### Which terms stay\n")
    out.append("A term is kept only if dropping it raises the held-out error, the mean of the leave-one-device-out and "
               "leave-one-source-out medians (tried in order; a dropped term's constants are neutral: efficiency 1.0, "
               "seconds 0).\n")
    out.append("| model | variant | held-out error | with the term |\n|---|---|---:|---:|")
    for task, trials in (("generation", gen_trials), ("prompt", prompt_trials)):
        for label, score, best in trials:
            out.append(f"| {task} | {label} | {score:.2f}% | {'-' if best is None else f'{best:.2f}%'} |")
    kept = [name for name, on in {**gen_terms}.items() if on]
    out.append(f"\nGeneration keeps: {', '.join(kept) or 'bandwidth only'}; prompt keeps: "
               f"{', '.join(name for name, on in prompt_terms.items() if on) or 'compute only'}.\n")
    bands(lodo, out)
    out.append("### Fitted constants (gpuready/estimate.py holds these, rounded)\n")
    out.append("| constant | key | fitted | in estimate.py |\n|---|---|---:|---:|")
    for backend in sorted(fit.efficiency):
        record(out, "BANDWIDTH_EFFICIENCY", backend, fit.efficiency[backend], est.BANDWIDTH_EFFICIENCY.get(backend))
        record(out, "LAYER_SECONDS (microseconds)", backend, fit.layer_s[backend] * 1e6,
               est.LAYER_SECONDS[backend] * 1e6 if backend in est.LAYER_SECONDS else None)
    record(out, "MOE_LAYER_FACTOR", "all", fit.moe_layer_factor, est.MOE_LAYER_FACTOR)
    for family in sorted(fit.family):
        record(out, "QUANT_FAMILY_EFFICIENCY", family, fit.family[family], est.QUANT_FAMILY_EFFICIENCY.get(family))
    for backend in sorted(pfit.efficiency):
        record(out, "PROMPT_EFFICIENCY", backend, pfit.efficiency[backend], est.PROMPT_EFFICIENCY.get(backend))
        record(out, "PROMPT_SECONDS_PER_TFLOP (milliseconds)", backend, pfit.layer_s[backend] * 1e3,
               est.PROMPT_SECONDS_PER_TFLOP[backend] * 1e3 if backend in est.PROMPT_SECONDS_PER_TFLOP else None)
    for family in sorted(pfit.family):
        record(out, "PROMPT_FAMILY_EFFICIENCY", family, pfit.family[family], est.PROMPT_FAMILY_EFFICIENCY.get(family))
    out.append("\nCOMPUTE_EFFICIENCY (the one-term median of each backend's prompt rows) stays the backend scale the "
               "image and speech estimators use; the language-model prompt uses PROMPT_EFFICIENCY and "
               "PROMPT_SECONDS_PER_TFLOP. Efficiencies above 1 mean the FLOPS column understates what the kernels "
               "use: GeForce rows list the FP32-accumulate tensor rate, half the FP16-accumulate rate.\n")
    out.append("| constant | key | fitted | in estimate.py |\n|---|---|---:|---:|")
    for backend in sorted(legacy_pfit.efficiency):
        if backend == "sycl":  # one row of Intel's own build: too thin to rescale image and speech by
            continue
        record(out, "COMPUTE_EFFICIENCY", backend, legacy_pfit.efficiency[backend], est.COMPUTE_EFFICIENCY.get(backend))
    out.append("\nsycl has no validation rows: its BANDWIDTH_EFFICIENCY, COMPUTE_EFFICIENCY and LAYER_SECONDS are "
               "unfitted guesses, every sycl basis says so, and its band is the widest (+/-50%).\n")
    worst = sorted(lodo, key=lambda pair: -pair[1])[:8]
    out.append("Largest held-out generation errors (LODO):\n")
    out.append("| device | backend | family | measured t/s | predicted t/s | error |\n|---|---|---|---:|---:|---:|")
    for row, err in worst:
        train = [r for r in gen_rows if r.device != row.device]
        predicted = speedfit.predict_generation(row, speedfit.fit_generation(train, **gen_terms))
        out.append(f"| {row.device} | {row.backend} | {row.family} | {1 / row.measured_s:.1f} | {predicted:.1f} | {err:.0f}% |")
    out.append("")


def time_to_first_token(gen_rows: list, prompt_rows: list, gen_terms: dict, prompt_terms: dict, out: list[str]) -> None:
    """Score time to first token (512 prompt tokens + one generated token) where a publication gives both speeds.

    Each pair's device is held out of both fits (generation and prompt), as in the LODO tables.
    """
    generation = {(r.device, r.source, r.variant): r for r in gen_rows if r.variant}
    pairs = [(p, generation[(p.device, p.source, p.variant)]) for p in prompt_rows
             if (p.device, p.source, p.variant) in generation]
    errors = []
    for device in sorted({p.device for p, _ in pairs}):
        gen_fit = speedfit.fit_generation([r for r in gen_rows if r.device != device], **gen_terms)
        prompt_fit = speedfit.fit_generation([r for r in prompt_rows if r.device != device], layers=prompt_terms["ceiling"],
                                             families=prompt_terms["families"], hbm=False, moe=False)
        for prompt, gen in ((p, g) for p, g in pairs if p.device == device):
            measured = 512 * prompt.measured_s + gen.measured_s
            predicted = 512 / speedfit.predict_generation(prompt, prompt_fit) + 1 / speedfit.predict_generation(gen, gen_fit)
            errors.append(abs(predicted - measured) / measured * 100)
    if not errors:
        return
    out.append("### Time to first token\n")
    out.append("Seconds from a 512-token prompt to the first generated token (Speed.time_to_first_token_s in "
               f"gpuready/estimate.py), on the {len(errors)} device/model/quant/publication combinations that give both a "
               "prompt and a generation speed, each device held out of both fits.\n")
    out.append(f"| rows | devices | LODO median | LODO worst |\n|---:|---:|---:|---:|\n| {len(errors)} | "
               f"{len({p.device for p, _ in pairs})} | {statistics.median(errors):.1f}% | {max(errors):.0f}% |\n")


def record(out: list[str], name: str, key: str, fitted: float, constant: float | None) -> None:
    FITS[(name, key)] = (fitted, constant)
    shown = "-" if constant is None else f"{constant:.2f}"
    out.append(f"| {name} | {key} | {fitted:.2f} | {shown} |")


def bands(lodo: list, out: list[str]) -> None:
    """SPEED_BAND per backend (80th percentile of its LODO errors) and the coverage of bands fitted without each device."""
    out.append("### Bands\n")
    out.append("Each speed's +/- is its backend's 80th percentile of leave-one-device-out generation errors. Coverage: "
               "for every row, the band computed from the other devices' held-out errors only, and whether the row's "
               "own held-out error falls inside it (target: about 80%, within 70-90%).\n")
    covered = speedfit.band_coverage(lodo, "device", min_devices=MIN_BAND_DEVICES,
                                     floor=est.SPEED_UNCERTAINTY["assumed"] * 100)
    pooled = speedfit.percentile([e for _, e in lodo], 0.8) / 100
    out.append(f"A backend measured on fewer than {MIN_BAND_DEVICES} devices gets at least the pooled band of all rows "
               f"(+/-{pooled:.0%}) and at least the +/-{est.SPEED_UNCERTAINTY['assumed']:.0%} of an assumed bandwidth: "
               "a percentile of one or two devices' errors says little.\n")
    out.append("| backend | rows | devices | band (SPEED_BAND) | coverage |\n|---|---:|---:|---:|---:|")
    for backend in sorted({row.backend for row, _ in lodo}):
        errors = [e for r, e in lodo if r.backend == backend]
        band = speedfit.percentile(errors, 0.8) / 100
        devices = len({r.device for r, _ in lodo if r.backend == backend})
        if devices < MIN_BAND_DEVICES:
            band = max(band, pooled, est.SPEED_UNCERTAINTY["assumed"])
        record_band(backend, band)
        inside = [hit for r, _, hit in covered if r.backend == backend]
        out.append(f"| {backend} | {len(errors)} | {devices} | +/-{band:.0%} | {sum(inside) / len(inside):.0%} |")
    total = [hit for _, _, hit in covered]
    out.append(f"| all | {len(total)} | {len({r.device for r, _ in lodo})} | | {sum(total) / len(total):.0%} |")
    families = sorted({row.family for row, _ in lodo})
    out.append("\nCoverage per quant family: " + ", ".join(
        f"{family} {sum(h for r, _, h in covered if r.family == family) / len([1 for r, _, _ in covered if r.family == family]):.0%}"
        for family in families) + ".\n")


def record_band(backend: str, band: float) -> None:
    FITS[("SPEED_BAND", backend)] = (band, est.SPEED_BAND.get(backend))


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


def cpu_placeholder() -> est.Device:
    return est.Device("cpu", "unused", "cpu", None, 1.0, None)


# --- image generation --------------------------------------------------------------------

IMAGE_MODELS = {"sd-1.5": "sd-1.5", "sd-1.4": "sd-1.5", "sdxl": "sdxl", "sdxl-turbo": "sdxl-turbo", "flux.1-dev": "flux.1-dev"}
IMAGE_BACKENDS = {"cuda": "cuda", "coreml-gpu": "metal", "coreml-all": "metal"}


def image_generation(catalog, out: list[str]) -> None:
    errors: dict[str, list[float]] = defaultdict(list)
    observed: dict[tuple[str, str], list[float]] = defaultdict(list)
    skipped = defaultdict(int)
    whole: dict[str, list[float]] = defaultdict(list)
    for row in load("image-generation"):
        model = catalog.get(IMAGE_MODELS.get(row["model"], "")) if row["model"] in IMAGE_MODELS else None
        backend = IMAGE_BACKENDS.get(row["backend"])
        if model is None or backend is None:
            skipped["model or backend not modelled"] += 1
            continue
        device = gpu_device(row, backend)
        if device is None or not device.flops:
            skipped["hardware not in the tables"] += 1
            continue
        width = row.get("width", model.resolution)
        height = row.get("height", model.resolution)
        step_s, _ = image.seconds_per_step(model, width, height, device)
        step_s *= row.get("batch", 1)
        ratio, _ = image.throughput_ratio(model, backend)
        if "iterations_per_s" in row:
            predicted, measured = 1 / step_s, row["iterations_per_s"]
            implied = measured / predicted * ratio
        else:
            # End-to-end rows: the denoising steps plus the once-per-image text encoding and VAE decode.
            once, _ = image.once_per_image_seconds(model, width, height, device)
            once *= row.get("batch", 1)
            predicted, measured = 1 / (step_s * row["steps"] + once), 1 / row["seconds_per_image"]
            denoise = row["seconds_per_image"] - once
            if denoise <= 0:
                skipped["end-to-end row faster than its estimated encode + decode"] += 1
                continue
            implied = step_s * row["steps"] / denoise * ratio
            whole[f"{model.id} ({backend})"].append(ape(predicted, measured))
        errors[f"{model.architecture} ({backend})"].append(ape(predicted, measured))
        observed[(model.architecture, backend)].append(implied)
    out.append("## Image generation (steps per second of the denoiser)\n")
    out.append("| denoiser (backend) | rows | median error | worst error |\n|---|---:|---:|---:|")
    for key, values in sorted(errors.items()):
        out.append(f"| {key} | {len(values)} | {statistics.median(values):.0f}% | {max(values):.0f}% |")
    out.append(f"\nSkipped: {dict(skipped)}.\n")
    out.append("Seconds per image end to end (steps + text encoders + VAE decode at FP32 peak), the rows that time a "
               "whole image:\n")
    out.append("| model (backend) | rows | median error | worst error |\n|---|---:|---:|---:|")
    for key, values in sorted(whole.items()):
        out.append(f"| {key} | {len(values)} | {statistics.median(values):.0f}% | {max(values):.0f}% |")
    out.append("")
    out.append("Throughput ratio each row implies (measured / (peak FLOPS / FLOPs per step)), median:\n")
    out.append("| denoiser | backend | rows | fitted median | constant in tasks/image.py |\n|---|---|---:|---:|---:|")
    for (arch, backend), values in sorted(observed.items()):
        FITS[(f"THROUGHPUT_RATIO[{arch}]", backend)] = (statistics.median(values), image.THROUGHPUT_RATIO[arch].get(backend))
        constant = image.THROUGHPUT_RATIO[arch].get(backend, "scaled from cuda")
        constant = f"{constant:.2f}" if isinstance(constant, float) else constant
        out.append(f"| {arch} | {backend} | {len(values)} | {statistics.median(values):.2f} | {constant} |")
    out.append("")


# --- speech -------------------------------------------------------------------------------

WHISPER = {"whisper-large": "whisper-large-v3", "whisper-large-v2": "whisper-large-v3"}


def whisper_model(catalog, name: str):
    name = name.removesuffix(".en")
    return catalog.get(WHISPER.get(name, name))


def speech_rows(catalog, out: list[str]) -> None:
    encoder_errors: dict[str, list[float]] = defaultdict(list)
    realtime_errors: dict[str, list[float]] = defaultdict(list)
    observed: dict[str, list[float]] = defaultdict(list)
    decoder_observed: dict[str, list[float]] = defaultdict(list)
    skipped = defaultdict(int)
    for row in load("speech"):
        model = whisper_model(catalog, row["model"])
        backend = row["backend"]
        device = cpu_device(row) if backend == "cpu" else gpu_device(row, backend)
        if model is None:
            skipped["model not known"] += 1
            continue
        if device is None:
            skipped["hardware not in the tables"] += 1
            continue
        if "encode_ms" in row:
            predicted, _ = speech.encoder_seconds(model, device)
            measured = row["encode_ms"] / 1000
            efficiency, _ = common.encoder_efficiency(backend)
            encoder_errors[backend].append(ape(predicted, measured))
            observed[backend].append(predicted / measured * efficiency)
        elif row["implementation"] == "faster-whisper" and row.get("batch_size") == 1:
            variant = {"fp16": "fp16", "int8": "int8", "fp32": "fp32"}[row["precision"]]
            predicted, encode, _ = speech.stt_realtime(model, variant, device)
            measured = row["audio_seconds"] / row["wall_seconds"]
            realtime_errors[backend].append(ape(predicted, measured))
            decode = speech.WINDOW_SECONDS / measured - encode
            if decode <= 0:
                skipped["decoder fit: estimated encoder alone is slower than the measurement"] += 1
                continue
            per_token, _ = speech.decoder_seconds_per_token(model, variant, device)
            efficiency, _ = speech.decoder_efficiency(backend)
            decoder_observed[backend].append(per_token * speech.TOKENS_PER_WINDOW / decode * efficiency)
        else:
            skipped["implementation not modelled (openai/whisper, transformers, batched)"] += 1
    out.append("## Speech to text (Whisper)\n")
    out.append("| measure | backend | rows | median error | worst error |\n|---|---|---:|---:|---:|")
    for backend, values in sorted(encoder_errors.items()):
        out.append(f"| whisper.cpp encoder, one 30 s window | {backend} | {len(values)} | {statistics.median(values):.0f}% | {max(values):.0f}% |")
    for backend, values in sorted(realtime_errors.items()):
        out.append(f"| faster-whisper x real time, 13 min file | {backend} | {len(values)} | {statistics.median(values):.0f}% | {max(values):.0f}% |")
    out.append(f"\nSkipped: {dict(skipped)}.\n")
    out.append("Encoder efficiency each row implies, median (tasks/common.py ENCODER_EFFICIENCY):\n")
    out.append("| backend | rows | fitted median | constant |\n|---|---:|---:|---:|")
    for backend, values in sorted(observed.items()):
        FITS[("ENCODER_EFFICIENCY", backend)] = (statistics.median(values), common.ENCODER_EFFICIENCY.get(backend))
        out.append(f"| {backend} | {len(values)} | {statistics.median(values):.2f} | {common.ENCODER_EFFICIENCY.get(backend, '-')} |")
    out.append("\nDecoder bandwidth efficiency each faster-whisper row implies (time left after the estimated encoder), "
               "median (tasks/speech.py DECODER_EFFICIENCY):\n")
    out.append("| backend | rows | fitted median | constant |\n|---|---:|---:|---:|")
    for backend, values in sorted(decoder_observed.items()):
        FITS[("DECODER_EFFICIENCY", backend)] = (statistics.median(values), speech.DECODER_EFFICIENCY.get(backend))
        out.append(f"| {backend} | {len(values)} | {statistics.median(values):.2f} | {speech.DECODER_EFFICIENCY.get(backend, '-')} |")
    out.append("")


def report() -> str:
    """The whole accuracy report as Markdown (and FITS filled in)."""
    catalog = load_catalog()
    out = ["# Estimator accuracy", "",
           "Generated by `python benchmarks/score_estimator.py`: every row of benchmarks/validation/*.toml whose hardware "
           "is in the tables, through gpuready's estimators on hypothetical hardware built from catalog/gpus.toml "
           "(and catalog/cpus.toml for CPU rows). Errors are absolute percentage errors of the estimate against the "
           "measurement. Text-generation speeds are scored by cross-validation (fit on the other devices or "
           "publications, predict the held-out one) beside the in-sample figures; `python benchmarks/write_constants.py` "
           "copies the fit into gpuready/estimate.py. Image and speech constants are still in-sample medians.", ""]
    text_generation(catalog, out)
    image_generation(catalog, out)
    speech_rows(catalog, out)
    out += ["## Text to speech and document search", "",
            "No published measurements in benchmarks/validation yet: these estimates are unscored, and their "
            "uncertainty bands (+/-60% text to speech, +/-50% embedding) say so.", ""]
    return "\n".join(out)


def constants_text() -> str:
    """The fitted speed constants as the Python literals gpuready/estimate.py holds (--constants)."""
    report()
    tables: dict[str, dict[str, float]] = defaultdict(dict)
    for (name, key), (fitted, _) in FITS.items():
        if name == "LAYER_SECONDS (microseconds)":
            tables["LAYER_SECONDS"][key] = f"{fitted:.1f}e-6"
        elif name == "PROMPT_SECONDS_PER_TFLOP (milliseconds)":
            tables["PROMPT_SECONDS_PER_TFLOP"][key] = f"{fitted:.2f}e-3"
        elif name == "MOE_LAYER_FACTOR":
            tables[name] = f"{fitted:.2f}"
        elif name in ("BANDWIDTH_EFFICIENCY", "QUANT_FAMILY_EFFICIENCY", "COMPUTE_EFFICIENCY", "PROMPT_EFFICIENCY",
                      "PROMPT_FAMILY_EFFICIENCY", "SPEED_BAND"):
            tables[name][key] = f"{fitted:.2f}"
    return "\n".join(f"{name} = {values}" if isinstance(values, str) else
                     f"{name} = {{" + ", ".join(f'"{k}": {v}' for k, v in sorted(values.items())) + "}"
                     for name, values in sorted(tables.items()))


def main() -> int:
    print(constants_text() if "--constants" in sys.argv[1:] else report())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
