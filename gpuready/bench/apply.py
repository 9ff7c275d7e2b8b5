"""Put this machine's measurements into a Hardware value, and measured tokens/s into the verdicts.

The step between probing and judging: measured memory bandwidth replaces the CPU's table
figure, measured GPU bandwidth and FP16 throughput replace each GPU's, and a llama-bench
result replaces the estimated speed of every catalogue model of that shape and quantisation.
Every replaced figure's source reads "measured on this machine, DATE, ±N%" (N: the spread).
Measured CPU matmul throughput is shown by `gpuready bench` but not applied: the prompt-speed
efficiency is fitted against an estimated peak, not a measured rate. The watts NVML's energy
counter saw during the copy and matmul phases go on the GPU for the energy estimates.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from gpuready.bench import cache
from gpuready.bench.results import Measurements
from gpuready.bench.stats import Spread
from gpuready.tasks.devices import MEASURED_HERE
from gpuready.tasks.verdict import level_words
from gpuready.hardware import Hardware, Problem

MPS_NAME = "Apple GPU (MPS)"  # what torch_worker calls the one GPU PyTorch's MPS backend drives


@dataclass(frozen=True)
class Applied:
    """The machine with measured figures, the one without (to show what changed), and notes."""

    hardware: Hardware
    unmeasured: Hardware
    problems: list[Problem]
    notes: tuple[str, ...] = ()
    measurements: Measurements | None = None

    @property
    def model_speeds(self) -> tuple:
        """llama-bench's and whisper-bench's results, for Options.measured_speeds."""
        return (*self.measurements.models, *self.measurements.encoders) if self.measurements else ()


def source_text(measured_at: str, spread: Spread) -> str:
    return f"{MEASURED_HERE}, {measured_at}, ±{spread.relative_spread * 100:.1f}%"


def with_measurements(hardware: Hardware, measurements: Measurements) -> tuple[Hardware, list[str]]:
    """Hardware with the measured figures in place of table ones, and a line per figure replaced."""
    notes = []
    cpu = hardware.cpu
    read = measurements.memory_read_bytes_per_s
    if read:
        before = cpu.memory_bandwidth_bytes_per_s
        cpu = dataclasses.replace(cpu, memory_bandwidth_bytes_per_s=int(read.median),
                                  bandwidth_source=source_text(measurements.measured_at, read))
        notes.append(f"memory bandwidth {read.median / 1e9:.1f} GB/s measured"
                     + (f" (was {before / 1e9:.0f} GB/s, {hardware.cpu.bandwidth_source})" if before else ""))
    gpus = list(hardware.gpus)
    unused = list(measurements.gpus)
    for position, gpu in enumerate(gpus):
        match = next((m for m in unused if m.name == gpu.name or m.name in gpu.name or gpu.name in m.name
                      or (m.name == MPS_NAME and gpu.vendor == "apple")), None)
        if match is None:
            continue
        unused.remove(match)
        changes = {}
        if match.bandwidth_bytes_per_s:
            changes.update(bandwidth_bytes_per_s=int(match.bandwidth_bytes_per_s.median),
                           bandwidth_source=source_text(measurements.measured_at, match.bandwidth_bytes_per_s))
            notes.append(f"{gpu.name}: bandwidth {match.bandwidth_bytes_per_s.median / 1e9:.0f} GB/s measured")
        flops = match.fp16_flops or match.bf16_flops
        # The prompt-speed efficiency (estimate.COMPUTE_EFFICIENCY) is fitted against table peaks, so a
        # measured matmul rate stands in only where the table has no figure for this GPU.
        if flops and not gpu.fp16_flops:
            changes.update(fp16_flops=flops.median, flops_source=source_text(measurements.measured_at, flops))
            notes.append(f"{gpu.name}: {flops.median / 1e12:.1f} TFLOPS FP16 matmul measured (no table figure)")
        elif flops:
            notes.append(f"{gpu.name}: {flops.median / 1e12:.1f} TFLOPS FP16 matmul measured, "
                         f"table {gpu.fp16_flops / 1e12:.1f} kept for the prompt estimate")
        changes.update(_measured_power(gpu.name, match, measurements.measured_at, notes))
        gpus[position] = dataclasses.replace(gpu, **changes)
    return dataclasses.replace(hardware, cpu=cpu, gpus=tuple(gpus)), notes


def _measured_power(name: str, match, measured_at: str, notes: list[str]) -> dict:
    """The GPU fields for the watts NVML's energy counter saw during the copy and matmul phases."""
    copy, matmul = match.copy_power_w, match.matmul_power_w
    if not copy and not matmul:
        return {}
    spread = max(s.relative_spread for s in (copy, matmul) if s)
    notes.append(f"{name}: " + ", ".join(f"{s.median:.0f} W during the {phase}" for phase, s in
                                          (("copy", copy), ("matmul", matmul)) if s) + " (NVML energy counter)")
    return {"measured_power_memory_bound_w": copy.median if copy else None,
            "measured_power_compute_bound_w": matmul.median if matmul else None,
            "measured_power_spread": spread,
            "measured_power_source": f"{MEASURED_HERE} with NVML's energy counter during `gpuready bench`, {measured_at}"}


