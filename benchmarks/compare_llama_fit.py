"""gpuready's memory breakdown against llama.cpp's own: its fit planner and a real load.

For several GGUF files (three architectures' shapes, several quantisations) and contexts,
this prints, in MiB:

* gpuready: weights (the file's tensor bytes), KV cache, compute buffer, runtime overhead
  (gpuready.tasks.text_estimate.memory_breakdown, CPU backend);
* llama-fit-params --fit-print on: the planner's per-device model / context / compute lines
  (tools/fit-params; what ``gpuready estimate FILE.gguf`` shows beside its own figure);
* llama-fit-params -v: the planner's full breakdown table, which also lists buffers that
  belong to no device (on an AMX CPU the "AMX" buffer of repacked weights, left out of the
  lines above);
* llama-completion -v loading the file for real: every "model buffer size", the "KV buffer
  size", "compute buffer size" and "output buffer size" it logs, and the peak resident memory
  of the process (ru_maxrss from wait4) after a 1-token prompt and 1 generated token.

The GGUF files hold random weights in the published shapes of real models
(benchmarks/random_gguf.py writes the F16 files; llama-quantize makes the rest), so they
are rebuilt offline; they are kept out of the repository.

    python benchmarks/compare_llama_fit.py --bin LLAMA_CPP_BIN_DIR --gguf-dir DIR [--write]

``--write`` also writes benchmarks/MEMORY_FIT.md (the table, the llama.cpp version and the
machine it ran on) and benchmarks/memory_fit_raw.json (every figure); ``--render`` rewrites
the Markdown from that JSON without running anything.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import random_gguf  # noqa: E402

from gpuready.modelfiles.llamafit import parse_memory, parse_version  # noqa: E402
from gpuready.modelfiles.localmodel import load_gguf  # noqa: E402
from gpuready.tasks import text_estimate as est  # noqa: E402
from gpuready.tasks.registry import load_catalog  # noqa: E402

MIB = 1024**2
MARKDOWN = ROOT / "benchmarks" / "MEMORY_FIT.md"
RAW = ROOT / "benchmarks" / "memory_fit_raw.json"  # every figure of the last --write, for --render
# (shape key, quantisation, contexts, extra flags): three architectures (GQA with QKV bias, GQA,
# full multi-head attention), F16 down to Q4_K_M, contexts from 2K to the model's 32K; then the
# same files with weight repacking off (-nr), llama.cpp's plain CPU path, which CPUs without
# AMX and without a repacked kernel for the file's types take.
CASES = [
    ("qwen2.5-0.5b", "F16", (8192,), ()),
    ("qwen2.5-0.5b", "Q8_0", (8192,), ()),
    ("qwen2.5-0.5b", "Q4_K_M", (2048, 8192, 32768), ()),
    ("llama-3.2-1b", "Q8_0", (8192,), ()),
    ("llama-3.2-1b", "Q4_K_M", (2048, 8192, 32768), ()),
    ("smollm2-1.7b", "Q4_K_M", (2048, 8192), ()),
    ("qwen2.5-0.5b", "Q4_K_M", (8192,), ("-nr",)),
    ("llama-3.2-1b", "Q8_0", (8192,), ("-nr",)),
    ("llama-3.2-1b", "Q4_K_M", (8192,), ("-nr",)),
    ("smollm2-1.7b", "Q4_K_M", (8192,), ("-nr",)),
]
BREAKDOWN_ROW = re.compile(r"\|\s+- (?P<name>.+?)\s+\|[\s\d=+]*?(?P<self>\d+) = +(?P<model>\d+) \+ +(?P<context>\d+) \+ +(?P<compute>\d+)")
BUFFER = re.compile(r"(?P<name>[\w-]+)\s+(?P<kind>model|KV|compute|output) buffer size = +(?P<mib>[\d.]+) MiB")


@dataclass
class Case:
    key: str
    quant: str
    context: int
    flags: tuple[str, ...] = ()
    ours: est.MemoryBreakdown | None = None
    fit_print: dict = field(default_factory=dict)  # device -> (model, context, compute) MiB
    fit_table: dict = field(default_factory=dict)  # buffer row -> (model, context, compute) MiB
    load: dict = field(default_factory=dict)  # "model:CPU_Mapped" -> MiB, "KV", "compute", "output"
    max_rss_mib: float | None = None
    load_exit: int | None = None  # llama-completion's exit code (132: SIGILL in the AMX kernels)


def ensure_files(bin_dir: Path, gguf_dir: Path) -> None:
    """Write the F16 files and quantise them, skipping what is there."""
    gguf_dir.mkdir(parents=True, exist_ok=True)
    for key, quant, _, _ in CASES:
        f16 = gguf_dir / f"{key}-F16.gguf"
        if not f16.exists():
            random_gguf.write(random_gguf.SHAPES[key], f16)
        target = gguf_dir / f"{key}-{quant}.gguf"
        if not target.exists():
            subprocess.run([str(bin_dir / "llama-quantize"), str(f16), str(target), quant, "2"], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def run_measured(argv: list[str], timeout: float = 600) -> tuple[str, str, int, float]:
    """stdout, stderr, exit code and peak resident memory (MiB) of one command, reaped with wait4
    so ru_maxrss is the child's own peak."""
    import tempfile

    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err)
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return out.read(), err.read(), process.returncode, usage.ru_maxrss / 1024


