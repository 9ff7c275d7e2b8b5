"""Words, symbols, bars and speed units the terminal UI shows: pure functions over Report values.

No Textual here, so these are tested directly. Every verdict shows a symbol and a word,
never colour alone; the style names are theme variables ($success, $warning, ...) that
the app resolves, so light and dark themes and NO_COLOR all stay readable.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable

from rich.cells import cell_len, set_cell_size

from gpuready.hardware import GPU, Hardware
from gpuready.tasks import registry
from gpuready.tasks.base import band_words
from gpuready.frontends.text import LEVEL_WORDS, NOT_SUPPORTED, STATUS_WORDS
from gpuready.tasks.verdict import PLACEMENT_WORDS, Verdict
from gpuready.units import fmt_figures, fmt_gb

LEVEL_SYMBOLS = {
    "runs-well": "✔",
    "runs": "✓",
    "slow": "~",
    "too-slow": "✗",
    "does-not-fit": "✗",
    "unknown": "?",
}
LEVEL_STYLES = {
    "runs-well": "success",
    "runs": "success",
    "slow": "warning",
    "too-slow": "error",
    "does-not-fit": "error",
    "unknown": "secondary",
}
STATUS_SYMBOLS = {"ready": "✔", "limited": "~", "not-possible": "✗", "unknown": "?", "not-assessed": "·"}
STATUS_STYLES = {
    "ready": "success",
    "limited": "warning",
    "not-possible": "error",
    "unknown": "secondary",
    "not-assessed": "secondary",
}
# Short tab titles, so five tabs fit on an 80-column terminal.
TASK_TABS = {
    "text-generation": "Text",
    "image-generation": "Images",
    "speech": "Speech",
    "document-search": "Search",
}
USED_GLYPH, FREE_GLYPH = "█", "░"


def level_word(level: str, supported: bool = True) -> str:
    return LEVEL_WORDS.get(level, level.replace("-", " ")) if supported else NOT_SUPPORTED


def level_label(level: str, supported: bool = True) -> str:
    """Symbol and word for a verdict level: '✔ runs well'; '✗ not supported' where no runtime here runs the variant."""
    return f"{LEVEL_SYMBOLS.get(level, '?')} {level_word(level, supported)}"


def status_label(status: str) -> str:
    return f"{STATUS_SYMBOLS.get(status, '?')} {STATUS_WORDS.get(status, status.replace('-', ' '))}"


def task_title(task: str) -> str:
    return registry.title(task)


def task_tab(task: str) -> str:
    return TASK_TABS.get(task, task_title(task))


# --- the machine in one line ----------------------------------------------------------

_CPU_NOISE = [
    r"\(R\)",
    r"\(TM\)",
    r"\bCPU\b",
    r"@ ?[\d.]+ ?GHz",
    r"\b\d+-Core Processor\b",
    r"\bProcessor\b",
    r"\bAMD\b",
    r"\bIntel\b",
    r"\b\d+(st|nd|rd|th) Gen\b",
    r"\bwith Radeon Graphics\b",
]


def short_cpu_name(name: str | None) -> str:
    """'AMD Ryzen 9 7950X 16-Core Processor' -> 'Ryzen 9 7950X'; 'Apple M2' stays."""
    if not name:
        return "unknown CPU"
    text = name
    for pattern in _CPU_NOISE:
        text = re.sub(pattern, " ", text, flags=re.IGNORECASE)
    return " ".join(text.split()) or name


def short_gpu_name(name: str) -> str:
    return re.sub(r"^(NVIDIA|AMD|Intel\(R\)|Intel)\s+(GeForce\s+)?", "", name).strip() or name


def gpu_free_bytes(gpu: GPU, hardware: Hardware) -> int | None:
    """What a model may take on this GPU, as the verdicts count it (tasks.devices.usable_now)."""
    from gpuready.tasks.devices import usable_now

    return usable_now(gpu, hardware)


def _gb(value: int | None) -> str:
    return "?" if value is None else f"{value / 1024**3:.1f}"


def backend_versions(hardware: Hardware) -> list[str]:
    """Available backends with versions, e.g. 'CUDA 12.8'."""
    versions = []
    for backend in hardware.backends:
        if not backend.available:
            continue
        name = backend.name.upper() if len(backend.name) <= 4 else backend.name.capitalize()
        if backend.version and backend.version.lower().startswith(backend.name.lower()):
            versions.append(backend.version)  # "Metal 3", not "Metal Metal 3"
        else:
            versions.append(name + (f" {backend.version}" if backend.version else ""))
    return versions


def machine_line(hardware: Hardware) -> str:
    """'Ryzen 9 7950X · 62.5 GB · RTX 4090 24.0 GB (22.8 free) · CUDA 12.8'."""
    parts = [short_cpu_name(hardware.cpu.name)]
    parts.append(fmt_gb(hardware.memory.total_bytes) if hardware.memory.total_bytes else "memory unknown")
    counted = [gpu for gpu in hardware.gpus if gpu.counted]
    for gpu in counted:
        text = short_gpu_name(gpu.name)
        if gpu.memory_total_bytes:
            text += f" {fmt_gb(gpu.memory_total_bytes)}"
            free = gpu_free_bytes(gpu, hardware)
            if free is not None and free != gpu.memory_total_bytes:
                text += f" ({_gb(free)} {'usable' if gpu.kind == 'unified' else 'free'})"
        parts.append(text)
    if not counted:
        parts.append("no usable GPU")
    for npu in hardware.npus:
        parts.append(npu.name)
    parts += backend_versions(hardware)
    return " · ".join(parts)


def _cut_middle(name: str, cells: int, tail: int | None = None) -> str:
    tail = (cells - 1) // 2 if tail is None else tail
    return name[: cells - 1 - tail].rstrip() + "…" + (name[len(name) - tail :].lstrip() if tail else "")


# A parameter count in a model's name: '8B', '1.5B', '82M', '8x7B', '30B-A3B', '(12B)'.
_SIZE = re.compile(r"\d+(?:\.\d+)?[BM]\b")


def shorten_name(name: str, cells: int) -> str:
    """A model's name in ``cells`` cells, keeping what tells models apart (usually the size, near the end).

    Whole words are left out first ('Qwen2.5 … 7B Instruct', 'Mistral Small 24B …'): the size
    ('24B', '8x7B', '(12B)') is kept before the family's first word, that before the most of the
    name, and the gap as late as it can be. A name that would lose most of itself that way is cut
    in the middle ('DeepSeek-R…Qwen-1.5B'). A cut end made 'Qwen2.5 1…' of both 1.5B and 14B, and
    preferring every digit to the first word made '… 24B Instruct 2501' of Mistral Small.
    """
    if len(name) <= cells:
        return name
    if cells < 2:
        return name[:cells]
    words = name.split(" ")
    best, best_key = "", (False, False, 0, 0)
    for i in range(len(words)):
        for j in range(i + 1, len(words) + 1):
            if i == 0 and j == len(words):
                continue
            shorter = " ".join([*words[:i], "…", *words[j:]])
            keeps_size = not any(_SIZE.search(word) for word in words[i:j])
            key = (keeps_size, i > 0, len(shorter), i)  # the size, the family's first word, the most of it, a late gap
            if len(shorter) <= cells and key > best_key:
                best, best_key = shorter, key
    return best if len(best) >= cells * 0.7 else _cut_middle(name, cells)


def shorten_names(names, cells: int) -> dict[str, str]:
    """shorten_name for a column of names; names that come out alike are cut where they differ, where one cut can."""
    short = {name: shorten_name(name, cells) for name in names}
    seen: dict[str, list[str]] = {}
    for name, text in short.items():
        seen.setdefault(text, []).append(name)
    for alike in (group for group in seen.values() if len(group) > 1):
        for tail in range(cells - 1):  # the most of the start first
            tried = {name: _cut_middle(name, cells, tail) if len(name) > cells else name for name in alike}
            if len(set(tried.values())) == len(alike):
                short.update(tried)
                break
    return short


def shorten_line(line: str, cells: int, separator: str = " · ") -> str:
    """``line`` in at most ``cells`` cells: whole parts dropped from the end (a '…' part says so), else cut with '…'."""
    if cell_len(line) <= cells:
        return line
    if cells <= 0:
        return ""
    parts = line.split(separator)
    while len(parts) > 1:
        parts.pop()
        shorter = separator.join(parts) + separator + "…"
        if cell_len(shorter) <= cells:
            return shorter
    return set_cell_size(line, cells - 1) + "…"


# --- bars ---------------------------------------------------------------------------


def usage_bar(used_bytes: int | None, total_bytes: int | None, width: int) -> tuple[str, str]:
    """(used part, free part) of a bar ``width`` cells wide; unknown usage gives an all-'?' bar."""
    if not total_bytes or used_bytes is None:
        return "", "?" * width
    used_cells = round(width * min(max(used_bytes, 0), total_bytes) / total_bytes)
    return USED_GLYPH * used_cells, FREE_GLYPH * (width - used_cells)


def usage_text(used_bytes: int | None, free_bytes: int | None, total_bytes: int | None) -> str:
    if total_bytes is None:
        return "size unknown"
    if free_bytes is None:
        return f"{fmt_gb(total_bytes)} total, free unknown"
    return f"{_gb(used_bytes)} used · {_gb(free_bytes)} free of {fmt_gb(total_bytes)}"


@dataclasses.dataclass(frozen=True)
class Segment:
    label: str
    size_bytes: int
    glyph: str
    style: str


def breakdown_segments(verdict: Verdict) -> list[Segment]:
    """The memory breakdown of a verdict's estimate as bar segments, each with its own glyph."""
    memory = getattr(verdict.estimate, "memory", None)
    if memory is None:
        return []
    if hasattr(memory, "parts"):  # another task's MemoryParts: its own labelled parts, in its order
        styles = [("█", "primary"), ("▓", "accent"), ("▒", "warning"), ("▚", "secondary"), ("░", "success"),
                  ("▞", "primary"), ("▙", "accent"), ("▜", "warning")]  # distinct glyphs for up to eight parts
        return [Segment(part.label, part.bytes, *styles[i % len(styles)]) for i, part in enumerate(memory.parts)]
    parts = [
        ("weights", "weights_bytes", "█", "primary"),
        ("KV cache", "kv_cache_bytes", "▓", "accent"),
        ("compute buffers", "compute_bytes", "▒", "warning"),
        ("runtime overhead", "overhead_bytes", "▚", "secondary"),
    ]
    return [Segment(label, getattr(memory, field), glyph, style) for label, field, glyph, style in parts if hasattr(memory, field)]


