"""Run `gpuready bench --json` several times and show how much its figures move, against the table value.

Usage: python benchmarks/bench_spread.py [--runs 5] [--quick]
Each run is a fresh process with its own empty cache directory (the user's cache is left
alone). Printed per figure: the min/median/max of the runs' medians, the widest within-run
spread, and what gpuready uses without a measurement (the table or assumed bandwidth, the
estimated FP32 peak), plus the verdicts whose level the last run's figures changed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def gpuready(argv: list[str], cache_dir: str) -> dict:
    environment = dict(os.environ, GPUREADY_CACHE_DIR=cache_dir)
    done = subprocess.run([sys.executable, "-m", "gpuready", *argv], capture_output=True, text=True, env=environment, check=True)
    return json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    runs, seconds = [], []
    with tempfile.TemporaryDirectory() as cache_dir:
        table = gpuready(["report", "--json"], cache_dir)
        for _ in range(args.runs):
            start = time.perf_counter()
            runs.append(gpuready(["bench", "--json", *(["--quick"] if args.quick else [])], cache_dir)["measurements"])
            seconds.append(time.perf_counter() - start)
        measured = gpuready(["report", "--json"], cache_dir)
    cpu = table["hardware"]["cpu"]
    from gpuready.tasks.devices import cpu_float_flops

    # an FP32 matmul runs on the FMA pipes: their rate where narrower than the AVX-512 flag implies (Zen 4)
    peak = cpu_float_flops(cpu["physical_cores"], tuple(cpu["features"]), cpu.get("name"))
    print(f"{cpu['name']}, {cpu['physical_cores']} cores, {runs[0]['cpu_threads']} threads; "
          f"{args.runs} runs of `gpuready bench{' --quick' if args.quick else ''}`, "
          f"median {statistics.median(seconds):.1f} s each")
    print(f"{'figure':<14}{'min':>9}{'median':>9}{'max':>9}  {'widest run ±':>12}  without a measurement")
    rows = [
        ("memory read", "memory_read_bytes_per_s", 1e9, "GB/s",
         f"{cpu['memory_bandwidth_bytes_per_s'] / 1e9:.1f} GB/s ({cpu['bandwidth_source']})"),
        ("memory copy", "memory_copy_bytes_per_s", 1e9, "GB/s", ""),
        ("FP32 matmul", "cpu_fp32_flops", 1e9, "GFLOPS", f"{peak / 1e9:.0f} GFLOPS (estimated peak)" if peak else ""),
    ]
    for label, key, scale, unit, without in rows:
        medians = [run[key]["median"] / scale for run in runs]
        widest = max((run[key]["max"] - run[key]["min"]) / 2 / run[key]["median"] for run in runs)
        print(f"{label:<14}{min(medians):>9.1f}{statistics.median(medians):>9.1f}{max(medians):>9.1f}  {widest:>11.1%}  "
              f"{without} [{unit}]")
    changed = measured.get("measured", {}).get("changed", [])
    last = runs[-1]["memory_read_bytes_per_s"]["median"] / 1e9
    print(f"verdicts changed by the last run's figures (memory read {last:.1f} GB/s): {len(changed)}")
    for change in changed:
        print(f"  {change['model_name']}: {change['level_without']} -> {change['level']}")


if __name__ == "__main__":
    main()
