"""Measure pp512 / tg128 with llama-bench on this machine and print them as validation rows.

Runs ``llama-bench -m FILE -p 512 -n 128 -t THREADS -r N --repack 0 -o json`` (N: 5, llama-bench's
default, unless told) for the random-weight GGUF files of benchmarks/compare_llama_fit.py and prints one
``[[measurements]]`` row per test in the layout of benchmarks/validation/text-generation.toml,
with llama-bench's own figures copied as they come (avg_ts, model_size, model_n_params,
build_commit, cpu_info) and the load average before and after each run in the notes (the
machine may be shared).

    python benchmarks/llama_bench_rows.py --bin LLAMA_CPP_BIN_DIR --gguf-dir DIR [--threads 2] [--cpu-hint NAME]

GPU runs made elsewhere (benchmarks/gpu_run.sh writes llama-bench's ``-o jsonl`` output) are turned
into rows with ``--from-jsonl FILE --gpu-id ID --source TEXT``: every figure is llama-bench's own,
the GPU's name, memory and bandwidth come from catalog/gpus.toml by that id.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import random_gguf  # noqa: E402

FILES = [("qwen2.5-0.5b", "Q4_K_M"), ("qwen2.5-0.5b", "Q8_0"), ("llama-3.2-1b", "Q4_K_M"), ("llama-3.2-1b", "Q8_0"),
         ("smollm2-1.7b", "Q4_K_M")]


def toml_string(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def rows_for(result: list[dict], key: str, quant: str, threads: int, repetitions: int, cpu_hint: str, load: tuple[str, str], when: str) -> list[str]:
    shape = random_gguf.SHAPES[key]
    rows = []
    for test in result:
        name = f"pp{test['n_prompt']}" if test["n_gen"] == 0 else f"tg{test['n_gen']}"
        rows.append("\n".join([
            "[[measurements]]",
            f"hardware = {toml_string(test['cpu_info'] + ' (2-vCPU KVM guest, measured here)')}",
            'gpu_hint = "cpu"',
            f"cpu_hint = {toml_string(cpu_hint)}",
            'backend = "cpu"',
            'implementation = "llama.cpp (llama-bench)"',
            f"model = {toml_string(key)}",
            f"params = {float(test['model_n_params'])!r}",
            f"quant = {toml_string(quant)}",
            f"model_size_gib = {round(test['model_size'] / 1024**3, 4)!r}",
            f"test = {toml_string(name)}",
            f"tokens_per_s = {round(test['avg_ts'], 2)!r}",
            f"threads = {threads}",
            "source = " + toml_string(
                f"measured on this machine (gpuready development VM, {when}): llama-bench -m {key}-{quant}.gguf -p 512 -n 128"
                f" -t {threads} -r {repetitions} --repack 0 -o json, llama.cpp commit {test['build_commit']} (vendored in llama-cpp-python 0.3.36), CPU"
                f" backend, field avg_ts of the {name} result"),
            "notes = " + toml_string(
                f"random weights, same shapes as {shape.name.split(' (')[0]} ({shape.source}); files written by"
                f" benchmarks/random_gguf.py and quantised with llama-quantize {quant}. llama-bench samples_ts"
                f" {[round(s, 2) for s in test['samples_ts']]}, stddev {round(test['stddev_ts'], 2)}. The 2 vCPUs were shared"
                f" with other work: load average {load[0]} before, {load[1]} after this file's run. CPU as /proc/cpuinfo names it;"
                " AVX-512 and AMX present; weight repacking off (--repack 0) because llama.cpp's AMX kernels die with SIGILL on"
                " this KVM guest, so this is llama.cpp's plain AVX-512 path."),
        ]))
    return rows


def gpu_rows(results: list[dict], gpu_id: str, source: str, hardware: str) -> list[str]:
    """Validation rows for llama-bench results of random_gguf.py files run fully on one GPU."""
    rows = []
    for test in results:
        stem = Path(test["model_filename"]).name.removesuffix(".gguf")
        key, quant = next((k, stem[len(k) + 1:]) for k in random_gguf.SHAPES if stem.startswith(k + "-"))
        shape = random_gguf.SHAPES[key]
        name = f"pp{test['n_prompt']}" if test["n_gen"] == 0 else f"tg{test['n_gen']}"
        if test.get("n_depth"):
            name += f"@d{test['n_depth']}"
        if 0 <= test.get("n_gpu_layers", 0) <= shape.layers:  # -1 and anything past the last layer: all of them
            raise ValueError(f"{stem}: only {test['n_gpu_layers']} layers on the GPU; these rows are for whole-GPU runs")
        flash = test.get("flash_attn")
        flags = "-fa " + {-1: "auto", 0: "off", 1: "on", False: "off", True: "on"}.get(flash, str(flash))
        rows.append("\n".join([
            "[[measurements]]",
            f"hardware = {toml_string(hardware)}",
            f"gpu_hint = {toml_string(test['gpu_info'])}",
            f"gpu_id = {toml_string(gpu_id)}",
            'backend = "cuda"',
            'implementation = "llama.cpp (llama-bench)"',
            f"measured = {toml_string(test['test_time'][:7])}",
            f"model = {toml_string(key)}",
            f"params = {float(test['model_n_params'])!r}",
            f"quant = {toml_string(quant)}",
            f"model_size_gib = {round(test['model_size'] / 1024**3, 4)!r}",
            f"test = {toml_string(name)}",
            f"tokens_per_s = {round(test['avg_ts'], 2)!r}",
            "source = " + toml_string(
                f"{source}: llama-bench -m {stem}.gguf --repack 0 -o jsonl, test {name}, llama.cpp commit"
                f" {test['build_commit']}, backends {test['backends']}, field avg_ts"),
            "notes = " + toml_string(
                f"random weights, same shapes as {shape.name.split(' (')[0]} ({shape.source}); files written by"
                f" benchmarks/random_gguf.py and quantised with llama-quantize {quant} (F16: as written)."
                f" All layers on the GPU (n_gpu_layers {test['n_gpu_layers']}), {flags}, n_batch {test['n_batch']},"
                f" n_ubatch {test['n_ubatch']}, KV cache {test['type_k']}/{test['type_v']}. llama-bench samples_ts"
                f" {[round(v, 2) for v in test['samples_ts']]}, stddev {round(test['stddev_ts'], 2)}. CPU: {test['cpu_info']}."),
        ]))
    return rows


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bin", type=Path)
    parser.add_argument("--gguf-dir", type=Path)
    parser.add_argument("--from-jsonl", type=Path, help="llama-bench -o jsonl output of a GPU run (benchmarks/gpu_run.sh)")
    parser.add_argument("--gpu-id", help="with --from-jsonl: the catalog/gpus.toml id of the GPU it ran on")
    parser.add_argument("--source", help="with --from-jsonl: who measured, where and when")
    parser.add_argument("--hardware", help="with --from-jsonl: the machine, in words")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repetitions", type=int, default=5, help="llama-bench -r (its default: 5)")
    parser.add_argument("--files", nargs="*", default=None, help="KEY-QUANT names to run (default: all of FILES)")
    parser.add_argument("--cpu-hint", default=None, help="the CPU name as gpuready's probe reports it (default: /proc/cpuinfo's)")
    args = parser.parse_args(argv)
    if args.from_jsonl:
        if not (args.gpu_id and args.source and args.hardware):
            parser.error("--from-jsonl needs --gpu-id, --source and --hardware")
        results = [json.loads(line) for line in args.from_jsonl.read_text().splitlines() if line.strip()]
        for row in gpu_rows(results, args.gpu_id, args.source, args.hardware):
            print(row + "\n")
        return 0
    if not (args.bin and args.gguf_dir):
        parser.error("--bin and --gguf-dir are needed (or --from-jsonl)")
    cpu_hint = args.cpu_hint or next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                                     if line.startswith("model name"))
    when = date.today().isoformat()
    chosen = [(key, quant) for key, quant in FILES if args.files is None or f"{key}-{quant}" in args.files]
    for key, quant in chosen:
        path = args.gguf_dir / f"{key}-{quant}.gguf"
        before = load_average()
        done = subprocess.run([str(args.bin / "llama-bench"), "-m", str(path), "-p", "512", "-n", "128", "-t", str(args.threads),
                               "-r", str(args.repetitions), "--repack", "0", "-o", "json"], capture_output=True, text=True, check=True, env={**os.environ})
        after = load_average()
        for row in rows_for(json.loads(done.stdout), key, quant, args.threads, args.repetitions, cpu_hint, (before, after), when):
            print(row + "\n", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
