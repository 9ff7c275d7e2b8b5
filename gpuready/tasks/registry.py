"""The tasks gpuready knows, in the order the front ends show them, and the calls that go
through all of them: load the catalogue with each task's parser, judge every model.

Adding a task: write its module (a ``Task``), add it to ``BUILTIN`` here. Tests and plugins
can ``register`` one at run time.
"""

from __future__ import annotations

from pathlib import Path

from gpuready.catalog import loader
from gpuready.hardware import Hardware
from gpuready.tasks import image, search, speech, text
from gpuready.tasks.base import Task
from gpuready.tasks.judge import judge
from gpuready.tasks.verdict import Options, Verdict, rank_key

BUILTIN = (text.TASK, image.TASK, speech.TASK, search.TASK)
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


def title(name: str) -> str:
    task = _registered.get(name)
    return task.title if task else name.replace("-", " ").capitalize()


def load_catalog(builtin: Path | None = None, user: Path | None = None) -> loader.Catalog:
    """The built-in catalogue and the user's, each entry read by its task's parser."""
    return loader.load_catalog({task.name: task.parse for task in _registered.values()}, builtin, user)


def judge_model(model, catalog: loader.Catalog, hardware: Hardware, options: Options) -> Verdict:
    """The verdict for one model, whatever its task."""
    return judge(_registered[model.task], model, catalog, hardware, options)


def judge_all(catalog: loader.Catalog, hardware: Hardware, options: Options, task: str | None = None) -> list[Verdict]:
    """A verdict for every model in the catalogue (or one task), best first."""
    verdicts = [
        judge_model(model, catalog, hardware, options)
        for model in catalog.models.values()
        if (task is None or model.task == task) and model.task in _registered
    ]
    return sorted(verdicts, key=rank_key)
