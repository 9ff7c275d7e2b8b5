"""Why py-cpuinfo stays off gpuready's default path: time its full probe against ours.

Usage: python benchmarks/bench_pycpuinfo.py
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

PY_CPUINFO = "import cpuinfo; cpuinfo.get_cpu_info()"
GPUREADY = "from gpuready.host import LiveHost; from gpuready.probes import cpu; cpu.probe(LiveHost())"


def median_seconds(code: str, runs: int = 5) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


if __name__ == "__main__":
    baseline = median_seconds("pass")
    for label, code in (("py-cpuinfo get_cpu_info()", PY_CPUINFO), ("gpuready cpu.probe()", GPUREADY)):
        print(f"{label:<28} {median_seconds(code) - baseline:6.3f} s (interpreter start-up subtracted)")
