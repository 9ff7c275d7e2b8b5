"""Options for `ray start` that declare what this node can do.

``--resources`` takes a JSON object of custom resource name -> quantity; Ray schedules a
task that asks for a resource only on nodes that have enough of it (docs.ray.io,
"Resources": custom resources, `ray start --resources='{"special_hardware": 1}'`). A
task that only needs the capability asks for a fraction, e.g.
``resources={"gpuready:text-generation": 0.01}``; ``gpuready:gpu-memory-gib`` is a
quantity a task may consume. ``--labels`` takes ``key=value`` pairs separated by commas,
with Kubernetes label syntax, the ``ray.io/`` namespace reserved to Ray (docs.ray.io,
"Use labels to control scheduling"; ray-project/ray python/ray/_private/label_utils.py
``parse_node_labels_string``): gpuready passes the same labels as the NFD export.
"""

from __future__ import annotations

import json
import shlex

from gpuready.exports import nfd
from gpuready.exports.capacity import Capacity, gib

RUNNABLE_STATUSES = ("ready", "limited")


def resources(cap: Capacity) -> dict[str, int]:
    """One unit per task the node can do, and its GPU memory in GiB."""
    out = {f"gpuready:{t.task}": 1 for t in cap.tasks if t.status in RUNNABLE_STATUSES}
    if gib(cap.gpu_memory_bytes):
        out["gpuready:gpu-memory-gib"] = gib(cap.gpu_memory_bytes)
    return out


def labels(cap: Capacity) -> dict[str, str]:
    return nfd.labels(cap)


def labels_option(cap: Capacity) -> str:
    """The value of `ray start --labels`: key=value pairs joined by commas."""
    return ",".join(f"{key}={value}" for key, value in labels(cap).items())


def command_line(cap: Capacity) -> str:
    """`--resources=... --labels=...`, quoted for a POSIX shell."""
    return (f"--resources={shlex.quote(json.dumps(resources(cap), separators=(',', ':')))} "
            f"--labels={shlex.quote(labels_option(cap))}")


def as_json(cap: Capacity) -> dict:
    return {"resources": resources(cap), "labels": labels(cap)}
