"""The terminal UI's `b`: measure with a progress view, keep the result, probe again."""

from __future__ import annotations

import asyncio

from tui_support import CPU_ONLY, inputs, settle

from gpuready.bench import cache, command
from gpuready.bench.results import Measurements
from gpuready.bench.stats import Spread
from gpuready.frontends.tui.app import GpureadyApp
from gpuready.frontends.tui.bench import BenchScreen


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
            await pilot.press("b")
            for _ in range(300):
                await pilot.pause(0.01)
                if not isinstance(app.screen, BenchScreen) and len(loads) == 2:
                    break
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
            await pilot.press("b")
            for _ in range(300):
                await pilot.pause(0.01)
                if not isinstance(app.screen, BenchScreen):
                    break
            return [n.message for n in app._notifications]

    assert asyncio.run(scenario()) == ["Not measured: no memory"]
    assert cache.load(loaded.hardware) == (None, None)
