"""A model's details: the memory breakdown as a bar, the speed and its basis, why, what would change it, every variant.

Drawn from one Verdict of the Report; the app hands it the new Verdict when the Report
is rebuilt (another context length, a what-if GPU) while it is open.
"""

from __future__ import annotations

import textwrap

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Label, Static

from gpuready.frontends.tui import format as fmt
from gpuready.frontends.tui.widgets import color
from gpuready.tasks.base import band_words
from gpuready.tasks.energy import low_high
from gpuready.tasks.verdict import PLACEMENT_WORDS, Verdict
from gpuready.units import fmt_gb, fmt_number


class DetailScreen(Screen):
    """One model: memory breakdown bar, speed and its basis, reasons, what would change it, variants."""

    BINDINGS = [Binding("escape", "app.pop_screen", "Back"), Binding("backspace", "app.pop_screen", "Back", show=False)]
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
            table.add_row(
                variant.quant,
                Text(fmt.level_label(variant.level, variant.supported), style=color(self.app, fmt.LEVEL_STYLES.get(variant.level, "secondary"))),
                Text(fmt_gb(variant.memory_needed_bytes), justify="right"),
                PLACEMENT_WORDS.get(variant.placement, "-") if variant.placement else "-",
                Text(fmt.variant_speed_cell(variant), justify="right"),
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
    text.append(fmt.level_label(verdict.level, verdict.supported), style=f"bold {color(app, fmt.LEVEL_STYLES.get(verdict.level, 'secondary'))}")
    # Only text generation has a context length; image, speech and document-search verdicts leave it None.
    context = f"{verdict.context_tokens:,} tokens of context" if verdict.context_tokens is not None else None
    facts = [verdict.quant or "-", fmt.placement_cell(verdict) if verdict.placement else None, context]
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
        text.append("\n")
        if marker is not None:  # (with memory unknown there is no marker line, and the legend starts at once)
            # split and offload placements need more than the GPU holds by design: the rest waits in system memory
            over = (verdict.placement not in ("split", "offload") and verdict.memory_needed_bytes is not None
                    and verdict.memory_needed_bytes > (verdict.memory_available_bytes or 0))
            text.append("  ")
            text.append(" " * max(0, marker - 1) + "▲", style=color(app, "error" if over else "success"))
            text.append(f" available {fmt_gb(verdict.memory_available_bytes)}\n")
        label_width = max(17, *(len(segment.label) + 1 for segment in segments))
        for segment in segments:
            text.append(f"  {segment.glyph} ", style=color(app, segment.style))
            text.append(f"{segment.label:<{label_width}}{fmt_gb(segment.size_bytes):>10}\n")
        text.append(f"    {'total':<{label_width}}{fmt_gb(verdict.memory_needed_bytes):>10}\n", style="bold")
        estimate = verdict.estimate
        if getattr(estimate, "placement", None) in ("split", "offload") and verdict.placement:
            text.append(f"    on the GPU {fmt_gb(estimate.gpu_memory_bytes)}, in system memory {fmt_gb(estimate.system_memory_bytes)}\n")
            if getattr(estimate, "split_words", ""):
                text.append(f"    {estimate.split_words}\n")

    speed = getattr(verdict.estimate, "speed", None)
    if speed is not None:
        text.append("\nSpeed", style=accent)
        uncertainty = getattr(speed, "uncertainty", None)
        notes = ["if it fitted"] if verdict.placement is None else []
        if isinstance(uncertainty, float):
            notes.append(band_words(uncertainty, "±"))
        text.append(f" ({', '.join(notes)})\n" if notes else "\n", style=muted)
        if hasattr(speed, "generation_tokens_per_s"):
            text.append(f"  generation {fmt.detail_tokens(speed.generation_tokens_per_s)} tok/s with an empty context\n")
            full = getattr(speed, "generation_tokens_per_s_full_context", None)
            if full:
                text.append(f"             {fmt.detail_tokens(full)} tok/s with the context full\n")
            prompt = getattr(speed, "prompt_tokens_per_s", None)
            band = getattr(speed, "prompt_uncertainty", None)
            band_note = f" ({band_words(band, '±')})" if isinstance(band, float) else ""
            text.append(f"  prompt     {fmt.detail_tokens(prompt, 0)} tok/s{band_note}\n" if prompt else "  prompt     unknown\n")
            first = getattr(speed, "time_to_first_token_s", None)
            if first is not None:
                text.append(f"  first token {first:7.2f} s after a 512-token prompt{band_note}\n")
        else:
            text.append(f"  {fmt.speed_cell(verdict)[0]}\n")
    energy = getattr(verdict, "energy", None)
    if energy is not None and verdict.placement is not None:
        text.append("\nEnergy", style=accent)
        text.append(f" ({low_high(energy)})\n", style=muted)
        text.append(f"  {fmt_number(energy.wh)} {energy.unit} at {energy.power_w:g} W\n")
    offer = getattr(verdict, "npu", None)
    if offer is not None:
        text.append("\nOn the NPU", style=accent)
        text.append(f" ({band_words(offer.uncertainty, '±')}{'' if offer.available else ', not available here'})\n", style=muted)
        text.append(f"  {offer.speed:,.1f} {offer.speed_unit} on {offer.npu} via {offer.runtime}\n")
        for missing in offer.missing:
            text.append(f"  missing: {missing}\n", style=muted)
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
    # the context length changes only the tasks that have one (text generation, fine-tuning); the others have their
    # own settings in the same dialog (image resolution, documents to index)
    keys = "c to try another context length" if verdict.context_tokens is not None else "c for the settings"
    text.append(f"  (press {keys}, w to try another GPU)\n", style=muted)
    text.rstrip()
    return text
