"""Plain-text rendering of a Report: the summary printed when stdout is not a terminal."""

from __future__ import annotations

from gpuready.hardware import CPU, GPU, Hardware, pcie_words
from gpuready.report import Report
from gpuready.tasks import registry
from gpuready.tasks.base import band_words
from gpuready.tasks.devices import usable_now
from gpuready.tasks.judge import lowered_level
from gpuready.tasks.energy import low_high
from gpuready.tasks.text_estimate import TTFT_PROMPT_TOKENS
from gpuready.tasks.verdict import PLACEMENT_WORDS, Verdict
from gpuready.units import fmt_figures, fmt_gb, fmt_number

LEVEL_WORDS = {
    "runs-well": "runs well",
    "runs": "runs",
    "slow": "slow",
    "too-slow": "too slow",
    "does-not-fit": "does not fit",
    "unknown": "unknown",
}
# A does-not-fit verdict (or variant) that no runtime here runs at all, wherever it is placed (its `supported` is
# False): MLX weights on a PC are not "too big", they are not supported.
NOT_SUPPORTED = "not supported"


def verdict_word(verdict) -> str:
    """The level in words for a Verdict or VariantVerdict: 'runs well', 'does not fit', 'not supported'."""
    return LEVEL_WORDS[verdict.level] if verdict.supported else NOT_SUPPORTED


STATUS_WORDS = {
    "ready": "ready",
    "limited": "limited",
    "not-possible": "not possible",
    "unknown": "could not tell",
    "not-assessed": "not assessed yet",
}


def describe_cores(cpu: CPU) -> str | None:
    """'16 cores (8P + 8E), 32 threads', or None when the core count is unknown."""
    if not cpu.physical_cores:
        return None
    cores = f"{cpu.physical_cores} cores"
    if cpu.performance_cores and cpu.efficiency_cores:
        cores += f" ({cpu.performance_cores}P + {cpu.efficiency_cores}E)"
    if cpu.logical_cores and cpu.logical_cores != cpu.physical_cores:
        cores += f", {cpu.logical_cores} threads"
    return cores


def describe_cpu(hardware: Hardware) -> str:
    cpu = hardware.cpu
    parts = [cpu.name or "unknown CPU"]
    cores = describe_cores(cpu)
    if cores:
        parts.append(cores)
    if cpu.features:
        parts.append(" ".join(cpu.features))
    return " · ".join(parts)


def describe_memory(hardware: Hardware) -> str:
    memory = hardware.memory
    if memory.total_bytes is None:
        return "unknown"
    text = f"{fmt_gb(memory.total_bytes)} total, {fmt_gb(memory.available_bytes)} available"
    if memory.limit_bytes is not None:
        text += f", container limit {fmt_gb(memory.limit_bytes)} ({memory.limit_source})"
    if hardware.cpu.memory_bandwidth_bytes_per_s:
        source = hardware.cpu.bandwidth_source
        text += f" · {hardware.cpu.memory_bandwidth_bytes_per_s / 1e9:.0f} GB/s ({source})"
    return text


def describe_gpu(gpu: GPU, hardware: Hardware) -> str:
    text = gpu.name
    if gpu.memory_total_bytes:
        text += f" · {fmt_gb(gpu.memory_total_bytes)}"
        usable = gpu.memory_usable_bytes or gpu.memory_free_bytes
        now = usable_now(gpu, hardware) if usable is not None and gpu.vendor == "apple" else usable
        if now is not None and now < usable:
            # Metal's working-set limit is not what is free for a model now: the verdicts use the smaller.
            text += f" ({fmt_gb(now)} usable now, of a {fmt_gb(usable)} Metal limit)"
        elif now is not None:
            text += f" ({fmt_gb(now)} usable)"
    if gpu.bandwidth_bytes_per_s:
        text += f" · {gpu.bandwidth_bytes_per_s / 1e9:.0f} GB/s ({gpu.bandwidth_source})"
    link = pcie_words(gpu.pcie_link_gt_s, gpu.pcie_link_width)
    if link:
        text += f" · {link}"
    if gpu.driver_version:
        text += f" · driver {gpu.driver_version}"
    if not gpu.counted:
        text += f" · not used for AI: {gpu.not_counted_reason}"
    return text


