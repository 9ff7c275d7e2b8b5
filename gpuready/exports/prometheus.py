"""Gauges for node_exporter's textfile collector: readiness and capacity per task.

Format: the Prometheus text exposition format (prometheus/docs, "Exposition formats"):
``# HELP`` and ``# TYPE`` before each family, label values escaped (``\\``, ``"``,
newline). node_exporter's textfile collector (prometheus/node_exporter README, "Textfile
Collector") reads ``*.prom`` files from ``--collector.textfile.directory``, rejects
client-side timestamps, and wants each file written then renamed. Names follow
Prometheus' naming practice: base units (bytes, seconds, parameters), the unit as the
last word.

GPU memory uses OpenTelemetry's hardware semantic conventions
(open-telemetry/semantic-conventions docs/hardware/gpu.md): ``hw.gpu.memory.limit`` and
``hw.gpu.memory.usage`` (UpDownCounter, unit ``By``) with attributes ``hw.id``
(required), ``hw.type="gpu"``, ``hw.vendor``, ``hw.model``. Translated as OpenTelemetry's
Prometheus compatibility spec does (opentelemetry-specification
specification/compatibility/prometheus_and_openmetrics.md): dots become underscores,
unit ``By`` appends ``_bytes``, a non-monotonic sum is a gauge.
"""

from __future__ import annotations

from gpuready.exports.capacity import STATUSES, Capacity

FILE_NAME = "gpuready.prom"


def text(cap: Capacity) -> str:
    """The whole .prom file."""
    families: list[tuple[str, str, list[tuple[dict[str, str], float]]]] = []

    def family(name: str, help_text: str, samples: list[tuple[dict[str, str], float | None]]) -> None:
        known = [(labels, value) for labels, value in samples if value is not None]
        if known:
            families.append((name, help_text, known))

    family("gpuready_info", "gpuready release that wrote this file (value always 1).",
           [({"version": cap.gpuready_version}, 1)])
    family("gpuready_task_status",
           "Readiness of each task: 1 for the task's current status, 0 for the others.",
           [({"task": t.task, "status": s}, 1 if t.status == s else 0) for t in cap.tasks for s in STATUSES])
    family("gpuready_task_usable_models", "Catalogue models that run at or above the task's usable floor.",
           [({"task": t.task}, t.usable_models) for t in cap.tasks])
    family("gpuready_task_assessed_models", "Catalogue models judged for the task.",
           [({"task": t.task}, t.assessed_models) for t in cap.tasks])
    family("gpuready_text_generation_max_parameters",
           "Parameters of the largest text-generation model that runs at the usable floor.",
           [({}, cap.text_generation_max_params)])
    units = {
        "text-generation": ("gpuready_text_generation_tokens_per_second", "Generation speed of the reference model, tokens per second."),
        "image-generation": ("gpuready_image_generation_seconds", "Seconds per image of the reference model."),
        "speech": ("gpuready_speech_realtime_ratio", "Real-time factor of the reference model (audio seconds per second)."),
        "document-search": ("gpuready_document_search_chunks_per_second", "Chunks embedded per second by the reference model."),
    }
    for task in cap.tasks:
        name, help_text = units[task.task]
        family(name, help_text, [({"model": task.reference_model_id}, task.reference_speed)])
    family("gpuready_memory_total_bytes", "System memory.", [({}, cap.memory_total_bytes)])
    family("gpuready_memory_usable_bytes", "System memory a new process may allocate.", [({}, cap.memory_usable_bytes)])
    family("gpuready_gpu_counted", "Whether the verdicts count this GPU (1) or not (0).",
           [(_hw(gpu, i), 1 if gpu.counted else 0) for i, gpu in enumerate(cap.gpus)])
    family("hw_gpu_memory_limit_bytes", "Size of the GPU memory (OpenTelemetry hw.gpu.memory.limit).",
           [(_hw(gpu, i), gpu.memory_total_bytes) for i, gpu in enumerate(cap.gpus)])
    family("hw_gpu_memory_usage_bytes", "GPU memory used (OpenTelemetry hw.gpu.memory.usage).",
           [(_hw(gpu, i), gpu.memory_total_bytes - gpu.memory_free_bytes)
            for i, gpu in enumerate(cap.gpus) if gpu.memory_total_bytes is not None and gpu.memory_free_bytes is not None])
    lines = []
    for name, help_text, samples in families:
        lines.append(f"# HELP {name} {help_text}")
        lines.append(f"# TYPE {name} gauge")
        for labels, value in samples:
            lines.append(f"{name}{_labels(labels)} {_value(value)}")
    return "\n".join(lines) + "\n"


def _hw(gpu, position: int) -> dict[str, str]:
    # hw.id must be unique on the host: the report's position, since two vendors' GPUs may share an index.
    return {"hw_id": f"gpu{position}", "hw_type": "gpu", "hw_vendor": gpu.vendor, "hw_model": gpu.model}


def _labels(labels: dict[str, str]) -> str:
    if not labels:
        return ""
    escaped = (f'{key}="{_escape(value)}"' for key, value in labels.items())
    return "{" + ",".join(escaped) + "}"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _value(value: float) -> str:
    if isinstance(value, int) or float(value).is_integer():
        return str(int(value))
    return repr(float(value))
