"""Time gpuready's headless commands as whole processes: median wall time and peak memory.

Usage: python benchmarks/bench_cli.py [--runs N] [--machine DIR]
Each command runs N times in a fresh interpreter (what a user or a setup script pays);
peak memory is the child's maximum resident set size from wait4().
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

COMMANDS = {
    "report --json": ["report", "--json"],
    "check --model qwen2.5-7b": ["check", "--model", "qwen2.5-7b"],
    "check --min-memory 4GB": ["check", "--min-memory", "4GB"],
    "estimate llama-3.1-8b": ["estimate", "llama-3.1-8b"],
}


def measure(argv: list[str]) -> tuple[float, float]:
    """Wall seconds and peak RSS in MB of one run."""
    start = time.perf_counter()
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        raise SystemExit(f"{' '.join(argv)} failed with {os.waitstatus_to_exitcode(status)}")
    return elapsed, usage.ru_maxrss / 1024  # Linux reports kilobytes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--machine", help="replay a recorded machine instead of probing this one")
    args = parser.parse_args()
    extra = ["--machine", args.machine] if args.machine else []
    print(f"{'command':<28} {'median s':>9} {'min s':>7} {'max s':>7} {'peak MB':>8}   ({args.runs} runs, {os.cpu_count()} CPUs)")
    for label, command in COMMANDS.items():
        argv = [sys.executable, "-m", "gpuready", *command, *extra]
        measure(argv)  # warm the file cache
        times, peaks = zip(*(measure(argv) for _ in range(args.runs)))
        print(f"{label:<28} {statistics.median(times):9.3f} {min(times):7.3f} {max(times):7.3f} {max(peaks):8.1f}")


if __name__ == "__main__":
    main()