def speed_cell(verdict: Verdict) -> str:
    """The headline speed in its task's unit (tokens/s as a bare number: the column says the unit)."""
    speed, unit = verdict.speed, verdict.speed_unit
    if speed is None or verdict.placement is None:
        return "-"
    if unit == "tokens/s":
        return fmt_figures(speed)
    if unit == "s/image":
        return f"{fmt_figures(speed, 100)} s/image"
    if unit == "x realtime":
        return f"{fmt_figures(speed, 100)}x"
    if unit == "chunks/s":
        return f"{speed * 60:,.0f}/min"
    return f"{fmt_figures(speed)} {unit}"


def prompt_cell(verdict: Verdict) -> str:
    """Prompt tokens/s of a text-generation verdict."""
    speed = getattr(verdict.estimate, "speed", None)
    prompt = getattr(speed, "prompt_tokens_per_s", None)
    return f"{prompt:,.0f}" if prompt and verdict.placement else "-"


def runtime_cell(verdict: Verdict) -> str:
    return verdict.runtime or "-"


# Marks a verdict counted lower than its speed alone earns; LOWERED_NOTE, under the table, says why.
LOWERED_MARK = "*"
LOWERED_NOTE = ("  * counted a level below its speed: a low-quality variant (2-3 bit K-quants, Q4_0, MLX 4-bit)\n"
                "    or one that may run out of memory; `gpuready estimate MODEL` says which")


def verdict_row(verdict: Verdict, extra_cells=(speed_cell, runtime_cell)) -> list[str]:
    """One table row: model, verdict, variant, memory, where, then the task's own cells."""
    fits = verdict.placement is not None
    return [
        verdict.model_name,
        verdict_word(verdict) + (LOWERED_MARK if lowered_level(verdict) else ""),
        verdict.quant or "-",
        fmt_gb(verdict.memory_needed_bytes),
        PLACEMENT_WORDS.get(verdict.placement, verdict.placement) if fits else "-",
        *(cell(verdict) for cell in extra_cells),
    ]


# Per task: the note under the title, the column headers, right-aligned columns, the cells after
# WHERE. A task not listed here (one added later) gets DEFAULT_COLUMNS.
ROW_HEADER = ["MODEL", "VERDICT", "VARIANT", "MEMORY", "WHERE"]
DEFAULT_COLUMNS = (None, [*ROW_HEADER, "SPEED", "RUNTIME"], {3, 5}, (speed_cell, runtime_cell))
TASK_COLUMNS = {
    "text-generation": (None, ["MODEL", "VERDICT", "QUANT", "MEMORY", "WHERE", "GEN tok/s", "PROMPT tok/s"], {3, 5, 6},
                        (speed_cell, prompt_cell)),
    "image-generation": ("native resolution and step count of each model; change with --resolution",
                         [*ROW_HEADER, "TIME", "RUNTIME"], {3, 5}, (speed_cell, runtime_cell)),
    "speech": ("speed as times real time: minutes of audio per minute", [*ROW_HEADER, "REALTIME", "RUNTIME"], {3, 5},
               (speed_cell, runtime_cell)),
    "document-search": ("embedding speed in chunks a minute; index of {documents:,} documents x 5 chunks; change with --documents",
                        DEFAULT_COLUMNS[1], {3, 5}, (speed_cell, runtime_cell)),
}


def table(rows: list[list[str]], header: list[str], right: set[int]) -> list[str]:
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = []
    for row in [header, *rows]:
        cells = [cell.rjust(widths[i]) if i in right else cell.ljust(widths[i]) for i, cell in enumerate(row)]
        lines.append("  " + "  ".join(cells).rstrip())
    return lines


