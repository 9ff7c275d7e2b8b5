"""Several models resident at once (``--with MODEL``, repeatable): a voice assistant keeps a
chat model, an embedding model and Whisper loaded together.

Each companion is judged in the order given on what the ones before it left free; the memory
it takes (on the GPU group, in system memory, or in the unified pool) is then taken off the
hardware the rest of the catalogue is judged on. Memory is summed per device this way; speeds
are each model's own, alone: models that run at the same moment share bandwidth and compute,
which no verdict here divides. Pure.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from gpuready.hardware import Hardware
from gpuready.tasks import registry
from gpuready.tasks.devices import gpu_device, gpu_usable_bytes
from gpuready.tasks.verdict import RUNNABLE, Options, Verdict, level_words


@dataclass(frozen=True)
class Resident:
    verdicts: tuple[Verdict, ...]  # each companion, as judged on what the ones before it left
    hardware: Hardware  # what is left for everything else

    @property
    def all_run(self) -> bool:
        return all(verdict.level in RUNNABLE for verdict in self.verdicts)


def take(hardware: Hardware, gpu_bytes: int, system_bytes: int) -> Hardware:
    """The hardware with this much GPU memory (spread over the GPU group) and system memory in use."""
    gpus = hardware.gpus
    device = gpu_device(hardware)
    if gpu_bytes and device is not None:
        name = device.name.split(" x ", 1)[1] if device.count > 1 else device.name
        share = gpu_bytes // device.count
        changed = []
        for gpu in gpus:
            usable = gpu_usable_bytes(gpu)
            if gpu.counted and gpu.name == name and usable is not None:
                gpu = dataclasses.replace(gpu, memory_usable_bytes=max(0, usable - share),
                                          memory_free_bytes=max(0, (gpu.memory_free_bytes or usable) - share))
            changed.append(gpu)
        gpus = tuple(changed)
        if device.unified:
            system_bytes += gpu_bytes  # one pool: what the GPU holds, the system no longer has
    memory = hardware.memory
    if system_bytes and memory.available_bytes is not None:
        memory = dataclasses.replace(memory, available_bytes=max(0, memory.available_bytes - system_bytes),
                                     limit_usage_bytes=(memory.limit_usage_bytes or 0) + system_bytes
                                     if memory.limit_bytes is not None else memory.limit_usage_bytes)
    return dataclasses.replace(hardware, gpus=gpus, memory=memory)


def reserve(hardware: Hardware, catalog, model_ids: tuple[str, ...], options: Options) -> Resident:
    """Judge each companion in turn and take its memory off the hardware."""
    companion_options = dataclasses.replace(options, quant=None, method=None, with_models=())
    verdicts = []
    for model_id in model_ids:
        verdict = registry.judge_model(catalog.get(model_id), catalog, hardware, companion_options)
        verdicts.append(verdict)
        if verdict.level in RUNNABLE or verdict.level == "too-slow":
            estimate = verdict.estimate
            hardware = take(hardware, estimate.gpu_memory_bytes, estimate.system_memory_bytes)
    return Resident(tuple(verdicts), hardware)


def describe(verdict: Verdict) -> str:
    """One companion in a line: where it sits, the memory it takes, its own speed."""
    from gpuready.units import fmt_gb

    if verdict.placement is None:
        return f"{verdict.model_name}: {level_words(verdict.level)} ({verdict.reasons[-1] if verdict.reasons else ''})"
    speed = f", {verdict.speed:,.1f} {verdict.speed_unit} alone" if verdict.speed else ""
    # A companion that fits but is too slow fails `check`: the line says so, with the judge's reason.
    why = "" if verdict.level in RUNNABLE else (
        f"; {level_words(verdict.level)}" + (f": {verdict.reasons[0]}" if verdict.reasons else ""))
    return (f"{verdict.model_name} ({verdict.quant}) on {verdict.placement.upper()}: "
            f"{fmt_gb(verdict.memory_needed_bytes)}{speed}{why}")
