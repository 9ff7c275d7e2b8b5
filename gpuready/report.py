"""The Report: hardware + verdicts + problems, and its versioned JSON form.

``SCHEMA_VERSION`` changes only on breaking changes (a field removed or renamed, or its
type or meaning changed); new fields do not change it. The JSON Schema ships as
``gpuready/schemas/report.schema.json``. A report carries no timestamps, host names,
serial numbers or UUIDs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path

from gpuready import __version__
from gpuready.catalog.loader import Catalog
from gpuready.hardware import (
    PCIE_GENERATION_GT_S,
    PCIE_WIDTHS,
    Hardware,
    HardwareFormatError,
    Problem,
    hardware_from_dict,
    to_dict,
)
from gpuready.probes import GPU_PROBES, GPU_PROBLEM_PROBES
from gpuready.tasks import registry
from gpuready.tasks.devices import gpu_device
from gpuready.tasks.verdict import LEVELS, RUNNABLE, Options, Verdict, level_words
from gpuready.units import fmt_gb

SCHEMA_VERSION = 1
SCHEMA_PATH = Path(__file__).resolve().parent / "schemas" / "report.schema.json"
# Probes a task's verdicts depend on: when one failed, "could not tell" beats "no".
TASK_PROBES = ("cpu", "memory", *GPU_PROBES)
# Placements that need a GPU (Options.placement: 'cpu' accepts anything).
GPU_PLACEMENTS = ("gpu", "offload", "split")


@dataclass(frozen=True)
class TaskSummary:
    task: str  # a task's name, or for a group of a task the group's (speech-to-text)
    status: str  # ready | limited | not-possible | unknown | not-assessed
    best_model_id: str | None
    best_model_name: str | None
    summary: str
    # The parts of a task a person asks about on their own (speech: speech-to-text and
    # text-to-speech), each summarised like a task of its own.
    groups: tuple[TaskSummary, ...] = ()


@dataclass(frozen=True)
class Report:
    hardware: Hardware
    verdicts: tuple[Verdict, ...]
    tasks: tuple[TaskSummary, ...]
    problems: tuple[Problem, ...]
    options: Options
    resident: tuple[Verdict, ...] = ()  # models loaded alongside (--with), judged first
    schema_version: int = SCHEMA_VERSION
    gpuready_version: str = __version__
    # gpuready.bench.apply.MeasuredSummary when this machine's measurements were used.
    measured: object | None = None

    def verdict(self, model_id: str, task: str | None = None) -> Verdict | None:
        """A model's verdict; ``task`` picks one where two tasks judge the same entry (an LLM's fine-tuning)."""
        return next((v for v in self.verdicts if v.model_id == model_id and (task is None or v.task == task)), None)

    def failed_probes(self) -> set[str]:
        return {problem.probe for problem in self.problems if problem.severity == "error"}


def no_gpu_words(hardware: Hardware) -> str:
    """Why there is no GPU to run on: one that is there but unusable, or none found."""
    unusable = next((gpu for gpu in hardware.gpus if not gpu.counted), None)
    return f"{unusable.name} is not usable: {unusable.not_counted_reason}" if unusable else "no GPU found"


def gpu_hints(problems: list[Problem]) -> tuple[str, ...]:
    """The hints of the GPU probes' Problems (a driver, permissions, a GPU only Vulkan lists): what to do about it."""
    return tuple(dict.fromkeys(p.hint for p in problems if p.probe in GPU_PROBLEM_PROBES and p.hint))


def gpu_missing(placement: str, hardware: Hardware, problems: list[Problem]) -> tuple[bool, str, tuple[str, ...]] | None:
    """When the placement asked for needs a GPU and none is usable: whether that is unknown (a GPU probe failed), the
    words (the failed probe; or the GPU found and why it is unusable, or none), and the GPU probes' hints; else None.
    `check` and the report's task summaries both say it so."""
    if placement not in GPU_PLACEMENTS or gpu_device(hardware) is not None:
        return None
    failed = next((p for p in problems if p.severity == "error" and p.probe in GPU_PROBES), None)
    if failed:
        return True, f"the {failed.probe} probe failed: {failed.message}", gpu_hints(problems)
    return False, f"placement {placement} needs a GPU: {no_gpu_words(hardware)}", gpu_hints(problems)


def no_gpu(options: Options, hardware: Hardware, problems: list[Problem]) -> tuple[str, str] | None:
    """Every task's status and words (hints included) when the placement needs a GPU and none is usable, or None.
    Each task read "the smallest needs 0.9 GB (56.0 GB available)" on a machine without a GPU."""
    missing = gpu_missing(options.placement, hardware, problems)
    if missing is None:
        return None
    unknown, words, hints = missing
    return "unknown" if unknown else "not-possible", words + "".join(f"; hint: {hint}" for hint in hints)


