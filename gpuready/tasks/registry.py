"""The tasks gpuready knows, in the order the front ends show them, and the calls that go
through all of them: load the catalogue with each task's parser, judge every model.

Adding a task: write its module (a ``Task``), add it to ``BUILTIN`` here. Tests and plugins
can ``register`` one at run time.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from gpuready.catalog import loader
from gpuready.hardware import Hardware
from gpuready.tasks import finetune, image, search, speech, text
from gpuready.tasks.base import Group, Task
from gpuready.tasks.energy import with_energy
from gpuready.tasks.judge import judge
from gpuready.tasks.npu import with_npu
from gpuready.tasks.verdict import Options, Verdict, rank_key

BUILTIN = (text.TASK, image.TASK, speech.TASK, search.TASK, finetune.TASK)
_registered: dict[str, Task] = {task.name: task for task in BUILTIN}


def register(task: Task) -> None:
    """Add (or replace) a task: its catalogue entries load, and every front end shows it."""
    _registered[task.name] = task


def unregister(name: str) -> None:
    """Remove a task added with ``register`` (the built-in ones stay)."""
    if name not in {task.name for task in BUILTIN}:
        _registered.pop(name, None)


def names() -> tuple[str, ...]:
    """Every task's name, in display order."""
    return tuple(_registered)


def get(name: str) -> Task:
    return _registered[name]


def choices() -> tuple[str, ...]:
    """Every name `--task` accepts: the tasks, and the parts of a task asked about on their own."""
    return tuple(name for task in _registered.values() for name in (task.name, *(group.name for group in task.groups)))


def resolve(name: str) -> tuple[Task, Group | None]:
    """A task, or a part of one (speech-to-text), by the name a user gives."""
    if name in _registered:
        return _registered[name], None
    for task in _registered.values():
        for group in task.groups:
            if group.name == name:
                return task, group
    raise KeyError(name)


def title(name: str) -> str:
    """A task's or a group's title: "Text generation", "Speech to text"."""
    try:
        task, group = resolve(name)
    except KeyError:
        return name.replace("-", " ").capitalize()
    return group.title if group else task.title


def load_catalog(builtin: Path | None = None, user: Path | None = None) -> loader.Catalog:
    """The built-in catalogue and the user's, each entry read by its task's parser."""
    parsers = {task.name: task.parse for task in _registered.values() if task.models_from is None}
    return loader.load_catalog(parsers, builtin, user)


def judges(task: str, model) -> bool:
    """Whether this task judges this catalogue entry (its own, or those of the task it judges over)."""
    found = _registered.get(task)
    return found is not None and found.entries_task == model.task


def models_for(catalog: loader.Catalog, task: str) -> list:
    """The catalogue entries a task (or a group of one: speech-to-text) judges (fine-tuning: the text-generation LLMs)."""
    parent, group = resolve(task)
    return [model for model in catalog.models.values() if judges(parent.name, model) and (group is None or group.has(model))]


def judge_model(model, catalog: loader.Catalog, hardware: Hardware, options: Options, task: str | None = None) -> Verdict:
    """The verdict for one model as its own task (or as ``task``, one that judges its entries),
    with its energy per unit of work."""
    judging = resolve(task)[0] if task else _registered[model.task]  # a group (speech-to-text) is judged as its task
    verdict = with_energy(judge(judging, model, catalog, hardware, options), hardware)
    return with_backend_caveat(with_npu(verdict, model, hardware), hardware)


def with_backend_caveat(verdict: Verdict, hardware: Hardware) -> Verdict:
    """A verdict on the GPU where every backend of the machine's GPUs is there but unusable from this process (an
    x86_64 Python under Rosetta 2 on Apple silicon: Metal is the Mac's, not this Python's) says so: the figures are
    the machine's, for a process that can drive the GPU, and the Problems say how to get one."""
    if verdict.placement in (None, "cpu"):
        return verdict
    down = {backend.name: backend for backend in hardware.backends if not backend.available}
    used = {name for gpu in hardware.gpus if gpu.counted for name in gpu.backends}
    if not used or not used <= set(down):
        return verdict
    said = "; ".join(f"{name} ({down[name].detail})" if down[name].detail else name for name in sorted(used))
    return replace(verdict, reasons=[*verdict.reasons, f"not usable from this process: {said}; the figures are for a "
                                                        "process that can drive the GPU (see Problems)"])


def judge_all(catalog: loader.Catalog, hardware: Hardware, options: Options, task: str | None = None) -> list[Verdict]:
    """A verdict for every model in the catalogue under every task that judges it (or one task), best first."""
    verdicts = [
        judge_model(model, catalog, hardware, options, name)
        for name in _registered
        if task is None or name == task
        for model in models_for(catalog, name)
    ]
    return sorted(verdicts, key=rank_key)