def render(report: Report, task: str | None = None) -> str:
    hardware = report.hardware
    lines = [f"gpuready {report.gpuready_version}: what this machine can run locally", ""]
    system = hardware.os or hardware.platform
    if hardware.in_container:
        system += " (container)"
    lines.append(f"System    {system}, {hardware.arch}")
    lines.append(f"CPU       {describe_cpu(hardware)}")
    lines.append(f"Memory    {describe_memory(hardware)}")
    if hardware.gpus:
        for index, gpu in enumerate(hardware.gpus):
            lines.append(f"{'GPUs' if index == 0 else '':<10}{describe_gpu(gpu, hardware)}")
    else:
        lines.append("GPUs      none found")
    for index, npu in enumerate(hardware.npus):
        tops = f" · {npu.tops_int8:g} TOPS" if npu.tops_int8 else ""
        driver = " · driver not loaded" if npu.driver_loaded is False else ""
        lines.append(f"{'NPUs' if index == 0 else '':<10}{npu.name}{tops}{driver}")
    if hardware.backends:
        found = [f"{b.name} {b.version}" if b.version else b.name for b in hardware.backends if b.available]
        missing = [f"{b.name} unusable" for b in hardware.backends if not b.available]
        lines.append(f"{'Backends':<10}{' · '.join(found + missing)}")
    if report.resident:
        from gpuready.tasks.together import describe

        for index, verdict in enumerate(report.resident):
            lines.append(f"{'With' if index == 0 else '':<10}{describe(verdict)}")
    for problem in report.problems:
        lines.append(f"Problem   [{problem.probe}] {problem.message}")
        if problem.hint:
            lines.append(f"          hint: {problem.hint}")
    parent, only_group = registry.resolve(task) if task else (None, None)
    for summary in report.tasks:
        if parent and summary.task != parent.name:
            continue
        lines += ["", f"{registry.title(summary.task)}: {STATUS_WORDS[summary.status]} — {summary.summary}"]
        verdicts = [v for v in report.verdicts if v.task == summary.task]
        if verdicts:
            lines += task_tables(report, summary, verdicts, only_group.name if only_group else None)
    lines += ["", "Speeds are estimates (+/- and their basis shown in `gpuready estimate MODEL`).",
              "Each table: best verdict first, then the largest (most capable) model first."]
    return "\n".join(lines) + "\n"


def finetune_settings(options) -> str:
    """The recipe every fine-tuning verdict is judged at, and the flags that change it."""
    from gpuready.tasks import finetune

    sequence = options.sequence_tokens or finetune.DEFAULT_SEQUENCE_TOKENS
    batch = options.micro_batch or finetune.DEFAULT_MICRO_BATCH
    rank = options.lora_rank or finetune.DEFAULT_LORA_RANK
    checkpointing = "on" if options.checkpointing else "off"
    return (f"sequence {sequence:,} tokens, micro-batch {batch}, LoRA rank {rank}, gradient checkpointing {checkpointing}; "
            "change with --sequence, --micro-batch, --lora-rank, --no-checkpointing")


def task_tables(report: Report, summary, verdicts: list[Verdict], only_group: str | None = None) -> list[str]:
    """A task's note and table; a task with groups (speech, search) gets one table a group, each in one unit."""
    from gpuready.tasks.search import DEFAULT_DOCUMENTS

    note, header, right, cells = TASK_COLUMNS.get(summary.task, DEFAULT_COLUMNS)
    if summary.task == "text-generation":
        from gpuready.tasks.text import DEFAULT_CONTEXT_TOKENS

        from gpuready.tasks.concurrency import AVERAGE_CACHE_FILL

        requested = report.options.context_tokens or DEFAULT_CONTEXT_TOKENS
        users = getattr(report.options, "users", None) or 1
        # GEN tok/s is the verdict's headline: one user at an empty context, or each user's share of a batched step
        gen = (f"GEN tok/s: each of {users} users at once, caches {AVERAGE_CACHE_FILL:.0%} full" if users > 1
               else "GEN tok/s: at an empty context")
        note = f"context {requested:,} tokens; change with --context; {gen}"
        if any(v.context_tokens and v.context_tokens < requested for v in verdicts):
            note += "; CONTEXT shows a model's own maximum where it is shorter"
            header, cells = [*header, "CONTEXT"], (*cells, context_cell(requested))
            right = right | {len(header) - 1}
    if summary.task == "fine-tuning":
        note = finetune_settings(report.options)
    lines = [f"  ({note.format(documents=report.options.documents or DEFAULT_DOCUMENTS)})"] if note else []
    if not summary.groups:
        return lines + table([verdict_row(v, cells) for v in verdicts], header, right=right) + lowered_note(verdicts)
    for part in summary.groups:
        mine = [v for v in verdicts if v.group == part.task]
        if only_group and part.task != only_group or not mine:
            continue
        lines.append(f"  {registry.title(part.task)}: {STATUS_WORDS[part.status]} — {part.summary}")
        lines += table([verdict_row(v, cells) for v in mine], header, right=right) + lowered_note(mine)
    return lines