def summarise(name: str, mine: list[Verdict], failed: set[str], quant: str | None = None,
              gpu_missing: tuple[str, str] | None = None) -> TaskSummary:
    """Ready when some model runs well; limited when the best only runs or runs slowly. Not assessed when no model
    was judged: none in the catalogue, or (``quant``, --quant) none offering that variant. ``gpu_missing``
    (:func:`no_gpu`) is the status and words when nothing runs because the placement needs a GPU there is not."""
    if not mine:
        why = f"no model of this task has variant {quant}" if quant else "no models for this task in the catalogue yet"
        return TaskSummary(name, "not-assessed", None, None, why)
    if gpu_missing and not any(v.level in RUNNABLE for v in mine):
        return TaskSummary(name, gpu_missing[0], None, None, gpu_missing[1])
    best = mine[0]
    unknown = next((v for v in mine if v.level == "unknown"), None)
    if best.level == "runs-well":
        status = "ready"
    elif best.level in RUNNABLE:
        status = "limited"
    elif unknown is not None or failed & set(TASK_PROBES):
        # Nothing known to run, and a model that may run could not be judged (its speed or memory unknown): that is
        # "could not tell", whatever the other models' verdicts. An Apple M5 the GPU table did not know read "not
        # possible: the smallest needs 0.8 GB" with 10 GB usable, because its 0.5B model's speed was unknown.
        status = "unknown"
        best = unknown or best
    else:
        status = "not-possible"
    if status in ("ready", "limited"):
        running = sum(1 for v in mine if v.level in RUNNABLE)
        text = f"{running} of {len(mine)} models usable; best: {best.model_name} ({best.quant}, {level_words(best.level)})"
    elif status == "unknown":
        text = best.reasons[0] if best.reasons else "a probe failed"  # the status already says "could not tell"
    else:
        text = _none_usable(mine)
    return TaskSummary(name, status, best.model_id if status in ("ready", "limited") else None,
                       best.model_name if status in ("ready", "limited") else None, text)


def summarise_task(task: str, verdicts: list[Verdict], failed: set[str], quant: str | None = None,
                   gpu_missing: tuple[str, str] | None = None) -> TaskSummary:
    """The task's summary; a task with groups (speech) names each group's best, not one best for all."""
    mine = [v for v in verdicts if v.task == task]
    summary = summarise(task, mine, failed, quant, gpu_missing)
    groups = registry.get(task).groups if task in registry.names() else ()
    if not groups or not mine:
        return summary
    parts = tuple(summarise(group.name, [v for v in mine if v.group == group.name], failed, quant, gpu_missing)
                  for group in groups)
    running = sum(1 for v in mine if v.level in RUNNABLE)
    bests = "; ".join(_best_of_group(part, mine) for part in parts)
    text = f"{running} of {len(mine)} models usable; {bests}" if summary.status in ("ready", "limited") else summary.summary
    return TaskSummary(summary.task, summary.status, summary.best_model_id, summary.best_model_name, text, parts)


def _best_of_group(part: TaskSummary, mine: list[Verdict]) -> str:
    title = registry.title(part.task).lower()
    best = next((v for v in mine if v.model_id == part.best_model_id), None)
    if part.status == "not-assessed":
        return f"{title}: {part.summary}"
    if best is None:
        return f"{title}: none usable"
    return f"{title}: {best.model_name} ({best.quant}, {level_words(best.level)})"


def _none_usable(verdicts: list[Verdict]) -> str:
    """Why no model is usable: those that fit but are too slow (the first, with its speed), then what the rest need.
    "The smallest needs 2.4 GB" on a machine with 5 GB free hid that the model fits and makes an image in 11 minutes."""
    slow = [v for v in verdicts if v.level == "too-slow"]
    rest = [v for v in verdicts if v.level != "too-slow"]
    parts = []
    if slow:
        first = slow[0]
        fit = "1 fits but is" if len(slow) == 1 else f"{len(slow)} fit but are"
        parts.append(f"{fit} too slow ({first.model_name}, {first.reasons[0]})" if first.reasons else f"{fit} too slow")
    if rest:
        needs = [v.memory_needed_bytes for v in rest if v.memory_needed_bytes]
        smallest = fmt_gb(min(needs)) if needs else "unknown"
        available = rest[0].memory_available_bytes
        have = f" ({fmt_gb(available)} available)" if available else ""
        parts.append(f"the {'rest need' if slow else 'smallest needs'} {'more memory, the smallest ' if slow else ''}{smallest}{have}")
    return "no model in the catalogue is usable here: " + "; ".join(parts)


def build_report(hardware: Hardware, problems: list[Problem], catalog: Catalog, options: Options | None = None,
                 judged_on: Hardware | None = None, resident: tuple[Verdict, ...] = ()) -> Report:
    """The report of ``hardware``; ``judged_on`` is what is left of it when models are resident (--with)."""
    options = options or Options()
    verdicts = registry.judge_all(catalog, judged_on or hardware, options)
    failed = {p.probe for p in problems if p.severity == "error"}
    gpu_missing = no_gpu(options, judged_on or hardware, problems)
    tasks = tuple(summarise_task(task, verdicts, failed, options.quant, gpu_missing) for task in registry.names())
    return Report(hardware=hardware, verdicts=tuple(verdicts), tasks=tasks, problems=tuple(problems), options=options,
                  resident=resident)


# --- JSON -------------------------------------------------------------------------


