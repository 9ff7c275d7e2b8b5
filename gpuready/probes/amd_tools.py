"""AMD VRAM from ROCm's command-line tools when sysfs has no ``mem_info_vram_total``.

Sources: ``rocm-smi --showmeminfo vram --json``, one object per card::

    {"card0": {"VRAM Total Memory (B)": "21458059264", "VRAM Total Used Memory (B)": "27856896"}}

(key names and values of an RX 7900 XT from https://github.com/marimo-team/marimo/issues/9237;
the command is the one ROCm's maintainers point to in https://github.com/ROCm/rocm_smi_lib/pull/120).
``amd-smi metric --mem-usage --json`` (ROCm 6.1 and later, where rocm-smi is deprecated), a list
of GPUs, or ``{"gpu_data": [...]}`` in later versions, sizes in MiB that amd-smi labels "MB"::

    [{"gpu": 0, "mem_usage": {"total_vram": {"value": 20464, "unit": "MB"}, "used_vram": {...}, ...}}]

(built by ``amdsmi_cli/amdsmi_commands.py`` ``metric``: ``total // (1024*1024)`` with unit "MB",
"N/A" for a value it could not read; printed by ``amdsmi_logger.py`` as ``json.dumps(list, indent=4)``,
https://github.com/ROCm/amdsmi at 0ceca28f).
Both tools number the cards in their own order, not by DRM card name, so their figures are used
only when they list exactly as many cards as the probe found, matched in order.
"""

from __future__ import annotations

import json
import re

from gpuready.host import Host

ROCM_SMI_ARGV = ("rocm-smi", "--showmeminfo", "vram", "--json")
AMD_SMI_ARGV = ("amd-smi", "metric", "--mem-usage", "--json")
MIB = 1024**2
TOTAL_KEY = "VRAM Total Memory (B)"
USED_KEY = "VRAM Total Used Memory (B)"


def _bytes(value) -> int | None:
    text = str(value).strip() if isinstance(value, (str, int)) and not isinstance(value, bool) else ""
    return int(text) if text.isdigit() and int(text) <= 2**60 else None


def parse_rocm_smi_vram(text: str) -> list[tuple[int | None, int | None]]:
    """(total, used) bytes per card in rocm-smi's card order; [] for anything that is not its JSON."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return []
    if not isinstance(data, dict):
        return []
    cards = sorted(((int(m.group(1)), value) for key, value in data.items()
                    if (m := re.fullmatch(r"card(\d+)", str(key))) and isinstance(value, dict)), key=lambda item: item[0])
    return [(_bytes(value.get(TOTAL_KEY)), _bytes(value.get(USED_KEY))) for _, value in cards]


def _mib(value) -> int | None:
    number = value.get("value") if isinstance(value, dict) else None
    if isinstance(number, bool) or not isinstance(number, int) or not 0 <= number <= 2**40:
        return None  # "N/A", or not amd-smi's {"value": n, "unit": "MB"}
    return number * MIB


def parse_amd_smi_mem(text: str) -> list[tuple[int | None, int | None]]:
    """(total, used) bytes of VRAM per GPU in amd-smi's GPU order; [] for anything that is not its JSON."""
    start = min((i for i in (text.find("["), text.find("{")) if i >= 0), default=-1)  # skip a WARNING line
    try:
        data = json.loads(text[start:]) if start >= 0 else None
    except (ValueError, RecursionError):
        return []
    if isinstance(data, dict):
        data = data.get("gpu_data")
    if not isinstance(data, list):
        return []
    gpus = sorted(((g["gpu"], g.get("mem_usage")) for g in data
                   if isinstance(g, dict) and isinstance(g.get("gpu"), int) and not isinstance(g.get("gpu"), bool)), key=lambda item: item[0])
    return [(_mib(usage.get("total_vram")), _mib(usage.get("used_vram"))) if isinstance(usage, dict) else (None, None)
            for _, usage in gpus]


def tool_vram(host: Host, cards: int) -> tuple[list[tuple[int | None, int | None]] | None, str]:
    """(total, used) per card and the tool that gave them (rocm-smi, else amd-smi), or None and what went wrong with each."""
    failures = []
    for argv, parse in ((ROCM_SMI_ARGV, parse_rocm_smi_vram), (AMD_SMI_ARGV, parse_amd_smi_mem)):
        result = host.run(argv, timeout=10.0)
        if result.status == "not_found":
            failures.append(f"{argv[0]} is not installed")
            continue
        if not result.ok:
            failures.append(f"`{' '.join(argv)}` failed ({result.status}, exit code {result.returncode})")
            continue
        found = parse(result.stdout)
        if len(found) != cards:
            failures.append(f"{argv[0]} listed {len(found)} card(s) with VRAM figures for {cards} AMD GPU(s)")
            continue
        return found, argv[0]
    return None, "; ".join(failures)
