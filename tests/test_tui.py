"""The terminal UI driven through Textual's Pilot on recorded machines (tests/fixtures/machines).

Each test builds the Report it expects with gpuready.report.build_report, the same pure
function the app uses, and asserts the app shows (or exported) exactly that.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from replay_support import with_pcie_link
from tui_support import (
    CPU_ONLY,
    GARBLED,
    MAC,
    MACHINES,
    NVIDIA_DESKTOP,
    app_for,
    inputs,
    settle,
    spec,
)

from gpuready.frontends.check import UsageError
from gpuready.hardware import GPU
from gpuready.report import build_report, hardware_json, report_json
from gpuready.frontends.tui import format as fmt
from gpuready.frontends.tui.app import GpureadyApp, prefers_light
from gpuready.frontends.tui.detail import DetailScreen
from gpuready.frontends.tui.screens import HELP, HelpScreen, WhatIfScreen
from gpuready.frontends.tui.widgets import ModelTable, hardware_text
from gpuready.tasks.verdict import RUNNABLE, Options
from gpuready.whatif import NVIDIA_DRIVER_RESERVED_BYTES, gpu_from_spec, with_gpu

ROOT = Path(__file__).resolve().parent.parent


def run(coroutine):
    return asyncio.run(coroutine)


def expected_report(machine: str, options: Options | None = None):
    loaded = inputs(machine)
    return build_report(loaded.hardware, list(loaded.problems), loaded.catalog, options)


def row_ids(table: ModelTable) -> list[str]:
    return [row.value for row in table.rows]


def text_verdicts(report):
    """The verdicts the text-generation tab shows, in report order."""
    return [v for v in report.verdicts if v.task == "text-generation"]


# --- what-if hardware -----------------------------------------------------------------


def test_with_gpu_replaces_the_machines_gpus_with_the_table_gpu_idle_and_marked_as_the_users():
    hardware = inputs(CPU_ONLY).hardware
    rtx_4090 = spec("rtx-4090")
    changed = with_gpu(hardware, rtx_4090, count=2)
    expected_gpu = GPU(
        vendor="nvidia",
        name="NVIDIA GeForce RTX 4090",
        kind="discrete",
        index=0,
        memory_total_bytes=rtx_4090.memory_bytes,
        memory_free_bytes=rtx_4090.memory_bytes - NVIDIA_DRIVER_RESERVED_BYTES,  # all free but the driver's own
        memory_usable_bytes=rtx_4090.memory_bytes - NVIDIA_DRIVER_RESERVED_BYTES,
        bandwidth_bytes_per_s=rtx_4090.bandwidth_bytes_per_s,
        bandwidth_source="table:rtx-4090",
        fp16_flops=rtx_4090.fp16_flops,
        flops_source="table:rtx-4090",
        architecture=rtx_4090.architecture,
        compute_capability=rtx_4090.compute_capability,
        table_id="rtx-4090",
        source="user",
    )
    assert changed == dataclasses.replace(
        hardware, gpus=(dataclasses.replace(expected_gpu, index=0), dataclasses.replace(expected_gpu, index=1))
    )
    assert gpu_from_spec(rtx_4090) == expected_gpu


def test_with_gpu_refuses_a_count_below_one():
    with pytest.raises(ValueError):
        with_gpu(inputs(CPU_ONLY).hardware, spec("rtx-4090"), count=0)


# --- formatting -------------------------------------------------------------------


def test_the_header_line_names_the_machine_shortly():
    assert fmt.machine_line(inputs(CPU_ONLY).hardware) == "Ryzen 9 7950X · 62.5 GB · no usable GPU"
    assert fmt.machine_line(inputs(NVIDIA_DESKTOP).hardware) == "Ryzen 9 7950X · 62.5 GB · RTX 4090 24.0 GB (23.5 free)"
    assert fmt.machine_line(inputs(MAC).hardware) == (
        "Apple M2 · 16.0 GB · Apple M2 (10-core GPU) 16.0 GB (5.2 usable) · Apple Neural Engine (M2) · Metal 3"
    )
    assert fmt.machine_line(inputs(GARBLED).hardware) == "unknown CPU · memory unknown · no usable GPU"


def test_cpu_names_lose_marketing_noise():
    assert [
        fmt.short_cpu_name(name)
        for name in (
            "AMD Ryzen 9 7950X 16-Core Processor",
            "13th Gen Intel(R) Core(TM) i7-13700K",
            "Intel(R) Core(TM) i9-9980HK CPU @ 2.40GHz",
            "Apple M2",
            None,
        )
    ] == ["Ryzen 9 7950X", "Core i7-13700K", "Core i9-9980HK", "Apple M2", "unknown CPU"]


def test_tasks_without_their_own_formatter_show_the_verdicts_headline_speed_in_its_unit():
    verdict = dataclasses.replace(
        expected_report(CPU_ONLY).verdicts[0], task="image-generation", speed=4.2, speed_unit="s/image", uncertainty=0.4
    )
    # The sort key is larger-is-faster, so seconds per image sort negated.
    assert (fmt.speed_cell(verdict), fmt.uncertainty_cell(verdict)) == (("4.2 s/image", -4.2), "±40%")
    # A band of 100% or more is a factor: the measured speed may be a fraction of the estimate, never negative.
    assert fmt.uncertainty_cell(dataclasses.replace(verdict, uncertainty=3.45)) == "4.5x"
    embedding = dataclasses.replace(verdict, task="document-search", speed=25.0, speed_unit="chunks/s")
    assert fmt.speed_cell(embedding) == ("1,500 chunks/min", 25.0)
    assert fmt.speed_cell(dataclasses.replace(verdict, speed=None)) == ("-", None)


def test_usage_bars_show_used_and_free_with_different_glyphs_and_unknown_as_question_marks():
    assert fmt.usage_bar(25, 100, 8) == ("██", "░░░░░░")
    assert fmt.usage_bar(None, 100, 4) == ("", "????")


def test_a_light_terminal_is_recognised_from_colorfgbg():
    assert [prefers_light({"COLORFGBG": value}) for value in ("0;15", "15;0", "0;default;7", "")] == [True, False, True, False]


def test_the_hardware_pane_shows_every_problem_with_its_hint():
    loaded = inputs(GARBLED)

    async def scenario():
        app = app_for(GARBLED)
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot)
            return hardware_text(app, loaded.hardware, loaded.problems).plain

    text = run(scenario())
    assert text.split("Problems (2)\n")[1] == (
        "  ✗ [cpu] /proc/cpuinfo lists no processors\n"
        "    hint: The file looks garbled; please report it with `gpuready record`.\n"
        "  ✗ [memory] /proc/meminfo has no MemTotal\n"
        "    hint: The file looks garbled; please report it with `gpuready record`."
    )
    assert "  ???????????????????????? size unknown\n" in text


def hardware_pane(machine: str, *widths: int) -> list[str]:
    """The hardware side panel's text for a recorded machine, wrapped at each of ``widths``."""
    loaded = inputs(machine)

    async def scenario():
        app = app_for(machine)
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot)
            return [hardware_text(app, loaded.hardware, loaded.problems, width=width).plain for width in widths]

    return run(scenario())


