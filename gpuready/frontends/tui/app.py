"""The gpuready terminal UI: the machine, every task's verdicts, a model's details, and what-if.

The app never probes. It is given ``load``, a function that returns the probed hardware,
its problems and the catalogue (run in a daemon thread, so a slow probe never blocks the
UI), and builds Reports from them with gpuready.app.report, which is pure and
fast: changing the context length or adding a what-if GPU just rebuilds the Report.
"""

from __future__ import annotations

import dataclasses
import os
import threading
from collections.abc import Callable
from pathlib import Path

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import DataTable, Footer, Input, Static, TabbedContent, TabPane

from gpuready.catalog.loader import Catalog
from gpuready.hardware import Hardware, Problem
from gpuready import app as application
from gpuready.errors import UsageError
from gpuready.report import Report, dumps
from gpuready.tasks import registry
from gpuready.frontends.tui import format as fmt
from gpuready.frontends.tui.detail import DetailScreen
from gpuready.frontends.tui.screens import (
    ExportScreen,
    HelpScreen,
    SettingsScreen,
    WhatIf,
    WhatIfScreen,
)
from gpuready.frontends.tui.widgets import HardwarePane, ModelTable, TaskCard, color
from gpuready.tasks.verdict import RUNNABLE, Options


@dataclasses.dataclass(frozen=True)
class Inputs:
    """What a Report is built from: the probed machine, what went wrong probing it, the catalogue."""

    hardware: Hardware
    problems: tuple[Problem, ...]
    catalog: Catalog


@dataclasses.dataclass(frozen=True)
class ActiveWhatIf:
    label: str
    apply: Callable[[Hardware], Hardware]
    keeps_problems: bool  # a GPU added to the probed machine keeps its probe problems; a file does not


NARROW_COLUMNS = 110
MAIN_ACTIONS = {
    "help", "filter", "settings", "only_runnable", "whatif", "reset_whatif", "export", "reprobe", "sort", "toggle_theme", "tab"
}
CARD_ALTERNATIVES = 4  # runnable models listed under the best one on a wide overview


def prefers_light(environ=os.environ) -> bool:
    """A light terminal background, as terminals that set COLORFGBG ('15;0' = white on black) say."""
    background = environ.get("COLORFGBG", "").rsplit(";", 1)[-1]
    return background in ("7", "15")


class ProbeDone(Message):
    """The probe thread finished: the inputs, or the error that stopped it."""

    def __init__(self, inputs: Inputs | None = None, error: Exception | None = None) -> None:
        super().__init__()
        self.inputs = inputs
        self.error = error


class FilterInput(Input):
    BINDINGS = [Binding("escape", "app.clear_filter", "Clear filter")]


