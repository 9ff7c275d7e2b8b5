"""Per-task capacities of one machine, derived once from its JSON report.

Reads only the versioned report dict (``report_json``): the task summaries, the
verdicts and the hardware section. Decides the few numbers a scheduler can compare:
the largest text-generation model that runs at the usable floor, the speed of one
reference model per task, GPU and system memory. A value the report does not give is
``None`` (the exporters then leave the label or metric out), never 0.
"""

from __future__ import annotations

from dataclasses import dataclass

# The report schema this package reads; a report with another version is refused.
# tests/test_exports_capacity.py pins it to gpuready.report.SCHEMA_VERSION.
SCHEMA_VERSION = 1
TASKS = ("text-generation", "image-generation", "speech", "document-search", "fine-tuning")
# Tasks that own their catalogue entries. Fine-tuning judges the text-generation LLMs again:
# its verdicts count in its own task's capacity, not in the per-model listing (one entry a model id).
MODEL_TASKS = ("text-generation", "image-generation", "speech", "document-search")
STATUSES = ("ready", "limited", "not-possible", "unknown", "not-assessed")
# Levels at or above the usable floor (the report's `levels`, best first, up to "slow";
# "too-slow" fits but is below the task's floor).
USABLE_LEVELS = ("runs-well", "runs", "slow")
# One well-known catalogue model per task whose speed stands for the machine's speed at
# that task, so numbers compare across nodes (tests check each id is in the catalogue).
REFERENCE_MODELS = {
    "text-generation": "llama-3.1-8b",
    "image-generation": "sdxl",
    "speech": "whisper-large-v3",
    "document-search": "bge-m3",
    "fine-tuning": "llama-3.1-8b",
}
GIB = 1024**3


def gib(size_bytes: int | None) -> int | None:
    """Whole GiB, rounded to nearest: an RTX 4090's 23.99 GiB (NVML total) is 24."""
    return int(round(size_bytes / GIB)) if size_bytes else None


class ReportError(ValueError):
    """A report this gpuready cannot read: not JSON, not a report, or another schema_version."""


@dataclass(frozen=True)
class TaskCapacity:
    task: str
    status: str  # one of STATUSES
    best_model_id: str | None
    usable_models: int
    assessed_models: int
    reference_model_id: str
    reference_level: str | None  # None: the reference model is not in the report
    reference_speed: float | None  # in reference_unit; None when it does not run
    reference_unit: str | None


@dataclass(frozen=True)
class GPU:
    index: int
    vendor: str
    model: str
    memory_total_bytes: int | None
    memory_free_bytes: int | None
    counted: bool
    mig_profile: str | None = None


