"""The terminal UI's `b`: measure with a progress view, keep the result, probe again."""

from __future__ import annotations

import asyncio
import importlib.util

import pytest
from textual.content import Content
from tui_support import CPU_ONLY, inputs, settle, spec

from gpuready.bench import cache, command
from gpuready.bench.results import Measurements
from gpuready.bench.stats import Spread
from gpuready.frontends.tui.app import GpureadyApp
from gpuready.frontends.arguments import build_parser
from gpuready.frontends.tui import not_this_computer
from gpuready.frontends.tui.bench import BenchScreen
from gpuready.frontends.tui.screens import WhatIf


async def press_b_and_wait(pilot, app, done=lambda: True) -> None:
    """Press b, then wait (up to 3 s) until the measuring view has closed and ``done()`` holds."""
    await pilot.press("b")
    for _ in range(300):
        await pilot.pause(0.01)
        if not isinstance(app.screen, BenchScreen) and done():
            break


def test_b_measures_keeps_the_result_and_probes_again(monkeypatch):
    loaded = inputs(CPU_ONLY)
    steps = []

    def measure_machine(hardware, quick, advance):
        for _ in range(3):
            advance()
            steps.append(quick)
        return Measurements(measured_at="2026-12-03", fingerprint=cache.fingerprint(hardware),
                            memory_read_bytes_per_s=Spread(60e9, 62e9, 63e9, 5)), []

    monkeypatch.setattr(command, "measure_machine", measure_machine)
    monkeypatch.setattr(command, "_probe", lambda: (loaded.hardware, []))
    loads = []

    def load():
        loads.append(1)
        return loaded

    async def scenario():
        app = GpureadyApp(load)
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot)
            await press_b_and_wait(pilot, app, lambda: len(loads) == 2)
            await settle(pilot)
            return [n.message for n in app._notifications]

    messages = asyncio.run(scenario())
    assert steps == [True, True, True]  # the quick plan
    assert len(loads) == 2
    assert messages == ["Measured memory bandwidth 62.0 GB/s (±2%)"]
    kept, _ = cache.load(loaded.hardware)
    assert kept.memory_read_bytes_per_s == Spread(60e9, 62e9, 63e9, 5)


def test_a_failed_measurement_is_a_notification_not_a_crash(monkeypatch):
    loaded = inputs(CPU_ONLY)

    def measure_machine(hardware, quick, advance):
        raise OSError("no memory")

    monkeypatch.setattr(command, "measure_machine", measure_machine)
    monkeypatch.setattr(command, "_probe", lambda: (loaded.hardware, []))

    async def scenario():
        app = GpureadyApp(lambda: loaded)
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot)
            await press_b_and_wait(pilot, app)
            return [n.message for n in app._notifications]

    assert asyncio.run(scenario()) == ["Not measured: no memory"]
    assert cache.load(loaded.hardware) == (None, None)


def refused(monkeypatch, app, before=()):
    """Press b on ``app`` with measuring wired to fail the test; the notifications shown, and whether a dialog opened."""
    loaded = inputs(CPU_ONLY)
    measured = []

    def measure_machine(hardware, quick, advance):
        measured.append(hardware)
        raise AssertionError("measured the host while another machine was shown")

    def probe():
        measured.append("probe")
        return loaded.hardware, []

    monkeypatch.setattr(command, "measure_machine", measure_machine)
    monkeypatch.setattr(command, "_probe", probe)

    async def scenario():
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot)
            for step in before:
                step(app)
            await pilot.press("b")
            await pilot.pause()
            opened = isinstance(app.screen, BenchScreen)
            await pilot.pause(0.1)
            return [n.message for n in app._notifications], opened

    messages, opened = asyncio.run(scenario())
    assert not opened and measured == []
    assert cache.load(loaded.hardware) == (None, None)
    return messages


def test_b_refuses_on_a_recorded_machine_and_keeps_nothing(monkeypatch):
    loaded = inputs(CPU_ONLY)
    messages = refused(monkeypatch, GpureadyApp(lambda: loaded, elsewhere="a recording"))
    assert messages == ["Not measured: measuring runs on this computer; the machine shown is a recording"]


def test_b_refuses_while_a_what_if_gpu_is_shown(monkeypatch):
    loaded = inputs(CPU_ONLY)
    gpu = WhatIf(spec=spec("rtx-4090"))
    messages = refused(monkeypatch, GpureadyApp(lambda: loaded), before=[lambda app: app.apply_whatif(gpu)])
    assert messages[-1] == "Not measured: measuring runs on this computer; the machine shown is a what-if; press x to go back to it"


@pytest.mark.parametrize(("argv", "environ", "shown"), [
    ([], {}, None),
    (["--machine", "tests/fixtures/machines/mac-m2-air-16gb"], {}, "a recording"),
    ([], {"GPUREADY_MACHINE": "tests/fixtures/machines/mac-m2-air-16gb"}, "a recording"),
    (["--hardware", "next-pc.json"], {}, "a what-if"),
    (["--gpu", "RTX 4090"], {}, "a what-if"),
    (["--memory", "64GB"], {}, "a what-if"),
])
def test_the_cli_arguments_say_when_the_machine_is_not_this_computer(argv, environ, shown):
    assert not_this_computer(build_parser().parse_args(argv), environ) == shown


def on_screen(notification) -> str:
    """A notification's text as its toast draws it (markup, when on, eats square brackets and backslashes)."""
    return Content.from_markup(notification.message).plain if notification.markup else notification.message


def test_the_bench_hint_keeps_its_square_brackets(monkeypatch):
    loaded = inputs(CPU_ONLY)
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "numpy" else real_find_spec(name, *a))

    async def scenario():
        app = GpureadyApp(lambda: loaded)
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot)
            await press_b_and_wait(pilot, app)
            await pilot.pause()
            return [on_screen(n) for n in app._notifications]

    assert asyncio.run(scenario()) == [f"Not measured: measuring needs numpy: {command.EXTRA_HINT}"]
    assert command.EXTRA_HINT.startswith("pip install numpy")
