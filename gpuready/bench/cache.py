"""Where measurements are kept: one JSON file in the user cache directory, keyed by the hardware.

The key (fingerprint) is the CPU model and thread count, the memory size in whole GiB, and
each GPU's name and driver version: when any of them changes, the old measurements describe
another machine and are discarded. ``GPUREADY_CACHE_DIR`` overrides the directory (tests).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path

from gpuready.bench.results import Measurements, from_json, to_json
from gpuready.hardware import GIB, Hardware

FILE_NAME = "measurements.json"
FORMAT_VERSION = 1


def cache_dir(environ: Mapping[str, str] = os.environ, platform: str = sys.platform) -> Path:
    """The platform's user cache directory for gpuready."""
    if environ.get("GPUREADY_CACHE_DIR"):
        return Path(environ["GPUREADY_CACHE_DIR"])
    home = Path(environ.get("HOME") or environ.get("USERPROFILE") or "~").expanduser()
    if platform.startswith("win"):
        return Path(environ.get("LOCALAPPDATA") or home / "AppData" / "Local") / "gpuready" / "Cache"
    if platform == "darwin":
        return home / "Library" / "Caches" / "gpuready"
    return Path(environ.get("XDG_CACHE_HOME") or home / ".cache") / "gpuready"


def fingerprint(hardware: Hardware) -> dict:
    """What identifies this machine's measured performance; no serials or host names."""
    memory = hardware.memory.total_bytes
    return {
        "cpu": hardware.cpu.name,
        "cpu_threads": hardware.cpu.logical_cores,
        "memory_gib": round(memory / GIB) if memory else None,
        "gpus": [[gpu.name, gpu.driver_version] for gpu in hardware.gpus],
    }


def load(hardware: Hardware, directory: Path | None = None) -> tuple[Measurements | None, str | None]:
    """This machine's measurements, or None; a note says when stale or damaged ones were discarded."""
    path = (directory or cache_dir()) / FILE_NAME
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None, None
    except (OSError, ValueError) as error:
        return None, f"ignored unreadable measurements in {path}: {error}"
    try:
        if data.get("format") != FORMAT_VERSION:
            raise ValueError("written by another version")
        measurements = from_json(data["measurements"])
    except (AttributeError, KeyError, TypeError, ValueError) as error:
        clear(directory)
        return None, f"discarded damaged measurements in {path}: {error}"
    if measurements.fingerprint != fingerprint(hardware):
        clear(directory)
        return None, f"discarded the measurements of {measurements.measured_at}: the hardware has changed since"
    return measurements, None


def save(measurements: Measurements, directory: Path | None = None) -> Path:
    directory = directory or cache_dir()
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / FILE_NAME
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps({"format": FORMAT_VERSION, "measurements": to_json(measurements)}, indent=2) + "\n",
                         encoding="utf-8")
    os.replace(temporary, path)
    return path


def clear(directory: Path | None = None) -> bool:
    """Remove the kept measurements; True when there were some."""
    path = (directory or cache_dir()) / FILE_NAME
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    return True
