"""gpuready bench: the statistics on fake timers, and the cache's keying and invalidation on temp dirs."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from gpuready.bench import cache
from gpuready.bench.results import GPUMeasurement, Measurements, ModelSpeed, from_json, to_json
from gpuready.bench.stats import MAX_INNER_RUNS, Spread, TimingError, inner_runs, summarise, time_kernel
from gpuready.testing import cpu_machine, with_test_gpu


class FakeClock:
    """A clock that only moves when the kernel runs: each run takes the next scripted duration."""

    def __init__(self, durations):
        self.now = 0.0
        self.durations = list(durations)
        self.runs = 0

    def timer(self) -> float:
        return self.now

    def kernel(self) -> None:
        self.now += self.durations.pop(0)
        self.runs += 1


def test_each_sample_repeats_the_kernel_until_it_lasts_the_sample_time():
    clock = FakeClock([0.1] * 10)  # calibration 0.1 s -> 3 runs per 0.25 s sample
    spread = time_kernel(clock.kernel, 100.0, repeats=3, sample_seconds=0.25, timer=clock.timer)
    assert clock.runs == 1 + 3 * 3
    assert spread == Spread(pytest.approx(1000.0), pytest.approx(1000.0), pytest.approx(1000.0), 3)


def test_the_spread_is_the_min_median_and_max_of_the_sample_rates():
    # calibration, then samples of three runs at 0.1, 0.2 and a mix (0.1 + 0.1 + 0.2) seconds each
    clock = FakeClock([0.1, 0.1, 0.1, 0.1, 0.2, 0.2, 0.2, 0.1, 0.1, 0.2])
    ticks = []
    spread = time_kernel(clock.kernel, 100.0, repeats=3, sample_seconds=0.3, timer=clock.timer,
                         on_sample=lambda: ticks.append(1))
    assert (spread.minimum, spread.median, spread.maximum, spread.samples) == pytest.approx((500.0, 750.0, 1000.0, 3))
    assert spread.relative_spread == pytest.approx(250 / 750)
    assert len(ticks) == 3


def test_a_clock_that_does_not_advance_is_an_error_not_an_infinite_rate():
    clock = FakeClock([])
    with pytest.raises(TimingError):
        time_kernel(lambda: None, 1.0, repeats=2, sample_seconds=0.001, timer=clock.timer)


def test_a_kernel_too_fast_for_the_clock_is_capped_in_runs_per_sample():
    assert inner_runs(0.0, 0.5) == MAX_INNER_RUNS
    assert inner_runs(2.0, 0.5) == 1
    assert inner_runs(0.1, 0.35) == 4


def test_no_samples_is_an_error():
    with pytest.raises(TimingError):
        summarise([])


# --- cache ------------------------------------------------------------------------------

READ = Spread(27.0e9, 28.0e9, 28.5e9, 9)


def measurements_of(hardware, **changes) -> Measurements:
    return dataclasses.replace(
        Measurements(measured_at="2026-12-03", fingerprint=cache.fingerprint(hardware), memory_read_bytes_per_s=READ,
                     memory_copy_bytes_per_s=Spread(25e9, 26e9, 26.2e9, 9), cpu_fp32_flops=Spread(2e11, 3e11, 3.2e11, 9),
                     cpu_threads=2),
        **changes,
    )


@pytest.mark.parametrize(
    ("platform", "environ", "expected"),
    [
        ("linux", {"HOME": "/home/ada"}, "/home/ada/.cache/gpuready"),
        ("linux", {"HOME": "/home/ada", "XDG_CACHE_HOME": "/var/cache/ada"}, "/var/cache/ada/gpuready"),
        ("darwin", {"HOME": "/Users/ada"}, "/Users/ada/Library/Caches/gpuready"),
        ("win32", {"USERPROFILE": "C:/Users/ada", "LOCALAPPDATA": "C:/Users/ada/AppData/Local"},
         "C:/Users/ada/AppData/Local/gpuready/Cache"),
        ("linux", {"HOME": "/home/ada", "GPUREADY_CACHE_DIR": "/tmp/x"}, "/tmp/x"),
    ],
)
def test_measurements_live_in_the_platform_user_cache_directory(platform, environ, expected):
    assert cache.cache_dir(environ, platform) == Path(expected)


def test_kept_measurements_come_back_for_the_same_machine(tmp_path):
    hardware = cpu_machine(32)
    kept = measurements_of(hardware, gpus=(GPUMeasurement(0, "Test GPU", READ, None, Spread(1e14, 1.1e14, 1.2e14, 4)),))
    cache.save(kept, tmp_path)
    assert cache.load(hardware, tmp_path) == (kept, None)
    assert from_json(json.loads(json.dumps(to_json(kept)))) == kept


@pytest.mark.parametrize(
    "changed",
    [
        lambda h: dataclasses.replace(h, cpu=dataclasses.replace(h.cpu, name="Another CPU")),
        lambda h: cpu_machine(64),
        lambda h: with_test_gpu(h, 24, 1000),
        lambda h: dataclasses.replace(h, cpu=dataclasses.replace(h.cpu, logical_cores=4)),  # a resized VM
    ],
    ids=["cpu", "memory", "gpu-added", "threads"],
)
def test_measurements_of_other_hardware_are_discarded(tmp_path, changed):
    hardware = cpu_machine(32)
    cache.save(measurements_of(hardware), tmp_path)
    measurements, note = cache.load(changed(hardware), tmp_path)
    assert measurements is None
    assert note == "discarded the measurements of 2026-12-03: the hardware has changed since"
    assert not (tmp_path / cache.FILE_NAME).exists()


def test_a_driver_update_discards_gpu_measurements(tmp_path):
    hardware = with_test_gpu(cpu_machine(32), 16, 700)
    cache.save(measurements_of(hardware), tmp_path)
    updated = dataclasses.replace(hardware, gpus=(dataclasses.replace(hardware.gpus[0], driver_version="560.35"),))
    assert cache.load(updated, tmp_path)[0] is None


def test_the_fingerprint_carries_no_serials_or_host_names():
    hardware = with_test_gpu(cpu_machine(32), 16, 700)
    assert cache.fingerprint(hardware) == {"cpu": "Test CPU", "cpu_threads": 16, "memory_gib": 32,
                                           "gpus": [["Test GPU", None]]}


def test_a_damaged_cache_file_is_discarded_with_a_note(tmp_path):
    (tmp_path / cache.FILE_NAME).write_text('{"format": 1, "measurements": {"measured_at": "x"}}')
    measurements, note = cache.load(cpu_machine(32), tmp_path)
    assert measurements is None
    assert note.startswith("discarded damaged measurements in ")
    assert not (tmp_path / cache.FILE_NAME).exists()


def test_clear_removes_the_kept_measurements(tmp_path):
    cache.save(measurements_of(cpu_machine(32)), tmp_path)
    assert cache.clear(tmp_path) is True
    assert cache.clear(tmp_path) is False
    assert cache.load(cpu_machine(32), tmp_path) == (None, None)


def test_a_model_speed_survives_the_round_trip(tmp_path):
    hardware = cpu_machine(32)
    speed = ModelSpeed("Q4_K_M", 28, 3584, 4, 128, 7.6e9, "gpu", Spread(117.0, 119.0, 120.0, 5), None, "llama-bench")
    cache.save(measurements_of(hardware, models=(speed,)), tmp_path)
    assert cache.load(hardware, tmp_path)[0].models == (speed,)