def test_a_memory_bar_gives_way_to_its_words_so_the_unit_stays_on_the_line():
    # Strix Halo at 120 columns: "6.4 used · 115.4 free of 121.8 GB" beside a 24-cell bar wrapped "GB" onto a line
    # of its own in the 56-column side panel.
    wide, narrow = hardware_pane("amd-strix-halo", 56, 20)
    # 56 - 1 (the wrap margin) - 3 (indent, space) - 33 (the words) = 19 cells
    assert "\n  █░░░░░░░░░░░░░░░░░░ 6.4 used · 115.4 free of 121.8 GB\n" in wide
    assert "\n  ░░░░░░░░░░░░░░░░░░░░ 0.3 used · 99.7 free of 100.0 GB\n" in wide
    # Too narrow for the shortest bar and its words: the bar keeps 8 cells and the words start their own line.
    assert "\nMemory\n  ░░░░░░░░\n  6.4 used · 115.4\n" in narrow


def test_an_integrated_gpu_without_memory_of_its_own_says_so_instead_of_a_bar_of_question_marks():
    (text,) = hardware_pane("intel-arc-a770-uhd770", 56)
    assert "\n  Intel UHD Graphics 770\n  no memory of its own: shares system memory\n  integrated · " in text
    assert "?" not in text.split("GPUs\n")[1].split("Problems")[0]  # the Arc A770 keeps its bar: 16 GB, all free
    assert "0.0 used · 16.0 free of 16.0 GB" in text


# --- the app ----------------------------------------------------------------------


@pytest.mark.parametrize("machine", [CPU_ONLY, MAC, GARBLED, NVIDIA_DESKTOP])
def test_the_app_shows_the_report_of_the_machine_with_a_tab_and_card_per_task(machine):
    async def scenario():
        app = app_for(machine)
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot)
            tables = {table.task_name: row_ids(table) for table in app.query(ModelTable)}
            return app.report, tables

    report, tables = run(scenario())
    expected = expected_report(machine)
    assert report_json(report) == report_json(expected)
    # A task with groups (speech: speech to text, text to speech) keeps each group together, in the task's order.
    def grouped(task):
        verdicts = [v for v in expected.verdicts if v.task == task.task]
        order = [part.task for part in task.groups]
        return [v.model_id for v in sorted(verdicts, key=lambda v: order.index(v.group) if v.group in order else 0)]

    assert tables == {task.task: grouped(task) for task in expected.tasks}


