"""`b` in the terminal UI: measure this machine (as `gpuready bench --quick`) with a progress view.

The measurement runs in a daemon thread; the dialog shows its progress, the result is kept
in the cache like the command's, and the app probes again so the verdicts use it.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import threading
from collections.abc import Callable

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Footer, ProgressBar, Static

Measure = Callable[[Callable[..., None]], str]


def measure_and_keep(advance: Callable[..., None]) -> str:
    """Quick measurements of the live machine, kept in the cache; returns a one-line summary."""
    from gpuready.bench import cache, command

    if importlib.util.find_spec("numpy") is None:
        raise RuntimeError(f"measuring needs numpy: {command.EXTRA_HINT}")
    hardware, _ = command._probe()
    measurements, problems = command.measure_machine(hardware, True, advance)
    kept, _ = cache.load(hardware)
    if kept is not None:
        measurements = dataclasses.replace(measurements, models=kept.models, encoders=kept.encoders)
    cache.save(measurements)
    read = measurements.memory_read_bytes_per_s
    text = f"Measured memory bandwidth {read.median / 1e9:.1f} GB/s (±{read.relative_spread:.0%})" if read else "Measured"
    return text + "".join(f"; {p.message}" for p in problems)


class BenchScreen(ModalScreen):
    """A progress bar while the measurement runs; dismissed with its summary (or an error line)."""

    BINDINGS = [Binding("escape", "app.pop_screen", "Close")]

    def __init__(self, measure: Measure | None = None, steps: int | None = None) -> None:
        super().__init__()
        from gpuready.bench.measure import QUICK_PLAN

        self.measure = measure or measure_and_keep
        self.steps = steps or QUICK_PLAN.steps + 1

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog", id="bench"):
            yield Static("Measuring this machine (about 5 s)", classes="title")
            yield Static("memory bandwidth, CPU matmul, then GPUs if PyTorch is installed", id="bench-step")
            yield ProgressBar(total=self.steps, id="bench-progress")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        bar = self.query_one(ProgressBar)

        def advance(label: str | None = None) -> None:
            self.app.call_from_thread(bar.advance, 1)
            if label:
                self.app.call_from_thread(self.query_one("#bench-step", Static).update, Text(label))  # not markup

        def work() -> None:
            try:
                result = self.measure(advance)
            except Exception as error:  # noqa: BLE001 - shown to the user, not a traceback
                result = f"Not measured: {error}"
            try:
                self.app.call_from_thread(self.dismiss, result)
            except RuntimeError:  # the app closed meanwhile
                pass

        threading.Thread(target=work, name="gpuready-bench", daemon=True).start()
