"""How long a live `gpuready report --json` takes when every external command it runs hangs.

    .venv/bin/python benchmarks/hung_commands.py

Puts stand-ins for nvidia-smi, vulkaninfo, rocm-smi and amd-smi that sleep for a minute
first on PATH, runs the report three times in a child process, and prints the wall time
and the Problems that name the hung commands. Issue 16 measured 15.3 s before the shared
command budget (gpuready.probes.commands); the budget keeps it under 2 s.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TOOLS = ("nvidia-smi", "vulkaninfo", "rocm-smi", "amd-smi")


def main() -> int:
    with tempfile.TemporaryDirectory() as directory:
        for tool in TOOLS:
            script = Path(directory) / tool
            script.write_text("#!/bin/sh\nsleep 60\n")
            script.chmod(0o755)
        env = dict(os.environ, PATH=f"{directory}{os.pathsep}{os.environ['PATH']}")
        env.pop("GPUREADY_MACHINE", None)
        for run in range(3):
            start = time.perf_counter()
            done = subprocess.run([sys.executable, "-m", "gpuready", "report", "--json"], env=env, capture_output=True, text=True)
            elapsed = time.perf_counter() - start
            report = json.loads(done.stdout)
            named = [p["message"] for p in report["problems"] if any(tool in p["message"] for tool in TOOLS)]
            print(f"run {run + 1}: exit {done.returncode}, {elapsed:.2f} s with every command hung")
        for message in named:
            print(f"  problem: {message}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
