"""The timed CPU kernels: system-memory bandwidth and FP32 matrix multiply, with numpy.

Memory: each of N threads (one per usable CPU) works on its own slice of arrays far larger
than any cache. numpy releases the GIL inside ufunc loops, so the slices run in parallel.
- read: ``np.max`` over float32 slices. Token generation is almost all reads, and a read-only
  kernel is the better denominator for it (llama.cpp issue #26484, Pi 5 STREAM comparison);
  max() costs nothing per element, so it measures the memory, not the CPU (eullm PR #358
  measured 28.3 GB/s with max() against 17.7 with a float32 sum on one board).
- copy: ``np.copyto``, counted as read + write (STREAM's convention).
Matmul: ``a @ b`` in float32 through numpy's BLAS (all cores). numpy's BLAS offers FP32 and
FP64 GEMM only: there is no BF16 type and int8 matmul does not go through BLAS, so those are
not measured here.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from gpuready.bench.stats import Spread, time_kernel

MIB = 1024**2


@dataclass(frozen=True)
class Plan:
    """How long and how big: the default run takes about 20 s on the CPU, --quick about 5 s."""

    array_bytes: int
    repeats: int
    sample_seconds: float
    matmul_size: int

    @property
    def steps(self) -> int:
        return 3 * self.repeats


DEFAULT_PLAN = Plan(array_bytes=512 * MIB, repeats=9, sample_seconds=0.6, matmul_size=2048)
QUICK_PLAN = Plan(array_bytes=256 * MIB, repeats=5, sample_seconds=0.25, matmul_size=1024)


def usable_threads() -> int:
    """CPUs this process may run on (the affinity mask where the platform has one)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def sized_plan(plan: Plan, available_bytes: int | None) -> Plan:
    """The plan with arrays shrunk so the two copy buffers take at most a quarter of free memory."""
    if available_bytes and 2 * plan.array_bytes > available_bytes // 4:
        size = max(32 * MIB, available_bytes // 8 // MIB * MIB)
        return Plan(size, plan.repeats, plan.sample_seconds, plan.matmul_size)
    return plan


@dataclass(frozen=True)
class CPUResults:
    read_bytes_per_s: Spread
    copy_bytes_per_s: Spread
    fp32_flops: Spread
    threads: int


def measure_cpu(plan: Plan, on_sample: Callable[[], None] | None = None, threads: int | None = None) -> CPUResults:
    """Memory read and copy bandwidth (multi-threaded) and FP32 matmul throughput."""
    import numpy as np

    threads = threads or usable_threads()
    elements = plan.array_bytes // 4 // threads * threads
    source = np.ones(elements, dtype=np.float32)
    target = np.zeros(elements, dtype=np.float32)  # zeros then ones: every page is touched before timing
    target[:] = 2.0
    step = elements // threads
    slices = [slice(i * step, (i + 1) * step) for i in range(threads)]
    with ThreadPoolExecutor(max_workers=threads) as pool:

        def read() -> None:
            list(pool.map(lambda part: source[part].max(), slices))

        def copy() -> None:
            list(pool.map(lambda part: np.copyto(target[part], source[part]), slices))

        nbytes = elements * 4
        read_rate = time_kernel(read, nbytes, repeats=plan.repeats, sample_seconds=plan.sample_seconds, on_sample=on_sample)
        copy_rate = time_kernel(copy, 2 * nbytes, repeats=plan.repeats, sample_seconds=plan.sample_seconds, on_sample=on_sample)
    del source, target
    n = plan.matmul_size
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    out = np.empty((n, n), dtype=np.float32)
    flops = time_kernel(lambda: np.matmul(a, b, out=out), 2.0 * n**3, repeats=plan.repeats,
                        sample_seconds=plan.sample_seconds, on_sample=on_sample)
    return CPUResults(read_rate, copy_rate, flops, threads)
