"""Screens over the main view: a model's details, help, settings, what-if and export.

Dialogs return what the user chose (new Options, a what-if, a path) with ``dismiss``;
the app recomputes the Report from that. None of them probes.
"""

from __future__ import annotations

import dataclasses
import textwrap
import typing

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import DataTable, Footer, Input, Label, OptionList, Select, Static
from textual.widgets.option_list import Option

from gpuready.tables import GPUSpec, gpu_table
from gpuready.tui import format as fmt
from gpuready.tui.widgets import color
from gpuready.verdict import Options, Verdict, fmt_gb

# Labels for the numeric settings in Options. Settings other tasks add to Options (an
# image resolution, a number of documents) appear in the settings dialog on their own,
# labelled from their field name until a label is added here.
SETTING_LABELS = {
    "context_tokens": ("Context length", "tokens; empty = 8,192, capped at each model's maximum"),
    "image_resolution_px": ("Image resolution", "pixels a side, e.g. 1024"),
    "image_size_px": ("Image resolution", "pixels a side, e.g. 1024"),
    "document_count": ("Documents to index", "e.g. 100000"),
    "documents": ("Documents to index", "e.g. 100000"),
}
PLACEMENT_CHOICES = (
    ("anywhere (GPU, GPU+CPU or CPU)", "cpu"),
    ("GPU or GPU+CPU split", "split"),
    ("GPU only", "gpu"),
)


def numeric_settings(options: Options) -> list[str]:
    """Names of the Options fields that hold a number (int or None)."""
    hints = typing.get_type_hints(type(options))
    return [f.name for f in dataclasses.fields(options) if "int" in str(hints[f.name]) and f.name != "quant"]


class DetailScreen(Screen):
    """One model: memory breakdown bar, speed and its basis, reasons, what would change it, variants."""

    BINDINGS = [Binding("escape,backspace", "app.pop_screen", "Back"), Binding("q", "app.pop_screen", "Back", show=False)]
    AUTO_FOCUS = "#detail"

    def __init__(self, verdict: Verdict) -> None:
        super().__init__()
        self.verdict = verdict

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="detail"):
            yield Static(id="detail-body")
            yield Label("Variants", classes="section")
            yield DataTable(id="variants", cursor_type="row", zebra_stripes=True)
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.show(self.verdict)

    def on_resize(self) -> None:
        self.show(self.verdict)

    def show(self, verdict: Verdict) -> None:
        self.verdict = verdict
        width = self.size.width or 80
        self.query_one("#detail-body", Static).update(detail_text(self, verdict, max(20, min(60, width - 30)), width - 4))
        table = self.query_one("#variants", DataTable)
        table.clear(columns=True)
        table.add_columns("Variant", "Verdict", "Memory", "Where", fmt.SPEED_HEADINGS.get(verdict.task, "Speed"))
        for variant in verdict.variants:
            speed = getattr(variant, "generation_tokens_per_s", None)
            table.add_row(
                variant.quant,
                Text(fmt.level_label(variant.level), style=color(self.app, fmt.LEVEL_STYLES.get(variant.level, "secondary"))),
                Text(fmt_gb(variant.memory_needed_bytes), justify="right"),
                fmt.PLACEMENT_WORDS.get(variant.placement, "-") if variant.placement else "-",
                Text(f"{speed:.1f} tok/s" if speed and variant.placement else "-", justify="right"),
                key=variant.quant,
            )


