"""The probe registry: run every probe, isolate each failure as a Problem, assemble Hardware."""

from __future__ import annotations

import traceback
from collections.abc import Callable
from typing import TypeVar

from gpuready.hardware import CPU, GPU, NPU, Backend, Hardware, Memory, Problem
from gpuready.host import Host, ReplayHost
from gpuready.probes.failure import ProbeFailure

T = TypeVar("T")

REPORT_HINT = "This is a gpuready bug: please attach `gpuready record DIR` output to an issue."


def run_probe(name: str, function: Callable[[Host], tuple[T, list[Problem]]], host: Host, problems: list[Problem], default: T) -> T:
    """Run one probe; a failure becomes an error Problem and the default value."""
    try:
        value, found = function(host)
    except ProbeFailure as failure:
        problems.append(Problem(name, str(failure), failure.hint, "error"))
        return default
    except Exception as error:  # noqa: BLE001 - no probe may take the run down
        where = traceback.extract_tb(error.__traceback__)[-1]
        message = f"{name} probe crashed: {type(error).__name__}: {error} ({where.filename.rsplit('/', 1)[-1]}:{where.lineno})"
        problems.append(Problem(name, message, REPORT_HINT, "error"))
        return default
    problems.extend(found)
    return value


RECORDING_HINT = "The recorded machine is damaged: record it again with `gpuready record DIR`, or restore this file."


def recording_problems(host: Host) -> list[Problem]:
    """One Problem per malformed file of a replayed recording, however many probes read it."""
    faults = getattr(host, "faults", None) or {}
    return [Problem("recording", f"recorded file {path}: {why}", RECORDING_HINT, "error") for path, why in sorted(faults.items())]


# The GPU probes' names, as their Problems carry them: verdicts and the preflight treat a
# failure of any of them as "could not tell".
GPU_PROBES = ("nvidia", "amd", "intel", "windows-gpu", "apple")
# Every probe whose Problems are about this machine's GPUs: those, and the Vulkan cross-check (a GPU only Vulkan
# lists). A what-if GPU replaces them; their hints say what to do about an unusable GPU.
GPU_PROBLEM_PROBES = (*GPU_PROBES, "vulkan")


def _gpu_probes() -> list[tuple[str, Callable[[Host], tuple[list[GPU], list[Problem]]]]]:
    from gpuready.probes import amd, apple, intel, nvidia, windows

    functions = {"nvidia": nvidia.probe, "amd": amd.probe, "intel": intel.probe, "windows-gpu": windows.probe, "apple": apple.probe}
    return [(name, functions[name]) for name in GPU_PROBES]


def _npu_probes() -> list[tuple[str, Callable[[Host], tuple[list[NPU], list[Problem]]]]]:
    from gpuready.probes import npu

    return [("npu", npu.probe)]


def _backend_probes() -> list[tuple[str, Callable[[Host], tuple[list[Backend], list[Problem]]]]]:
    return []


def probe_hardware(host: Host, python: str | None = None, torch: bool = False) -> tuple[Hardware, list[Problem]]:
    """Everything gpuready knows about the machine behind ``host``, and what went wrong finding it.

    ``python`` is the interpreter whose OpenVINO (and, with ``torch``, PyTorch) is checked in a subprocess.
    """
    import functools

    from gpuready.probes import backends as backends_probe
    from gpuready.probes import cpu, memory, system
    from gpuready.catalog.tables import enrich

    from gpuready.probes.commands import BudgetedHost, always_run, timeout_problems

    # A replayed command reads a file and cannot hang (a recorded hang is a `.timeout` file), so replay gets no
    # wall-clock budget: on a loaded machine the 1.2 s one let the same recording come out differently run to run
    # (an A100's MIG slices seen in one run, the whole 80 GB card in the next).
    replay = isinstance(host, ReplayHost)
    host = BudgetedHost(host, budget_s=3600.0 if replay else None, prefetch=always_run(host.platform))
    problems: list[Problem] = []
    cpu_value = run_probe("cpu", cpu.probe, host, problems, CPU(name=None, arch=host.arch))
    memory_value = run_probe("memory", memory.probe, host, problems, Memory(total_bytes=None, available_bytes=None))
    gpus: list[GPU] = []
    for name, function in _gpu_probes():
        gpus.extend(run_probe(name, function, host, problems, []))
    npus: list[NPU] = []
    for name, function in _npu_probes():
        npus.extend(run_probe(name, function, host, problems, []))
    backends: list[Backend] = []
    for name, function in _backend_probes():
        backends.extend(run_probe(name, function, host, problems, []))
    found = functools.partial(backends_probe.probe, python=python, torch=torch, gpus=tuple(gpus))
    backends.extend(run_probe("backends", found, host, problems, []))
    try:
        gpus = list(backends_probe.assign(tuple(gpus), tuple(backends), host))
    except Exception as error:  # noqa: BLE001 - assigning backends must not lose the GPUs
        problems.append(Problem("backends", f"could not match backends to GPUs: {type(error).__name__}: {error}", REPORT_HINT, "error"))
    probed = tuple(gpus)
    run_probe("vulkan", lambda h: (None, backends_probe.unseen_vulkan_gpus(probed, h)), host, problems, None)
    if host.platform == "linux":
        from gpuready.probes import pci

        run_probe("pci", lambda h: (None, pci.unreadable_devices(h)), host, problems, None)
    os_name, in_container = run_probe("system", system.probe, host, problems, (None, False))
    problems.extend(recording_problems(host))
    problems.extend(timeout_problems(host, problems))
    hardware = Hardware(
        platform=host.platform,
        arch=host.arch,
        cpu=cpu_value,
        memory=memory_value,
        gpus=tuple(gpus),
        npus=tuple(npus),
        backends=tuple(backends),
        os=os_name,
        in_container=in_container,
    )
    enriched = enrich(hardware)
    return enriched, problems + unknown_gpu_problems(enriched)


def unknown_gpu_problems(hardware: Hardware) -> list[Problem]:
    """A GPU used for AI whose memory bandwidth no probe read and no table row gives (a chip newer than the table):
    its speeds are not estimated, and the report says why and what measures them, rather than only 'unknown'.
    An integrated GPU beside a discrete one gets none: the discrete GPU runs the work (a UHD 770 next to an RX 7800 XT)."""
    discrete = any(gpu.kind == "discrete" for gpu in hardware.accelerators)
    return [
        Problem(gpu.vendor, f"{gpu.name} is not in gpuready's GPU table and its memory bandwidth could not be read: "
                            "speeds on it are not estimated",
                "With PyTorch installed (pip install torch), `gpuready bench` measures its bandwidth and later verdicts "
                "use it; please report the GPU with `gpuready record DIR` so the table can add it.", "warning")
        for gpu in hardware.accelerators
        if gpu.bandwidth_bytes_per_s is None and gpu.table_id is None and not (discrete and gpu.kind == "integrated")
    ]