def test_number_keys_switch_tabs_and_enter_opens_the_selected_models_details():
    async def scenario():
        app = app_for(NVIDIA_DESKTOP)
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot)
            await pilot.press("2", "down", "down", "enter")
            await pilot.pause()
            opened = app.screen
            await pilot.press("escape")
            await pilot.pause()
            return opened, app.screen, app.query_one("#tabs").active

    opened, after, active = run(scenario())
    expected = [v for v in expected_report(NVIDIA_DESKTOP).verdicts if v.task == "text-generation"][2]
    assert isinstance(opened, DetailScreen) and opened.verdict == expected
    assert not isinstance(after, DetailScreen)
    assert active == "tab-text-generation"


def test_clicking_a_task_card_opens_its_tab():
    async def scenario():
        app = app_for(CPU_ONLY)
        async with app.run_test(size=(160, 48)) as pilot:
            await settle(pilot)
            await pilot.click("#card-text-generation")
            await pilot.pause()
            return app.query_one("#tabs").active

    assert run(scenario()) == "tab-text-generation"


@pytest.mark.parametrize("clear", [("slash", "escape"), ("escape",)])
def test_filtering_by_name_narrows_the_table_and_escape_clears_it(clear):
    # ("escape",): after enter the table has the focus, and esc there once did nothing; the help says "esc clears".
    async def scenario():
        app = app_for(CPU_ONLY)
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot)
            await pilot.press("2", "slash", *"qwen3 8", "enter")
            await pilot.pause()
            filtered = row_ids(app.query_one("#table-text-generation", ModelTable))
            await pilot.press(*clear)
            await pilot.pause()
            return filtered, row_ids(app.query_one("#table-text-generation", ModelTable)), app.query_one("#filter").value

    filtered, cleared, box = run(scenario())
    assert filtered == ["qwen3-8b"] and box == ""
    assert cleared == [v.model_id for v in text_verdicts(expected_report(CPU_ONLY))]


def test_show_only_what_runs_hides_models_that_do_not_run():
    async def scenario():
        app = app_for(MAC)
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot)
            await pilot.press("2", "r")
            await pilot.pause()
            return row_ids(app.query_one("#table-text-generation", ModelTable))

    expected = [v.model_id for v in text_verdicts(expected_report(MAC)) if v.level in RUNNABLE]
    assert run(scenario()) == expected
    assert 0 < len(expected) < len(text_verdicts(expected_report(MAC)))


def test_sorting_by_the_model_column_orders_rows_by_name_and_again_reverses():
    async def scenario():
        app = app_for(CPU_ONLY)
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot)
            await pilot.press("2", "s")
            await pilot.pause()
            ascending = row_ids(app.query_one("#table-text-generation", ModelTable))
            app.query_one("#table-text-generation", ModelTable).sort_by("model")
            await pilot.pause()
            return ascending, row_ids(app.query_one("#table-text-generation", ModelTable))

    ascending, descending = run(scenario())
    by_name = [v.model_id for v in sorted(text_verdicts(expected_report(CPU_ONLY)), key=lambda v: v.model_name.lower())]
    assert (ascending, descending) == (by_name, by_name[::-1])


def test_changing_the_context_length_recomputes_every_verdict():
    async def scenario():
        app = app_for(MAC)
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot)
            await pilot.press("c", *"32768", "enter")
            await pilot.pause()
            return app.report, row_ids(app.query_one("#table-text-generation", ModelTable))

    report, rows = run(scenario())
    expected = expected_report(MAC, Options(context_tokens=32768))
    assert report_json(report) == report_json(expected)
    assert rows == [v.model_id for v in text_verdicts(expected)]
    assert report_json(expected)["verdicts"] != report_json(expected_report(MAC))["verdicts"]


def test_a_context_length_that_is_not_a_number_is_refused_in_the_dialog():
    async def scenario():
        app = app_for(MAC)
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot)
            await pilot.press("c", "minus", "5", "enter")
            await pilot.pause()
            return type(app.screen).__name__, str(app.screen.query_one("#settings-error").render()), app.report.options

    assert run(scenario()) == ("SettingsScreen", "context tokens: a positive whole number, please", Options())


def test_the_settings_dialog_takes_an_image_resolution_and_refuses_a_bad_one():
    # docs/tui.md said the image resolution appears in the settings; as a (width, height) pair it never did.
    async def scenario(text):
        app = app_for(MAC)
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot)
            await pilot.press("c")
            await pilot.pause()
            app.screen.query_one("#setting-resolution").value = text
            app.screen.query_one("#setting-resolution").focus()
            await pilot.press("enter")
            await pilot.pause()
            error = str(app.screen.query_one("#settings-error").render()) if type(app.screen).__name__ == "SettingsScreen" else None
            return error, app.report.options

    assert run(scenario("768x512")) == (None, Options(resolution=(768, 512)))
    error, options = run(scenario("100x100"))
    assert error.startswith("image resolution: resolution '100x100': each side must be a multiple of 8") and options == Options()


