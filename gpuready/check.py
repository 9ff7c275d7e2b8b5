"""The preflight: requirements judged against a Report, with exit codes setup scripts can trust.

0 ready (every requirement met), 1 not ready (one is not met), 2 usage or bad input,
3 could not tell (a probe a requirement depends on failed, and nothing else failed).
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from pathlib import Path

from gpuready.catalog import TASKS, Catalog, CatalogError, read_toml
from gpuready.hardware import Hardware, Problem
from gpuready.verdict import (
    PLACEMENT_ORDER,
    RUNNABLE,
    Options,
    fmt_gb,
    gpu_device,
    judge_model,
    rank_key,
)


class ExitCode(enum.IntEnum):
    READY = 0
    NOT_READY = 1
    USAGE = 2
    UNKNOWN = 3


class UsageError(ValueError):
    """Bad input from the user: exit code 2."""


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]i?b?|b)?\s*$", re.IGNORECASE)
_UNITS = {"": 1024**3, "b": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}


def parse_size(text: str) -> int:
    """'64GB', '64G', '64 GiB', '512MB' -> bytes. Units are binary, as RAM is sold; a bare number is GB."""
    match = _SIZE.match(str(text))
    if not match:
        raise UsageError(f"not a size: {text!r} (try 16GB or 512MB)")
    number, unit = match.groups()
    unit = (unit or "").lower()
    key = unit[0] if unit and unit != "b" else unit
    value = float(number) * _UNITS[key]
    if value <= 0:
        raise UsageError(f"size must be positive: {text!r}")
    return int(value)


@dataclass(frozen=True)
class Requirement:
    """One thing a project needs: a task, a model (with speed and placement), or an amount of memory."""

    task: str | None = None
    model: str | None = None
    quant: str | None = None
    context_tokens: int | None = None
    min_generation_tokens_per_s: float | None = None
    placement: str = "cpu"
    min_memory_bytes: int | None = None
    min_gpu_memory_bytes: int | None = None

    def label(self) -> str:
        if self.model:
            text = f"model {self.model}"
            if self.quant:
                text += f" {self.quant}"
            if self.context_tokens:
                text += f" @ {self.context_tokens:,} tokens"
        elif self.task:
            text = f"task {self.task}"
        elif self.min_gpu_memory_bytes:
            text = f"GPU memory >= {fmt_gb(self.min_gpu_memory_bytes)}"
        else:
            text = f"memory >= {fmt_gb(self.min_memory_bytes)}"
        if self.min_generation_tokens_per_s:
            text += f", >= {self.min_generation_tokens_per_s:g} tokens/s"
        if self.placement != "cpu":
            text += f", placement {self.placement}"
        return text


@dataclass(frozen=True)
class Outcome:
    requirement: Requirement
    status: str  # met | not-met | unknown
    reason: str
    hints: tuple[str, ...] = ()


def validate(requirement: Requirement, catalog: Catalog) -> Requirement:
    """Reject unknown models, tasks, quantisations and placements with a message naming the closest match."""
    if requirement.task and requirement.task not in TASKS:
        raise UsageError(f"unknown task '{requirement.task}' (tasks: {', '.join(TASKS)})")
    if requirement.model:
        model = catalog.get(requirement.model)
        if model is None:
            close = catalog.closest(requirement.model)
            hint = f"; did you mean {', '.join(close)}?" if close else "; see `gpuready models`"
            raise UsageError(f"unknown model '{requirement.model}'{hint}")
        if requirement.quant and requirement.quant not in model.quants:
            raise UsageError(f"model '{model.id}' has no quantisation '{requirement.quant}' (it has {', '.join(model.quants)})")
    if requirement.placement not in PLACEMENT_ORDER:
        raise UsageError(f"unknown placement '{requirement.placement}' (one of {', '.join(PLACEMENT_ORDER)})")
    if not (requirement.task or requirement.model or requirement.min_memory_bytes or requirement.min_gpu_memory_bytes):
        raise UsageError("nothing to check: give --task, --model, --min-memory, --min-gpu-memory or --requirements")
    return requirement


_FILE_KEYS = {
    "task": str,
    "model": str,
    "quant": str,
    "context": int,
    "min_generation_tokens_per_s": (int, float),
    "placement": str,
    "min_memory": str,
    "min_gpu_memory": str,
}


def load_requirements(path: Path, catalog: Catalog) -> list[Requirement]:
    """A requirements file: ``[[require]]`` tables with the keys in ``_FILE_KEYS``."""
    try:
        data = read_toml(path)
    except CatalogError as error:
        raise UsageError(str(error)) from None
    tables = data.get("require")
    if not isinstance(tables, list) or not tables:
        raise UsageError(f"{path}: expected one or more [[require]] tables")
    extra = sorted(set(data) - {"require"})
    if extra:
        raise UsageError(f"{path}: unknown top-level key '{extra[0]}'")
    requirements = []
    for index, table in enumerate(tables):
        where = f"{path}: require[{index}]"
        if not isinstance(table, dict):
            raise UsageError(f"{where}: expected a table")
        for key, value in table.items():
            expected = _FILE_KEYS.get(key)
            if expected is None:
                raise UsageError(f"{where}: unknown key '{key}' (known: {', '.join(_FILE_KEYS)})")
            if isinstance(value, bool) or not isinstance(value, expected):
                raise UsageError(f"{where}: '{key}' has the wrong type ({value!r})")
        try:
            requirement = Requirement(
                task=table.get("task"),
                model=table.get("model"),
                quant=table.get("quant"),
                context_tokens=table.get("context"),
                min_generation_tokens_per_s=table.get("min_generation_tokens_per_s"),
                placement=table.get("placement", "cpu"),
                min_memory_bytes=parse_size(table["min_memory"]) if "min_memory" in table else None,
                min_gpu_memory_bytes=parse_size(table["min_gpu_memory"]) if "min_gpu_memory" in table else None,
            )
            requirements.append(validate(requirement, catalog))
        except UsageError as error:
            raise UsageError(f"{where}: {error}") from None
    return requirements


def _depends_failed(problems: list[Problem], names: tuple[str, ...]) -> Problem | None:
    return next((p for p in problems if p.severity == "error" and p.probe in names), None)


GPU_PROBES = ("nvidia", "amd", "intel", "apple", "windows-gpu")


def evaluate(requirement: Requirement, hardware: Hardware, problems: list[Problem], catalog: Catalog) -> Outcome:
    """Judge one requirement; 'unknown' only when a probe it depends on failed or data is missing."""
    if requirement.min_memory_bytes is not None or requirement.min_gpu_memory_bytes is not None:
        return _evaluate_memory(requirement, hardware, problems)
    options = Options(context_tokens=requirement.context_tokens, quant=requirement.quant, placement=requirement.placement)
    if requirement.model:
        models = [catalog.get(requirement.model)]
    else:
        models = [m for m in catalog.for_task(requirement.task)]
        if not models:
            return Outcome(requirement, "unknown", f"gpuready cannot assess {requirement.task} yet: no models in the catalogue")
    failed = _depends_failed(problems, ("cpu", "memory", *GPU_PROBES))
    best = None
    # Best first, so a task requirement reports the strongest model that meets it.
    for verdict in sorted((judge_model(m, catalog, hardware, options) for m in models), key=rank_key):
        speed = verdict.estimate.speed if verdict.estimate else None
        fast_enough = requirement.min_generation_tokens_per_s is None or (
            speed is not None and speed.generation_tokens_per_s >= requirement.min_generation_tokens_per_s
        )
        if verdict.level in RUNNABLE and fast_enough:
            where = f"{verdict.quant} on {verdict.placement.upper()}" + (f" via {verdict.runtime}" if verdict.runtime else "")
            reason = f"{verdict.model_name} {verdict.level.replace('-', ' ')}: {where}, about {speed.generation_tokens_per_s:.0f} tokens/s"
            return Outcome(requirement, "met", reason)
        if best is None:
            best = verdict
    verdict = best
    if verdict.level == "unknown" or (failed and verdict.level == "does-not-fit"):
        cause = f"the {failed.probe} probe failed: {failed.message}" if failed else verdict.reasons[0]
        return Outcome(requirement, "unknown", f"could not tell: {cause}", (failed.hint,) if failed and failed.hint else ())
    speed = verdict.estimate.speed if verdict.estimate else None
    if verdict.level in RUNNABLE or verdict.level == "too-slow":
        got = f"about {speed.generation_tokens_per_s:.1f} tokens/s" if speed else "speed unknown"
        wanted = requirement.min_generation_tokens_per_s or 3
        reason = f"{verdict.model_name}: {got}, needs {wanted:g}"
    else:
        reason = f"{verdict.model_name}: {verdict.reasons[-1] if verdict.reasons else verdict.level}"
    if requirement.task and not requirement.model:
        reason = f"no {requirement.task} model meets it; closest: {reason}"
    return Outcome(requirement, "not-met", reason, verdict.suggestions)


def _evaluate_memory(requirement: Requirement, hardware: Hardware, problems: list[Problem]) -> Outcome:
    if requirement.min_gpu_memory_bytes is not None:
        failed = _depends_failed(problems, GPU_PROBES)
        device = gpu_device(hardware)
        have = device.usable_memory_bytes if device else 0
        wanted = requirement.min_gpu_memory_bytes
        what = f"usable GPU memory ({device.name})" if device else "usable GPU memory (no GPU found)"
        if (device is None or have is None) and failed:
            return Outcome(requirement, "unknown", f"could not tell: the {failed.probe} probe failed: {failed.message}")
    else:
        failed = _depends_failed(problems, ("memory",))
        have = hardware.memory.usable_bytes
        wanted = requirement.min_memory_bytes
        what = "usable system memory"
        if have is None:
            cause = f"the memory probe failed: {failed.message}" if failed else "system memory is unknown"
            return Outcome(requirement, "unknown", f"could not tell: {cause}", (failed.hint,) if failed and failed.hint else ())
    status = "met" if have and have >= wanted else "not-met"
    return Outcome(requirement, status, f"{what} is {fmt_gb(have)}, needs {fmt_gb(wanted)}")


def exit_code(outcomes: list[Outcome]) -> ExitCode:
    statuses = {o.status for o in outcomes}
    if "not-met" in statuses:
        return ExitCode.NOT_READY
    if "unknown" in statuses:
        return ExitCode.UNKNOWN
    return ExitCode.READY
