"""The application layer: what the user asked for (a ``Request``) in, the catalogue, the
hardware with its problems, and the Report out. The CLI, ``check``, the TUI and the
importable API (gpuready.api) all build their inputs here, so they cannot drift apart.

Raises ``UsageError`` (exit code 2) for bad input: an unreadable --hardware file, a
--catalog-dir that is not a directory, a bad size or context.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

from gpuready.catalog.loader import Catalog, user_catalog_dir
from gpuready.errors import UsageError
from gpuready.hardware import Hardware, Problem
from gpuready.report import Report, build_report, load_hardware_json
from gpuready.tasks import registry
from gpuready.tasks.verdict import PLACEMENT_ORDER, Options
from gpuready.units import parse_documents, parse_resolution, parse_size


@dataclass(frozen=True)
class Request:
    """Where the hardware comes from, what-if changes to it, and the catalogue to judge."""

    machine: str | None = None  # a recorded machine directory (else the live machine)
    hardware_file: str | None = None  # a hardware JSON (the report's "hardware" section, or a whole report)
    gpu: str | None = None  # what-if: "RTX 4090", "2x RTX 3090", "M3 Max 40-core"
    memory: str | None = None  # what-if: system (or, for an Apple chip, unified) memory, e.g. "64GB"
    catalog_dir: str | None = None  # the user's catalogue directory (default: the platform's)
    torch: bool = False  # also ask PyTorch, in a subprocess, which GPUs it sees
    options: Options = field(default_factory=Options)


def load_catalog(catalog_dir: str | None = None) -> Catalog:
    """The built-in catalogue plus the user's."""
    user = Path(catalog_dir) if catalog_dir else user_catalog_dir()
    if catalog_dir and not user.is_dir():
        raise UsageError(f"--catalog-dir {user}: not a directory")
    return registry.load_catalog(user=user)


def load_hardware(request: Request) -> tuple[Hardware, list[Problem]]:
    """Probe (live or recorded), or read the hardware file; then apply the what-if GPU and memory."""
    from gpuready import whatif

    problems: list[Problem] = []
    if request.hardware_file:
        hardware = read_hardware_file(request.hardware_file)
    else:
        from gpuready.host import host_from_environment
        from gpuready.probes import probe_hardware

        hardware, problems = probe_hardware(host_from_environment(request.machine), python=sys.executable, torch=request.torch)
    memory = size_flag(request.memory, "--memory") if request.memory else None
    return whatif.compose(hardware, problems, request.gpu, memory)


def read_hardware_file(path_text: str) -> Hardware:
    """A hardware JSON file (the report's ``hardware`` section, or a whole report), gaps filled from the tables."""
    from gpuready.catalog.tables import enrich

    path = Path(path_text).expanduser()
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise UsageError(f"--hardware {path_text}: cannot read: {getattr(error, 'strerror', None) or error}") from None
    return enrich(load_hardware_json(text, path_text))


def size_flag(text: str, flag: str) -> int:
    """A size given with a flag, its error naming the flag."""
    try:
        return parse_size(text)
    except UsageError as error:
        raise UsageError(f"{flag}: {error}") from None


def make_options(context: int | None = None, quant: str | None = None, placement: str = "cpu",
                 documents: int | None = None, resolution: str | None = None) -> Options:
    """Options from what the user typed, each checked."""
    if context is not None and context <= 0:
        raise UsageError("--context must be a positive number of tokens")
    if placement not in PLACEMENT_ORDER:
        raise UsageError(f"unknown placement '{placement}' (one of {', '.join(PLACEMENT_ORDER)})")
    try:
        documents = parse_documents(documents) if documents is not None else None
    except UsageError as error:
        raise UsageError(f"--documents: {error}") from None
    try:
        size = parse_resolution(resolution) if resolution is not None else None
    except UsageError as error:
        raise UsageError(f"--resolution: {error}") from None
    return Options(context_tokens=context, quant=quant, placement=placement, documents=documents, resolution=size)


def check_task(task: str | None) -> None:
    """A task name the user typed must be one gpuready knows."""
    if task and task not in registry.names():
        raise UsageError(f"unknown task '{task}' (tasks: {', '.join(registry.names())})")


def report(request: Request, catalog: Catalog | None = None, hardware: tuple[Hardware, list[Problem]] | None = None) -> Report:
    """The whole answer for one request: every model of the catalogue judged on the hardware."""
    catalog = catalog or load_catalog(request.catalog_dir)
    options = request.options
    if options.quant:
        known = set(catalog.quants) | {variant for model in catalog.models.values() for variant in model.quants}
        if options.quant not in known:
            raise UsageError(f"unknown quantisation '{options.quant}' (known: {', '.join(sorted(known))})")
        catalog = Catalog({k: m for k, m in catalog.models.items() if options.quant in m.quants}, catalog.quants, catalog.files)
    machine, problems = hardware or load_hardware(request)
    return build_report(machine, problems, catalog, options)