def test_a_whatif_gpu_recomputes_every_verdict_and_x_goes_back_to_the_machine():
    async def scenario():
        app = app_for(CPU_ONLY)
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot)
            await pilot.press("w")
            await pilot.pause()
            assert isinstance(app.screen, WhatIfScreen)
            await pilot.press(*"rtx 4090", "enter")
            await pilot.pause()
            whatif = app.report
            await pilot.press("x")
            await pilot.pause()
            return whatif, app.report

    whatif, back = run(scenario())
    assert report_json(whatif) == report_json(expected_report(NVIDIA_DESKTOP))
    assert report_json(back) == report_json(expected_report(CPU_ONLY))


def test_a_whatif_hardware_file_replaces_the_machine_and_its_problems(tmp_path):
    path = tmp_path / "hardware.json"
    path.write_text(json.dumps(hardware_json(inputs(NVIDIA_DESKTOP).hardware)), encoding="utf-8")

    async def scenario():
        app = app_for(GARBLED)
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot)
            await pilot.press("w")
            await pilot.pause()
            app.screen.query_one("#hardware-path").value = str(path)
            app.screen.query_one("#hardware-path").focus()
            await pilot.press("enter")
            await pilot.pause()
            return app.report

    loaded = inputs(NVIDIA_DESKTOP)
    expected = build_report(loaded.hardware, [], loaded.catalog)
    assert report_json(run(scenario())) == report_json(expected)


def test_a_malformed_hardware_file_is_reported_and_the_machine_kept(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('{"platform": "linux"}', encoding="utf-8")

    async def scenario():
        app = app_for(CPU_ONLY)
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot)
            await pilot.press("w")
            await pilot.pause()
            app.screen.query_one("#hardware-path").value = str(path)
            app.screen.query_one("#hardware-path").focus()
            await pilot.press("enter")
            await pilot.pause()
            return app.report, app.whatif, [n.message for n in app._notifications]

    report, whatif, messages = run(scenario())
    assert report_json(report) == report_json(expected_report(CPU_ONLY))
    assert whatif is None
    assert messages == [f"{path}: hardware: missing key 'arch'"]


async def export_to(pilot, app, target) -> None:
    """Open the export dialog, give it ``target`` and press enter."""
    await pilot.press("e")
    await pilot.pause()
    app.screen.query_one("#export-path").value = str(target)
    await pilot.press("enter")
    await pilot.pause()


def test_export_writes_the_shown_report_as_valid_json(tmp_path):
    import jsonschema

    target = tmp_path / "report.json"

    async def scenario():
        app = app_for(NVIDIA_DESKTOP)
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot)
            await export_to(pilot, app, target)
            return app.report

    report = run(scenario())
    written = json.loads(target.read_text(encoding="utf-8"))
    assert written == report_json(report) == report_json(expected_report(NVIDIA_DESKTOP))
    schema = json.loads((ROOT / "gpuready" / "schemas" / "report.schema.json").read_text(encoding="utf-8"))
    jsonschema.validate(written, schema)


def test_export_to_an_unwritable_place_says_why_and_stays_open(tmp_path):
    target = tmp_path / "missing-dir" / "report.json"

    async def scenario():
        app = app_for(CPU_ONLY)
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot)
            await export_to(pilot, app, target)
            return type(app.screen).__name__, str(app.screen.query_one("#export-error").render())

    assert run(scenario()) == ("ExportScreen", "cannot write: No such file or directory")


def test_export_over_an_existing_file_asks_first_and_replaces_it_on_a_second_enter(tmp_path):
    target = tmp_path / "report.json"
    target.write_text("keep me")

    async def scenario():
        app = app_for(CPU_ONLY)
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot)
            await export_to(pilot, app, target)
            first = (type(app.screen).__name__, str(app.screen.query_one("#export-error").render()), target.read_text())
            await pilot.press("enter")
            await pilot.pause()
            return first, type(app.screen).__name__

    first, after = run(scenario())
    assert first == ("ExportScreen", f"{target} exists: enter again to replace it, or give another name", "keep me")
    assert after != "ExportScreen" and json.loads(target.read_text())["schema_version"] == 1


