"""Widgets of the main screen: the hardware pane, the per-task summaries and the model table.

Each takes finished values (Hardware, Problems, TaskSummary, Verdicts) and draws them;
none probes or judges.
"""

from __future__ import annotations

import textwrap

from rich.text import Text
from textual.app import App
from textual.color import Color
from textual.message import Message
from textual.widgets import DataTable, Static

from gpuready.frontends.text import describe_cores
from gpuready.hardware import Hardware, Problem, pcie_words
from gpuready.report import TaskSummary
from gpuready.tasks import registry
from gpuready.frontends.tui import format as fmt
from gpuready.tasks.verdict import LEVELS, PLACEMENT_ORDER, PLACEMENT_WORDS, RUNNABLE, Verdict

BAR_CELLS = 24
MIN_BAR_CELLS = 8  # below this a bar shows nothing; its words go on their own line instead


def color(app: App, name: str) -> str:
    """A theme colour by variable name ('success', 'warning', ...), falling back to the foreground."""
    variables = app.theme_variables or app.get_css_variables()
    value = variables.get(name) or variables.get("foreground")
    try:
        parsed = Color.parse(value)
        if parsed.a < 1:  # Rich has no alpha: blend over the background, as Textual would
            parsed = Color.parse(variables.get("background", "#000000")) + parsed
    except Exception:  # noqa: BLE001 - a theme without the variable
        return "default"
    return parsed.hex6


def hardware_text(
    app: App, hardware: Hardware, problems: tuple[Problem, ...], width: int | None = None, bar_cells: int = BAR_CELLS
) -> Text:
    """CPU, memory, GPUs, NPUs, backends and problems, with used/free bars; long lines wrap indented to ``width``."""
    text = Text()
    label = f"bold {color(app, 'accent')}"
    muted = color(app, "foreground-muted")
    bar_used = color(app, "primary")

    def heading(name: str) -> None:
        if text:
            text.append("\n")
        text.append(f"{name}\n", style=label)

    def line(content: str, style: str = "", indent: str = "  ") -> None:
        lines = textwrap.wrap(content, width - 1, initial_indent=indent, subsequent_indent=indent + "  ") if width else [indent + content]
        for wrapped in lines or [indent]:
            text.append(wrapped + "\n", style=style)

    def bar(used: int | None, total: int | None, free: int | None) -> None:
        # The bar gives way to its words: "115.4 free of 121.8 GB" wrapped "GB" alone onto the next line.
        words = fmt.usage_text(used, free, total)
        cells = max(MIN_BAR_CELLS, min(bar_cells, width - 1 - len("   ") - len(words))) if width else bar_cells
        used_part, free_part = fmt.usage_bar(used, total, cells)
        text.append("  ")
        text.append(used_part, style=bar_used)
        text.append(free_part, style=muted)
        if width and len("   ") + cells + len(words) > width - 1:
            text.append("\n")
            line(words)
        else:
            text.append(f" {words}\n")

    cpu = hardware.cpu
    heading("CPU")
    line(cpu.name or "unknown")
    details = []
    cores = describe_cores(cpu)
    if cores:
        details.append(cores)
    details.append(hardware.arch)
    if hardware.os:
        details.append(hardware.os + (" (container)" if hardware.in_container else ""))
    line(" · ".join(details), muted)
    if cpu.features:
        line(" ".join(cpu.features), muted)

    memory = hardware.memory
    heading("Memory" + (" (container limit)" if memory.limit_bytes is not None else ""))
    capacity = memory.capacity_bytes
    usable = memory.usable_bytes
    bar(None if capacity is None or usable is None else capacity - usable, capacity, usable)
    if cpu.memory_bandwidth_bytes_per_s:
        line(f"bandwidth {cpu.memory_bandwidth_bytes_per_s / 1e9:.0f} GB/s ({cpu.bandwidth_source})", muted)

    heading("GPUs")
    if not hardware.gpus:
        line("none found", muted)
    for gpu in hardware.gpus:
        line(gpu.name + (" (what-if)" if gpu.source == "user" else ""))
        free = fmt.gpu_free_bytes(gpu, hardware)
        total = gpu.memory_total_bytes
        if total is None and gpu.kind == "integrated":
            # No memory of its own to draw: a bar of '?' read as a fault (UHD Graphics 770 beside an Arc A770).
            line("no memory of its own: shares system memory", muted)
        else:
            bar(None if total is None or free is None else total - free, total, free)
        facts = [gpu.kind]
        if gpu.bandwidth_bytes_per_s:
            facts.append(f"{gpu.bandwidth_bytes_per_s / 1e9:.0f} GB/s ({gpu.bandwidth_source})")
        if gpu.backends:
            facts.append(", ".join(gpu.backends))
        link = pcie_words(gpu.pcie_link_gt_s, gpu.pcie_link_width)
        if link:
            facts.append(link)
        if gpu.driver_version:
            facts.append(f"driver {gpu.driver_version}")
        line(" · ".join(facts), muted)
        if not gpu.counted:
            line(f"not used for AI: {gpu.not_counted_reason}", color(app, "warning"))
    if hardware.npus:
        heading("NPUs")
        for npu in hardware.npus:
            tops = f" · {npu.tops_int8:g} TOPS" if npu.tops_int8 else ""
            runtimes = f" · {', '.join(npu.runtimes)}" if npu.runtimes else ""
            line(f"{npu.name}{tops}{runtimes}")
    backends = fmt.backend_versions(hardware)
    missing = [b.name for b in hardware.backends if not b.available]
    if backends or missing:
        heading("Backends")
        if backends:
            line(", ".join(backends))
        if missing:
            line(f"not usable: {', '.join(missing)}", muted)
    if problems:
        heading(f"Problems ({len(problems)})")
        for problem in problems:
            mark = "✗" if problem.severity == "error" else "!"
            line(f"{mark} [{problem.probe}] {problem.message}", color(app, "error" if problem.severity == "error" else "warning"))
            if problem.hint:
                line(f"hint: {problem.hint}", muted, indent="    ")
    text.rstrip()
    return text


