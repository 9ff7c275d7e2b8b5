"""What nvidia-smi says beyond its CSV query when NVML is unusable: ``nvidia-smi -L`` (GPUs and MIG instances),
rows of the CSV the strict parser cannot read, and /proc/meminfo for unified-memory GPUs; Jetson's L4T release.

Sources:
* ``nvidia-smi -L``: ``GPU 0: NVIDIA A100 80GB PCIe (UUID: GPU-...)`` then, per MIG instance,
  ``  MIG 3g.40gb     Device  0: (UUID: MIG-...)``
  (https://github.com/NVIDIA/nvidia-container-toolkit/issues/203, https://github.com/DataDog/datadog-agent/pull/33120);
* ``/etc/nv_tegra_release``: ``# R35 (release), REVISION: 4.1, GCID: ..., BOARD: t186ref, ...``
  (L4T R35.4.1 = JetPack 5.1.2).
"""

from __future__ import annotations

import dataclasses
import re

from gpuready.hardware import Problem
from gpuready.host import Host
from gpuready.probes.nvidia_common import SMI_FIELDS, Seen

LIST_ARGV = ("nvidia-smi", "-L")
TEGRA_RELEASE = "/etc/nv_tegra_release"

_GPU_LINE = re.compile(r"^GPU\s+(\d+):\s+(.+?)\s*(?:\(UUID:\s*([^)\s]+)\s*\))?\s*$")
_MIG_LINE = re.compile(r"^\s+MIG\s+(\d+g\.\d+gb)\s+Device\s+(\d+):\s*(?:\(UUID:\s*([^)\s]+)\s*\))?\s*$", re.IGNORECASE)
_PROFILE_GB = re.compile(r"\.(\d+)gb$", re.IGNORECASE)
# nvidia-smi's words for a value it does not have.
NOT_AVAILABLE = ("[N/A]", "N/A", "[Not Supported]", "[Unknown Error]", "[Insufficient Permissions]", "")


@dataclasses.dataclass(frozen=True)
class Listed:
    """One GPU of ``nvidia-smi -L`` with its MIG instances as (profile, device number, UUID)."""

    index: int
    name: str
    uuid: str | None
    migs: tuple[tuple[str, int, str | None], ...] = ()


def parse_list(text: str) -> list[Listed]:
    """GPUs and their MIG instances from ``nvidia-smi -L``; other lines (errors, blank) are skipped."""
    gpus: list[Listed] = []
    for line in text.splitlines():
        gpu = _GPU_LINE.match(line)
        if gpu:
            gpus.append(Listed(int(gpu.group(1)), gpu.group(2), gpu.group(3)))
            continue
        mig = _MIG_LINE.match(line)
        if mig and gpus:
            last = gpus[-1]
            gpus[-1] = dataclasses.replace(last, migs=last.migs + ((mig.group(1).lower(), int(mig.group(2)), mig.group(3)),))
    return gpus


def mig_profile_bytes(profile: str) -> int | None:
    """The memory a MIG profile's name states, in bytes: "3g.20gb" -> 20 * 10^9.

    The name rounds the instance's memory down: an A100-SXM4-40GB's 3g.20gb has 20096 MiB
    (21.07 GB) and its 1g.5gb 4864 MiB (5.10 GB) (HTCondor's condor_gpu_discovery manual,
    fixture nvidia-a100-mig), so this is a floor, never more than the instance holds.
    """
    match = _PROFILE_GB.search(profile)
    return int(match.group(1)) * 10**9 if match else None


def mig_devices(listed: Listed) -> list[dict]:
    """A listed GPU's MIG instances in the NVML readout's ``mig_devices`` shape, named as NVML names them."""
    return [
        {"name": f"{listed.name} MIG {profile}", "memory": {"total": mig_profile_bytes(profile)}, "uuid": uuid}
        for profile, _, uuid in listed.migs
    ]


def unread_rows(text: str) -> list[str]:
    """Rows of ``nvidia-smi --query-gpu`` output that start like a GPU's row but that :func:`split_row` cannot read."""
    return [line.strip() for line in text.splitlines()
            if re.match(r"\s*\d+\s*,", line) and split_row(line) is None]