def lowered_note(verdicts: list[Verdict]) -> list[str]:
    """LOWERED_NOTE under a table with a marked verdict."""
    return [LOWERED_NOTE] if any(lowered_level(v) for v in verdicts) else []


def context_cell(requested: int):
    """A cell naming the context a model is judged at, where its maximum is shorter than the one asked for."""

    def cell(verdict: Verdict) -> str:
        context = verdict.context_tokens
        return f"{context:,}" if context and context < requested else ""

    return cell


def npu_lines(verdict: Verdict) -> list[str]:
    """The NPU placement a cited runtime offers, with its speed and what is missing."""
    offer = getattr(verdict, "npu", None)
    if offer is None:
        return []
    state = "available" if offer.available else "not available here: " + "; ".join(offer.missing)
    lines = ["", f"On the NPU ({state})", f"  {offer.speed:,.1f} {offer.speed_unit} ({band_words(offer.uncertainty)}) on {offer.npu}"]
    return lines + [f"  {line}" for line in offer.basis]


def energy_lines(verdict: Verdict) -> list[str]:
    """Energy per unit of work, with its band and basis, where it is known."""
    energy = getattr(verdict, "energy", None)
    if energy is None or verdict.placement is None:
        return []
    return ["", "Energy", f"  {fmt_number(energy.wh)} {energy.unit} ({low_high(energy)})", f"  {energy.basis}"]


def render_task_estimate(verdict: Verdict) -> str:
    """Breakdown for one image, speech or document-search model."""
    lines = [f"{verdict.model_name} ({verdict.model_id})", ""]
    lines.append(f"Verdict   {verdict_word(verdict)}" + (f" — {verdict.runtime}" if verdict.runtime else ""))
    estimate = verdict.estimate
    if estimate is not None:
        lines += [f"Variant   {estimate.quant}, placement {estimate.placement}", "", "Memory"]
        width = max(34, *(len(part.label) for part in estimate.memory.parts))  # "base weights (NF4, embeddings 16-bit)"
        lines += [f"  {part.label:<{width}} {fmt_gb(part.bytes):>10}  ({part.where})" for part in estimate.memory.parts]
        lines.append(f"  {'total':<{width}} {fmt_gb(estimate.memory.total_bytes):>10}  (available: {fmt_gb(verdict.memory_available_bytes)})")
        if estimate.speed is not None:
            shown = f"{estimate.speed:,.0f}" if estimate.speed >= 100 else f"{estimate.speed:.3g}"  # the band is tens of %
            lines += ["", f"Speed ({band_words(estimate.uncertainty)})", f"  {shown} {estimate.speed_unit}"]
        lines += energy_lines(verdict) + npu_lines(verdict)
        lines += ["", "Basis"] + [f"  {line}" for line in estimate.basis]
    lines += ["", "Why"] + [f"  {reason}" for reason in verdict.reasons]
    if verdict.suggestions:
        lines += ["", "What would change it"] + [f"  {s}" for s in verdict.suggestions]
    if verdict.variants:
        rows = [[v.quant, verdict_word(v), fmt_gb(v.memory_needed_bytes), v.placement or "-"] for v in verdict.variants]
        lines += ["", "Variants"] + table(rows, ["VARIANT", "VERDICT", "MEMORY", "WHERE"], right={2})
    return "\n".join(lines) + "\n"


