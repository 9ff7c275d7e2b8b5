"""The application layer: what the user asked for (a ``Request``) in, the catalogue, the
hardware with its problems, and the Report out. The CLI, ``check``, the TUI and the
importable API (gpuready.api) all build their inputs here, so they cannot drift apart.

Raises ``UsageError`` (exit code 2) for bad input: an unreadable --hardware file, a
--catalog-dir that is not a directory, a bad size or context.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field, replace
from typing import Any
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
    measured: bool = True  # on the live machine, use what `gpuready bench` measured and kept
    options: Options = field(default_factory=Options)


def load_catalog(catalog_dir: str | None = None) -> Catalog:
    """The built-in catalogue plus the user's."""
    user = Path(catalog_dir) if catalog_dir else user_catalog_dir()
    if catalog_dir and not user.is_dir():
        raise UsageError(f"--catalog-dir {user}: not a directory")
    return registry.load_catalog(user=user)


@dataclass(frozen=True)
class Loaded:
    """The hardware to judge, what went wrong probing it, and this machine's kept measurements
    (gpuready.bench.apply.Applied) when they were applied."""

    hardware: Hardware
    problems: list[Problem]
    applied: Any = None

    @property
    def measured_speeds(self) -> tuple:
        return self.applied.model_speeds if self.applied is not None else ()


def load(request: Request) -> Loaded:
    """Probe (live or recorded), or read the hardware file; on the live machine use what `gpuready
    bench` measured there; then apply the what-if GPU and memory."""
    from gpuready import whatif

    problems: list[Problem] = []
    applied = None
    if request.hardware_file:
        hardware = read_hardware_file(request.hardware_file)
    else:
        from gpuready.host import host_from_environment, replayed_machine
        from gpuready.probes import probe_hardware

        hardware, problems = probe_hardware(host_from_environment(request.machine), python=sys.executable, torch=request.torch)
        if request.measured and not replayed_machine(request.machine):
            from gpuready.bench.apply import apply_measurements

            applied = apply_measurements(hardware, problems)
            hardware, problems = applied.hardware, applied.problems
    memory = size_flag(request.memory, "--memory") if request.memory else None
    hardware, problems = whatif.compose(hardware, problems, request.gpu, memory)
    return Loaded(hardware, problems + assumed_bandwidth_problems(hardware), applied)


def assumed_bandwidth_problems(hardware: Hardware) -> list[Problem]:
    """System memory whose bandwidth nothing measured and no CPU table row gives: every CPU speed (and the system
    part of a split) rests on an assumed figure, and the report says so and what measures it."""
    from gpuready.catalog.tables import ASSUMED_CPU_BANDWIDTH_BYTES_PER_S

    if hardware.cpu.bandwidth_source != "assumed":
        return []
    return [Problem("cpu", f"{hardware.cpu.name or 'this CPU'} is not in gpuready's CPU table: speeds from system memory "
                           f"assume {ASSUMED_CPU_BANDWIDTH_BYTES_PER_S / 1e9:.0f} GB/s (dual-channel DDR4-3200) and carry a wider band",
                    "`gpuready bench` measures this machine's memory bandwidth (pip install 'gpuready[bench]'), "
                    "and later reports use it.", "info")]


def load_hardware(request: Request) -> tuple[Hardware, list[Problem]]:
    """The hardware and its problems, as ``load`` gives them."""
    loaded = load(request)
    return loaded.hardware, loaded.problems


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
                 documents: int | None = None, resolution: str | None = None, users: int | None = None,
                 with_models: tuple[str, ...] = (), **tuning) -> Options:
    """Options from what the user typed, each checked; ``tuning`` holds the fine-tuning recipe
    (method, sequence, micro_batch, lora_rank, checkpointing) where given."""
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
    if users is not None and users <= 0:
        raise UsageError("--users must be a positive whole number")
    return Options(context_tokens=context, quant=quant, placement=placement, documents=documents, resolution=size,
                   users=users, with_models=tuple(with_models or ()), **fine_tuning_options(**tuning))


def fine_tuning_options(method: str | None = None, sequence: int | None = None, micro_batch: int | None = None,
                        lora_rank: int | None = None, checkpointing: bool = True) -> dict:
    """The fine-tuning recipe's Options fields, each checked (UsageError names the flag)."""
    from gpuready.tasks.finetune_memory import METHODS

    if method is not None and method not in METHODS:
        raise UsageError(f"unknown fine-tuning method '{method}' (one of {', '.join(METHODS)})")
    for flag, value in (("--sequence", sequence), ("--micro-batch", micro_batch), ("--lora-rank", lora_rank)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value <= 0):
            raise UsageError(f"{flag} must be a positive whole number")
    return {"method": method, "sequence_tokens": sequence, "micro_batch": micro_batch, "lora_rank": lora_rank,
            "checkpointing": bool(checkpointing)}


def check_task(task: str | None) -> None:
    """A task name the user typed must be one gpuready knows."""
    if task and task not in registry.choices():
        raise UsageError(f"unknown task '{task}' (tasks: {', '.join(registry.choices())})")