def measure(case: Case, bin_dir: Path, gguf_dir: Path, load: bool) -> Case:
    path = gguf_dir / f"{case.key}-{case.quant}.gguf"
    catalog = load_catalog()
    model, catalog = load_gguf(path, catalog)
    case.ours = est.memory_breakdown(model, catalog.quants[model.quants[0]], case.context, "cpu")
    fit = str(bin_dir / "llama-fit-params")
    stdout, _, code, _ = run_measured([fit, "-m", str(path), "-c", str(case.context), *case.flags, "--fit-print", "on"])
    if code == 0:
        case.fit_print = {d.device: (d.model_bytes / MIB, d.context_bytes / MIB, d.compute_bytes / MIB) for d in parse_memory(stdout)}
    _, stderr, _, _ = run_measured([fit, "-m", str(path), "-c", str(case.context), *case.flags, "-v"])
    for match in BREAKDOWN_ROW.finditer(stderr):
        case.fit_table.setdefault(match["name"].strip(), tuple(float(match[k]) for k in ("model", "context", "compute")))
    if load:
        _, stderr, case.load_exit, rss = run_measured([str(bin_dir / "llama-completion"), "-m", str(path), "-c", str(case.context), "-n", "1",
                                          "-p", "hello", "-no-cnv", "-t", "2", "--no-warmup", *case.flags, "-v"])
        # The first lines come from the --fit pass (no_alloc: every buffer 0.00 MiB); the real load follows.
        for match in BUFFER.finditer(stderr):
            label = f"model:{match['name']}" if match["kind"] == "model" else match["kind"]
            value = float(match["mib"])
            if value > 0 or label not in case.load:
                case.load[label] = value
        case.max_rss_mib = rss
    return case


