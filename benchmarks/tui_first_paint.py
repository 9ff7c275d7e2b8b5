"""Time to first paint of the terminal UI, and to the first screen with verdicts on it.

Each run is a fresh Python process (so imports count, as they do for a user), pinned to
--cores CPUs, that starts the real app headless on a machine (a recording by default,
or this machine with --live) and exits once the verdicts are on screen. Prints every run
and the medians. Target: first paint under 1 s on 2 cores.

    python benchmarks/tui_first_paint.py [--runs 7] [--cores 2] [--machine DIR | --live]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_MACHINE = ROOT / "tests" / "fixtures" / "machines" / "linux-desktop-ryzen-7950x"
TARGET_S = 1.0


def child(started: float, machine: str | None) -> None:
    """Run the app headless; print seconds since ``started`` at first paint and when verdicts show."""
    from gpuready.frontends.cli import build_parser
    from gpuready.frontends.tui import inputs_from_args
    from gpuready.frontends.tui.app import GpureadyApp

    args = build_parser().parse_args(["--machine", machine] if machine else [])
    times: dict[str, float] = {}

    class TimedApp(GpureadyApp):
        def on_mount(self) -> None:
            # Textual calls GpureadyApp.on_mount too (handlers run for every class in the
            # MRO); after the next refresh the first frame has been drawn.
            self.call_after_refresh(lambda: times.setdefault("first_paint_s", time.time() - started))

        def show(self, report) -> None:
            super().show(report)
            self.call_after_refresh(self._shown)

        def _shown(self) -> None:
            times.setdefault("verdicts_shown_s", time.time() - started)
            self.exit()

    TimedApp(lambda: inputs_from_args(args)).run(headless=True, size=(120, 40))
    print(json.dumps(times))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--cores", type=int, default=2, help="pin each run to this many CPUs (Linux)")
    parser.add_argument("--machine", default=str(DEFAULT_MACHINE), help="recorded machine directory")
    parser.add_argument("--live", action="store_true", help="probe this machine instead of a recording")
    parser.add_argument("--child", nargs=2, metavar=("STARTED", "MACHINE"), help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.child:
        child(float(options.child[0]), options.child[1] or None)
        return 0
    machine = "" if options.live else options.machine
    cpus = sorted(os.sched_getaffinity(0))[: options.cores] if hasattr(os, "sched_getaffinity") else None
    results = []
    for run in range(options.runs):
        started = time.time()
        process = subprocess.run(
            [sys.executable, __file__, "--child", repr(started), machine],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=60,
            preexec_fn=(lambda: os.sched_setaffinity(0, cpus)) if cpus else None,
        )
        if process.returncode != 0:
            sys.stderr.write(process.stderr)
            return 1
        result = json.loads(process.stdout.strip().splitlines()[-1])
        results.append(result)
        print(f"run {run + 1}: first paint {result['first_paint_s']:.3f} s, verdicts shown {result['verdicts_shown_s']:.3f} s")
    paint = statistics.median(r["first_paint_s"] for r in results)
    shown = statistics.median(r["verdicts_shown_s"] for r in results)
    where = "live machine" if options.live else Path(options.machine).name
    print(f"median over {options.runs} runs on {len(cpus) if cpus else os.cpu_count()} cores ({where}): "
          f"first paint {paint:.3f} s, verdicts shown {shown:.3f} s (target first paint < {TARGET_S:.1f} s)")
    return 0 if paint < TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
