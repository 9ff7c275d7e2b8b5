"""The optional amdsmi readout: AMD's own names for the GPUs, as a plain dict.

Used only when the ``amdsmi`` package (ROCm's Python bindings) is installed and
libdrm's amdgpu.ids does not know a card. ``read()`` never raises::

    {"devices": [{"bdf": "0000:03:00.0", "market_name": "...", "target_graphics_version": "gfx1100",
                  "errors": {...}}]}
"""

from __future__ import annotations

from typing import Any


def read() -> dict:
    """Name and target of every AMD GPU amdsmi sees; errors become data."""
    try:
        import amdsmi
    except ImportError as error:
        return {"error": "AMDSMI_NOT_INSTALLED", "detail": str(error)}
    try:
        amdsmi.amdsmi_init()
    except Exception as error:  # noqa: BLE001 - AmdSmiLibraryException and driver errors alike
        return {"error": "AMDSMI_INIT_FAILED", "detail": f"{type(error).__name__}: {error}"}
    try:
        devices = []
        for handle in amdsmi.amdsmi_get_processor_handles():
            device: dict[str, Any] = {}
            errors: dict[str, str] = {}
            try:
                device["bdf"] = str(amdsmi.amdsmi_get_gpu_device_bdf(handle))
            except Exception as error:  # noqa: BLE001
                errors["bdf"] = f"{type(error).__name__}: {error}"
            try:
                asic = amdsmi.amdsmi_get_gpu_asic_info(handle)
                device["market_name"] = asic.get("market_name")
                device["target_graphics_version"] = asic.get("target_graphics_version")
            except Exception as error:  # noqa: BLE001
                errors["asic_info"] = f"{type(error).__name__}: {error}"
            if errors:
                device["errors"] = errors
            devices.append(device)
        return {"devices": devices}
    except Exception as error:  # noqa: BLE001 - the readout must never take the run down
        return {"error": "AMDSMI_READ_FAILED", "detail": f"{type(error).__name__}: {error}"}
    finally:
        try:
            amdsmi.amdsmi_shut_down()
        except Exception:  # noqa: BLE001
            pass
