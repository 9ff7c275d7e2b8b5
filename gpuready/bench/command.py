"""`gpuready bench`: measure this machine, keep the result, show or clear what is kept.

stdout carries the result (text or --json); the progress bar goes to stderr, only on a terminal.
"""

from __future__ import annotations

import dataclasses
import datetime
import importlib.util
import json
import sys
from contextlib import contextmanager
from pathlib import Path

from gpuready.bench import cache
from gpuready.bench.results import Measurements, ModelSpeed, to_json
from gpuready.errors import ExitCode, UsageError

# numpy is all the bench extra adds; gpuready is installed from its checkout (README), so name numpy itself
EXTRA_HINT = "pip install numpy (the 'bench' extra: pip install '.[bench]' in gpuready's folder)"


@contextmanager
def progress_bar(total: int, description: str, stream=None):
    """A Rich progress bar on stderr when it is a terminal; otherwise a silent counter. Yields advance()."""
    stream = stream or sys.stderr
    if not stream.isatty():
        yield lambda *_: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(),
                  console=Console(file=stream), transient=True) as progress:
        task = progress.add_task(description, total=total)

        def advance(label: str | None = None) -> None:
            progress.update(task, advance=1, **({"description": label} if label else {}))

        yield advance


def _probe():
    from gpuready.host import LiveHost
    from gpuready.probes import probe_hardware

    return probe_hardware(LiveHost())


def _today() -> str:
    return datetime.date.today().isoformat()


def measure_machine(hardware, quick: bool, advance) -> tuple[Measurements, list]:
    """CPU (numpy) and, when PyTorch is installed, GPU measurements of this machine."""
    from gpuready.bench.gpu import measure_gpus
    from gpuready.bench.measure import DEFAULT_PLAN, QUICK_PLAN, measure_cpu, sized_plan

    plan = sized_plan(QUICK_PLAN if quick else DEFAULT_PLAN, hardware.memory.usable_bytes)
    cpu = measure_cpu(plan, on_sample=advance)
    problems, gpus = [], []
    apple = hardware.platform == "darwin" and hardware.arch == "arm64"
    if not hardware.accelerators and not apple:
        notes = ("no GPU found by the probes: none measured",)
    elif importlib.util.find_spec("torch") is None:
        notes = ("GPUs not measured: PyTorch is not installed (pip install torch)",)
    else:
        advance("GPUs (PyTorch, in a subprocess)")
        gpus, problems = measure_gpus(quick=quick)
        notes = ()
    notes += ("numpy's BLAS offers FP32/FP64 matmul only: BF16 and INT8 throughput not measured",)
    measurements = Measurements(
        measured_at=_today(), fingerprint=cache.fingerprint(hardware),
        memory_read_bytes_per_s=cpu.read_bytes_per_s, memory_copy_bytes_per_s=cpu.copy_bytes_per_s,
        cpu_fp32_flops=cpu.fp32_flops, cpu_threads=cpu.threads, gpus=tuple(gpus), notes=notes,
    )
    return measurements, problems


def with_model(measurements: Measurements | None, speed: ModelSpeed, hardware) -> Measurements:
    """Kept measurements plus one llama-bench result (replacing an older one of the same model, quant and placement)."""
    base = measurements or Measurements(measured_at=_today(), fingerprint=cache.fingerprint(hardware))
    key = (speed.quant, speed.layers, speed.hidden_size, speed.params, speed.placement)
    kept = tuple(s for s in base.models if (s.quant, s.layers, s.hidden_size, s.params, s.placement) != key)
    return dataclasses.replace(base, models=(*kept, speed))


def with_encoder(measurements: Measurements | None, encoder, hardware) -> Measurements:
    """Kept measurements plus one whisper-bench result (replacing an older one of the same shape, precision and placement)."""
    base = measurements or Measurements(measured_at=_today(), fingerprint=cache.fingerprint(hardware))
    key = (encoder.d_model, encoder.encoder_layers, encoder.variant, encoder.placement)
    kept = tuple(e for e in base.encoders if (e.d_model, e.encoder_layers, e.variant, e.placement) != key)
    return dataclasses.replace(base, encoders=(*kept, encoder))


def _fmt(spread, scale: float, unit: str) -> str:
    return (f"{spread.median / scale:8.1f} {unit}  (min {spread.minimum / scale:.1f}, max {spread.maximum / scale:.1f}, "
            f"{spread.samples} runs, ±{spread.relative_spread:.1%})")