def detail_text(screen: Screen, verdict: Verdict, bar_cells: int, width: int = 76) -> Text:
    app = screen.app

    def lines(items, style: str = "", bullet: str = "") -> None:
        for item in items:
            for wrapped in textwrap.wrap(f"{bullet}{item}", width, initial_indent="  ", subsequent_indent="    ") or ["  "]:
                text.append(wrapped + "\n", style=style)

    muted = color(app, "foreground-muted")
    accent = f"bold {color(app, 'accent')}"
    text = Text()
    text.append(f"{verdict.model_name}", style="bold")
    text.append(f"  {verdict.model_id} · {fmt.task_title(verdict.task)}\n", style=muted)
    text.append(fmt.level_label(verdict.level), style=f"bold {color(app, fmt.LEVEL_STYLES.get(verdict.level, 'secondary'))}")
    facts = [verdict.quant or "-", fmt.placement_cell(verdict) if verdict.placement else None, f"{verdict.context_tokens:,} tokens of context"]
    text.append("  " + " · ".join(f for f in facts if f))
    if verdict.runtime:
        text.append(f" · {verdict.runtime}")
    text.append("\n")

    segments = fmt.breakdown_segments(verdict)
    if segments:
        text.append("\nMemory\n", style=accent)
        cells, marker = fmt.scale_segments(segments, verdict.memory_available_bytes, bar_cells)
        text.append("  ")
        drawn = 0
        for segment, count in cells:
            text.append(segment.glyph * count, style=color(app, segment.style))
            drawn += count
        if marker is not None and marker > drawn:
            text.append(fmt.FREE_GLYPH * (marker - drawn), style=muted)
        text.append("\n  ")
        if marker is not None:
            over = verdict.memory_needed_bytes is not None and verdict.memory_needed_bytes > (verdict.memory_available_bytes or 0)
            text.append(" " * max(0, marker - 1) + "▲", style=color(app, "error" if over else "success"))
            text.append(f" available {fmt_gb(verdict.memory_available_bytes)}\n")
        for segment in segments:
            text.append(f"  {segment.glyph} ", style=color(app, segment.style))
            text.append(f"{segment.label:<17}{fmt_gb(segment.size_bytes):>10}\n")
        text.append(f"    {'total':<17}{fmt_gb(verdict.memory_needed_bytes):>10}\n", style="bold")
        estimate = verdict.estimate
        if getattr(estimate, "placement", None) == "split":
            text.append(f"    on the GPU {fmt_gb(estimate.gpu_memory_bytes)}, in system memory {fmt_gb(estimate.system_memory_bytes)}\n")

    speed = getattr(verdict.estimate, "speed", None)
    if speed is not None:
        text.append("\nSpeed", style=accent)
        uncertainty = getattr(speed, "uncertainty", None)
        notes = ["if it fitted"] if verdict.placement is None else []
        if isinstance(uncertainty, float):
            notes.append(f"±{uncertainty:.0%}")
        text.append(f" ({', '.join(notes)})\n" if notes else "\n", style=muted)
        if hasattr(speed, "generation_tokens_per_s"):
            text.append(f"  generation {speed.generation_tokens_per_s:8.1f} tok/s with an empty context\n")
            full = getattr(speed, "generation_tokens_per_s_full_context", None)
            if full:
                text.append(f"             {full:8.1f} tok/s with the context full\n")
            prompt = getattr(speed, "prompt_tokens_per_s", None)
            text.append(f"  prompt     {prompt:8.0f} tok/s\n" if prompt else "  prompt     unknown\n")
        else:
            text.append(f"  {fmt.speed_cell(verdict)[0]}\n")
    basis = getattr(verdict.estimate, "basis", ())
    if basis:
        text.append("\nBasis\n", style=accent)
        lines(basis, muted)
    if verdict.reasons:
        text.append("\nWhy\n", style=accent)
        lines(verdict.reasons)
    text.append("\nWhat would change it\n", style=accent)
    if verdict.suggestions:
        lines(verdict.suggestions, bullet="→ ")
    else:
        text.append("  nothing needed: it already runs as well as this machine allows\n" if verdict.level == "runs-well" else "  no change found in the catalogue's variants\n", style=muted)
    text.append("  (press c to try another context length, w to try another GPU)\n", style=muted)
    text.rstrip()
    return text


HELP = """\
[b]gpuready[/b] shows what this machine can run locally, per task, from one
probe of the hardware. Speeds are estimates; the ± column says how sure.

[b]Keys[/b] (the mouse works too: click tabs, cards, rows and headings)
  1 … 5      overview, then a tab per task (←/→ on the tabs, too)
  ↑/↓ enter  move in a table; enter opens a model's details
  esc        back from details, close a dialog
  /          filter models by name (esc clears)
  s          sort by the next column (click a heading; again reverses)
  r          show only what runs / show everything
  c          settings: context length, placement (image size and
             document count appear once those tasks are assessed)
  w          what-if: add a GPU from the table, or a hardware file
  x          undo the what-if, back to the probed machine
  p          probe the machine again
  e          export the report as JSON (as `gpuready report --json`)
  t          switch between dark and light colours
  ?          this help
  q          quit (ctrl+c too)

[b]Verdicts[/b] (a symbol and a word, so colour is never needed)
  ✔ runs well     fast enough to use comfortably
  ✓ runs          keeps ahead of a reader
  ~ slow          usable with patience
  ✗ too slow      fits, but too slow to use
  ✗ does not fit  not enough free memory
  ? unknown       a probe failed or a number is missing

[b]Tasks[/b]  ✔ ready · ~ limited · ✗ not possible · ? could not tell
"""


class HelpScreen(ModalScreen):
    AUTO_FOCUS = "#help"
    BINDINGS = [Binding("escape,q,question_mark,f1", "app.pop_screen", "Close")]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help", classes="dialog"):
            yield Static(HELP, markup=True)