@dataclass(frozen=True)
class Capacity:
    gpuready_version: str
    tasks: tuple[TaskCapacity, ...]
    text_generation_max_params: float | None  # parameters of the largest usable LLM
    gpus: tuple[GPU, ...]
    memory_total_bytes: int | None
    memory_usable_bytes: int | None
    usable_models: tuple[tuple[str, str, str, float | None, str | None], ...]  # (task, model id, level, speed, unit)
    judged_models: frozenset[str] = frozenset()  # every model id the report judged, usable or not

    def task(self, name: str) -> TaskCapacity:
        return next(t for t in self.tasks if t.task == name)

    @property
    def counted_gpus(self) -> tuple[GPU, ...]:
        return tuple(gpu for gpu in self.gpus if gpu.counted)

    @property
    def gpu_memory_bytes(self) -> int | None:
        """Memory of the largest GPU pool one model can use, as the verdicts pool them (tasks/devices.gpu_device):
        identical GPUs together (llama.cpp splits layers across them), each MIG instance alone (a CUDA process
        uses one). None when no counted GPU has a known size. Adding every GPU up read an A100's 20 GB and 5 GB
        MIG instances as 24 GiB, more than any model there can use."""
        pools: dict[tuple, int] = {}
        for position, gpu in enumerate(self.counted_gpus):
            if gpu.memory_total_bytes:
                key = (gpu.model, position) if gpu.mig_profile or "MIG" in gpu.model.split() else (gpu.model,)
                pools[key] = pools.get(key, 0) + gpu.memory_total_bytes
        return max(pools.values()) if pools else None

    @property
    def text_generation_max_params_b(self) -> int | None:
        params = self.text_generation_max_params
        return int(params // 1e9) if params is not None else None


def check_report(data: object, where: str) -> dict:
    """The report dict, or ReportError naming `where` when it is not a readable report."""
    if not isinstance(data, dict) or "schema_version" not in data:
        raise ReportError(f"{where}: not a gpuready report (no schema_version; make one with `gpuready report --json`)")
    version = data["schema_version"]
    if isinstance(version, str) and version.strip() == str(SCHEMA_VERSION):
        raise ReportError(f"{where}: report schema_version is the string {version!r}; a report states it as the number "
                          f"{SCHEMA_VERSION}")
    if version != SCHEMA_VERSION:
        raise ReportError(f"{where}: report schema_version {version!r}, but this gpuready reads version {SCHEMA_VERSION}; "
                          "produce the reports with the same gpuready release")
    for key, kind in (("tasks", list), ("verdicts", list), ("hardware", dict)):
        if not isinstance(data.get(key), kind):
            raise ReportError(f"{where}: malformed report: '{key}' missing or not a{'n object' if kind is dict else ' list'}")
    hardware = data["hardware"]
    if not isinstance(hardware.get("gpus"), list) or not isinstance(hardware.get("memory"), dict):
        raise ReportError(f"{where}: malformed report: hardware.gpus or hardware.memory missing")
    for i, item in enumerate(data["verdicts"]):
        if not isinstance(item, dict) or not isinstance(item.get("model_id"), str) or not isinstance(item.get("task"), str):
            raise ReportError(f"{where}: malformed report: verdicts[{i}] has no task or model_id")
    for i, item in enumerate(data["tasks"]):
        if not isinstance(item, dict) or not isinstance(item.get("task"), str) or item.get("status") not in STATUSES:
            raise ReportError(f"{where}: malformed report: tasks[{i}] has no task or no known status")
    return data


def capacity(report: dict) -> Capacity:
    """Everything the exporters publish, from one checked report dict."""
    verdicts = report["verdicts"]
    summaries = {t["task"]: t for t in report["tasks"]}
    tasks = []
    for task in TASKS:
        mine = [v for v in verdicts if v["task"] == task]
        summary = summaries.get(task, {"status": "not-assessed", "best_model_id": None})
        reference = next((v for v in mine if v["model_id"] == REFERENCE_MODELS[task]), None)
        tasks.append(TaskCapacity(
            task=task,
            status=summary["status"],
            best_model_id=summary.get("best_model_id"),
            usable_models=sum(1 for v in mine if v.get("level") in USABLE_LEVELS),
            assessed_models=len(mine),
            reference_model_id=REFERENCE_MODELS[task],
            reference_level=reference.get("level") if reference else None,
            reference_speed=_number(reference.get("speed")) if reference else None,
            reference_unit=reference.get("speed_unit") if reference else None,
        ))
    usable_llms = [_number(v.get("model_params")) for v in verdicts
                   if v["task"] == "text-generation" and v.get("level") in USABLE_LEVELS]
    usable_llms = [p for p in usable_llms if p]
    hardware = report["hardware"]
    memory = hardware["memory"]
    return Capacity(
        gpuready_version=str(report.get("gpuready_version", "")),
        tasks=tuple(tasks),
        text_generation_max_params=max(usable_llms) if usable_llms else None,
        gpus=tuple(_gpu(gpu, position) for position, gpu in enumerate(hardware["gpus"]) if isinstance(gpu, dict)),
        memory_total_bytes=_integer(memory.get("total_bytes")),
        memory_usable_bytes=_integer(memory.get("usable_bytes")),
        usable_models=tuple((v["task"], v["model_id"], v["level"], _number(v.get("speed")), v.get("speed_unit"))
                            for v in verdicts if v.get("level") in USABLE_LEVELS and v["task"] in MODEL_TASKS),
        judged_models=frozenset(v["model_id"] for v in verdicts),
    )


def _gpu(data: dict, position: int) -> GPU:
    index = data.get("index")
    return GPU(
        index=index if isinstance(index, int) else position,
        vendor=str(data.get("vendor") or "unknown"),
        model=str(data.get("name") or "unknown"),
        memory_total_bytes=_integer(data.get("memory_total_bytes")),
        memory_free_bytes=_integer(data.get("memory_free_bytes")),
        counted=bool(data.get("counted", True)),
        mig_profile=data.get("mig_profile") if isinstance(data.get("mig_profile"), str) else None,
    )


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0 else None


def _integer(value: object) -> int | None:
    return int(value) if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None
