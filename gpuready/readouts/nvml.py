"""The one NVML chokepoint: every pynvml call gpuready makes, as a plain dict.

``read()`` never raises. A library that cannot start gives ``{"error": "NVML_ERROR_..."}``;
a field a device cannot report is left out of the device and named in its ``errors``
(``{"memory_bus_width_bits": "NVML_ERROR_NOT_SUPPORTED"}``). The shape (stored as
``libraries/nvml.json`` in recorded machines) is::

    {"driver_version": "550.54.14", "cuda_driver_version": 12040, "nvml_version": "12.550.54.14",
     "devices": [{"index": 0, "name": ..., "uuid": ..., "pci_bus_id": ..., "pci_device_id": 0x268410DE,
                  "memory": {"total": B, "free": B, "used": B, "reserved": B, "version": 2},
                  "compute_capability": [8, 9], "architecture": 8, "memory_bus_width_bits": 384,
                  "max_memory_clock_mhz": 10501, "mig_mode": [current, pending],
                  "mig_devices": [{"index", "uuid", "name", "gpu_instance_id", "compute_instance_id",
                                   "memory": {...}, "errors": {...}}], "errors": {...}}]}
"""

from __future__ import annotations

from typing import Any, Callable


# The NVML function behind each field of the readout, so that a Problem can name the call that failed.
CALLS = {
    "index": "nvmlDeviceGetIndex", "name": "nvmlDeviceGetName", "uuid": "nvmlDeviceGetUUID",
    "pci_bus_id": "nvmlDeviceGetPciInfo", "pci_device_id": "nvmlDeviceGetPciInfo", "memory": "nvmlDeviceGetMemoryInfo",
    "compute_capability": "nvmlDeviceGetCudaComputeCapability", "architecture": "nvmlDeviceGetArchitecture",
    "memory_bus_width_bits": "nvmlDeviceGetMemoryBusWidth", "max_memory_clock_mhz": "nvmlDeviceGetMaxClockInfo",
    "mig_mode": "nvmlDeviceGetMigMode", "handle": "nvmlDeviceGetHandleByIndex", "count": "nvmlDeviceGetMaxMigDeviceCount",
    "pcie_max_link_generation": "nvmlDeviceGetMaxPcieLinkGeneration", "pcie_max_link_width": "nvmlDeviceGetMaxPcieLinkWidth",
    "mig_handle": "nvmlDeviceGetMigDeviceHandleByIndex",
    "gpu_instance_id": "nvmlDeviceGetGpuInstanceId", "compute_instance_id": "nvmlDeviceGetComputeInstanceId",
    "driver_version": "nvmlSystemGetDriverVersion", "cuda_driver_version": "nvmlSystemGetCudaDriverVersion_v2",
    "nvml_version": "nvmlSystemGetNVMLVersion",
}


def _error_name(error: Exception) -> str:
    """NVMLError_NotSupported(value 3) -> "NVML_ERROR_NOT_SUPPORTED"."""
    import pynvml

    value = getattr(error, "value", None)
    for name in dir(pynvml):
        if name.startswith("NVML_ERROR_") and getattr(pynvml, name) == value:
            return name
    return f"NVML_ERROR_{value}" if value is not None else f"{type(error).__name__}: {error}"


def _text(value: Any) -> Any:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def _memory(pynvml, handle) -> dict:
    """Memory info v2 (separates reserved memory, driver 510+), else v1."""
    try:
        info = pynvml.nvmlDeviceGetMemoryInfo(handle, version=pynvml.nvmlMemory_v2)
        return {"total": info.total, "free": info.free, "used": info.used, "reserved": info.reserved, "version": 2}
    except (pynvml.NVMLError, AttributeError, TypeError):
        info = pynvml.nvmlDeviceGetMemoryInfo(handle)
        return {"total": info.total, "free": info.free, "used": info.used, "version": 1}


def _fields(pynvml, handle, getters: dict[str, Callable]) -> dict:
    """Call each getter; a value when it works, its NVML error name under "errors" when not."""
    result: dict[str, Any] = {}
    errors: dict[str, str] = {}
    for key, getter in getters.items():
        try:
            result[key] = getter(handle)
        except pynvml.NVMLError as error:
            errors[key] = _error_name(error)
        except Exception as error:  # noqa: BLE001 - an old pynvml may lack a function
            errors[key] = f"{type(error).__name__}: {error}"
    if errors:
        result["errors"] = errors
    return result