class SettingsScreen(ModalScreen):
    """Context length and the other numeric options, and the weakest placement accepted."""

    AUTO_FOCUS = "Input"

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, options: Options) -> None:
        super().__init__()
        self.options = options

    def compose(self) -> ComposeResult:
        with Vertical(id="settings", classes="dialog"):
            yield Label("Settings: enter applies and recomputes every verdict, esc cancels", classes="title")
            for name in numeric_settings(self.options):
                label, hint = SETTING_LABELS.get(name, (name.replace("_", " ").capitalize(), ""))
                value = getattr(self.options, name)
                yield Label(f"{label} ({hint})" if hint else label)
                yield Input(value="" if value is None else str(value), placeholder="default", id=f"setting-{name}", type="integer")
            yield Label("Accept models that run")
            yield Select(PLACEMENT_CHOICES, value=self.options.placement, allow_blank=False, id="placement")
            yield Label("", id="settings-error", classes="error")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.apply()

    def on_select_changed(self, event: Select.Changed) -> None:
        event.stop()
        if event.value != self.options.placement:
            self.apply()

    def apply(self) -> None:
        """Check every box and return new Options; a bad value is named and the dialog stays."""
        changes: dict = {}
        for name in numeric_settings(self.options):
            raw = self.query_one(f"#setting-{name}", Input).value.strip().replace(",", "").replace("_", "")
            if not raw:
                changes[name] = None
                continue
            if not raw.isdigit() or int(raw) <= 0:
                self.query_one("#settings-error", Label).update(f"{name.replace('_', ' ')}: a positive whole number, please")
                return
            changes[name] = int(raw)
        changes["placement"] = self.query_one("#placement", Select).value
        self.dismiss(dataclasses.replace(self.options, **changes))

    def action_cancel(self) -> None:
        self.dismiss(None)


@dataclasses.dataclass(frozen=True)
class WhatIf:
    """A what-if the user chose: a GPU from the table (count of them), or a hardware file."""

    spec: GPUSpec | None = None
    count: int = 1
    hardware_path: str | None = None


def spec_line(spec: GPUSpec) -> str:
    return f"{spec.name} · {spec.memory_bytes / 1024**3:.0f} GB · {spec.bandwidth_bytes_per_s / 1e9:.0f} GB/s"


class WhatIfScreen(ModalScreen):
    """Pick a GPU from the hardware table (type to narrow), or give a hardware JSON file."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def compose(self) -> ComposeResult:
        with Vertical(id="whatif", classes="dialog"):
            yield Label("What if this machine had…  (type to narrow, enter to choose)", classes="title")
            yield Input(placeholder="GPU name, e.g. 4090, M3 Max, 7900", id="gpu-filter")
            yield OptionList(id="gpu-list")
            yield Label("How many of it")
            yield Input(value="1", id="gpu-count", type="integer")
            yield Label("…or a hardware file (the 'hardware' JSON of a report)")
            yield Input(placeholder="path/to/hardware.json", id="hardware-path")
            yield Label("", id="whatif-error", classes="error")

    def on_mount(self) -> None:
        self.fill("")
        self.query_one("#gpu-filter", Input).focus()

    def fill(self, query: str) -> None:
        words = query.lower().split()
        options = self.query_one("#gpu-list", OptionList)
        options.clear_options()
        options.add_options(
            Option(spec_line(spec), id=spec.id)
            for spec in gpu_table()
            if all(word in f"{spec.name} {spec.id} {' '.join(spec.aliases)}".lower() for word in words)
        )
        if options.option_count:
            options.highlighted = 0

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "gpu-filter":
            self.fill(event.value)

    def _count(self) -> int | None:
        raw = self.query_one("#gpu-count", Input).value.strip()
        if not raw.isdigit() or not 1 <= int(raw) <= 16:
            self.query_one("#whatif-error", Label).update("how many: a whole number from 1 to 16")
            return None
        return int(raw)

    def _choose(self, spec_id: str | None) -> None:
        spec = next((s for s in gpu_table() if s.id == spec_id), None)
        count = self._count()
        if spec is not None and count is not None:
            self.dismiss(WhatIf(spec=spec, count=count))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if event.input.id == "hardware-path":
            if event.value.strip():
                self.dismiss(WhatIf(hardware_path=event.value.strip()))
            return
        options = self.query_one("#gpu-list", OptionList)
        if options.highlighted is not None:
            self._choose(options.get_option_at_index(options.highlighted).id)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self._choose(event.option.id)

    def on_key(self, event) -> None:
        # Up and down in the name box move through the list, so typing and choosing flow.
        if self.focused is self.query_one("#gpu-filter", Input) and event.key in ("up", "down"):
            options = self.query_one("#gpu-list", OptionList)
            options.action_cursor_down() if event.key == "down" else options.action_cursor_up()
            event.stop()

    def action_cancel(self) -> None:
        self.dismiss(None)


class ExportScreen(ModalScreen):
    """Ask where to write the report's JSON."""

    AUTO_FOCUS = "Input"

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, default_path: str, write: typing.Callable[[str], str]) -> None:
        super().__init__()
        self.default_path = default_path
        self.write = write  # writes the report to a path, returns the path written; raises OSError

    def compose(self) -> ComposeResult:
        with Vertical(id="export", classes="dialog"):
            yield Label("Export the report as JSON (enter to write, esc to cancel)", classes="title")
            yield Input(value=self.default_path, id="export-path")
            yield Label("", id="export-error", classes="error")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if not event.value.strip():
            return
        try:
            written = self.write(event.value.strip())
        except OSError as error:
            self.query_one("#export-error", Label).update(f"cannot write: {error.strerror or error}")
            return
        self.dismiss(written)

    def action_cancel(self) -> None:
        self.dismiss(None)