def scale_segments(segments: list[Segment], available_bytes: int | None, width: int) -> tuple[list[tuple[Segment, int]], int | None]:
    """Cells per segment on a bar of ``width`` cells spanning max(need, available); and the cell where 'available' ends."""
    need = sum(s.size_bytes for s in segments)
    span = max(need, available_bytes or 0) or 1
    cells = [(segment, max(1, round(width * segment.size_bytes / span)) if segment.size_bytes else 0) for segment in segments]
    marker = None if available_bytes is None else min(width, round(width * available_bytes / span))
    return cells, marker


# --- per-task speed -----------------------------------------------------------------


def _text_generation_speed(verdict: Verdict) -> tuple[str, float | None]:
    speed = getattr(verdict.estimate, "speed", None)
    if speed is None or verdict.placement is None:
        return "-", None
    value = speed.generation_tokens_per_s
    return f"{fmt_figures(value)} tok/s", value


def detail_tokens(value: float, decimals: int = 1) -> str:
    """Tokens a second in the details screen's column, 8 wide: `decimals` places from 1 up, two figures below (0.04)."""
    return f"{fmt_figures(value, float('inf'), decimals):>8}"


# How each headline unit (Verdict.speed_unit) reads in a cell, and whether less is faster.
UNIT_LABELS = {"tokens/s": "tok/s", "x realtime": "× real time", "s/image": "s/image", "chunks/s": "chunks/min"}
LOWER_IS_FASTER = {"s/image"}


