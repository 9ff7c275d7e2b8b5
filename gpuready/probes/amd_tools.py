"""AMD VRAM from ROCm's command-line tools when sysfs has no ``mem_info_vram_total``.

Source: ``rocm-smi --showmeminfo vram --json``, one object per card::

    {"card0": {"VRAM Total Memory (B)": "21458059264", "VRAM Total Used Memory (B)": "27856896"}}

(key names and values of an RX 7900 XT from https://github.com/marimo-team/marimo/issues/9237;
the command is the one ROCm's maintainers point to in https://github.com/ROCm/rocm_smi_lib/pull/120).
rocm-smi numbers the cards in its own order, not by DRM card name, so its figures are used
only when it lists exactly as many cards as the probe found, matched in order.
"""

from __future__ import annotations

import json
import re

from gpuready.host import Host

ROCM_SMI_ARGV = ("rocm-smi", "--showmeminfo", "vram", "--json")
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


def rocm_smi_vram(host: Host, cards: int) -> tuple[list[tuple[int | None, int | None]] | None, str]:
    """(total, used) per card from rocm-smi, or None with what went wrong ("rocm-smi is not installed", ...)."""
    result = host.run(ROCM_SMI_ARGV, timeout=10.0)
    if result.status == "not_found":
        return None, "rocm-smi is not installed"
    if not result.ok:
        return None, f"`{' '.join(ROCM_SMI_ARGV)}` failed ({result.status}, exit code {result.returncode})"
    found = parse_rocm_smi_vram(result.stdout)
    if len(found) != cards:
        return None, f"rocm-smi listed {len(found)} card(s) with VRAM figures for {cards} AMD GPU(s)"
    return found, ""
