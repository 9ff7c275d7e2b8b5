"""Inject every fault tests/test_fault_injection.py enumerates, render a report for each, and print the figures.

    .venv/bin/python benchmarks/faults.py

Unlike the CI test (which gives 10 MB of junk to one file of each name and renders each
distinct outcome once), this gives 10 MB of junk to every distinct path and renders the
full report (JSON and text) for every single fault.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).parents[1] / "tests"))

import faultinjection as fi  # noqa: E402
from gpuready.tasks.registry import load_catalog  # noqa: E402
from gpuready.host import CommandResult, command_slug  # noqa: E402
from gpuready.probes import REPORT_HINT, backends, probe_hardware  # noqa: E402
from gpuready.readouts import nvml as nvml_readout  # noqa: E402
from gpuready.report import build_report, dumps  # noqa: E402
from gpuready.testing import FakeHost  # noqa: E402
from gpuready.frontends.text import render  # noqa: E402
from gpuready.tasks.verdict import Options  # noqa: E402


def main() -> int:
    import test_fault_injection as nvml_cases

    catalog = load_catalog()
    start = time.perf_counter()
    kinds: Counter[str] = Counter()
    failures = []
    rendered = 0

    def render_report(hardware, problems) -> None:
        nonlocal rendered
        report = build_report(hardware, problems, catalog, Options())
        assert dumps(report) and render(report, None)
        rendered += 1

    for outcome in fi.run_all():
        kinds[f"{outcome.case.kind}:{outcome.case.fault}"] += 1
        failures += [(outcome.case, f) for f in outcome.failures]
        render_report(outcome.hardware, outcome.problems)
    for call in nvml_cases.CALLS:
        for error, code in nvml_cases.ERRORS.items():
            with mock.patch.dict(sys.modules, {"pynvml": nvml_cases._failing_pynvml(call, code)}):
                readout = nvml_readout.read()
            hardware, problems = probe_hardware(FakeHost(files=nvml_cases.LINUX_BASICS, libraries={"nvml": readout}))
            kinds["nvml call x error"] += 1
            failures += [(call, p.message) for p in problems if p.hint == REPORT_HINT]
            render_report(hardware, problems)
    for result in (CommandResult("ok", -11, "", "Segmentation fault\n"), CommandResult("timeout"), CommandResult("ok", 0, "\x00garbage", "")):
        host = FakeHost(commands={command_slug(nvml_cases.TORCH_ARGV): result})
        backends.python_backends(host, "python3", torch=True)
        kinds["torch subprocess"] += 1
    total = sum(kinds.values())
    groups: dict[str, Counter[str]] = {}
    for key, count in kinds.items():
        kind, _, fault = key.partition(":")
        groups.setdefault(kind, Counter())[fault.split(": ")[-1] or kind] += count
    for kind, faults in sorted(groups.items()):
        print(f"{sum(faults.values()):6,}  {kind}: " + ", ".join(f"{fault} {n:,}" for fault, n in faults.most_common()))
    for case, failure in failures:
        print(f"FAILED {case}: {failure}")
    print(f"{total:,} faults injected, {len(failures)} failures ({sum('traceback' in f for _, f in failures)} tracebacks), "
          f"report rendered in {rendered:,} of {total - kinds['torch subprocess']:,} (the torch cases stop at the probe), "
          f"no unrelated fact lost: {not any('unrelated' in f for _, f in failures)}; {time.perf_counter() - start:.1f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
