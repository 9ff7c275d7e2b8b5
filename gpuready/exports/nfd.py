"""Kubernetes node labels for Node Feature Discovery's `local` feature source.

Writes one feature file, ``features.d/gpuready``: ``# +expiry-time=`` then one
``gpuready.io/<name>=<value>`` line per label. Format, as nfd-worker reads it
(kubernetes-sigs/node-feature-discovery docs/usage/customization-guide.md, "Local
feature source" / "Input format"): files in
``/etc/kubernetes/node-feature-discovery/features.d/``; ``<namespace>/<name>[=<value>]``
lines; ``#`` comments; ``# +expiry-time=<RFC3339>`` makes the lines after it expire; a
file over 64 kB is ignored; write a dot-file and rename it (NFD ignores dot-files).
NVIDIA GPU Feature Discovery writes into the same host directory
(NVIDIA/k8s-device-plugin deployments/static/gpu-feature-discovery-daemonset.yaml).

Every key and value obeys the label rules of k8s.io/apimachinery
pkg/util/validation/validation.go: a key is an optional DNS-1123 subdomain prefix
(<= 253 characters) and a qualified name (<= 63 characters of ``[-A-Za-z0-9_.]``,
alphanumeric at both ends); a value is empty or a qualified name. Node affinity's
``Gt``/``Lt`` compare integers only, so capacities are integers: scaled (x10) where a
fraction matters.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

from gpuready.exports.capacity import Capacity, gib

PREFIX = "gpuready.io"
FILE_NAME = "gpuready"
MAX_FILE_BYTES = 64 * 1024  # NFD ignores a larger feature file
_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")


def labels(cap: Capacity) -> dict[str, str]:
    """The node's labels, key -> value, in a stable order; values the report lacks are left out."""
    out: dict[str, str] = {}

    def put(name: str, value: object) -> None:
        if value is None:
            return
        text = str(value)
        if is_label_value(text):  # a user-catalogue id may not be a valid label value: leave it out
            out[f"{PREFIX}/{name}"] = text

    put("version", cap.gpuready_version)
    for task in cap.tasks:
        put(f"{task.task}.status", task.status)
        put(f"{task.task}.usable-models", task.usable_models)
        put(f"{task.task}.best-model", task.best_model_id)
    put("text-generation.max-params-b", cap.text_generation_max_params_b)
    put("text-generation.tokens-per-s", _scaled(cap.task("text-generation").reference_speed, 1))
    put("image-generation.seconds-x10", _scaled(cap.task("image-generation").reference_speed, 10))
    put("speech.realtime-x10", _scaled(cap.task("speech").reference_speed, 10))
    put("document-search.chunks-per-s", _scaled(cap.task("document-search").reference_speed, 1))
    counted = cap.counted_gpus
    put("gpu.count", len(counted))
    put("gpu.memory-gib", gib(cap.gpu_memory_bytes))
    if counted:
        largest = max(counted, key=lambda gpu: gpu.memory_total_bytes or 0)
        put("gpu.vendor", largest.vendor)
    put("memory-gib", gib(cap.memory_total_bytes))
    return out


def feature_file(cap: Capacity, now: datetime, expires_after: timedelta) -> str:
    """The features.d file: a header, the expiry directive, then `key=value` lines."""
    expiry = (now.astimezone(timezone.utc) + expires_after).replace(microsecond=0)
    lines = [
        "# gpuready node labels for Node Feature Discovery (local source); rewritten by `gpuready export nfd`",
        f"# +expiry-time={expiry.strftime('%Y-%m-%dT%H:%M:%SZ')}",
        *(f"{key}={value}" for key, value in labels(cap).items()),
    ]
    text = "\n".join(lines) + "\n"
    if len(text.encode("utf-8")) > MAX_FILE_BYTES:
        raise ValueError(f"the feature file would be {len(text.encode())} bytes; NFD ignores files over {MAX_FILE_BYTES}")
    return text


def is_label_key(key: str) -> bool:
    """Kubernetes' rule for a label key: [DNS-1123 subdomain prefix '/'] qualified name."""
    prefix, _, name = key.rpartition("/")
    if "/" in key and not (prefix and len(prefix) <= 253 and re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*", prefix)):
        return False
    return len(name) <= 63 and bool(_NAME.match(name))


def is_label_value(value: str) -> bool:
    """Kubernetes' rule for a label value: empty, or a qualified name of at most 63 characters."""
    return value == "" or (len(value) <= 63 and bool(_NAME.match(value)))


def _scaled(value: float | None, factor: int) -> int | None:
    return int(round(value * factor)) if value is not None else None