def apply_measurements(hardware: Hardware, problems: list[Problem], directory: Path | None = None) -> Applied:
    """This machine's kept measurements applied to freshly probed hardware (unchanged when there are none)."""
    measurements, note = cache.load(hardware, directory)
    problems = list(problems)
    if note:
        problems.append(Problem("bench", note, hint="run `gpuready bench` to measure this machine again", severity="info"))
    if measurements is None:
        return Applied(hardware, hardware, problems)
    measured, notes = with_measurements(hardware, measurements)
    notes += [f"{s.quant} model of {s.params / 1e9:.1f}B parameters: {s.generation_tokens_per_s.median:.1f} tokens/s "
              f"measured by {s.source}" for s in measurements.models]
    notes += [f"Whisper encoder ({e.encoder_layers} layers x {e.d_model}, {e.variant}): {e.seconds_per_window.median:.2f} s "
              f"a window measured by {e.source}" for e in measurements.encoders]
    return Applied(measured, hardware, problems, tuple(notes), measurements)


# --- what the measurements changed -------------------------------------------------------


@dataclass(frozen=True)
class LevelChange:
    task: str
    model_id: str
    model_name: str
    level_without: str  # judged with the table figures
    level: str  # judged with this machine's measurements
    group: str | None = None  # the part of the task (speech-to-text, embedding...), where it has parts


@dataclass(frozen=True)
class MeasuredSummary:
    """In a report: when this machine was measured, which figures were replaced, and which verdicts moved."""

    measured_at: str
    figures: tuple[str, ...]
    changed: tuple[LevelChange, ...]


def level_changes(without, with_measurements) -> tuple[LevelChange, ...]:
    """Verdicts whose level differs between two lists of verdicts of the same models. A verdict is one model in one
    task (and part of it): Llama 3.1 8B has a text-generation verdict and a fine-tuning one, each compared with its own."""
    def key(verdict):
        return verdict.task, verdict.group, verdict.model_id

    before = {key(v): v.level for v in without}
    return tuple(
        LevelChange(v.task, v.model_id, v.model_name, before[key(v)], v.level, v.group)
        for v in with_measurements
        if key(v) in before and before[key(v)] != v.level
    )


def summarise(applied: Applied, report, judged, options):
    """The report with a MeasuredSummary: judged once more without the measurements to see what they changed.
    ``judged(hardware, problems, options)`` judges as the report was judged (its catalogue, its --with models)."""
    if applied.measurements is None:
        return report
    plain = dataclasses.replace(options, measured_speeds=())
    baseline = judged(applied.unmeasured, list(applied.problems), plain)
    summary = MeasuredSummary(applied.measurements.measured_at, applied.notes, level_changes(baseline.verdicts, report.verdicts))
    return dataclasses.replace(report, measured=summary)


def render_summary(summary: MeasuredSummary) -> str:
    lines = [f"\nMeasured on this machine ({summary.measured_at}; `gpuready bench --show`):"]
    lines += [f"  {figure}" for figure in summary.figures]
    if summary.changed:
        from gpuready.tasks.registry import title

        lines.append("  verdicts changed by the measurements:")
        for task in dict.fromkeys(c.group or c.task for c in summary.changed):  # each task (or part) in order met
            lines.append(f"    {title(task)}:")
            lines += [f"      {c.model_name}: {level_words(c.level_without)} -> {level_words(c.level)}"
                      for c in summary.changed if (c.group or c.task) == task]
    else:
        lines.append("  no verdict's level changed because of them")
    return "\n".join(lines) + "\n"
