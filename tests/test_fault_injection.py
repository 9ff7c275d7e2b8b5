"""Fault injection that enumerates, not samples (issue 11): every file, command and readout every probe
reads on every recorded machine, broken every way; every NVML call failing with every error class; the
torch subprocess crashing, hanging and printing garbage. The report renders in all of them.

The figures go to the README's "Reliability" section from benchmarks/faults.py, which runs the same enumeration.
"""

from __future__ import annotations

import os
import re
import sys

import pytest

import faultinjection as fi
from gpuready.tasks.registry import load_catalog
from gpuready.host import CommandResult, LiveHost, ReplayHost
from gpuready.probes import REPORT_HINT, backends, probe_hardware
from gpuready.readouts import nvml as nvml_readout
from gpuready.report import build_report, dumps
from gpuready.testing import FakeHost
from gpuready.frontends.text import render
from gpuready.tasks.verdict import Options
from test_nvidia_probe import FakeNVMLError, fake_pynvml


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


@pytest.fixture(scope="module")
def traces():
    return {machine: fi.trace(machine) for machine in fi.MACHINES}


def _pattern(path: str) -> str:
    return re.sub(r"\d+", "N", path.rsplit("/", 1)[-1])


def _big_paths(traces, machine: str) -> set[str]:
    """Paths not to give 10 MB of junk here: each file name (digits aside) gets it once, on the first machine that reads it.

    One per parser: /sys/bus/pci/devices/*/vendor on every machine goes through the same code.
    """
    patterns: dict[str, str] = {}
    for name in fi.MACHINES:
        for kind, target in sorted(traces[name].reads):
            if kind == "file" and ReplayHost(fi.FIXTURES / name).read_text(target) is not None:
                patterns.setdefault(_pattern(target), name)
    mine = {pattern for pattern, owner in patterns.items() if owner == machine}
    # cases() skips paths already in the set: give it every path except the first of each of this machine's patterns.
    skip, kept = set(), set()
    for kind, target in sorted(traces[machine].reads):
        pattern = _pattern(target)
        if kind == "file" and pattern in mine and pattern not in kept:
            kept.add(pattern)
        else:
            skip.add(target)
    return skip


def _render(outcome: fi.Outcome, catalog) -> None:
    report = build_report(outcome.hardware, outcome.problems, catalog, Options())
    assert dumps(report) and render(report, None)


@pytest.fixture(autouse=True)
def _a_wide_command_budget(monkeypatch):
    """These tests judge what a fault does to the facts, not time: 10 MB of junk parsed on a loaded 2-core machine
    used up the probes' shared 1.2 s command budget, so a replayed vulkaninfo 'timed out' and the backends changed.
    The budget itself is tested with a fake clock (test_faults_found_by_injection.py)."""
    from gpuready.probes import commands
    monkeypatch.setattr(commands, "COMMAND_BUDGET_S", 60.0)


@pytest.mark.parametrize("machine", fi.MACHINES)
def test_every_fault_in_what_a_machines_probes_read_is_handled(machine, traces, catalog):
    machine_trace = traces[machine]
    outcomes = [fi.check(machine_trace, case, overrides) for case, overrides in fi.cases(machine_trace, _big_paths(traces, machine))]
    assert len(outcomes) >= 10
    assert [(o.case, o.failures) for o in outcomes if o.failures] == []
    rendered = set()
    for outcome in outcomes:  # render each distinct outcome once (most faults of one file give the same report)
        key = (outcome.hardware, tuple(outcome.problems))
        if key not in rendered:
            rendered.add(key)
            _render(outcome, catalog)


@pytest.mark.parametrize("host", ["live", "replay"])
def test_at_the_host_seam_a_directory_a_dangling_link_a_fifo_and_no_file_all_read_as_missing(tmp_path, host):
    root = tmp_path / "root" if host == "replay" else tmp_path
    (root / "proc").mkdir(parents=True)
    (root / "proc" / "a-directory").mkdir()
    (root / "proc" / "dangling").symlink_to(root / "proc" / "nowhere")
    os.mkfifo(root / "proc" / "fifo")
    if host == "replay":
        (tmp_path / "machine.toml").write_text('platform = "linux"\narch = "x86_64"\n')
        reader, prefix = ReplayHost(tmp_path), "/proc"
    else:
        reader, prefix = LiveHost(), str(root / "proc")
    assert [reader.read_text(f"{prefix}/{name}") for name in ("a-directory", "dangling", "fifo", "absent")] == [None] * 4


# --- every NVML call x every error class ------------------------------------------------------

ERRORS = {"NVML_ERROR_UNINITIALIZED": 1, "NVML_ERROR_NOT_SUPPORTED": 3, "NVML_ERROR_NO_PERMISSION": 4,
          "NVML_ERROR_INSUFFICIENT_SIZE": 7, "NVML_ERROR_DRIVER_NOT_LOADED": 9, "NVML_ERROR_TIMEOUT": 10,
          "NVML_ERROR_LIBRARY_NOT_FOUND": 12, "NVML_ERROR_FUNCTION_NOT_FOUND": 13, "NVML_ERROR_GPU_IS_LOST": 15,
          "NVML_ERROR_LIB_RM_VERSION_MISMATCH": 18, "NVML_ERROR_UNKNOWN": 999}
