"""Statistics over timings: pure functions, with the clock injected so tests run on fake timers.

A measurement is a kernel run ``repeats`` times; each sample runs it enough times in a row to
last ``sample_seconds`` (calibrated on one untimed warm-up run), and the result is the
min/median/max of the per-sample rates (work per second).
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

# Most back-to-back runs in one sample, so a kernel the clock cannot see still ends.
MAX_INNER_RUNS = 10_000


class TimingError(RuntimeError):
    """The clock did not advance, or a kernel did no work: no rate can be given."""


@dataclass(frozen=True)
class Spread:
    """Min, median and max of repeated measurements of one rate (bytes/s, FLOP/s, tokens/s)."""

    minimum: float
    median: float
    maximum: float
    samples: int

    @property
    def relative_spread(self) -> float:
        """Half the min-max range relative to the median: the +/- band of the measurement."""
        return (self.maximum - self.minimum) / 2 / self.median if self.median else 0.0

    def to_dict(self) -> dict:
        return {"min": self.minimum, "median": self.median, "max": self.maximum, "samples": self.samples}

    @classmethod
    def from_dict(cls, data: dict) -> Spread:
        return cls(float(data["min"]), float(data["median"]), float(data["max"]), int(data["samples"]))


def summarise(rates: Sequence[float]) -> Spread:
    """The spread of a non-empty list of rates."""
    if not rates:
        raise TimingError("no samples")
    return Spread(min(rates), statistics.median(rates), max(rates), len(rates))


def inner_runs(calibration_seconds: float, sample_seconds: float) -> int:
    """How many back-to-back runs make one sample last at least ``sample_seconds``."""
    if calibration_seconds <= 0:
        return MAX_INNER_RUNS
    return max(1, min(MAX_INNER_RUNS, math.ceil(sample_seconds / calibration_seconds)))


def time_kernel(
    kernel: Callable[[], object],
    work: float,
    *,
    repeats: int,
    sample_seconds: float,
    timer: Callable[[], float] = time.perf_counter,
    on_sample: Callable[[], None] | None = None,
) -> Spread:
    """Rate of ``kernel`` (``work`` units a run): one warm-up run calibrates, then ``repeats`` timed samples."""
    if work <= 0 or repeats < 1:
        raise TimingError("nothing to measure")
    start = timer()
    kernel()
    runs = inner_runs(timer() - start, sample_seconds)
    rates = []
    for _ in range(repeats):
        start = timer()
        for _ in range(runs):
            kernel()
        elapsed = timer() - start
        if elapsed <= 0:
            raise TimingError("the clock did not advance during a sample")
        rates.append(work * runs / elapsed)
        if on_sample is not None:
            on_sample()
    return summarise(rates)