def _generic_speed(verdict: Verdict) -> tuple[str, float | None]:
    """Any task: the verdict's headline speed in its own unit (chunks a minute for embedding)."""
    if verdict.placement is None:
        return "-", None
    return headline_cell(verdict.speed, verdict.speed_unit)


def variant_speed_cell(variant) -> str:
    """One variant's speed in its task's unit, where it would run ("-" where it does not fit)."""
    if variant.placement is None:
        return "-"
    if variant.speed_unit == "tokens/s" and variant.speed is not None:
        return f"{fmt_figures(variant.speed)} tok/s"
    return headline_cell(variant.speed, variant.speed_unit)[0]


def headline_cell(value: float | None, unit: str | None) -> tuple[str, float | None]:
    """A headline speed in its own unit, and a key where larger is faster."""
    if value is None or unit is None:
        return "-", None
    shown = value * 60 if unit == "chunks/s" else value
    text = f"{shown:,.0f}" if shown >= 100 else (f"{shown:.2g}" if shown < 1 else f"{shown:.3g}")  # 0.014, never 0.00
    key = -float(value) if unit in LOWER_IS_FASTER else float(value)
    return f"{text} {UNIT_LABELS.get(unit, unit)}", key


SPEED_FORMATTERS: dict[str, Callable[[Verdict], tuple[str, float | None]]] = {
    "text-generation": _text_generation_speed,
}
SPEED_HEADINGS = {"text-generation": "Generation", "image-generation": "Per image", "speech": "Speed", "document-search": "Indexing"}


def speed_cell(verdict: Verdict) -> tuple[str, float | None]:
    """The speed in the task's unit, and a key where larger is faster (None when not estimated)."""
    return SPEED_FORMATTERS.get(verdict.task, _generic_speed)(verdict)


def uncertainty_cell(verdict: Verdict) -> str:
    value = verdict.uncertainty
    if not isinstance(value, (int, float)) or not verdict.placement:
        return "-"
    return band_words(value, "±", within="")  # '4.5x' for 'within 4.5x': a narrow column


def memory_cell(verdict: Verdict) -> str:
    """'18.6 / 56.0 GB': needed vs available where it would run."""
    return f"{_gb(verdict.memory_needed_bytes)}/{_gb(verdict.memory_available_bytes)} GB"


def placement_cell(verdict: Verdict) -> str:
    if verdict.placement is None:
        return "-"
    word = PLACEMENT_WORDS.get(verdict.placement, verdict.placement)
    fraction = getattr(verdict.estimate, "gpu_fraction", None)
    if verdict.placement == "split" and getattr(verdict.estimate, "cpu_expert_layers", 0):
        # Every layer is on the GPU and only experts are not: the share of the model's bytes there, not of its layers.
        estimate = verdict.estimate
        fraction = estimate.gpu_memory_bytes / ((estimate.gpu_memory_bytes + estimate.system_memory_bytes) or 1)
    if verdict.placement == "split" and isinstance(fraction, float):
        word += f" {fraction:.0%}"
    return word
