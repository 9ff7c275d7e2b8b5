"""What the measuring scripts (measure_embedding.py, measure_tts.py) share: this machine's CPU name, and what
gpuready itself estimates for a model here, to print beside the measurement."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def gpuready_estimate(model_id: str) -> tuple[dict | None, str]:
    """`gpuready estimate MODEL --json` run from this checkout: (the verdict, "") or (None, the end of its stderr)."""
    estimate = subprocess.run(
        [sys.executable, "-m", "gpuready", "estimate", model_id, "--json"],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(os.path.abspath(__file__)))},
    )
    if estimate.returncode == 0:
        return json.loads(estimate.stdout), ""
    return None, estimate.stderr.strip()[-300:]