def test_the_help_screen_explains_every_key_the_footer_shows():
    async def scenario():
        app = app_for(CPU_ONLY)
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot)
            await pilot.press("question_mark")
            await pilot.pause()
            shown = app.screen
            await pilot.press("escape")
            await pilot.pause()
            return shown, app.screen, app

    shown, after, app = run(scenario())
    assert isinstance(shown, HelpScreen) and not isinstance(after, HelpScreen)
    footer_keys = {(b.key_display or b.key).split(",")[0] for b in GpureadyApp.BINDINGS if b.show}
    assert footer_keys == {"q", "?", "/", "c", "r", "w", "x", "e", "p", "s"}
    help_keys = {line.split()[0] for line in HELP.splitlines() if line.startswith("  ") and line.split()}
    assert footer_keys <= help_keys and "q          quit (ctrl+c too)" in HELP


def test_q_quits_and_ctrl_c_quits():
    async def scenario(key):
        app = app_for(CPU_ONLY)
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(pilot)
            await pilot.press(key)
            await pilot.pause()
            return app.return_code, app.is_running

    assert run(scenario("q")) == run(scenario("ctrl+c")) == (0, False)


def test_quitting_while_the_probe_hangs_does_not_wait_for_it():
    never = threading.Event()

    def hung_load():
        never.wait()  # a hung driver call: never returns

    async def scenario():
        app = GpureadyApp(hung_load)
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            await pilot.press("q")
            await pilot.pause()
            return app.return_code, app.is_running

    started = time.monotonic()
    assert run(scenario()) == (0, False)
    assert time.monotonic() - started < 5


def test_a_slow_probe_shows_the_ui_first_and_fills_it_in_when_done():
    release = threading.Event()
    loaded = inputs(CPU_ONLY)

    def slow_load():
        release.wait(timeout=10)
        return loaded

    async def scenario():
        app = GpureadyApp(slow_load)
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause()
            before = (app.report, str(app.query_one("#machine").render()), row_ids(app.query_one("#table-text-generation", ModelTable)))
            await pilot.press("2", "down")  # the UI answers keys while the probe runs
            await pilot.pause()
            tab = app.query_one("#tabs").active
            release.set()
            await settle(pilot)
            return before, tab, app.report

    (report_before, header, rows), tab, report = run(scenario())
    assert (report_before, rows, tab) == (None, [], "tab-text-generation")
    assert header == " gpuready   probing this machine…"
    assert report_json(report) == report_json(expected_report(CPU_ONLY))


def test_a_probe_that_fails_with_bad_input_exits_with_the_usage_code():
    def failing_load():
        raise UsageError("--hardware nope.json: cannot read: No such file or directory")

    async def scenario():
        app = GpureadyApp(failing_load)
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(pilot)
            return app.return_code, app.fatal

    assert run(scenario()) == (2, "--hardware nope.json: cannot read: No such file or directory")


def test_no_color_is_respected(monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    assert app_for(CPU_ONLY).no_color is True


# --- the CLI and the TUI -------------------------------------------------------------


def test_run_tui_builds_its_inputs_with_the_cli_helpers():
    from gpuready.frontends.arguments import build_parser
    from gpuready.frontends.tui import inputs_from_args

    args = build_parser().parse_args(["--machine", str(ROOT / "tests" / "fixtures" / "machines" / CPU_ONLY)])
    built = inputs_from_args(args)
    assert (built.hardware, built.problems) == (inputs(CPU_ONLY).hardware, inputs(CPU_ONLY).problems)
    assert sorted(built.catalog.models) == sorted(inputs(CPU_ONLY).catalog.models)


def test_report_and_check_never_import_textual():
    machine = str(ROOT / "tests" / "fixtures" / "machines" / CPU_ONLY)
    code = (
        "import sys, io, contextlib\n"
        "from gpuready.frontends.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    main(['report', '--json', '--machine', {machine!r}])\n"
        f"    main(['check', '--task', 'text-generation', '--machine', {machine!r}])\n"
        f"    main(['--machine', {machine!r}])\n"
        "print(sorted(m for m in sys.modules if m == 'textual' or m.startswith(('textual.', 'gpuready.frontends.tui'))))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60, env={**os.environ, "GPUREADY_PLAIN": ""})
    assert (result.returncode, result.stdout) == (0, "[]\n"), result.stderr


def test_clicking_the_memory_heading_sorts_by_memory_needed():
    async def scenario():
        app = app_for(MAC)
        async with app.run_test(size=(160, 48)) as pilot:
            await settle(pilot)
            await pilot.press("2")
            await pilot.pause()
            table = app.query_one("#table-text-generation", ModelTable)
            x = sum(column.get_render_width(table) for column in list(table.columns.values())[:3]) + 2
            await pilot.click(ModelTable, offset=(x, 0))
            await pilot.pause()
            return table.sort_column, row_ids(table)

    column, rows = run(scenario())
    by_memory = [v.model_id for v in sorted(text_verdicts(expected_report(MAC)), key=lambda v: v.memory_needed_bytes)]
    assert (column, rows) == ("memory", by_memory)


def test_p_probes_again_and_shows_the_new_result():
    calls = []
    first, second = inputs(MAC), inputs(CPU_ONLY)

    def load():
        calls.append(len(calls))
        return first if len(calls) == 1 else second

    async def scenario():
        app = GpureadyApp(load)
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot)
            before = app.report
            await pilot.press("p")
            await settle(pilot)
            return before, app.report

    before, after = run(scenario())
    assert calls == [0, 1]
    assert report_json(before) == report_json(expected_report(MAC))
    assert report_json(after) == report_json(expected_report(CPU_ONLY))


def test_a_task_the_ui_has_never_heard_of_gets_its_own_tab_and_card():
    from gpuready.tasks import registry
    from toy_task import toy_task

    registry.register(toy_task("video-generation", "Video generation"))

    async def scenario():
        app = app_for(CPU_ONLY)
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot)
            await pilot.press("7")  # after the five built-in tasks' tabs
            await pilot.pause()
            card = app.query_one("#card-video-generation")
            return app.query_one("#tabs").active, str(card.render()), str(app.query_one("#status-video-generation").render())

    try:
        active, card, status = run(scenario())
    finally:
        registry.unregister("video-generation")
    assert active == "tab-video-generation"
    assert card == "Video generation  · not assessed yet\n  no models for this task in the catalogue yet"
    assert status == "· not assessed yet  no models for this task in the catalogue yet"