def split_row(line: str) -> dict[str, str] | None:
    """One CSV row as {field: cell}; a name with commas in it is joined back; "[N/A]"-style cells become ""."""
    cells = [cell.strip() for cell in line.split(",")]
    if len(cells) < len(SMI_FIELDS):
        return None
    tail = len(SMI_FIELDS) - 2  # the cells after the name
    cells = [cells[0], ", ".join(cells[1:len(cells) - tail]), *cells[len(cells) - tail:]]
    if not cells[0].isdigit():
        return None
    return {field: ("" if cell in NOT_AVAILABLE else cell) for field, cell in zip(SMI_FIELDS, cells)}


def with_meminfo(seen: list[Seen], meminfo: dict[str, int]) -> list[Seen]:
    """Unified-memory GPUs (GB10, Jetson) whose memory nvidia-smi reports as [N/A] take it from /proc/meminfo."""
    result = []
    for item in seen:
        gpu = item.gpu
        if gpu.kind == "unified" and gpu.memory_total_bytes is None and meminfo.get("MemTotal"):
            gpu = dataclasses.replace(gpu, memory_total_bytes=meminfo["MemTotal"], memory_free_bytes=meminfo.get("MemAvailable"),
                                      memory_usable_bytes=meminfo.get("MemAvailable"), source="nvidia-smi+proc_meminfo")
            item = dataclasses.replace(item, gpu=gpu)
        result.append(item)
    return result


# GPUs that can be split into MIG instances (NVIDIA's MIG User Guide, "Supported GPUs": A30, A100, H100, H200, H800,
# H20, GH200, B200, GB200, B300, RTX PRO 6000 Blackwell (Server and Workstation editions), A800 as A100's variant).
MIG_CAPABLE = re.compile(r"\b(A30|A100|A800|H100|H200|H800|H20|GH200|B200|GB200|B300|RTX PRO 6000 Blackwell)\b")


def read_list(host: Host, names: list[str]) -> tuple[list[Listed], list[Problem]]:
    """``nvidia-smi -L``; when it fails or lists fewer than the GPUs (``names``) the CSV showed, a Problem: any MIG
    instances on those GPUs go unseen and each such GPU is judged whole. A warning where one of them can be split
    (a whole 80 GB A100 judged for a 40 GB slice would be told a model fits that does not); else an info line."""
    result = host.run(LIST_ARGV, timeout=10.0)
    listed = parse_list(result.stdout) if result.ok else []
    if len(listed) >= len(names):
        return listed, []
    if result.status != "ok":
        why = "timed out" if result.status == "timeout" else f"failed ({result.status.replace('_', ' ')})"
    elif result.returncode:
        why = f"failed (exit code {result.returncode})"
    else:
        why = f"listed {len(listed)} of the {len(names)} GPU(s) the CSV query showed"
    splittable = sorted({name for name in names if MIG_CAPABLE.search(name)})
    if splittable:
        return listed, [Problem("nvidia", f"`nvidia-smi -L` {why}: whether {', '.join(splittable)} is split into MIG instances is "
                                "unknown, and each GPU is judged whole; a MIG instance has only part of its memory and compute",
                                "Run `nvidia-smi -L` to see the MIG instances the driver lists, or install nvidia-ml-py "
                                "(`pip install nvidia-ml-py`) so gpuready reads them through NVML.", "warning")]
    return listed, [Problem("nvidia", f"`nvidia-smi -L` {why}: MIG instances, if any, are not seen and each GPU is judged whole",
                            "Run `nvidia-smi -L` to see the MIG instances the driver lists.", "info")]


def csv_problems(text: str) -> list[Problem]:
    """A warning naming each GPU row of nvidia-smi's CSV that could not be read."""
    rows = unread_rows(text)
    if not rows:
        return []
    return [Problem("nvidia", f"nvidia-smi listed a GPU gpuready could not read: {'; '.join(repr(r[:120]) for r in rows[:4])}",
                    "Run `nvidia-smi -q` to see what the driver reports for this GPU.", "warning")]


def parse_l4t(text: str) -> str | None:
    """The L4T release from /etc/nv_tegra_release: "# R35 (release), REVISION: 4.1, ..." -> "R35.4.1"."""
    match = re.search(r"#\s*R(\d+)\s*\([^)]*\),\s*REVISION:\s*(\d+(?:\.\d+)*)", text or "")
    return f"R{match.group(1)}.{match.group(2)}" if match else None


def l4t_version(host: Host) -> str | None:
    """The L4T release of a Jetson board as "L4T R35.4.1", or None when the file is missing or unreadable."""
    release = parse_l4t(host.read_text(TEGRA_RELEASE) or "")
    return f"L4T {release}" if release else None