def render(measurements: Measurements, hardware) -> str:
    """The measurements as text, next to the figures gpuready would use without them."""
    from gpuready.tasks.devices import cpu_float_flops

    cpu = hardware.cpu
    lines = [f"Measured on this machine ({measurements.measured_at}"
             + (f", {measurements.cpu_threads} threads" if measurements.cpu_threads else "") + ")"]
    if measurements.memory_read_bytes_per_s:
        table = (f"   without: {cpu.memory_bandwidth_bytes_per_s / 1e9:.0f} GB/s ({cpu.bandwidth_source})"
                 if cpu.memory_bandwidth_bytes_per_s else "")
        lines.append(f"  memory read   {_fmt(measurements.memory_read_bytes_per_s, 1e9, 'GB/s')}{table}")
    if measurements.memory_copy_bytes_per_s:
        lines.append(f"  memory copy   {_fmt(measurements.memory_copy_bytes_per_s, 1e9, 'GB/s')}")
    if measurements.cpu_fp32_flops:
        # an FP32 matmul runs on the FMA pipes: their rate where narrower than the AVX-512 flag implies (Zen 4)
        peak = cpu_float_flops(cpu.physical_cores, cpu.features, cpu.name)
        estimate = f"   estimated peak: {peak / 1e9:.0f} GFLOPS" if peak else ""
        lines.append(f"  FP32 matmul   {_fmt(measurements.cpu_fp32_flops, 1e9, 'GFLOPS')}{estimate}")
    for gpu in measurements.gpus:
        if gpu.bandwidth_bytes_per_s:
            lines.append(f"  {gpu.name} bandwidth  {_fmt(gpu.bandwidth_bytes_per_s, 1e9, 'GB/s')}")
        for label, spread in (("FP16", gpu.fp16_flops), ("BF16", gpu.bf16_flops)):
            if spread:
                lines.append(f"  {gpu.name} {label} matmul  {_fmt(spread, 1e12, 'TFLOPS')}")
        for phase, spread in (("copy", gpu.copy_power_w), ("matmul", gpu.matmul_power_w)):
            if spread:
                lines.append(f"  {gpu.name} power during the {phase}  {_fmt(spread, 1, 'W')} (NVML energy counter)")
    for speed in measurements.models:
        lines.append(f"  {speed.quant}, {speed.params / 1e9:.1f}B, {speed.placement}: generation "
                     f"{_fmt(speed.generation_tokens_per_s, 1, 'tokens/s')}; {speed.source}")
        if speed.prompt_tokens_per_s:
            lines.append(f"      prompt {_fmt(speed.prompt_tokens_per_s, 1, 'tokens/s')}")
    for encoder in measurements.encoders:
        lines.append(f"  Whisper encoder {encoder.encoder_layers} x {encoder.d_model}, {encoder.variant}, {encoder.placement}: "
                     f"{_fmt(encoder.seconds_per_window, 1, 's a window')}; {encoder.source}")
    lines += [f"  note: {note}" for note in measurements.notes]
    return "\n".join(lines) + "\n"


def _write(measurements: Measurements, hardware, problems, as_json: bool) -> None:
    if as_json:
        payload = {"measurements": to_json(measurements), "problems": [vars(p) for p in problems]}
        sys.stdout.write(json.dumps(payload, indent=2) + "\n")
    else:
        sys.stdout.write(render(measurements, hardware))
    for problem in problems:
        sys.stderr.write(f"problem: [{problem.probe}] {problem.message}\n" + (f"hint: {problem.hint}\n" if problem.hint else ""))


def cmd_bench(args) -> int:
    from gpuready.host import other_machine

    if given := other_machine(args):
        # bench measures this computer: with a recording or a what-if on the command line it printed this computer's
        # figures as if they were that machine's
        raise UsageError(f"gpuready bench measures this computer; {', '.join(given)} does not apply to it")
    if args.clear:
        removed = cache.clear()
        sys.stdout.write("cleared the kept measurements\n" if removed else "no measurements were kept\n")
        return ExitCode.READY
    hardware, probe_problems = _probe()
    kept, note = cache.load(hardware)
    if note:
        sys.stderr.write(f"note: {note}\n")
    if args.show:
        if kept is None:
            sys.stderr.write("no measurements of this machine are kept; `gpuready bench` measures it\n")
            if args.json:
                sys.stdout.write('{"measurements": null, "problems": []}\n')  # the --json shape, with none kept
            return ExitCode.NOT_READY
        _write(kept, hardware, [], args.json)
        return ExitCode.READY
    if args.llama_bench:
        return _llama_bench(args, hardware, kept)
    if args.whisper_bench:
        return _whisper_bench(args, hardware, kept)
    if importlib.util.find_spec("numpy") is None:
        raise UsageError(f"gpuready bench needs numpy: {EXTRA_HINT}")
    from gpuready.bench.measure import DEFAULT_PLAN, QUICK_PLAN

    steps = (QUICK_PLAN if args.quick else DEFAULT_PLAN).steps + 1
    with progress_bar(steps, "measuring memory and CPU") as advance:
        measurements, problems = measure_machine(hardware, args.quick, advance)
    if kept is not None:  # llama-bench and whisper-bench results stay until the hardware changes
        measurements = dataclasses.replace(measurements, models=kept.models, encoders=kept.encoders)
    cache.save(measurements)
    _write(measurements, hardware, problems, args.json)
    if not args.json:
        sys.stdout.write("Kept: `gpuready report`, `check`, `estimate` and the TUI use these figures until the hardware "
                         "changes (`gpuready bench --show`, `--clear`).\n")
    return ExitCode.READY


def _llama_bench(args, hardware, kept) -> int:
    from gpuready.bench.llama import LlamaBenchError, measure_model

    path = Path(args.llama_bench)
    if not path.is_file() or not path.name.lower().endswith(".gguf"):
        raise UsageError(f"--llama-bench {path}: not a .gguf file")
    try:
        with progress_bar(1, f"llama-bench {path.name} (pp512, tg128)") as advance:
            speed = measure_model(path, quick=args.quick, hardware=hardware)
            advance()
    except LlamaBenchError as error:
        raise UsageError(str(error)) from None
    speed = dataclasses.replace(speed, source=f"{speed.source}, {_today()}")
    measurements = with_model(kept, speed, hardware)
    cache.save(measurements)
    _write(measurements, hardware, [], args.json)
    return ExitCode.READY


def _whisper_bench(args, hardware, kept) -> int:
    from gpuready.bench.whisper import WhisperBenchError, measure_encoder

    path = Path(args.whisper_bench)
    if not path.is_file():
        raise UsageError(f"--whisper-bench {path}: no such file")
    try:
        with progress_bar(1, f"whisper-bench {path.name} (encoder, 30 s window)") as advance:
            encoder = measure_encoder(path, _today(), quick=args.quick)
            advance()
    except WhisperBenchError as error:
        raise UsageError(str(error)) from None
    measurements = with_encoder(kept, encoder, hardware)
    cache.save(measurements)
    _write(measurements, hardware, [], args.json)
    return ExitCode.READY
