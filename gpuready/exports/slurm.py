"""A `Features=` list and GRES lines for Slurm.

slurm.conf's ``Features=`` on a node's ``NodeName=`` line is a comma-separated list of
arbitrary names that ``sbatch --constraint`` selects on (slurm.conf(5), NodeName
"Features"; sbatch(1) "--constraint": names combined with ``&``, ``|``, ``[ ]`` and
``*``, so names here use only lower-case letters, digits and ``-``). A constraint
matches names, not numbers, so capacities become tiers: a node whose largest usable
text-generation model has 70B parameters carries ``gpuready-llm-7b`` ...
``gpuready-llm-70b``, and ``--constraint=gpuready-llm-30b`` picks nodes that run at least
30B. GPUs: ``Gres=gpu:<count>`` in slurm.conf and gres.conf's ``AutoDetect=`` (nvml for
NVIDIA, rsmi for AMD, oneapi for Intel; gres.conf(5) "AutoDetect"), which lets slurmd
find the device files and types itself.
"""

from __future__ import annotations

from gpuready.exports.capacity import Capacity, gib

LLM_TIERS_B = (1, 3, 7, 8, 13, 14, 30, 32, 70, 120, 235, 405)  # common open-model sizes, billions
# GiB as a report rounds them (an H200's 139.8 GiB usable is 140; an RTX 4090's 23.99 is 24): the common card sizes
GPU_MEMORY_TIERS_GIB = (4, 8, 12, 16, 24, 32, 48, 64, 80, 96, 128, 140, 192)
AUTODETECT = {"nvidia": "nvml", "amd": "rsmi", "intel": "oneapi"}


def features(cap: Capacity) -> list[str]:
    """Feature names: tasks the node can do (and does well), then capacity tiers."""
    out = []
    for task in cap.tasks:
        if task.status in ("ready", "limited"):
            out.append(f"gpuready-{task.task}")
        if task.status == "ready":
            out.append(f"gpuready-{task.task}-ready")
    largest = cap.text_generation_max_params_b
    out += [f"gpuready-llm-{tier}b" for tier in LLM_TIERS_B if largest is not None and largest >= tier]
    gpu_gib = gib(cap.gpu_memory_bytes) or 0
    out += [f"gpuready-gpu-{tier}gib" for tier in GPU_MEMORY_TIERS_GIB if gpu_gib >= tier]
    return out


def text(cap: Capacity) -> str:
    """Lines to paste: the slurm.conf fragment and the gres.conf lines."""
    counted = cap.counted_gpus
    node = [f"Features={','.join(features(cap))}"] if features(cap) else []
    if counted:
        node.append(f"Gres=gpu:{len(counted)}")
    lines = ["# slurm.conf: add to this node's NodeName= line", " ".join(node) if node else "# (no features)"]
    if counted:
        # slurmctld refuses a Gres= it has no type for (the project's slurmd -G test adds the same line)
        lines.append("# slurm.conf also needs GresTypes=gpu (once, among its global options)")
    vendors = sorted({gpu.vendor for gpu in counted})
    lines.append("# gres.conf on this node")
    detect = [AUTODETECT[v] for v in vendors if v in AUTODETECT]
    if detect:
        # gres.conf takes one AutoDetect mechanism per node line; a mixed-vendor node lists them for the admin to choose.
        lines.append(f"AutoDetect={detect[0]}")
        lines += [f"# or AutoDetect={other}" for other in detect[1:]]
    elif counted:
        lines.append(f"# {', '.join(vendors)} GPU: no Slurm AutoDetect plugin; describe it with Name=gpu File=... by hand")
    else:
        lines.append("# (no GPU to declare)")
    return "\n".join(lines) + "\n"