@dataclasses.dataclass(frozen=True)
class FutureOptions(Options):
    """Options as the image-generation work may extend them."""

    image_resolution_px: int | None = None


def test_a_numeric_option_added_by_another_task_appears_in_the_settings_dialog():
    async def scenario():
        app = app_for(CPU_ONLY)
        app.options = FutureOptions()
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(pilot)
            await pilot.press("c")
            await pilot.pause()
            labels = [str(label.render()) for label in app.screen.query("Label")]
            app.screen.query_one("#setting-image_resolution_px").value = "1024"
            await pilot.press("enter")
            await pilot.pause()
            return labels, app.options

    labels, options = run(scenario())
    assert "Image resolution (pixels a side, e.g. 1024)" in labels
    assert options == FutureOptions(image_resolution_px=1024)


def test_the_settings_dialog_offers_whole_numbers_only_not_the_image_resolution_tuple():
    from gpuready.frontends.tui.screens import numeric_settings

    names = numeric_settings(Options())
    assert "resolution" not in names and "quant" not in names and "checkpointing" not in names
    assert {"context_tokens", "documents", "users"} <= set(names)


def test_overview_cards_keep_each_model_on_one_line():
    # A wrapped card line left "tok/s" or "time" alone on the next line; long lines drop the placement,
    # then shorten the model's name, so the speed stays on the model's line.
    from gpuready.frontends.tui.widgets import TaskCard

    async def scenario():
        app = app_for(NVIDIA_DESKTOP)
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot)
            cards = list(app.query(TaskCard))
            return [(card.content_size.width, str(card.render())) for card in cards]

    shown = run(scenario())
    assert len(shown) >= 4
    for width, text in shown:
        for line in text.splitlines()[1:]:
            assert len(line) <= width, (width, line)


@pytest.mark.parametrize("machine", [CPU_ONLY, MAC, NVIDIA_DESKTOP, GARBLED])
def test_enter_opens_the_details_of_a_model_of_every_task(machine):
    """Image, speech and document-search verdicts have no context length: their details must open all the same."""

    async def scenario():
        app = app_for(machine)
        shown = {}
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot)
            for number, table in enumerate(app.query(ModelTable), start=2):
                await pilot.press(str(number), "enter")
                await pilot.pause()
                screen = app.screen
                assert isinstance(screen, DetailScreen), table.task_name
                body = str(screen.query_one("#detail-body").render())
                from textual.widgets import DataTable
                variants = screen.query_one("#variants", DataTable)
                speeds = [str(variants.get_row_at(i)[-1]) for i in range(variants.row_count)]
                shown[table.task_name] = (screen.verdict, body, speeds)
                await pilot.press("escape")
                await pilot.pause()
        return shown

    shown = run(scenario())
    expected = expected_report(machine)
    assert set(shown) == {summary.task for summary in expected.tasks}
    for task, (verdict, body, speeds) in shown.items():
        assert verdict.task == task
        assert verdict.model_name in body
        assert ("tokens of context" in body) == (verdict.context_tokens is not None)
        assert ("press c to try another context length" in body) == (verdict.context_tokens is not None)
        assert ("press c for the settings" in body) == (verdict.context_tokens is None)
        # every task's memory breakdown, by its own parts (text generation: weights, KV cache, ...)
        memory = verdict.estimate.memory
        labels = [part.label for part in memory.parts] if hasattr(memory, "parts") else ["weights", "KV cache"]
        assert "Memory" in body and all(label in body for label in labels), (task, labels)
        # the legend lines up whether or not the memory available is known (with it unknown there is no "▲ available"
        # line, and the first row once came out two columns right)
        legend = [line for line in body.splitlines() if line.lstrip()[:1] in ("█", "▓", "▒", "▚") and "GB" in line]
        assert legend and {line.index(line.lstrip()) for line in legend} == {2}, (task, legend)
        # every variant that runs shows its speed in the task's unit; one that does not fit shows "-"
        for variant, speed in zip(verdict.variants, speeds):
            assert (speed != "-") == (variant.placement is not None and variant.speed is not None), (task, variant, speed)