class GpureadyApp(App):
    CSS_PATH = Path(__file__).with_name("app.tcss")  # absolute, so subclasses elsewhere find it
    TITLE = "gpuready"
    ENABLE_COMMAND_PALETTE = False
    AUTO_FOCUS = "Tabs"
    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("ctrl+c", "quit", "Quit", show=False, priority=True),
        Binding("question_mark,f1", "help", "Help", key_display="?"),
        Binding("slash", "filter", "Filter", key_display="/"),
        # esc clears a filter from the table too, once enter has left the filter box (the help says "esc clears")
        Binding("escape", "clear_filter", "Clear filter", show=False),
        Binding("c", "settings", "Settings"),  # context first, then every task's own
        Binding("r", "only_runnable", "Runs only"),
        Binding("w", "whatif", "What-if"),
        Binding("x", "reset_whatif", "Undo"),
        Binding("e", "export", "Export"),
        Binding("p", "reprobe", "Probe"),
        Binding("b", "bench", "Bench", show=False),
        Binding("s", "sort", "Sort"),
        Binding("t", "toggle_theme", "Light/dark", show=False),
        *(Binding(str(n), f"tab({n})", f"Tab {n}", show=False) for n in range(1, 10)),
    ]

    def __init__(
        self,
        load: Callable[[], Inputs],
        options: Options | None = None,
        export_path: str = "gpuready-report.json",
        elsewhere: str | None = None,
    ) -> None:
        super().__init__()
        self.load = load
        # What ``load`` gives when it is not this computer ("a recording", "a what-if"): `b` then refuses.
        self.elsewhere = elsewhere
        self.options = options or Options()
        self.inputs: Inputs | None = None
        self.whatif: ActiveWhatIf | None = None
        self.report: Report | None = None
        self.only_runnable = False
        self.export_path = export_path
        self.fatal: str | None = None
        self.probing = False
        self.theme = "textual-light" if prefers_light() else "textual-dark"

    def notify(self, message: str, *, markup: bool = False, **kwargs) -> None:
        """A toast shown as plain text: ours quote commands and paths (pip install 'gpuready[bench]',
        a what-if file's path) whose square brackets and backslashes markup would eat."""
        super().notify(message, markup=markup, **kwargs)

    # --- layout -------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Static("gpuready · probing this machine…", id="machine")
        with TabbedContent(id="tabs", initial="overview"):
            with TabPane("1 Overview", id="overview"):
                with VerticalScroll(id="overview-scroll"):
                    with Horizontal(id="columns"):
                        with Vertical(id="tasks"):
                            for task in registry.names():
                                yield TaskCard(task, f"{fmt.task_title(task)}  waiting for the probe…", id=f"card-{task}", classes="card")
                        yield HardwarePane("Probing this machine…\n(the verdicts fill in when it is done)", id="hardware")
            for number, task in enumerate(registry.names(), start=2):
                yield self._task_pane(task, number)
        yield FilterInput(placeholder="filter models by name (enter: back to the table, esc: clear)", id="filter")
        yield Footer(compact=True)

    def _task_pane(self, task: str, number: int) -> TabPane:
        return TabPane(
            f"{number} {fmt.task_tab(task)}",
            Static("waiting for the probe…", id=f"status-{task}", classes="task-status"),
            ModelTable(task, id=f"table-{task}"),
            id=f"tab-{task}",
        )

    def on_mount(self) -> None:
        self._layout_for(self.size.width)
        self.probe()

    def on_resize(self, event) -> None:
        self._layout_for(event.size.width)
        self._header(event.size.width)  # shortened to the new width (self.size is updated after this handler)

    def _layout_for(self, width: int) -> None:
        narrow = width < NARROW_COLUMNS
        if self.screen.has_class("narrow") != narrow or not self.screen.has_class("laid-out"):
            self.screen.set_class(narrow, "narrow")
            self.screen.add_class("laid-out")
            if self.report is not None:
                self.show(self.report)

    # --- probing, off the UI thread -------------------------------------------------

    def probe(self) -> None:
        """Run ``load`` in a daemon thread: the UI stays live, and quitting never waits for a hung probe."""
        self.probing = True
        self._header()

        def work() -> None:
            try:
                message = ProbeDone(inputs=self.load())
            except Exception as error:  # noqa: BLE001 - shown to the user, not a traceback
                message = ProbeDone(error=error)
            try:
                self.post_message(message)  # thread-safe
            except RuntimeError:  # the app closed (its event loop too) while the probe ran
                pass

        threading.Thread(target=work, name="gpuready-probe", daemon=True).start()

    def on_probe_done(self, message: ProbeDone) -> None:
        self.probing = False
        if message.error is not None:
            self.fatal = str(message.error)
            self.exit(return_code=2)
            return
        self.inputs = message.inputs
        self.recompute()

    # --- building and showing the Report ------------------------------------------

    def hardware(self) -> tuple[Hardware, tuple[Problem, ...]]:
        """The machine the verdicts are for: the probed one, or the what-if."""
        assert self.inputs is not None
        if self.whatif is None:
            return self.inputs.hardware, self.inputs.problems
        problems = self.inputs.problems if self.whatif.keeps_problems else ()
        return self.whatif.apply(self.inputs.hardware), problems

    def recompute(self) -> None:
        if self.inputs is None:
            return
        hardware, problems = self.hardware()
        self.report = application.report(application.Request(options=self.options), self.inputs.catalog, (hardware, list(problems)))
        self.show(self.report)

    def show(self, report: Report) -> None:
        self._header()
        self.query_one("#hardware", HardwarePane).show(report.hardware, report.problems)
        tabs = self.query_one("#tabs", TabbedContent)
        for summary in report.tasks:
            if not self.query(f"#tab-{summary.task}"):
                # A task this version has no tab for yet: add one, and its card.
                tabs.add_pane(self._task_pane(summary.task, len(tabs.query(TabPane)) + 1))
                self.query_one("#tasks").mount(TaskCard(summary.task, id=f"card-{summary.task}", classes="card"))
                self.call_after_refresh(self.show, report)
                return
            verdicts = tuple(v for v in report.verdicts if v.task == summary.task)
            more = 0 if self.screen.has_class("narrow") else CARD_ALTERNATIVES
            self.query_one(f"#card-{summary.task}", TaskCard).show(summary, verdicts, more)
            table = self.query_one(f"#table-{summary.task}", ModelTable)
            table.only_runnable = self.only_runnable
            table.show(verdicts)
            self._status(summary.task)
        if isinstance(self.screen, DetailScreen):
            verdict = report.verdict(self.screen.verdict.model_id, self.screen.verdict.task)
            if verdict is not None:
                self.screen.show(verdict)

    def _header(self, width: int | None = None) -> None:
        text = Text()
        text.append(" gpuready ", style=f"bold reverse {color(self, 'primary')}")
        if self.report is None:
            text.append("  probing this machine…")
        else:
            # The settings the verdicts are for come last but always show: on a narrow terminal
            # the what-if label and then the machine line are shortened to make room for them.
            muted = color(self, "foreground-muted")
            settings = Text()
            context = self.options.context_tokens
            settings.append(f" · context {context:,}" if context else " · context 8,192", style=muted)
            users = getattr(self.options, "users", None)
            if users and users > 1:
                settings.append(f" · {users} users", style=muted)
            if self.probing:
                settings.append("  (re-probing…)", style=muted)
            width = width or self.size.width
            room = width - text.cell_len - settings.cell_len if width else 10**6
            if self.whatif:
                label = fmt.shorten_line(self.whatif.label, max(room - len(" WHAT-IF  ") - 16, 6), " ")
                text.append(f" WHAT-IF {label} ", style=f"bold reverse {color(self, 'warning')}")
                room -= len(f" WHAT-IF {label} ")
            machine = fmt.machine_line(self.report.hardware)
            text.append(" " + fmt.shorten_line(machine, max(room - 1, 0)))
            text.append_text(settings)
        self.query_one("#machine", Static).update(text)

    def _status(self, task: str) -> None:
        if self.report is None:
            return
        summary = next((s for s in self.report.tasks if s.task == task), None)
        table = self.query_one(f"#table-{task}", ModelTable)
        text = Text()
        if summary is not None:
            text.append(fmt.status_label(summary.status), style=f"bold {color(self, fmt.STATUS_STYLES.get(summary.status, 'secondary'))}")
            best = self.report.verdict(summary.best_model_id, task) if summary.best_model_id else None
            if best is not None:
                running = sum(1 for v in table.verdicts if v.level in RUNNABLE)
                text.append(f"  {running} of {len(table.verdicts)} models run here · best: ")
                text.append(best.model_name, style="bold")
            else:
                text.append(f"  {summary.summary}")
        if table.verdicts:
            shown = len(table.shown())
            text.append(f"\nshowing {shown} of {len(table.verdicts)}", style=color(self, "foreground-muted"))
            if table.filter_text:
                text.append(f" matching “{table.filter_text}”", style=color(self, "foreground-muted"))
            if table.only_runnable:
                text.append(" that run", style=color(self, "foreground-muted"))
            text.append(" · enter: details · click a heading or s: sort", style=color(self, "foreground-muted"))
        self.query_one(f"#status-{task}", Static).update(text)

    # --- what the user can do -------------------------------------------------------

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        """Hide what does not apply: table controls on a model's details, undo without a what-if."""
        if isinstance(self.screen, ModalScreen) and action in MAIN_ACTIONS:
            return False  # a dialog is open: its own keys only (and quit)
        on_main = not any(isinstance(screen, DetailScreen) for screen in self.screen_stack)
        if action in ("filter", "only_runnable", "sort", "tab"):
            return on_main
        if action == "reset_whatif":
            return self.whatif is not None
        return True

    def active_table(self) -> ModelTable | None:
        active = self.query_one("#tabs", TabbedContent).active
        if active.startswith("tab-"):
            return self.query_one(f"#table-{active[4:]}", ModelTable)
        return None

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    def action_tab(self, number: int) -> None:
        panes = list(self.query_one("#tabs", TabbedContent).query(TabPane))
        if 1 <= number <= len(panes):
            self.query_one("#tabs", TabbedContent).active = panes[number - 1].id
            table = self.active_table()
            if table is not None:
                table.focus()

    def on_task_card_chosen(self, event: TaskCard.Chosen) -> None:
        self.query_one("#tabs", TabbedContent).active = f"tab-{event.task_name}"
        self.query_one(f"#table-{event.task_name}", ModelTable).focus()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if not isinstance(event.data_table, ModelTable) or self.report is None:
            return
        task = (event.data_table.id or "").removeprefix("table-") or None
        verdict = self.report.verdict(str(event.row_key.value), task)
        if verdict is not None:
            self.push_screen(DetailScreen(verdict))

    def action_filter(self) -> None:
        if self.active_table() is None:
            self.action_tab(2)
        box = self.query_one("#filter", FilterInput)
        box.add_class("-shown")
        box.focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id != "filter":
            return
        for table in self.query(ModelTable):
            table.filter_text = event.value
            table.show()
            self._status(table.task_name)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "filter":
            table = self.active_table()
            if table is not None:
                table.focus()

    def action_clear_filter(self) -> None:
        box = self.query_one("#filter", FilterInput)
        box.value = ""
        box.remove_class("-shown")
        table = self.active_table()
        if table is not None:
            table.focus()

    def action_only_runnable(self) -> None:
        self.only_runnable = not self.only_runnable
        for table in self.query(ModelTable):
            table.only_runnable = self.only_runnable
            table.show()
            self._status(table.task_name)
        self.notify("Showing only models that run" if self.only_runnable else "Showing every model", timeout=2)

    def action_sort(self) -> None:
        table = self.active_table()
        if table is not None:
            table.next_sort()

    def action_settings(self) -> None:
        def apply(options: Options | None) -> None:
            if options is not None and options != self.options:
                self.options = options
                self.recompute()

        self.push_screen(SettingsScreen(self.options), apply)

    def action_whatif(self) -> None:
        self.push_screen(WhatIfScreen(), self.apply_whatif)

    def apply_whatif(self, choice: WhatIf | None) -> None:
        from gpuready.whatif import with_gpu

        if choice is None:
            return
        if choice.spec is not None:
            spec, count = choice.spec, choice.count
            label = f"+{count} × {fmt.short_gpu_name(spec.name)}" if count > 1 else f"+ {fmt.short_gpu_name(spec.name)}"
            self.whatif = ActiveWhatIf(label, lambda hardware: with_gpu(hardware, spec, count), keeps_problems=True)
        else:
            hardware = self.read_hardware_file(choice.hardware_path)
            if hardware is None:
                return
            self.whatif = ActiveWhatIf(f"hardware from {choice.hardware_path}", lambda _: hardware, keeps_problems=False)
        self.recompute()
        self.refresh_bindings()
        self.notify(f"What-if: {self.whatif.label}. Press x to go back to this machine.", timeout=4)

    def read_hardware_file(self, path: str) -> Hardware | None:
        from gpuready.hardware import HardwareFormatError

        try:
            return application.read_hardware_file(path)
        except UsageError as error:
            self.notify(str(error).removeprefix("--hardware "), severity="error")
        except HardwareFormatError as error:
            self.notify(str(error), severity="error", timeout=8)
        return None

    def action_reset_whatif(self) -> None:
        if self.whatif is not None:
            self.whatif = None
            self.recompute()
            self.refresh_bindings()
            self.notify("Back to this machine", timeout=2)

    def action_export(self) -> None:
        if self.report is None:
            self.notify("Nothing to export yet: the probe is still running", severity="warning")
            return

        def write(path: str) -> str:
            target = Path(path).expanduser()
            target.write_text(dumps(self.report), encoding="utf-8")
            return str(target.resolve())

        def done(written: str | None) -> None:
            if written:
                self.export_path = written
                self.notify(f"Report written to {written}", timeout=4)

        self.push_screen(ExportScreen(self.export_path, write), done)

    def action_reprobe(self) -> None:
        if not self.probing:
            self.probe()

    def action_bench(self) -> None:
        """Measure this machine (gpuready bench --quick), then probe again so the verdicts use it.

        Only when the machine on screen is this computer: measuring a recording or a what-if
        would measure the host instead and keep its numbers in the cache.
        """
        from gpuready.frontends.tui.bench import BenchScreen

        shown = self.elsewhere or ("a what-if" if self.whatif is not None else None)
        if shown is not None:
            undo = "; press x to go back to it" if self.elsewhere is None else ""
            self.notify(f"Not measured: measuring runs on this computer; the machine shown is {shown}{undo}",
                        severity="warning", timeout=6)
            return

        def done(summary: str | None) -> None:
            if summary:
                self.notify(summary, timeout=6)
                self.action_reprobe()

        self.push_screen(BenchScreen(), done)

    def action_toggle_theme(self) -> None:
        self.theme = "textual-light" if self.theme == "textual-dark" else "textual-dark"

    def watch_theme(self) -> None:
        if self.report is not None:
            self.show(self.report)

