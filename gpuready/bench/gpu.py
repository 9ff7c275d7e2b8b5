"""Measure the GPUs through PyTorch in a child interpreter with a timeout (torch_worker.py).

A hang, a crash or unreadable output becomes a Problem; the CPU measurements stand either way.
"""

from __future__ import annotations

import json
import subprocess
import sys

from gpuready.bench.results import GPUMeasurement
from gpuready.bench.stats import Spread
from gpuready.hardware import Problem

WORKER = "gpuready.bench.torch_worker"
TIMEOUT_S = 120.0
QUICK_TIMEOUT_S = 45.0


def parse_worker_output(stdout: str) -> tuple[list[GPUMeasurement], list[Problem]]:
    """The worker's JSON line as measurements, or the Problem it reported."""
    try:
        data = json.loads(stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        return [], [Problem("bench-gpu", "the PyTorch GPU benchmark printed no result",
                            hint="run `python -m gpuready.bench.torch_worker` to see its output", severity="error")]
    if "error" in data:
        hint = "pip install torch (with the CUDA, ROCm or MPS build for this GPU) to measure GPUs"
        return [], [Problem("bench-gpu", f"GPUs not measured: {data['error']}", hint=hint, severity="info")]

    def spread(value):
        return Spread.from_dict(value) if value else None

    gpus = [GPUMeasurement(int(g["index"]), str(g["name"]), spread(g.get("bandwidth_bytes_per_s")),
                           spread(g.get("fp16_flops")), spread(g.get("bf16_flops")),
                           spread(g.get("copy_power_w")), spread(g.get("matmul_power_w")))
            for g in data.get("gpus", [])]
    problems = [Problem("bench-gpu", f"{g['name']}: {e}", severity="warning") for g in data.get("gpus", []) for e in g.get("errors", [])]
    return gpus, problems


def measure_gpus(quick: bool = False, python: str = sys.executable, timeout_s: float | None = None,
                 command: list[str] | None = None) -> tuple[list[GPUMeasurement], list[Problem]]:
    """Run the worker (or ``command``, for tests) and read its result; never raises."""
    timeout_s = timeout_s if timeout_s is not None else (QUICK_TIMEOUT_S if quick else TIMEOUT_S)
    argv = command or [python, "-m", WORKER, *(["--quick"] if quick else [])]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        return [], [Problem("bench-gpu", f"the PyTorch GPU benchmark did not finish within {timeout_s:g} s",
                            hint="a GPU driver may be hung: check nvidia-smi / rocm-smi", severity="error")]
    except OSError as error:
        return [], [Problem("bench-gpu", f"could not start {argv[0]}: {error.strerror or error}", severity="error")]
    if done.returncode != 0:
        from gpuready.host import exit_words

        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        return [], [Problem("bench-gpu", f"the PyTorch GPU benchmark {exit_words(done.returncode)}: {last}",
                            hint="a broken driver or PyTorch install; `python -c 'import torch'` shows the error",
                            severity="error")]
    return parse_worker_output(done.stdout)