def report(request: Request, catalog: Catalog | None = None, hardware: tuple[Hardware, list[Problem]] | None = None) -> Report:
    """The whole answer for one request: every model of the catalogue judged on the hardware."""
    catalog = catalog or load_catalog(request.catalog_dir)
    everything = catalog  # --with names any model, whatever --quant narrows the judged ones to
    options = request.options
    if options.quant:
        check_quant(options.quant, catalog)
        catalog = Catalog({k: m for k, m in catalog.models.items() if options.quant in m.quants}, catalog.quants, catalog.files)
    loaded = Loaded(*hardware) if hardware else load(request)
    if loaded.applied is not None:
        options = replace(options, measured_speeds=loaded.measured_speeds)

    def judged(hardware: Hardware, problems: list[Problem], options: Options) -> Report:
        resident = with_models(hardware, everything, options)
        if resident is not None:
            return build_report(hardware, problems, catalog, options, resident.hardware, resident.verdicts)
        return build_report(hardware, problems, catalog, options)

    result = judged(loaded.hardware, loaded.problems, options)
    if loaded.applied is not None and not (request.gpu or request.memory):  # a what-if is not the measured machine
        from gpuready.bench.apply import summarise

        # the baseline is judged as the report is (--task, --with's memory taken first), only without the measurements
        result = summarise(loaded.applied, result, judged, options)
    return result


def with_models(hardware: Hardware, catalog: Catalog, options: Options):
    """The --with models judged in turn and their memory taken off the hardware
    (gpuready.tasks.together.Resident), or None without --with."""
    if not options.with_models:
        return None
    from gpuready.tasks.together import reserve

    check_models(options.with_models, catalog, "--with")
    return reserve(hardware, catalog, options.with_models, options)


def known_quants(catalog: Catalog) -> set[str]:
    return set(catalog.quants) | {variant for model in catalog.models.values() for variant in model.quants}


def canonical_quant(quant: str, catalog: Catalog, model_id: str | None = None) -> str:
    """The catalogue's spelling of a quantisation typed in another case ('q4_k_m' -> 'Q4_K_M'), among the model's
    variants where a catalogue model is named, where exactly one matches; else as typed (check_quant or validate then
    say what is known). Text models spell llama.cpp's types (Q8_0, F16), other tasks their dtypes (q8_0, fp16).
    A local .gguf or config.json is a text model: its variants are the catalogue's quantisations (quants.toml), so
    'q8_0' there is Q8_0, not the dtype another task's model spells q8_0."""
    from gpuready.modelfiles.localmodel import local_kind

    model = catalog.get(model_id) if model_id else None
    if model is not None:
        known = set(model.quants)
    elif model_id and local_kind(model_id):
        known = set(catalog.quants)
    else:
        known = known_quants(catalog)
    if quant in known:
        return quant
    same = [name for name in known if name.casefold() == quant.casefold()]
    return same[0] if len(same) == 1 else quant


def check_quant(quant: str, catalog: Catalog) -> None:
    """A quantisation the user typed must be one the catalogue knows (a quants.toml entry or any model's variant)."""
    known = known_quants(catalog)
    if quant not in known:
        raise UsageError(f"unknown quantisation '{quant}' (known: {', '.join(sorted(known))})")


def check_models(model_ids, catalog: Catalog, flag: str | None = None) -> None:
    """Model ids the user typed must be in the catalogue; the error names the closest ids (and the flag)."""
    for model_id in model_ids:
        if catalog.get(model_id) is None:
            close = catalog.closest(model_id)
            hint = f"; did you mean {', '.join(close)}?" if close else "; see `gpuready models`"
            raise UsageError(f"{flag + ': ' if flag else ''}unknown model '{model_id}'{hint}")


def context_warning(report: Report) -> str | None:
    """A warning when the context asked for is longer than every judged model's maximum."""
    asked = report.options.context_tokens
    judged = [v.context_tokens for v in report.verdicts if v.context_tokens]
    if not asked or not judged or asked <= max(judged):
        return None
    return (f"--context {asked:,} is longer than every model's maximum (the longest is {max(judged):,} tokens); "
            "each model is judged at its own maximum")


def start_llama_fit(request: Request, path: str, context_tokens: int):
    """Start llama.cpp's own plan for a local GGUF (gpuready.modelfiles.llamafit) in the background,
    or None when the hardware judged is not this machine (--hardware, --gpu, --memory): its
    planner sizes against the devices it sees. A recorded machine (--machine) answers from its
    recording, where the command is normally absent."""
    if request.hardware_file or request.gpu or request.memory:
        return None
    from gpuready.host import host_from_environment
    from gpuready.modelfiles.llamafit import start

    return start(host_from_environment(request.machine), path, context_tokens)


def llama_fit(started):
    """What llama-fit-params answered (a LlamaFit), or None: not started, or not installed."""
    if started is None:
        return None
    from gpuready.modelfiles.llamafit import collect

    return collect(started)