def mib(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def table(cases: list[Case]) -> list[str]:
    lines = [
        "| model (random weights) | quant | context | repack | gpuready weights / KV / compute / overhead | "
        "fit-print Host model / KV / compute | fit -v table, model per buffer | load log, model buffers | load log KV / compute / output | "
        "gpuready total | peak RSS | load exit |",
        "|---|---|---:|---|---|---|---|---|---|---:|---:|---:|",
    ]
    for case in cases:
        ours = case.ours
        host = case.fit_print.get("Host")
        table_model = " + ".join(f"{name} {values[0]:,.0f}" for name, values in case.fit_table.items()) or "-"
        buffers = {k.split(":", 1)[1]: v for k, v in case.load.items() if k.startswith("model:") and v > 0}
        load_model = " + ".join(f"{name} {value:,.0f}" for name, value in buffers.items()) or "-"
        lines.append(
            f"| {case.key} | {case.quant} | {case.context:,} | {'off (-nr)' if '-nr' in case.flags else 'on'} | "
            f"{mib(ours.weights_bytes / MIB)} / {mib(ours.kv_cache_bytes / MIB)} / {mib(ours.compute_bytes / MIB)} / {mib(ours.overhead_bytes / MIB)} | "
            + (f"{mib(host[0])} / {mib(host[1])} / {mib(host[2])}" if host else "-") + " | "
            f"{table_model} | {load_model} | "
            + (f"{mib(case.load.get('KV'))} / {case.load.get('compute', 0):,.2f} / {case.load.get('output', 0):,.2f}" if case.load else "-")
            + f" | {mib(ours.total_bytes / MIB)} | {mib(case.max_rss_mib)} | {exit_text(case.load_exit)} |"
        )
    return lines


def compute_ratios(cases: list[Case]) -> list[str]:
    """gpuready's compute buffer against the load log's (else the planner's), per case."""
    lines = []
    ratios = []
    for case in cases:
        logged = case.load.get("compute") or (case.fit_print.get("Host") or (None, None, None))[2]
        if not logged:
            continue
        ratio = case.ours.compute_bytes / MIB / logged
        ratios.append(ratio)
        lines.append(f"- {label(case)}: gpuready {case.ours.compute_bytes / MIB:,.1f} MiB, llama.cpp {logged:,.2f} MiB"
                     f" ({(ratio - 1) * 100:+.1f}%)")
    if ratios:
        lines.append(f"- median {(statistics.median(ratios) - 1) * 100:+.1f}%, worst {(max(ratios, key=lambda r: abs(r - 1)) - 1) * 100:+.1f}%"
                     f" over {len(ratios)} cases")
    return lines


def exit_text(code: int | None) -> str:
    """llama-completion's exit: 0, or the signal that ended it."""
    names = {-4: "SIGILL", -11: "SIGSEGV", -6: "SIGABRT"}
    return "-" if code is None else names.get(code, str(code))


def label(case: Case) -> str:
    return f"{case.key} {case.quant} at {case.context:,}" + (" (repacking off)" if "-nr" in case.flags else "")


def findings(cases: list[Case]) -> list[str]:
    """The comparison in numbers, part by part."""
    lines = []
    kv = [(case.ours.kv_cache_bytes / MIB, case.load.get("KV", case.fit_print.get("Host", (0, None, 0))[1])) for case in cases]
    kv = [(ours, theirs) for ours, theirs in kv if theirs is not None]
    worst_kv = max(abs(ours - theirs) for ours, theirs in kv) if kv else None
    lines.append(f"- KV cache: gpuready against llama.cpp's KV buffer in {len(kv)} cases: largest difference {worst_kv:,.2f} MiB.")
    plain = [case for case in cases if "-nr" in case.flags and "Host" in case.fit_print]
    if plain:
        differences = [case.ours.weights_bytes / MIB - case.fit_print["Host"][0] for case in plain]
        lines.append(f"- Weights, repacking off: gpuready's weights (the file's tensor bytes) against the planner's Host model"
                     f" in {len(plain)} cases: differences {min(differences):+.1f} to {max(differences):+.1f} MiB (the planner"
                     " rounds down to whole MiB).")
    repacked = [case for case in cases if "-nr" not in case.flags and len(case.fit_table) > 1]
    if repacked:
        shown = [case.fit_print["Host"][0] / (case.ours.weights_bytes / MIB) for case in repacked if "Host" in case.fit_print]
        extra = [sum(v[0] for name, v in case.fit_table.items() if name != "Host") / (case.ours.weights_bytes / MIB) for case in repacked]
        names = sorted({name for case in repacked for name in case.fit_table if name != "Host"})
        lines.append(f"- Weights, repacking on ({len(repacked)} cases): the planner's per-device lines (what `llama-fit-params"
                     f" --fit-print on` prints, and what `gpuready estimate` shows) give Host model {min(shown):.0%} to"
                     f" {max(shown):.0%} of the file; its -v table lists {', '.join(names)} buffers of {min(extra):.0%} to"
                     f" {max(extra):.0%} of the file besides, which those lines leave out.")
    for title, group in (("repacking off", [c for c in cases if "-nr" in c.flags]), ("repacking on", [c for c in cases if "-nr" not in c.flags])):
        measured = [case for case in group if case.max_rss_mib]
        if not measured:
            continue
        covered = sum(1 for case in measured if case.max_rss_mib <= case.ours.total_bytes / MIB)
        ratios = [case.max_rss_mib / (case.ours.total_bytes / MIB) for case in measured]
        lines.append(f"- Peak resident memory of the real load, {title}: within gpuready's total (with its 200 MiB CPU runtime"
                     f" overhead) in {covered} of {len(measured)} cases; peak / gpuready total {min(ratios):.2f} to {max(ratios):.2f}.")
    return lines


PROSE = """
## What this says

- gpuready's memory model matches what llama.cpp allocates on its plain CPU path: the weights
  are the file's tensor bytes, the KV cache is exact, and the compute-buffer formula
  (`text_estimate.compute_bytes`, 512-token micro-batch x 4 bytes x (vocabulary + 4 x hidden))
  is within a few percent above llama.cpp's "compute buffer size" for all three shapes, never
  below. No constant of the memory model needed changing.
- On a CPU with AMX (this VM's Xeon has AMX-INT8 and AVX512-FP16: Sapphire Rapids or later), llama.cpp repacks the layers' weights
  into an "AMX" buffer that belongs to no device. `llama-fit-params --fit-print on` and the
  planner's own "projected to use" figure count only the Host buffers, so they under-state
  the weights there; the verbose table and the load log show the AMX buffer. With the
  default mmap, the pages of the mapped file that were read to repack stay resident beside
  the repacked copy: file-backed page cache the kernel can drop, not memory the model needs,
  but it is why peak RSS passes gpuready's total with repacking on. `gpuready estimate FILE.gguf` says so under llama.cpp's figures
  when the CPU reports amx_int8.
- On this VM, every load with repacking on but one died after loading, while processing the
  prompt (SIGILL or SIGSEGV, "load exit" above; gdb puts llama-bench's SIGILL in the AMX
  kernel `tinygemm_kernel_amx`): the guest advertises AMX, but its kernels do not run here. Those loads had
  allocated every buffer and repacked the weights before they died, so their peak RSS is
  the load's, without the prompt's pass through the compute buffer.
- With repacking off (`-nr`), the planner's Host figures equal gpuready's weights and KV
  cache, and the peak resident memory stays inside gpuready's total.
- llama.cpp's fit keeps 1024 MiB free on every device (common/common.h
  `fit_params_target`; `--fit-target`). gpuready now keeps the same on non-Apple unified
  memory (APUs, GB10, Jetson, integrated graphics: `tasks/devices.py`
  `UNIFIED_MEMORY_MARGIN_BYTES`), where fits without a margin still ran out
  (ggml-org/llama.cpp issues #21801 and #24626). Apple silicon already gets Metal's
  working-set limit.

Not covered here: GPU backends (no GPU on this machine; the compute buffer on CUDA and the
host-side compute buffer of a split model are not compared), MoE and sliding-window models,
quantised KV caches.
"""


def version(bin_dir: Path) -> str:
    _, stderr, _, _ = run_measured([str(bin_dir / "llama-fit-params"), "--version"])
    return parse_version(stderr) or "unknown"


def machine() -> str:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())
    flags = next((line for line in Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("flags")), "")
    amx = "AMX" if "amx_int8" in flags.split() else "no AMX"
    return f"{cpu}, {os.cpu_count()} vCPUs ({amx}), Linux {platform.release()}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bin", type=Path, required=True, help="llama.cpp's build/bin (llama-fit-params, llama-completion, llama-quantize)")
    parser.add_argument("--gguf-dir", type=Path, required=True, help="where the random-weight GGUF files are (or will be) kept")
    parser.add_argument("--no-load", action="store_true", help="skip the real loads with llama-completion")
    parser.add_argument("--write", action="store_true", help="also write benchmarks/MEMORY_FIT.md and the raw figures beside it")
    parser.add_argument("--render", action="store_true", help="only rewrite MEMORY_FIT.md from the raw figures kept by --write")
    args = parser.parse_args(argv)
    if args.render:
        kept = json.loads(RAW.read_text(encoding="utf-8"))
        cases = [Case(**{**c, "flags": tuple(c["flags"]), "ours": est.MemoryBreakdown(**c["ours"])}) for c in kept["cases"]]
        MARKDOWN.write_text(render_markdown(kept["build"], report(cases), kept["machine"]), encoding="utf-8")
        return 0
    ensure_files(args.bin, args.gguf_dir)
    cases = []
    for key, quant, contexts, flags in CASES:
        for context in contexts:
            cases.append(measure(Case(key, quant, context, flags), args.bin, args.gguf_dir, load=not args.no_load))
            print(table(cases)[-1], file=sys.stderr)
    build = version(args.bin)
    text = report(cases)
    sys.stdout.write(f"llama.cpp {build}; {machine()}\n\n" + text)
    if args.write:
        raw = {"build": build, "machine": machine(), "cases": [{**asdict(case), "ours": asdict(case.ours)} for case in cases]}
        RAW.write_text(json.dumps(raw, indent=1) + "\n", encoding="utf-8")
        MARKDOWN.write_text(render_markdown(build, text, machine()), encoding="utf-8")
    return 0


def report(cases: list[Case]) -> str:
    return ("\n".join(table(cases)) + "\n\n## In numbers\n\n" + "\n".join(findings(cases))
            + "\n\nCompute buffer, gpuready against llama.cpp:\n\n" + "\n".join(compute_ratios(cases)) + "\n" + PROSE)


def render_markdown(build: str, text: str, where: str) -> str:
    return (
        "# gpuready's memory breakdown against llama.cpp's own\n\n"
        f"Generated by `python benchmarks/compare_llama_fit.py --bin DIR --gguf-dir DIR --write` with llama.cpp {build}"
        " (vendored in llama-cpp-python 0.3.36), CPU backend, on "
        f"{where}. Figures in MiB (llama.cpp's unit). Columns: gpuready's breakdown"
        " (CPU backend); the planner's `--fit-print on` Host line; the planner's verbose table (model per buffer);"
        " the real load's logged buffers; gpuready's total; the real load's peak resident memory (ru_maxrss).\n\n" + text
    )


if __name__ == "__main__":
    sys.exit(main())
