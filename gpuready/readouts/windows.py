"""The Windows readout: CPU, memory, OS and display adapters as a plain dict.

The only module that imports ``winreg`` and ``ctypes.windll``, and only inside
:func:`read` on Windows. Recorded machines store the result as ``libraries/windows.json``::

    {"os": "Windows 11 (build 22631)",
     "cpu": {"name", "vendor", "physical_cores", "logical_cores", "features": {"avx": true, ...}},
     "memory": {"total_bytes", "available_bytes"},
     "display_adapters": [{"key": "0000", "driver_desc", "driver_version", "matching_device_id",
                           "provider_name", "qw_memory_size", "memory_size"}],
     "errors": {"display_adapters": "..."}}

Display adapters come from the display class key
``HKLM\\SYSTEM\\CurrentControlSet\\Control\\Class\\{4d36e968-e325-11ce-bfc1-08002be10318}\\0000``...:
``HardwareInformation.qwMemorySize`` is the 64-bit VRAM size; ``HardwareInformation.MemorySize``
is a 32-bit value that saturates at 4 GiB (the bug behind "VRAM read as 4 GB",
https://github.com/oshi/oshi/issues/2521) and some drivers store it as REG_BINARY.
"""

from __future__ import annotations

from typing import Any

DISPLAY_CLASS = r"SYSTEM\CurrentControlSet\Control\Class\{4d36e968-e325-11ce-bfc1-08002be10318}"
CPU_KEY = r"HARDWARE\DESCRIPTION\System\CentralProcessor\0"
# IsProcessorFeaturePresent constants (winnt.h PF_*).
PROCESSOR_FEATURES = {
    "avx": 39,  # PF_AVX_INSTRUCTIONS_AVAILABLE
    "avx2": 40,  # PF_AVX2_INSTRUCTIONS_AVAILABLE
    "avx512f": 41,  # PF_AVX512F_INSTRUCTIONS_AVAILABLE
    "neon": 19,  # PF_ARM_NEON_INSTRUCTIONS_AVAILABLE
    "dotprod": 43,  # PF_ARM_V82_DP_INSTRUCTIONS_AVAILABLE
}


def registry_number(value: Any) -> int | None:
    """A REG_DWORD/REG_QWORD int or a little-endian REG_BINARY as an int."""
    if isinstance(value, int):
        return value
    if isinstance(value, (bytes, bytearray)) and 0 < len(value) <= 8:
        return int.from_bytes(bytes(value), "little")
    return None


def _value(winreg, key, name: str) -> Any:
    try:
        return winreg.QueryValueEx(key, name)[0]
    except OSError:
        return None


def _display_adapters(winreg) -> list[dict]:
    adapters = []
    with winreg.OpenKey(winreg.HKEY_LOCAL_MACHINE, DISPLAY_CLASS) as root:
        index = 0
        while True:
            try:
                name = winreg.EnumKey(root, index)
            except OSError:
                break
            index += 1
            if not (len(name) == 4 and name.isdigit()):
                continue  # "Properties" and similar
            try:
                with winreg.OpenKey(root, name) as key:
                    adapters.append(
                        {
                            "key": name,
                            "driver_desc": _value(winreg, key, "DriverDesc"),
                            "driver_version": _value(winreg, key, "DriverVersion"),
                            "matching_device_id": _value(winreg, key, "MatchingDeviceId"),
                            "provider_name": _value(winreg, key, "ProviderName"),
                            "qw_memory_size": registry_number(_value(winreg, key, "HardwareInformation.qwMemorySize")),
                            "memory_size": registry_number(_value(winreg, key, "HardwareInformation.MemorySize")),
                        }
                    )
            except OSError:
                continue  # access denied on one subkey must not hide the others
    return adapters


def _cpu(winreg) -> dict:
    import ctypes

    info: dict[str, Any] = {}
    with winreg.OpenKey(winreg.HKEY_LOCAL_MACHINE, CPU_KEY) as key:
        info["name"] = _value(winreg, key, "ProcessorNameString")
        info["vendor"] = _value(winreg, key, "VendorIdentifier")
    present = ctypes.windll.kernel32.IsProcessorFeaturePresent
    info["features"] = {name: bool(present(code)) for name, code in PROCESSOR_FEATURES.items()}
    try:
        import psutil

        info["physical_cores"] = psutil.cpu_count(logical=False)
        info["logical_cores"] = psutil.cpu_count(logical=True)
    except ImportError:
        pass
    return info


def _memory() -> dict:
    import ctypes

    class MEMORYSTATUSEX(ctypes.Structure):
        _fields_ = [
            ("dwLength", ctypes.c_ulong),
            ("dwMemoryLoad", ctypes.c_ulong),
            ("ullTotalPhys", ctypes.c_ulonglong),
            ("ullAvailPhys", ctypes.c_ulonglong),
            ("ullTotalPageFile", ctypes.c_ulonglong),
            ("ullAvailPageFile", ctypes.c_ulonglong),
            ("ullTotalVirtual", ctypes.c_ulonglong),
            ("ullAvailVirtual", ctypes.c_ulonglong),
            ("ullAvailExtendedVirtual", ctypes.c_ulonglong),
        ]

    status = MEMORYSTATUSEX()
    status.dwLength = ctypes.sizeof(MEMORYSTATUSEX)
    if not ctypes.windll.kernel32.GlobalMemoryStatusEx(ctypes.byref(status)):
        raise OSError("GlobalMemoryStatusEx failed")
    return {"total_bytes": status.ullTotalPhys, "available_bytes": status.ullAvailPhys}


def _os_name() -> str:
    import platform

    version = platform.version()  # "10.0.22631"
    build = version.rsplit(".", 1)[-1]
    major = "11" if build.isdigit() and int(build) >= 22000 else platform.release()
    return f"Windows {major} (build {build})"


def read() -> dict:
    """Everything the Windows probes need; each part that fails is named under "errors"."""
    import sys

    if sys.platform != "win32":
        return {"error": "not Windows"}
    import winreg

    readout: dict[str, Any] = {}
    errors: dict[str, str] = {}
    for part, reader in (
        ("os", _os_name),
        ("cpu", lambda: _cpu(winreg)),
        ("memory", _memory),
        ("display_adapters", lambda: _display_adapters(winreg)),
    ):
        try:
            readout[part] = reader()
        except Exception as error:  # noqa: BLE001 - one failing part must not hide the rest
            errors[part] = f"{type(error).__name__}: {error}"
    if errors:
        readout["errors"] = errors
    return readout