def render_estimate(verdict: Verdict, beside_memory: str = "") -> str:
    """Full breakdown for one model, as `gpuready estimate` prints it; ``beside_memory`` (text
    lines, e.g. llama.cpp's own plan) follows the memory breakdown."""
    if verdict.task != "text-generation":
        return render_task_estimate(verdict) + beside_memory
    lines = [f"{verdict.model_name} ({verdict.model_id}) at {verdict.context_tokens:,} tokens of context", ""]
    lines.append(f"Verdict   {verdict_word(verdict)}" + (f" — {verdict.runtime}" if verdict.runtime else ""))
    estimate = verdict.estimate
    if estimate is not None:
        memory = estimate.memory
        placed = verdict.placement is not None
        lines += [
            f"Variant   {estimate.quant}"
            + (f", placement {estimate.placement}" if placed else "")
            + (f" ({estimate.split_words})" if placed and estimate.placement == "split" else ""),
            "",
            "Memory",
            f"  weights           {fmt_gb(memory.weights_bytes):>10}",
            f"  KV cache          {fmt_gb(memory.kv_cache_bytes):>10}",
            f"  compute buffers   {fmt_gb(memory.compute_bytes):>10}",
            f"  runtime overhead  {fmt_gb(memory.overhead_bytes):>10}",
            f"  total             {fmt_gb(memory.total_bytes):>10}   (available: {fmt_gb(verdict.memory_available_bytes)})",
        ]
        if estimate.placement == "split":
            lines.append(f"  on GPU {fmt_gb(estimate.gpu_memory_bytes)}, in system memory {fmt_gb(estimate.system_memory_bytes)}")
        if beside_memory:
            lines += ["", beside_memory.rstrip("\n")]
        if estimate.speed and placed:
            speed = estimate.speed
            lines += [
                "",
                f"Speed ({band_words(speed.uncertainty)})",
                f"  generation        {speed.generation_tokens_per_s:8.1f} tokens/s (empty context)",
                f"                    {speed.generation_tokens_per_s_full_context:8.1f} tokens/s (context full)",
                f"  prompt            {speed.prompt_tokens_per_s:8.0f} tokens/s{_band(speed.prompt_uncertainty)}"
                if speed.prompt_tokens_per_s else "  prompt            unknown",
            ]
            if speed.time_to_first_token_s is not None:
                lines.append(f"  first token       {speed.time_to_first_token_s:8.2f} s after a {TTFT_PROMPT_TOKENS}-token prompt"
                             f"{_band(speed.prompt_uncertainty)}")
            if estimate.batched is not None:
                lines.append(f"  {estimate.batched.users} users        {estimate.batched.per_user_tokens_per_s:8.1f} tokens/s each, "
                             f"{estimate.batched.aggregate_tokens_per_s:.0f} in all")
        lines += energy_lines(verdict)
        lines += ["", "Basis"] + [f"  {line}" for line in estimate.basis]
    lines += ["", "Why"] + [f"  {reason}" for reason in verdict.reasons]
    if verdict.suggestions:
        lines += ["", "What would change it"] + [f"  {s}" for s in verdict.suggestions]
    if verdict.variants:
        lines += ["", "Variants"]
        rows = [
            [
                v.quant,
                verdict_word(v),
                fmt_gb(v.memory_needed_bytes),
                v.placement or "-",
                f"{v.generation_tokens_per_s:.1f}" if v.generation_tokens_per_s and v.placement else "-",
            ]
            for v in verdict.variants
        ]
        lines += table(rows, ["QUANT", "VERDICT", "MEMORY", "WHERE", "GEN tok/s"], right={2, 4})
    if beside_memory and estimate is None:
        lines += ["", beside_memory.rstrip("\n")]
    return "\n".join(lines) + "\n"


def _band(uncertainty: float | None) -> str:
    """The prompt's own band where it differs from the speed heading's (prompt speed is harder to predict)."""
    return f" ({band_words(uncertainty)})" if uncertainty else ""