def test_what_if_notifications_show_paths_as_written(tmp_path):
    """Square brackets and backslashes in a path are text, not markup: the toast shows the path the user typed."""
    folder = tmp_path / "pcs [draft] \\x"
    folder.mkdir()
    bad = folder / "bad.json"
    bad.write_text('{"platform": "linux"}', encoding="utf-8")
    good = folder / "good.json"
    good.write_text(json.dumps(hardware_json(inputs(NVIDIA_DESKTOP).hardware)), encoding="utf-8")

    async def scenario():
        app = app_for(CPU_ONLY)
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot)
            for path in (bad, folder / "missing.json", good):
                await pilot.press("w")
                await pilot.pause()
                app.screen.query_one("#hardware-path").value = str(path)
                app.screen.query_one("#hardware-path").focus()
                await pilot.press("enter")
                await pilot.pause()
            return [(n.message, n.markup) for n in app._notifications]

    shown = run(scenario())
    assert all(not markup for _, markup in shown)  # drawn as plain text
    messages = [message for message, _ in shown]
    assert messages[0] == f"{bad}: hardware: missing key 'arch'"
    assert str(folder / "missing.json") in messages[1]
    assert messages[2] == f"What-if: hardware from {good}. Press x to go back to this machine."


def test_shorten_line_drops_whole_parts_from_the_end_then_cuts():
    line = "Apple M2 · 16.0 GB · Apple Neural Engine (M2) · Metal 3"
    assert fmt.shorten_line(line, 80) == line
    assert fmt.shorten_line(line, 49) == "Apple M2 · 16.0 GB · Apple Neural Engine (M2) · …"
    assert fmt.shorten_line(line, 48) == "Apple M2 · 16.0 GB · …"
    assert fmt.shorten_line(line, 6) == "Apple…"
    assert fmt.shorten_line(line, 0) == ""


@pytest.mark.parametrize(("size", "whatif"), [((120, 40), False), ((80, 24), False), ((80, 24), True), ((60, 20), True)])
def test_the_header_always_shows_the_settings_the_verdicts_are_for(size, whatif):
    """A long machine line (an M2 with its NPU and Metal) is shortened; the context and users still show."""

    async def scenario():
        app = app_for(MAC)
        async with app.run_test(size=size) as pilot:
            await settle(pilot)
            if whatif:
                from gpuready.frontends.tui.screens import WhatIf

                app.apply_whatif(WhatIf(spec=spec("rtx-4090"), count=2))
            await pilot.press("c")
            await pilot.pause()
            app.screen.query_one("#setting-context_tokens").value = "65536"
            app.screen.query_one("#setting-users").value = "4"
            app.screen.query_one("#setting-context_tokens").focus()
            await pilot.press("enter")
            await pilot.pause()
            return app.report.options, app.query_one("#machine").render().plain

    options, header = run(scenario())
    check_header(options, header, size, whatif)


def test_the_header_is_shortened_again_when_the_terminal_narrows():
    async def scenario():
        app = app_for(MAC)
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot)
            await pilot.press("c", *"65536", "enter")
            await pilot.pause()
            await pilot.resize_terminal(80, 24)
            await pilot.pause(0.1)
            return app.report.options, app.query_one("#machine").render().plain

    options, header = run(scenario())
    assert options.context_tokens == 65536
    assert header.rstrip().endswith(" · context 65,536")
    assert len(header.rstrip()) <= 80


def check_header(options, header, size, whatif):
    assert (options.context_tokens, options.users) == (65536, 4)
    assert header.rstrip().endswith(" · context 65,536 · 4 users")
    assert len(header.rstrip()) <= size[0]
    assert header.startswith(" gpuready  WHAT-IF " if whatif else " gpuready  Apple M2 · ")