class HardwarePane(Static):
    """The machine: CPU, memory, each GPU and NPU with used/free bars, backends, problems."""

    shown: tuple[Hardware, tuple[Problem, ...]] | None = None

    def show(self, hardware: Hardware, problems: tuple[Problem, ...]) -> None:
        self.shown = (hardware, problems)
        self.update(hardware_text(self.app, hardware, problems, self.content_size.width or None))

    def on_resize(self) -> None:
        if self.shown is not None:
            self.show(*self.shown)


class TaskCard(Static):
    """One task's status, best model and summary; clicking it opens the task's tab."""

    class Chosen(Message):
        def __init__(self, task: str) -> None:
            super().__init__()
            self.task_name = task

    def __init__(self, task: str, placeholder: str = "", **kwargs) -> None:
        super().__init__(placeholder, **kwargs)
        self.task_name = task
        self.shown: tuple | None = None

    def show(self, summary: TaskSummary, verdicts: tuple[Verdict, ...] = (), more: int = 0) -> None:
        """The status and best model; ``more`` other runnable models below it when there is room."""
        app = self.app
        muted = color(app, "foreground-muted")
        text = Text()
        text.append(f"{fmt.task_title(summary.task)}  ", style="bold")
        text.append(fmt.status_label(summary.status), style=f"bold {color(app, fmt.STATUS_STYLES.get(summary.status, 'secondary'))}")
        best = next((v for v in verdicts if v.model_id == summary.best_model_id), None)
        if best is not None:
            # A task with groups (speech: listening and speaking) names the best of each.
            verbs = {group.name: group.verb for group in registry.get(summary.task).groups} if summary.groups else {}
            parts = [(f"{verbs.get(part.task) or part.task}: " if summary.groups else "best: ",
                      next((v for v in verdicts if v.model_id == part.best_model_id), None)) for part in summary.groups or (summary,)]
            for label, pick in parts:
                text.append(f"\n  {label}")
                if pick is None:
                    text.append("none usable", style=muted)
                    continue
                name, tail = self._fitted(pick, len(f"  {label}"))
                text.append(name, style="bold")
                text.append(tail, style=muted)
            running = sum(1 for v in verdicts if v.level in RUNNABLE)
            text.append(f"\n  {running} of {len(verdicts)} models run here", style=muted)
            picked = {pick.model_id for _, pick in parts if pick is not None}
            others = [v for v in verdicts if v.level in RUNNABLE and v.model_id not in picked][:more]
            for other in others:
                text.append(f"\n  {fmt.LEVEL_SYMBOLS[other.level]} ", style=color(app, fmt.LEVEL_STYLES[other.level]))
                name, tail = self._fitted(other, 4)
                text.append(name, style="")
                text.append(tail, style=muted)
        else:
            width = self.content_size.width or 0
            indent = "  "
            wrapped = textwrap.wrap(summary.summary, width - 1, initial_indent=indent, subsequent_indent=indent) if width > 20 else [indent + summary.summary]
            text.append("\n" + "\n".join(wrapped), style=muted)
        self.shown = (summary, verdicts, more)
        self.update(text)

    def _fitted(self, verdict: Verdict, lead: int) -> tuple[str, str]:
        """A model's name and its ' · quant · where · speed' tail, kept to one line of the card (``lead``
        characters before the name): a wrapped line put the speed, the figure people look for, alone on the
        next line. Where the line is too long the placement goes first, then the name is shortened."""
        name, speed = verdict.model_name, fmt.speed_cell(verdict)[0]
        full = f" · {verdict.quant} · {fmt.placement_cell(verdict)} · {speed}"
        short = f" · {verdict.quant} · {speed}"
        width = self.content_size.width or 0
        if width <= 0 or lead + len(name) + len(full) <= width:
            return name, full
        room = width - lead - len(short)
        if len(name) <= room:
            return name, short
        return name[: max(8, room - 1)].rstrip() + "…", short

    def on_resize(self) -> None:
        if self.shown is not None:
            self.show(*self.shown)

    def on_click(self) -> None:
        self.post_message(self.Chosen(self.task_name))


