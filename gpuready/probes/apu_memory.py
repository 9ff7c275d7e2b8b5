"""How much memory an AMD APU's GPU can use: the carve-out plus what the OS can still give as GTT.

An APU's memory has two parts in amdgpu's sysfs: ``mem_info_vram_*`` is the BIOS carve-out
(UMA frame buffer), which the OS never sees, and ``mem_info_gtt_*`` is GTT, a window onto the
system memory that is left. amdgpu places buffers in either (https://github.com/Syllo/nvtop/pull/428),
so both count, but GTT's size is only a limit set by the driver (``ttm.pages_limit`` /
``amdgpu.gttsize``), not memory that exists: with a 96 GiB carve-out of 128 GB and a 105 GiB GTT
limit, adding the two claims about 200 GiB
(https://github.com/GpuZelenograd/memtest_vulkan/issues/66). GTT is therefore capped by what
the OS has (``MemTotal``) for the total and by what it can still give (``MemAvailable``) for the
free part. Pure function over numbers; ``probes/amd.py`` reads them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SharedPool:
    total_bytes: int
    free_bytes: int
    # Whether MemTotal / MemAvailable lowered the GTT figures, and the derivation in words.
    capped: bool
    basis: str
    # The free part of the carve-out: memory the OS never sees, so no later cap by free system memory applies to it.
    carveout_free_bytes: int = 0


def _gib(value: int) -> str:
    return f"{value / 1024**3:.1f} GiB"


def shared_pool(
    vram_total: int | None,
    vram_used: int | None,
    gtt_total: int,
    gtt_used: int | None,
    mem_total: int | None,
    mem_available: int | None,
) -> SharedPool:
    """total = carve-out + min(GTT, MemTotal); free = carve-out free + min(GTT free, MemAvailable).

    A usage figure that sysfs did not give counts as nothing used.
    """
    carve_total = max(0, vram_total or 0)
    carve_free = max(0, carve_total - (vram_used or 0))
    gtt_total = max(0, gtt_total)
    gtt_free = max(0, gtt_total - (gtt_used or 0))
    gtt_total_usable = gtt_total if mem_total is None else min(gtt_total, mem_total)
    gtt_free_usable = gtt_free if mem_available is None else min(gtt_free, mem_available)
    capped = gtt_total_usable < gtt_total or gtt_free_usable < gtt_free
    total_note = f"GTT {_gib(gtt_total)}" + (
        f" capped by MemTotal {_gib(mem_total)}" if mem_total is not None and mem_total < gtt_total else ""
    )
    free_note = f"GTT free {_gib(gtt_free)}" + (
        f" capped by MemAvailable {_gib(mem_available)}" if mem_available is not None and mem_available < gtt_free else ""
    )
    basis = (
        f"total {_gib(carve_total + gtt_total_usable)} = carve-out {_gib(carve_total)} + {total_note}; "
        f"free {_gib(carve_free + gtt_free_usable)} = carve-out free {_gib(carve_free)} + {free_note}"
    )
    return SharedPool(carve_total + gtt_total_usable, carve_free + gtt_free_usable, capped, basis, carve_free)