def hardware_json(hardware: Hardware) -> dict:
    data = to_dict(hardware)
    data["memory"]["usable_bytes"] = hardware.memory.usable_bytes
    return data


def verdict_json(verdict: Verdict) -> dict:
    data = to_dict(verdict)
    if verdict.estimate is not None:
        data["estimate"]["memory"]["total_bytes"] = verdict.estimate.memory.total_bytes
    return data


def only_task(report: Report, task: str) -> tuple[tuple[TaskSummary, ...], tuple[Verdict, ...]]:
    """The summaries and verdicts of one task, or of one group of a task (text-to-speech: the speech summary with
    that group's alone), as `report --task` shows them."""
    parent, group = registry.resolve(task)
    tasks = tuple(replace(s, groups=tuple(g for g in s.groups if g.task == group.name)) if group else s
                  for s in report.tasks if s.task == parent.name)
    verdicts = tuple(v for v in report.verdicts if v.task == parent.name and (group is None or v.group == group.name))
    return tasks, verdicts


def report_json(report: Report, task: str | None = None) -> dict:
    """The JSON report; ``task`` (--task) keeps that task's summary and verdicts alone, and settings say so."""
    tasks, verdicts = only_task(report, task) if task else (report.tasks, report.verdicts)
    return {
        "schema_version": report.schema_version,
        "gpuready_version": report.gpuready_version,
        "settings": {
            "context_tokens": report.options.context_tokens,
            "quant": report.options.quant,
            "placement": report.options.placement,
            "documents": report.options.documents,
            "resolution": list(report.options.resolution) if report.options.resolution else None,
            "method": report.options.method,
            "sequence_tokens": report.options.sequence_tokens,
            "micro_batch": report.options.micro_batch,
            "lora_rank": report.options.lora_rank,
            "checkpointing": report.options.checkpointing,
            "users": report.options.users,
            "with": list(report.options.with_models),
            "task": task,
        },
        "resident": [verdict_json(v) for v in report.resident],
        "hardware": hardware_json(report.hardware),
        "tasks": [to_dict(summary) for summary in tasks],
        "verdicts": [verdict_json(v) for v in verdicts],
        "problems": [to_dict(p) for p in report.problems],
        "levels": list(LEVELS),
    } | ({"measured": to_dict(report.measured)} if report.measured is not None else {})


def dumps(report: Report, task: str | None = None) -> str:
    return json.dumps(report_json(report, task), indent=2) + "\n"


def load_hardware_json(text: str, where: str) -> Hardware:
    """A hardware description: the report's ``hardware`` section, or a whole report."""
    try:
        data = json.loads(text)
    except ValueError as error:
        raise HardwareFormatError(f"{where}: not valid JSON: {error}") from None
    except RecursionError:
        raise HardwareFormatError(f"{where}: not valid JSON: nested too deeply") from None
    if isinstance(data, dict) and "hardware" in data and "schema_version" in data:
        data = data["hardware"]
    if isinstance(data, dict) and isinstance(data.get("memory"), dict):
        data = dict(data)
        data["memory"] = {k: v for k, v in data["memory"].items() if k not in ("usable_bytes", "capacity_bytes")}
    try:
        hardware = hardware_from_dict(data)
    except HardwareFormatError as error:
        raise HardwareFormatError(f"{where}: {error}") from None
    for label, total, part, part_name in [
        ("memory", hardware.memory.total_bytes, hardware.memory.available_bytes, "available_bytes"),
        *((f"gpus[{i}]", g.memory_total_bytes, g.memory_free_bytes, "memory_free_bytes") for i, g in enumerate(hardware.gpus)),
    ]:
        # Unknown is null, never 0; and no part of a memory is larger than the whole.
        if total is not None and total <= 0:
            raise HardwareFormatError(f"{where}: {label}: the total must be positive (null where unknown), got {total}")
        if total is not None and part is not None and part > total:
            raise HardwareFormatError(f"{where}: {label}: {part_name} ({part:,}) is larger than the total ({total:,})")
    for i, gpu in enumerate(hardware.gpus):
        # A PCIe link is one of PCIe's rates and widths, or unknown (null): a split prompt's copies are timed over it.
        if gpu.pcie_link_gt_s is not None and gpu.pcie_link_gt_s not in PCIE_GENERATION_GT_S.values():
            raise HardwareFormatError(f"{where}: gpus[{i}]: pcie_link_gt_s must be a PCIe rate "
                                      f"({', '.join(f'{r:g}' for r in PCIE_GENERATION_GT_S.values())} GT/s) or null, "
                                      f"got {gpu.pcie_link_gt_s:g}")
        if gpu.pcie_link_width is not None and gpu.pcie_link_width not in PCIE_WIDTHS:
            raise HardwareFormatError(f"{where}: gpus[{i}]: pcie_link_width must be a PCIe width "
                                      f"({', '.join(str(w) for w in PCIE_WIDTHS[:-1])} or {PCIE_WIDTHS[-1]} lanes) "
                                      f"or null, got {gpu.pcie_link_width}")
    return hardware


def schema_text() -> str:
    return SCHEMA_PATH.read_text(encoding="utf-8")
