"""Real tokens/s from llama.cpp's own benchmark: run `llama-bench -o json` and read its output.

The JSON is an array with one object per test: ``n_prompt``/``n_gen`` say which (pp512 has
n_prompt 512 and n_gen 0; tg128 the reverse), ``samples_ts`` holds each repetition's tokens/s
(older builds give only ``avg_ts`` and ``stddev_ts``), ``backends`` and ``n_gpu_layers`` say
where it ran (llama.cpp tools/llama-bench/README.md, "Output formats").
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

from gpuready.bench.results import ModelSpeed
from gpuready.bench.stats import Spread, summarise

PROMPT_TOKENS = 512
GENERATED_TOKENS = 128
TIMEOUT_S = 900.0
# Backends that keep every layer on the CPU (llama-bench names BLAS and CPU-only builds so).
CPU_BACKENDS = {"cpu", "blas", ""}


class LlamaBenchError(ValueError):
    """llama-bench could not run, or its output is not what llama-bench writes."""


def _spread(row: dict) -> Spread:
    samples = row.get("samples_ts")
    if isinstance(samples, list) and samples and all(isinstance(s, (int, float)) for s in samples):
        return summarise([float(s) for s in samples])
    try:
        average, deviation = float(row["avg_ts"]), float(row.get("stddev_ts") or 0.0)
    except (KeyError, TypeError, ValueError):
        raise LlamaBenchError("a result has neither samples_ts nor avg_ts") from None
    return Spread(average - deviation, average, average + deviation, 1)


def placement(row: dict, layers: int) -> str:
    """Where llama-bench ran the model: cpu, split (some layers offloaded) or gpu."""
    backends = {b.strip().lower() for b in str(row.get("backends", "")).split(",")}
    layers_on_gpu = int(row.get("n_gpu_layers", 0))
    if backends <= CPU_BACKENDS or layers_on_gpu == 0:
        return "cpu"
    if layers_on_gpu < 0 or layers_on_gpu >= layers:
        # Every layer on the GPU, but weights kept in system memory by --n-cpu-moe or an -ot ...=CPU override: the
        # split placement gpuready estimates for a mixture of experts too big for the GPU.
        overrides = str(row.get("tensor_buft_overrides") or "")
        if _count(row.get("n_cpu_moe")) > 0 or re.search(r"=CPU\b", overrides):
            return "split"
        return "gpu"
    return "split"


def _count(value) -> int:
    """An integer field of llama-bench's JSON, 0 where absent or not an integer."""
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def parse(text: str) -> tuple[dict, dict | None]:
    """The tg and pp rows of a `llama-bench -o json` output (pp may be absent)."""
    try:
        rows = json.loads(text)
    except ValueError as error:
        raise LlamaBenchError(f"llama-bench output is not JSON: {error}") from None
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise LlamaBenchError("llama-bench JSON output should be an array of objects")
    generation = next((r for r in rows if r.get("n_gen", 0) > 0 and r.get("n_prompt", 0) == 0), None)
    prompt = next((r for r in rows if r.get("n_prompt", 0) > 0 and r.get("n_gen", 0) == 0), None)
    if generation is None:
        raise LlamaBenchError("llama-bench output has no text-generation (tg) result")
    return generation, prompt


def model_speed(text: str, model, quant: str) -> ModelSpeed:
    """A ModelSpeed for ``model`` (a LanguageModel read from the same GGUF file) from llama-bench's JSON."""
    generation, prompt = parse(text)
    build = generation.get("build_commit") or generation.get("build_number") or "?"
    filename = Path(str(generation.get("model_filename", "?"))).name
    return ModelSpeed(
        quant=quant,
        layers=model.layers,
        hidden_size=model.hidden_size,
        kv_heads=model.kv_heads,
        head_dim=model.head_dim,
        params=model.params,
        placement=placement(generation, model.layers),
        generation_tokens_per_s=_spread(generation),
        prompt_tokens_per_s=_spread(prompt) if prompt else None,
        source=f"llama-bench {build} ({generation.get('backends', '?')}), {filename}, "
        f"tg{generation.get('n_gen')}" + (f"/pp{prompt.get('n_prompt')}" if prompt else ""),
    )


def placement_arguments(estimate) -> tuple[str, ...]:
    """llama-bench's placement flags for where gpuready's estimate puts the model, so that a model too big for the GPU
    is measured split as llama.cpp's --fit would run it (llama-bench does not fit on its own): every layer on the GPU
    and the experts of some layers in system memory (-ngl 999 -ncmoe N), or -ngl layers on the GPU (llama.cpp counts
    the output layer as one). Nothing for a model wholly on the GPU, or on a machine without one: llama-bench's
    default runs there."""
    if estimate is None or estimate.placement != "split":
        return ()
    if estimate.cpu_expert_layers:
        return ("-ngl", "999", "-ncmoe", str(estimate.cpu_expert_layers))
    return ("-ngl", str(max(1, round(estimate.gpu_fraction * estimate.layers))))


def run_llama_bench(gguf: Path, quick: bool = False, executable: str | None = None,
                    timeout_s: float = TIMEOUT_S, placement: tuple[str, ...] = ()) -> str:
    """Run llama-bench on one model file (pp512, tg128), placed by ``placement`` (placement_arguments), and return its
    JSON output."""
    executable = executable or shutil.which("llama-bench")
    if not executable:
        raise LlamaBenchError("llama-bench (llama.cpp) is not on PATH")
    argv = [executable, "-m", str(gguf), "-p", str(PROMPT_TOKENS), "-n", str(GENERATED_TOKENS),
            "-r", "2" if quick else "5", *placement, "-o", "json"]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        raise LlamaBenchError(f"llama-bench did not finish within {timeout_s:g} s") from None
    except OSError as error:
        raise LlamaBenchError(f"could not run {executable}: {error.strerror or error}") from None
    if done.returncode != 0:
        from gpuready.host import failure_words

        raise LlamaBenchError(failure_words("llama-bench", done.returncode, done.stderr))
    return done.stdout


def measure_model(gguf: Path, quick: bool = False, executable: str | None = None, hardware=None) -> ModelSpeed:
    """Read the model's shape from the GGUF header, run llama-bench on it (placed as gpuready places it on
    ``hardware``, where given: planned_placement), and combine the two."""
    from gpuready.modelfiles.gguf import GGUFError
    from gpuready.modelfiles.localmodel import QUANT_ALIASES, gguf_language_model, read_gguf_parts

    try:
        model, quant = gguf_language_model(read_gguf_parts(gguf), gguf)
        placement = planned_placement(gguf, hardware) if hardware is not None else ()
    except (GGUFError, OSError) as error:
        raise LlamaBenchError(str(error)) from None
    return model_speed(run_llama_bench(gguf, quick, executable, placement=placement), model,
                       QUANT_ALIASES.get(quant, quant))


def planned_placement(gguf: Path, hardware) -> tuple[str, ...]:
    """placement_arguments for this file on this machine, at llama-bench's own context (its prompt and generated
    tokens): gpuready's estimate of the file as `gpuready estimate FILE.gguf` makes it."""
    from gpuready.modelfiles.localmodel import load_gguf
    from gpuready.tasks import text_estimate
    from gpuready.tasks.devices import cpu_device, gpu_device
    from gpuready.tasks.registry import load_catalog

    model, catalog = load_gguf(gguf, load_catalog())
    cpu = cpu_device(hardware)
    found = text_estimate.estimate(model, catalog.quants[model.quants[0]], PROMPT_TOKENS + GENERATED_TOKENS,
                                   gpu_device(hardware), cpu, cpu.usable_memory_bytes)
    return placement_arguments(found)
