"""Dialogs over the main view: help, settings, what-if and export.

Dialogs return what the user chose (new Options, a what-if, a path) with ``dismiss``;
the app recomputes the Report from that. None of them probes.
"""

from __future__ import annotations

import dataclasses
import os
import typing

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer, Input, Label, OptionList, Select, Static
from textual.widgets.option_list import Option

from gpuready.catalog.tables import GPUSpec, gpu_table
from gpuready.tasks.verdict import Options
from gpuready.errors import UsageError
from gpuready.units import parse_resolution

# Labels for the numeric settings in Options. Settings other tasks add to Options (an
# image resolution, a number of documents) appear in the settings dialog on their own,
# labelled from their field name until a label is added here.
SETTING_LABELS = {
    "context_tokens": ("Context length", "tokens; empty = 8,192, capped at each model's maximum"),
    "image_resolution_px": ("Image resolution", "pixels a side, e.g. 1024"),
    "image_size_px": ("Image resolution", "pixels a side, e.g. 1024"),
    "document_count": ("Documents to index", "e.g. 100000"),
    "documents": ("Documents to index", "e.g. 100000"),
    "users": ("Users at once", "text generation: concurrent sequences; empty = 1"),
    "sequence_tokens": ("Fine-tuning sequence", "tokens; empty = 2,048"),
    "micro_batch": ("Fine-tuning micro-batch", "empty = 1"),
    "lora_rank": ("LoRA rank", "empty = 16"),
}
PLACEMENT_CHOICES = (
    ("anywhere (GPU, GPU+CPU or CPU)", "cpu"),
    ("GPU or GPU+CPU split", "split"),
    ("GPU only", "gpu"),
)


def numeric_settings(options: Options) -> list[str]:
    """Names of the Options fields that hold a whole number (int or None; not a (width, height) tuple)."""
    hints = typing.get_type_hints(type(options))
    return [f.name for f in dataclasses.fields(options) if _whole_number(hints[f.name])]


def _whole_number(hint) -> bool:
    options = typing.get_args(hint) or (hint,)
    return int in options and all(option in (int, type(None)) for option in options)


HELP = """\
[b]gpuready[/b] shows what this machine can run locally, per task, from one
probe of the hardware. Speeds are estimates; the ± column says how sure.

[b]Keys[/b] (the mouse works too: click tabs, cards, rows and headings)
  1 … 6      overview, then a tab per task (←/→ on the tabs, too)
  ↑/↓ enter  move in a table; enter opens a model's details
  esc        back from details, close a dialog
  /          filter models by name (esc clears)
  s          sort by the next column (click a heading; again reverses)
  r          show only what runs / show everything
  c          settings: context length, users at once, placement,
             image resolution, documents, fine-tuning sequence,
             micro-batch, LoRA rank
  w          what-if: add a GPU from the table, or a hardware file
  x          undo the what-if, back to the probed machine
  p          probe the machine again
  b          measure this machine (memory bandwidth, matmul, GPUs)
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
    BINDINGS = [Binding("escape", "app.pop_screen", "Close"), Binding("question_mark,f1", "app.pop_screen", "Close", show=False)]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help", classes="dialog"):
            yield Static(HELP, markup=True)
        yield Footer(compact=True)


class SettingsScreen(ModalScreen):
    """Context length and the other numeric options, and the weakest placement accepted."""

    AUTO_FOCUS = "Input"

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, options: Options) -> None:
        super().__init__()
        self.options = options

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="settings", classes="dialog"):  # more settings than a short terminal has lines
            yield Label("Settings: enter applies and recomputes every verdict, esc cancels", classes="title")
            for name in numeric_settings(self.options):
                label, hint = SETTING_LABELS.get(name, (name.replace("_", " ").capitalize(), ""))
                value = getattr(self.options, name)
                yield Label(f"{label} ({hint})" if hint else label)
                yield Input(value="" if value is None else str(value), placeholder="default", id=f"setting-{name}", type="integer")
            resolution = self.options.resolution
            yield Label("Image resolution (WIDTHxHEIGHT, e.g. 1024x768; empty = each model's own)")
            yield Input(value=f"{resolution[0]}x{resolution[1]}" if resolution else "", placeholder="default",
                        id="setting-resolution")
            yield Label("Accept models that run")
            yield Select(PLACEMENT_CHOICES, value=self.options.placement, allow_blank=False, id="placement")
            yield Label("", id="settings-error", classes="error")
        yield Footer(compact=True)

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
        raw = self.query_one("#setting-resolution", Input).value.strip()
        try:
            changes["resolution"] = parse_resolution(raw) if raw else None
        except UsageError as error:
            self.query_one("#settings-error", Label).update(f"image resolution: {error}")
            return
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
        yield Footer(compact=True)

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
        yield Footer(compact=True)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        path = event.value.strip()
        if not path:
            return
        if os.path.exists(os.path.expanduser(path)) and getattr(self, "_confirmed", None) != path:
            # An existing file is replaced only on a second enter for the same path.
            self._confirmed = path
            self.query_one("#export-error", Label).update(f"{path} exists: enter again to replace it, or give another name")
            return
        try:
            written = self.write(path)
        except OSError as error:
            self.query_one("#export-error", Label).update(f"cannot write: {error.strerror or error}")
            return
        self.dismiss(written)

    def action_cancel(self) -> None:
        self.dismiss(None)