CALLS = ("nvmlInit", "nvmlSystemGetDriverVersion", "nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetNVMLVersion",
         "nvmlDeviceGetCount", "nvmlDeviceGetHandleByIndex", "nvmlDeviceGetIndex", "nvmlDeviceGetName", "nvmlDeviceGetUUID",
         "nvmlDeviceGetPciInfo", "nvmlDeviceGetMemoryInfo", "nvmlDeviceGetCudaComputeCapability", "nvmlDeviceGetArchitecture",
         "nvmlDeviceGetMemoryBusWidth", "nvmlDeviceGetMaxClockInfo", "nvmlDeviceGetMigMode", "nvmlDeviceGetMaxMigDeviceCount",
         "nvmlDeviceGetMigDeviceHandleByIndex", "nvmlDeviceGetGpuInstanceId", "nvmlDeviceGetComputeInstanceId", "nvmlShutdown")
LINUX_BASICS = {"/proc/cpuinfo": "processor\t: 0\nmodel name\t: AMD EPYC 7742 64-Core Processor\n\n",
                "/proc/meminfo": "MemTotal:       263921424 kB\nMemAvailable:   250000000 kB\n"}
# Answers that are not failures: a GPU without MIG says NOT_SUPPORTED to nvmlDeviceGetMigMode, and
# nvmlShutdown failing changes nothing gpuready reports.
# nvmlInit saying LIBRARY_NOT_FOUND is a machine without NVIDIA's driver, where silence is right.
QUIET = {("nvmlDeviceGetMigMode", "NVML_ERROR_NOT_SUPPORTED"), ("nvmlInit", "NVML_ERROR_LIBRARY_NOT_FOUND"),
         *(("nvmlShutdown", e) for e in ERRORS)}
# Without a device handle or a name there is no GPU to describe; the Problem names the call instead.
GPU_GONE = {"nvmlInit", "nvmlDeviceGetCount", "nvmlDeviceGetHandleByIndex", "nvmlDeviceGetName"}


def _failing_pynvml(call: str, code: int):
    module, _ = fake_pynvml(mig=True)
    for name, value in ERRORS.items():
        setattr(module, name, value)
    module.NVML_ERROR_NOT_FOUND = 6

    def fail(*args, **kwargs):
        raise FakeNVMLError(code)

    setattr(module, call, fail)
    return module


@pytest.mark.parametrize("call", CALLS)
def test_every_nvml_call_failing_with_every_error_class_still_renders_and_names_the_call(monkeypatch, catalog, call):
    for error, code in ERRORS.items():
        monkeypatch.setitem(sys.modules, "pynvml", _failing_pynvml(call, code))
        readout = nvml_readout.read()
        hardware, problems = probe_hardware(FakeHost(files=LINUX_BASICS, libraries={"nvml": readout}))
        _render(fi.Outcome(None, hardware, problems, []), catalog)
        assert [p for p in problems if p.hint == REPORT_HINT] == []
        if (call, error) in QUIET:
            assert [g.name for g in hardware.gpus] == ([] if call == "nvmlInit" else ["NVIDIA A100-SXM4-40GB MIG 3g.20gb"]) \
                or call == "nvmlDeviceGetMigMode"
            continue
        naming = [p for p in problems if p.probe == "nvidia" and call in p.message and error in p.message]
        assert naming and all(p.hint for p in naming), (call, error, problems)
        if call not in GPU_GONE:
            assert hardware.gpus, (call, error)


# --- the torch subprocess ------------------------------------------------------------------------

TORCH_ARGV = ("python3", "-m", "gpuready.probes.pyinfo", "--import")


@pytest.mark.parametrize("result, message", [
    (CommandResult("ok", -11, "", "Segmentation fault (core dumped)\n"), "PyTorch/OpenVINO check: python3 printed something gpuready cannot read"),
    (CommandResult("timeout"), "PyTorch/OpenVINO check: python3 did not answer within 30 s"),
    (CommandResult("ok", 0, "\x00\x13 not json {", ""), "PyTorch/OpenVINO check: python3 printed something gpuready cannot read"),
    (CommandResult("ok", 0, '{"packages": "garbage"}', ""), "PyTorch/OpenVINO check: python3 printed something gpuready cannot read"),
    (CommandResult("not_found"), "PyTorch/OpenVINO check: could not run python3"),
])
def test_a_torch_subprocess_that_crashes_hangs_or_prints_garbage_is_a_problem(result, message):
    from gpuready.host import command_slug

    found, problems = backends.python_backends(FakeHost(commands={command_slug(TORCH_ARGV): result}), "python3", torch=True)
    assert found == []
    assert [p.message.startswith(message) for p in problems] == [True]
