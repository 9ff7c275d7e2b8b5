"""Average watts a GPU drew during a benchmark phase, from NVML's total energy counter.

Used by gpuready.bench.torch_worker (in the child process). nvmlDeviceGetTotalEnergyConsumption
returns the energy in millijoules since the driver was last reloaded, on Volta or newer GPUs
(NVML API reference; https://nvidia.github.io/cuda-python/ cuda.bindings.nvml
device_get_total_energy_consumption). A phase's power is the counter's difference over the
phase's wall-clock seconds. The counter is refreshed every 20-100 ms (PETSc's
PetscLogGpuEnergyMeter notes, https://petsc.org/main/manualpages/Log/PetscLogGpuEnergyMeter),
so each of the two reads may lag by up to COUNTER_LAG_S: the figure's band is that lag at both
ends relative to the phase's length.

Every NVML failure (no pynvml, no driver, a GPU before Volta, a device it cannot map) means
no power figure, never an exception out of this module.
"""

from __future__ import annotations

import time
from typing import Callable

from gpuready.bench.stats import Spread

COUNTER_LAG_S = 0.1  # the slowest refresh of the energy counter (PETSc, above)


def phase_power(millijoules: float, seconds: float) -> Spread | None:
    """Average watts over a phase of ``seconds`` that used ``millijoules``, with the counter's lag as its band."""
    if seconds <= 0 or millijoules <= 0:
        return None
    watts = millijoules / 1000 / seconds
    share = min(1.0, 2 * COUNTER_LAG_S / seconds)
    return Spread(watts * (1 - share), watts, watts * (1 + share), 1)


def _matches(pci, properties) -> bool:
    return (int(pci.domain), int(pci.bus), int(pci.device)) == (
        int(getattr(properties, "pci_domain_id", 0)), int(properties.pci_bus_id), int(properties.pci_device_id))


def open_meter(torch, index: int) -> Callable[[], float] | None:
    """A function reading the energy counter (mJ) of torch's CUDA device ``index``, or None.

    The NVML handle is found by PCI address (domain, bus, device from
    torch.cuda.get_device_properties, present in recent PyTorch), because torch's index counts
    only CUDA_VISIBLE_DEVICES and follows CUDA_DEVICE_ORDER, so it need not be NVML's index.
    Where PyTorch has no PCI address, the index is used only when NVML and torch both see one
    GPU; otherwise there is no meter rather than another GPU's power.
    """
    try:
        import pynvml

        pynvml.nvmlInit()
        properties = torch.cuda.get_device_properties(index)
        count = pynvml.nvmlDeviceGetCount()
        handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
        if hasattr(properties, "pci_bus_id") and hasattr(properties, "pci_device_id"):
            found = [h for h in handles if _matches(pynvml.nvmlDeviceGetPciInfo(h), properties)]
        else:
            found = handles if count == 1 and torch.cuda.device_count() == 1 else []
        if len(found) != 1:
            return None
        handle = found[0]
        pynvml.nvmlDeviceGetTotalEnergyConsumption(handle)  # raises NotSupported before Volta
        return lambda: float(pynvml.nvmlDeviceGetTotalEnergyConsumption(handle))
    except Exception:  # noqa: BLE001 - any NVML or binding failure means no power figure
        return None


def read(meter: Callable[[], float] | None) -> float | None:
    """The counter now, or None when there is no meter or it failed."""
    if meter is None:
        return None
    try:
        return meter()
    except Exception:  # noqa: BLE001
        return None


def metered(meter: Callable[[], float] | None, synchronize: Callable[[], None], run: Callable[[], object]):
    """``run()``'s value and the (millijoules, seconds) it used between two synchronised reads, or None as usage."""
    synchronize()
    start, began = read(meter), time.perf_counter()
    value = run()
    synchronize()
    seconds, end = time.perf_counter() - began, read(meter)
    usage = (end - start, seconds) if start is not None and end is not None and end >= start else None
    return value, usage


def combined_power(usages) -> Spread | None:
    """Average watts over several metered runs of one phase; None when any of them has no reading."""
    if not usages or any(usage is None for usage in usages):
        return None
    return phase_power(sum(mj for mj, _ in usages), sum(s for _, s in usages))