COLUMNS = ("verdict", "model", "variant", "memory", "where", "speed", "uncertainty")
HEADINGS = {
    "group": "For",
    "verdict": "Verdict",
    "model": "Model",
    "variant": "Variant",
    "memory": "Need / avail",
    "where": "Where",
    "uncertainty": "±",
}
COMPACT_HEADINGS = {"memory": "GB need/has", "speed": "Speed"}
COMPACT_WIDTH = 100
# A narrow table leaves these out (in this order) before it cuts a model's name shorter than
# MODEL_ROOM: 'Qwen2.5 1…' cut at 10 cells is both the 1.5B and the 14B. The details show both.
NARROW_DROPS = ("uncertainty", "where")
MODEL_ROOM = 20
# A narrow table whose rows all share one of these units names it once, in the heading.
COMPACT_UNIT_HEADINGS = {"training tokens/s": "Train tok/s", "× real time": "× real time", "chunks/min": "Chunks/min"}
RIGHT_ALIGNED = {"memory", "speed", "uncertainty"}


def sort_value(verdict: Verdict, column: str, position: int):
    """Sort key of a verdict for a column; unknowns sort last."""
    if column == "verdict":
        return (LEVELS.index(verdict.level) if verdict.level in LEVELS else len(LEVELS), position)
    if column == "model":
        return (verdict.model_name.lower(),)
    if column == "variant":
        return (verdict.quant or "~",)
    if column == "memory":
        return (verdict.memory_needed_bytes is None, verdict.memory_needed_bytes or 0)
    if column == "where":
        order = PLACEMENT_ORDER.index(verdict.placement) if verdict.placement in PLACEMENT_ORDER else len(PLACEMENT_ORDER)
        return (order, position)
    if column == "speed":
        faster = fmt.speed_cell(verdict)[1]  # larger is faster, whatever the unit
        return (faster is None, -(faster or 0))
    return (position,)