def _device(pynvml, handle) -> dict:
    getters: dict[str, Callable] = {
        "index": pynvml.nvmlDeviceGetIndex,
        "name": lambda h: _text(pynvml.nvmlDeviceGetName(h)),
        "uuid": lambda h: _text(pynvml.nvmlDeviceGetUUID(h)),
        "pci_bus_id": lambda h: _text(pynvml.nvmlDeviceGetPciInfo(h).busId),
        "pci_device_id": lambda h: pynvml.nvmlDeviceGetPciInfo(h).pciDeviceId,
        "memory": lambda h: _memory(pynvml, h),
        "compute_capability": lambda h: list(pynvml.nvmlDeviceGetCudaComputeCapability(h)),
        "architecture": pynvml.nvmlDeviceGetArchitecture,
        "memory_bus_width_bits": pynvml.nvmlDeviceGetMemoryBusWidth,
        "max_memory_clock_mhz": lambda h: pynvml.nvmlDeviceGetMaxClockInfo(h, pynvml.NVML_CLOCK_MEM),
        "mig_mode": lambda h: list(pynvml.nvmlDeviceGetMigMode(h)),
        "power_limit_mw": lambda h: pynvml.nvmlDeviceGetEnforcedPowerLimit(h),
        # "the maximum PCIe link generation / width possible with this device and system" (NVML reference): an x16
        # card in an x8 slot reads 8, a PCIe 4.0 card on a 3.0 board 3. The current link drops while the GPU idles.
        "pcie_max_link_generation": lambda h: pynvml.nvmlDeviceGetMaxPcieLinkGeneration(h),
        "pcie_max_link_width": lambda h: pynvml.nvmlDeviceGetMaxPcieLinkWidth(h),
    }
    device = _fields(pynvml, handle, getters)
    if (device.get("mig_mode") or [0])[0] == pynvml.NVML_DEVICE_MIG_ENABLE:
        device["mig_devices"] = _mig_devices(pynvml, handle)
    return device


def _mig_devices(pynvml, handle) -> list[dict]:
    try:
        count = pynvml.nvmlDeviceGetMaxMigDeviceCount(handle)
    except pynvml.NVMLError as error:
        return [{"errors": {"count": _error_name(error)}}]
    devices = []
    for index in range(count):
        try:
            mig = pynvml.nvmlDeviceGetMigDeviceHandleByIndex(handle, index)
        except pynvml.NVMLError as error:
            if getattr(error, "value", None) != getattr(pynvml, "NVML_ERROR_NOT_FOUND", 6):
                devices.append({"index": index, "errors": {"mig_handle": _error_name(error)}})
            continue  # NOT_FOUND: this slot holds no MIG device
        entry = {"index": index}
        entry.update(
            _fields(
                pynvml,
                mig,
                {
                    "name": lambda h: _text(pynvml.nvmlDeviceGetName(h)),
                    "uuid": lambda h: _text(pynvml.nvmlDeviceGetUUID(h)),
                    "gpu_instance_id": pynvml.nvmlDeviceGetGpuInstanceId,
                    "compute_instance_id": pynvml.nvmlDeviceGetComputeInstanceId,
                    "memory": lambda h: _memory(pynvml, h),
                },
            )
        )
        devices.append(entry)
    return devices


def read() -> dict:
    """Everything gpuready asks NVML, as data; never raises."""
    try:
        import pynvml
    except ImportError as error:
        return {"error": "PYNVML_NOT_INSTALLED", "detail": str(error)}
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as error:
        return {"error": _error_name(error), "detail": str(error), "call": "nvmlInit"}
    except Exception as error:  # noqa: BLE001 - e.g. OSError loading a broken libnvidia-ml
        return {"error": "NVML_INIT_FAILED", "detail": f"{type(error).__name__}: {error}", "call": "nvmlInit"}
    try:
        readout = _fields(
            pynvml,
            None,
            {
                "driver_version": lambda _: _text(pynvml.nvmlSystemGetDriverVersion()),
                "cuda_driver_version": lambda _: pynvml.nvmlSystemGetCudaDriverVersion_v2(),
                "nvml_version": lambda _: _text(pynvml.nvmlSystemGetNVMLVersion()),
            },
        )
        try:
            count = pynvml.nvmlDeviceGetCount()
        except pynvml.NVMLError as error:
            readout["error"], readout["call"] = _error_name(error), "nvmlDeviceGetCount"
            return readout
        devices = []
        for index in range(count):
            try:
                handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            except pynvml.NVMLError as error:
                devices.append({"index": index, "errors": {"handle": _error_name(error)}})
                continue
            devices.append(_device(pynvml, handle))
        readout["devices"] = devices
        return readout
    except Exception as error:  # noqa: BLE001 - the readout must never take the run down
        return {"error": "NVML_READ_FAILED", "detail": f"{type(error).__name__}: {error}"}
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception:  # noqa: BLE001
            pass