def test_a_shortened_model_name_keeps_what_tells_models_apart():
    assert fmt.shorten_name("Qwen2.5 Coder 7B Instruct", 21) == "Qwen2.5 … 7B Instruct"
    assert fmt.shorten_name("Stable Diffusion 3.5 Medium", 20) == "Stable … 3.5 Medium"
    assert fmt.shorten_name("DeepSeek-R1-Distill-Qwen-1.5B", 20) == "DeepSeek-R…Qwen-1.5B"
    assert fmt.shorten_name("Qwen3 4B", 20) == "Qwen3 4B"
    # the size before the family's first word, and that before a release date: not '… 24B Instruct 2501'
    assert fmt.shorten_name("Mistral Small 24B Instruct 2501", 22) == "Mistral Small 24B …"
    assert fmt.shorten_name("Mistral Nemo Instruct 2407 (12B)", 22) == "Mistral Nemo … (12B)"
    assert fmt.shorten_name("Mixtral 8x7B Instruct v0.1 (MoE)", 22) == "Mixtral 8x7B … (MoE)"
    assert fmt.shorten_names(["Qwen2.5 1.5B Instruct", "Qwen2.5 14B Instruct", "Qwen3 4B"], 12) == {
        "Qwen2.5 1.5B Instruct": "Qwen2.5 1.5…",
        "Qwen2.5 14B Instruct": "Qwen2.5 14B…",
        "Qwen3 4B": "Qwen3 4B",
    }


@pytest.mark.parametrize("machine", [CPU_ONLY, NVIDIA_DESKTOP])
def test_at_80_columns_no_two_models_look_alike_in_any_tab(machine):
    """The model's name has priority over ± and Where: 'Qwen2.5 1…' was both the 1.5B and the 14B."""

    async def scenario():
        app = app_for(machine)
        shown = {}
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(pilot)
            for number, table in enumerate(app.query(ModelTable), start=2):
                await pilot.press(str(number))
                await pilot.pause()
                shown[table.task_name] = [
                    (app.report.verdict(key.value, table.task_name).model_name, table.get_cell(key, "model").plain.strip())
                    for key in table.rows
                ]
        return shown

    for task, rows in run(scenario()).items():
        names_of = {}
        for name, cell in rows:
            names_of.setdefault(cell, set()).add(name)
        assert all(len(names) == 1 for names in names_of.values()), (task, names_of)
        if task in ("fine-tuning", "speech"):
            assert all(cell == name or len(cell) >= 15 for name, cell in rows), (task, rows)


def test_at_80_by_24_every_field_of_the_whatif_dialog_can_be_reached_on_screen():
    # the dialog is taller than 24 rows: the hardware-file field sat below the screen even when focused
    async def scenario():
        app = app_for(CPU_ONLY)
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(pilot)
            await pilot.press("w")
            await pilot.pause()
            regions = []
            for field in ("#gpu-filter", "#gpu-count", "#hardware-path"):
                app.screen.query_one(field).focus()
                await pilot.pause()
                regions.append(app.screen.query_one(field).region)
            return regions

    for region in run(scenario()):
        assert region.height > 0 and 0 <= region.y and region.bottom <= 24


@pytest.mark.parametrize(("value", "unit", "shown"), [
    (0.014, "x realtime", "0.014 × real time"),  # F5-TTS on a Raspberry Pi 5's CPU: it read "0.01"
    (0.0043, "x realtime", "0.0043 × real time"),  # it read "0.00"
    (36.1, "x realtime", "36.1 × real time"),
    (2.82, "s/image", "2.82 s/image"),
])
def test_a_headline_speed_under_one_keeps_two_figures(value, unit, shown):
    assert fmt.headline_cell(value, unit)[0] == shown


@pytest.mark.parametrize(("value", "shown"), [(0.04, "0.04 tok/s"), (0.384, "0.38 tok/s"), (1.14, "1.1 tok/s"), (36.4, "36 tok/s")])
def test_tokens_a_second_in_a_cell_never_read_zero(value, shown):
    # a variant's row in the details screen (and the text-generation table's cell, by the same format)
    variant = dataclasses.make_dataclass("V", ["placement", "speed_unit", "speed"])("cpu", "tokens/s", value)
    assert fmt.variant_speed_cell(variant) == shown


@pytest.mark.parametrize(("value", "decimals", "shown"), [(38.94, 1, "    38.9"), (0.043, 1, "   0.043"), (2171.2, 0, "    2171")])
def test_the_details_screens_token_rates_stay_in_their_column_and_never_read_zero(value, decimals, shown):
    assert fmt.detail_tokens(value, decimals) == shown



def test_the_hardware_pane_names_the_pcie_link_nvml_reported(tmp_path):
    recording = with_pcie_link(MACHINES / "nvidia-rtx4090", tmp_path / "rtx4090-on-x8", 4, 8)
    (text,) = hardware_pane(str(recording), 200)
    assert "discrete · 1008 GB/s (nvml) · cuda · PCIe 4.0 x8 · driver 550.54.14" in text