class ModelTable(DataTable):
    """The verdicts of one task: sortable by clicking a heading (or `s`), filtered by name."""

    class Sorted(Message):
        pass

    def __init__(self, task: str, **kwargs) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)
        self.task_name = task
        self.verdicts: tuple[Verdict, ...] = ()
        self.sort_column = "verdict"
        self.sort_reverse = False
        self.filter_text = ""
        self.only_runnable = False
        self.compact = False
        self.groups = registry.get(task).groups if task in registry.names() else ()
        self.columns_shown = (("group", *COLUMNS) if self.groups else COLUMNS)

    def shown(self) -> list[Verdict]:
        """Verdicts after the name filter and 'only what runs', in the chosen order."""
        words = self.filter_text.lower().split()
        rows = [
            (position, verdict)
            for position, verdict in enumerate(self.verdicts)
            if all(w in f"{verdict.model_name} {verdict.model_id}".lower() for w in words)
            and (not self.only_runnable or verdict.level in RUNNABLE)
        ]
        rows.sort(key=lambda pair: sort_value(pair[1], self.sort_column, pair[0]), reverse=self.sort_reverse)
        # A task with groups (speech: listening, speaking) keeps each group together, in the task's order.
        groups = [group.name for group in self.groups]
        rows.sort(key=lambda pair: groups.index(pair[1].group) if pair[1].group in groups else len(groups))
        return [verdict for _, verdict in rows]

    def headings(self, speed: str | None = None) -> dict[str, str]:
        """Column headings, the sorted one with its arrow; ``speed`` names the speed column (its unit) instead."""
        names = dict(HEADINGS, speed=fmt.SPEED_HEADINGS.get(self.task_name, "Speed"))
        if self.compact:
            names.update(COMPACT_HEADINGS)
        if speed:
            names["speed"] = speed
        arrow = " ▲" if self.sort_reverse else " ▼"
        return {column: name + (arrow if column == self.sort_column else "") for column, name in names.items()}

    def cells(self, verdict: Verdict) -> dict[str, str]:
        """The plain text of a row; compact rows drop units and the split percentage."""
        if self.compact:
            memory = fmt.memory_cell(verdict)[:-3]
            where = PLACEMENT_WORDS.get(verdict.placement, "-") if verdict.placement else "-"
        else:
            memory, where = fmt.memory_cell(verdict), fmt.placement_cell(verdict)
        return {
            "group": fmt.task_title(verdict.group) if verdict.group else "-",
            "verdict": fmt.level_label(verdict.level, verdict.supported),
            "model": verdict.model_name,
            "variant": verdict.quant or "-",
            "memory": memory,
            "where": where,
            "speed": fmt.speed_cell(verdict)[0],
            "uncertainty": fmt.uncertainty_cell(verdict),
        }

    def show(self, verdicts: tuple[Verdict, ...] | None = None) -> None:
        if verdicts is not None:
            self.verdicts = verdicts
        selected = self.selected_model_id()
        width = self.size.width or 120
        # Narrow terminals: one space between columns instead of two, fewer units, and the
        # model's name gets what is left (cut with an ellipsis).
        self.compact = width < COMPACT_WIDTH
        self.cell_padding = 0 if self.compact else 1
        gap = 1 if self.compact else 2
        rows = [(verdict, self.cells(verdict)) for verdict in self.shown()]
        units = {fmt.UNIT_LABELS.get(v.speed_unit, v.speed_unit) for v, cells in rows if cells["speed"] != "-"}
        unit = units.pop() if self.compact and len(units) == 1 else None
        if unit in COMPACT_UNIT_HEADINGS:
            for _, cells in rows:
                cells["speed"] = cells["speed"].removesuffix(f" {unit}")
        headings = self.headings(COMPACT_UNIT_HEADINGS.get(unit))
        columns = list(self.columns_shown)
        widths = {c: max([len(headings[c])] + [len(cells[c]) for _, cells in rows]) for c in columns}

        def model_room() -> int:
            return width - sum(widths[c] + gap for c in columns if c != "model") - gap - 2

        for column in NARROW_DROPS:
            if model_room() >= min(widths["model"], MODEL_ROOM):
                break
            if column in columns and column != self.sort_column:
                columns.remove(column)
        model_width = max(10, min(widths["model"], model_room()))
        self.clear(columns=True)
        for column in columns:
            self.add_column(
                headings[column] + (" " if self.compact else ""),
                key=column,
                width=(model_width if column == "model" else widths[column]) + (1 if self.compact else 0),
            )
        app = self.app
        pad = " " if self.compact else ""
        names = fmt.shorten_names({cells["model"] for _, cells in rows}, model_width)
        for verdict, cells in rows:
            style = color(app, fmt.LEVEL_STYLES.get(verdict.level, "secondary"))
            name = cells["model"]
            cells["model"] = names[name]
            texts = []
            for column in columns:
                cell_width = model_width if column == "model" else widths[column]
                aligned = cells[column].rjust(cell_width) if column in RIGHT_ALIGNED else cells[column].ljust(cell_width)
                text = Text(aligned + pad, no_wrap=True)
                if column == "verdict":
                    text.stylize(f"bold {style}")
                texts.append(text)
            self.add_row(*texts, key=verdict.model_id)
        if selected is not None and selected in self.rows:
            self.move_cursor(row=self.get_row_index(selected), animate=False)

    def selected_model_id(self) -> str | None:
        if not self.row_count:
            return None
        try:
            return self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value
        except Exception:  # noqa: BLE001 - no cursor yet
            return None

    def sort_by(self, column: str) -> None:
        """Sort by a column; choosing the same column again reverses the order (groups always stay together)."""
        if column not in COLUMNS:
            return
        if column == self.sort_column:
            self.sort_reverse = not self.sort_reverse
        else:
            self.sort_column, self.sort_reverse = column, False
        self.show()

    def next_sort(self) -> None:
        self.sort_by(COLUMNS[(COLUMNS.index(self.sort_column) + 1) % len(COLUMNS)])  # the group column is not a sort

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        event.stop()
        self.sort_by(str(event.column_key.value))

    def on_resize(self) -> None:
        self.show()
