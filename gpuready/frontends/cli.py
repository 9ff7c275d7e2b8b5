"""Command-line interface: `gpuready [report|check|models|estimate|schema|record|bench|export|fleet]`.

stdout carries data (text or JSON); diagnostics and hints go to stderr. Exit codes are
those of :class:`gpuready.errors.ExitCode`. Neither `report` nor `check` imports Textual.
"""

from __future__ import annotations

import errno
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from gpuready import __version__
from gpuready.frontends.arguments import build_parser, request
from gpuready.frontends.check import ExitCode, UsageError

# --- from arguments to the application layer ----------------------------------------


def _options(args):
    from gpuready.app import make_options

    return make_options(args.context, getattr(args, "quant", None), args.placement, getattr(args, "documents", None),
                        getattr(args, "resolution", None), users=getattr(args, "users", None),
                        with_models=tuple(getattr(args, "with_models", None) or ()), method=getattr(args, "method", None),
                        sequence=getattr(args, "sequence", None), micro_batch=getattr(args, "micro_batch", None),
                        lora_rank=getattr(args, "lora_rank", None), checkpointing=not getattr(args, "no_checkpointing", False))


def derived_task(task: str | None) -> bool:
    """A task that judges another task's catalogue entries (fine-tuning judges the LLMs)."""
    from gpuready.tasks import registry

    return task in registry.names() and registry.get(task).models_from is not None


def _model_task(task: str | None, model_id: str | None, catalog) -> str | None:
    """The task a --model check is judged in: a task that judges another task's models (fine-tuning) as given; the
    model's own task (or a group of it) as no task, so the line reads as before; any other task as given, for
    validate to refuse ('a text-generation model: task speech does not judge it'), where it was dropped unseen."""
    from gpuready.tasks import registry

    model = catalog.get(model_id) if model_id else None
    if not task or model is None or derived_task(task) or task not in registry.choices():
        return task
    return None if registry.judges(registry.resolve(task)[0].name, model) else task


def _catalog(args):
    """The catalogue this run judges with, read once (main reads it first to spell --quant as it does)."""
    from gpuready.app import load_catalog

    if getattr(args, "loaded_catalog", None) is None:
        args.loaded_catalog = load_catalog(args.catalog_dir)
    return args.loaded_catalog


def _loaded(args):
    """The hardware these arguments describe, its problems, and this machine's kept measurements."""
    from gpuready.app import load

    return load(request(args))


# --- commands ---------------------------------------------------------------------


def cmd_report(args) -> int:
    from gpuready import app
    from gpuready.report import dumps

    app.check_task(args.task)
    report = app.report(request(args, _options(args)), _catalog(args))
    _warn_context(report)
    if args.json:
        sys.stdout.write(dumps(report, args.task))
    else:
        from gpuready.frontends.text import render

        sys.stdout.write(render(report, args.task))
        if report.measured is not None:
            from gpuready.bench.apply import render_summary

            sys.stdout.write(render_summary(report.measured))
    return ExitCode.READY


def _warn_context(report) -> None:
    """Say once when the context asked for is longer than every model's maximum."""
    from gpuready.app import context_warning

    warning = context_warning(report)
    if warning:
        sys.stderr.write(f"gpuready: warning: {warning}\n")


def cmd_check(args) -> int:
    from gpuready.frontends.check import (
        Requirement,
        evaluate,
        exit_code,
        load_requirements,
        no_gpu_outcome,
        says_no_gpu,
        validate,
    )
    from gpuready.report import gpu_missing
    from gpuready.app import size_flag
    from gpuready.modelfiles.localmodel import local_kind

    catalog = _catalog(args)
    if args.model and local_kind(args.model):
        # A local .gguf or config.json joins the catalogue for this run under its own id.
        model, catalog, quant = _local_model(args, catalog)
        catalog.models[model.id] = model
        args.model, args.quant = model.id, quant
    requirements = []
    if args.requirements:
        requirements += load_requirements(Path(args.requirements), catalog)
    task_options = _options(args)
    documents, resolution = task_options.documents, task_options.resolution
    speeds = {"--min-speed": args.min_speed, "--min-realtime": args.min_realtime,
              "--max-seconds-per-image": args.max_seconds_per_image, "--min-chunks-per-minute": args.min_chunks_per_minute,
              "--max-wh-per-1k-tokens": args.max_wh_per_1k_tokens}
    for flag, value in speeds.items():
        if value is not None and not 0 < value < float("inf"):  # nan and inf too: no speed meets or misses them
            raise UsageError(f"{flag} must be a positive finite number (got {value:g})")
    if args.task or args.model:
        requirements.append(
            validate(
                Requirement(
                    task=_model_task(args.task, args.model, catalog),
                    model=args.model,
                    quant=args.quant,
                    context_tokens=args.context,
                    min_generation_tokens_per_s=args.min_speed,
                    placement=args.placement,
                    min_realtime=args.min_realtime,
                    max_seconds_per_image=args.max_seconds_per_image,
                    resolution=resolution,
                    min_chunks_per_minute=args.min_chunks_per_minute,
                    documents=documents,
                    method=task_options.method,
                    sequence_tokens=task_options.sequence_tokens,
                    micro_batch=args.micro_batch,
                    lora_rank=args.lora_rank,
                    checkpointing=False if args.no_checkpointing else None,
                    users=args.users,
                    max_wh_per_1k_tokens=args.max_wh_per_1k_tokens,
                ),
                catalog,
            )
        )
    else:
        given = [flag for flag, value in speeds.items() if value is not None]
        given += [flag for flag, value in (("--method", args.method), ("--sequence", args.sequence), ("--users", args.users))
                  if value is not None]
        given += [flag for flag, value in (("--resolution", resolution), ("--documents", documents)) if value is not None]
        # What shapes one requirement: without --task or --model there is none to shape (a requirements file's
        # [[require]] tables carry their own keys) unless --with's companions take it, and a preflight must not pass
        # on a flag it ignored.
        shaping = (("--quant", args.quant), ("--context", args.context), ("--micro-batch", args.micro_batch),
                   ("--lora-rank", args.lora_rank), ("--no-checkpointing", args.no_checkpointing or None),
                   ("--placement", None if args.placement == "cpu" else args.placement))
        if not task_options.with_models:
            given += [flag for flag, value in shaping if value is not None]
        if given:
            where = " (or set it in the requirements file's [[require]] tables)" if args.requirements else ""
            raise UsageError(f"{given[0]} needs --task or --model{where}")
    if args.min_memory:
        requirements.append(Requirement(min_memory_bytes=size_flag(args.min_memory, "--min-memory")))
    if args.min_gpu_memory:
        requirements.append(Requirement(min_gpu_memory_bytes=size_flag(args.min_gpu_memory, "--min-gpu-memory")))
    if not requirements:
        raise UsageError("nothing to check: give --task, --model, --min-memory, --min-gpu-memory or --requirements")
    loaded = _loaded(args)
    problems = loaded.problems
    missing = gpu_missing(task_options.placement, loaded.hardware, problems) if task_options.with_models else None
    if missing:
        # A GPU placement and no usable GPU: the companions cannot be loaded for the same reason, so it is said once
        # (on the requirement that names it, else on one line for the companions), not once a companion as
        # "placement 'cpu' is not accepted".
        from gpuready.app import check_models

        check_models(task_options.with_models, catalog, "--with")
        hardware, outcomes = loaded.hardware, []
        if not any(says_no_gpu(r, hardware, problems) for r in requirements):
            companions = Requirement(model=", ".join(task_options.with_models), placement=task_options.placement)
            outcomes.append(no_gpu_outcome(companions, missing))
    else:
        hardware, outcomes = _resident(loaded.hardware, catalog, task_options)
    outcomes += [evaluate(r, hardware, problems, catalog, loaded.measured_speeds) for r in requirements]
    code = exit_code(outcomes)
    if args.json:
        payload = {
            "ready": code == ExitCode.READY,
            "exit_code": int(code),
            "requirements": [
                {"requirement": o.requirement.label(), "status": o.status, "reason": o.reason, "hints": list(o.hints)}
                for o in outcomes
            ],
        }
        sys.stdout.write(json.dumps(payload, indent=2) + "\n")
    else:
        marks = {"met": "ok  ", "not-met": "FAIL", "unknown": "??  "}
        for outcome in outcomes:
            sys.stdout.write(f"{marks[outcome.status]} {outcome.requirement.label()}: {outcome.reason}\n")
    for outcome in outcomes:
        for hint in outcome.hints:
            sys.stderr.write(f"hint: {hint}\n")
    return code


def cmd_gpus(args) -> int:
    """`models --gpus`: the GPU table, with the name to type for `--gpu`."""
    from gpuready.catalog.tables import gpu_table
    from gpuready.frontends.text import table
    from gpuready.whatif import display_name, typeable

    specs = sorted(gpu_table(), key=lambda spec: (spec.vendor, spec.name, spec.gpu_cores or 0, spec.memory_bytes))
    if args.json:
        rows = [{"id": spec.id, "name": display_name(spec), "type": typeable(spec), "vendor": spec.vendor, "kind": spec.kind,
                 "memory_bytes": spec.memory_bytes or None, "bandwidth_bytes_per_s": spec.bandwidth_bytes_per_s} for spec in specs]
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
        return ExitCode.READY
    rows = [[typeable(spec), display_name(spec), spec.kind, f"{spec.memory_bytes / 1024**3:.0f} GB" if spec.memory_bytes else "shared",
             f"{spec.bandwidth_bytes_per_s / 1e9:,.0f} GB/s"] for spec in specs]
    sys.stdout.write("\n".join(table(rows, ["--gpu", "NAME", "KIND", "MEMORY", "BANDWIDTH"], right={3, 4})) + "\n")
    return ExitCode.READY


def _resident(hardware, catalog, options):
    """The hardware left once the --with models are loaded, and an outcome for each of them."""
    from gpuready.app import with_models

    resident = with_models(hardware, catalog, options)
    if resident is None:
        return hardware, []
    from gpuready.frontends.check import Outcome, Requirement
    from gpuready.tasks.together import describe
    from gpuready.tasks.verdict import RUNNABLE

    outcomes = [Outcome(Requirement(model=v.model_id), "met" if v.level in RUNNABLE else "not-met", f"loaded alongside: {describe(v)}")
                for v in resident.verdicts]
    return resident.hardware, outcomes


def cmd_models(args) -> int:
    from gpuready.app import check_task
    from gpuready.tasks import registry

    if getattr(args, "gpus", False):
        return cmd_gpus(args)
    check_task(args.task)
    catalog = _catalog(args)
    models = registry.models_for(catalog, args.task) if args.task else list(catalog.models.values())
    if args.json:
        rows = [
            {
                "id": m.id,
                "name": m.name,
                "task": m.task,
                "params": m.params,
                "active_params": m.active_params,
                "context_length": getattr(m, "context_length", None),
                "quants": list(m.quants),
                "source": m.source,
            }
            for m in models
        ]
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
        return ExitCode.READY
    from gpuready.frontends.text import table

    rows = [
        [m.id, m.name, m.task, f"{m.params / 1e9:.2f}B" + (f" ({m.active_params / 1e9:.1f}B active)" if getattr(m, "is_moe", False) else ""),
         f"{m.context_length:,}" if hasattr(m, "context_length") else "-"]
        for m in models
    ]
    sys.stdout.write("\n".join(table(rows, ["ID", "NAME", "TASK", "PARAMS", "CONTEXT"], right={4})) + "\n")
    return ExitCode.READY


def _local_model(args, catalog):
    """A model from a local .gguf or config.json (`estimate PATH`): the model, a catalogue that knows its quant, the quant to judge."""
    from gpuready.modelfiles.localmodel import load_local_model

    return load_local_model(args.model, catalog, args.quant)


def cmd_estimate(args) -> int:
    from gpuready.frontends.check import Requirement, validate
    from gpuready.modelfiles.localmodel import describe, local_kind
    from gpuready.report import verdict_json
    from gpuready.tasks.registry import judge_model

    catalog = _catalog(args)
    local = local_kind(args.model)
    started = None
    if local:
        model, catalog, quant = _local_model(args, catalog)
        args.quant = quant
        # checked as a catalogue model is (a task that does not judge a language model is bad input), as check does
        catalog.models[model.id] = model
        validate(Requirement(model=model.id, quant=quant, task=args.task), catalog)
        if local == "gguf" and args.task in (None, "text-generation"):
            from gpuready.app import start_llama_fit
            from gpuready.tasks.text import context_tokens

            # llama.cpp's own planner runs while the machine is probed.
            started = start_llama_fit(request(args), args.model, context_tokens(model, _options(args)))
    else:
        validate(Requirement(model=args.model, quant=args.quant, task=args.task), catalog)
        model = catalog.get(args.model)
    loaded = _loaded(args)
    problems = loaded.problems
    hardware, resident = _resident(loaded.hardware, catalog, _options(args))
    for outcome in resident:
        sys.stderr.write(f"with {outcome.reason}\n")
    verdict = judge_model(model, catalog, hardware, replace(_options(args), measured_speeds=loaded.measured_speeds), args.task)
    from gpuready.app import llama_fit

    fitted = llama_fit(started)
    if args.json:
        data = verdict_json(verdict)
        if fitted is not None:
            from gpuready.modelfiles.llamafit import to_json

            data["llama_cpp_fit"] = to_json(fitted)
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
    else:
        from gpuready.frontends.text import render_estimate

        if local:
            sys.stdout.write(describe(model, catalog, args.quant))
        beside = ""
        if fitted is not None:
            from gpuready.modelfiles.llamafit import render

            memory = verdict.estimate.memory if verdict.estimate is not None else None
            ours = memory.weights_bytes + memory.kv_cache_bytes + memory.compute_bytes if memory is not None else None
            beside = render(fitted, ours, model.layers, amx="amx_int8" in hardware.cpu.features)
        sys.stdout.write(render_estimate(verdict, beside))
    for problem in problems:
        sys.stderr.write(f"problem: [{problem.probe}] {problem.message}\n")
    return ExitCode.READY


def cmd_schema(args) -> int:
    from gpuready.host import other_machine
    from gpuready.report import schema_text

    if given := other_machine(args, {}):
        raise UsageError(f"gpuready schema prints the report's JSON Schema, the same for every machine; "
                         f"{', '.join(given)} does not apply to it")
    sys.stdout.write(schema_text())
    return ExitCode.READY


def cmd_record(args) -> int:
    from gpuready.host import host_from_environment
    from gpuready.probes import probe_hardware
    from gpuready.recording import RecordingHost
    from gpuready.units import fmt_gb

    from gpuready.host import other_machine

    if given := [flag for flag in other_machine(args, {}) if flag != "--machine"]:
        # A recording holds what the probes read; a what-if changes only the judging, so it was silently dropped.
        raise UsageError(f"gpuready record records what the probes read; {', '.join(given)} does not apply to it "
                         "(--machine re-records a recording)")
    directory = Path(args.directory)
    if directory.exists() and not directory.is_dir():
        raise UsageError(f"{directory}: exists and is not a directory; give a new directory")
    if directory.exists() and any(directory.iterdir()):
        raise UsageError(f"{directory}: exists and is not empty; give a new directory")
    # --machine re-records a recording; --include-identifiers keeps serials, UUIDs, MACs and the host name.
    host = RecordingHost(host_from_environment(args.machine), directory, scrub=not args.include_identifiers)
    hardware, problems = probe_hardware(host)
    description = args.description or getattr(host.inner, "description", None) or ", ".join(
        part
        for part in (
            hardware.cpu.name,
            f"{fmt_gb(hardware.memory.total_bytes)} memory" if hardware.memory.total_bytes else None,
            *(gpu.name for gpu in hardware.gpus),
        )
        if part
    )
    host.finish(description, __version__)
    files = sum(1 for p in directory.rglob("*") if p.is_file())
    sys.stdout.write(f"recorded {files} files into {directory}\n")
    if args.include_identifiers:
        sys.stderr.write("It holds serial numbers, UUIDs, MAC addresses and the host name (--include-identifiers): share it with care.\n")
    else:
        sys.stderr.write("Look through it before you share it: serial numbers, UUIDs, MAC addresses and the host name were replaced.\n")
    for problem in problems:
        sys.stderr.write(f"problem: [{problem.probe}] {problem.message}\n")
    return ExitCode.READY


def _report_data(args):
    """A function returning a fresh JSON report dict (probed, or --machine/--hardware/--gpu), default settings."""
    from gpuready import app
    from gpuready.report import report_json

    catalog = _catalog(args)

    def build() -> dict:
        return report_json(app.report(request(args), catalog))

    return build


def cmd_export(args) -> int:
    from gpuready.exports.capacity import ReportError
    from gpuready.exports.command import ExportUsageError, run_export

    try:
        return run_export(args, _report_data(args))
    except (ReportError, ExportUsageError) as error:
        raise UsageError(str(error)) from None


def cmd_fleet(args) -> int:
    from gpuready.exports.capacity import ReportError
    from gpuready.exports.command import ExportUsageError, run_fleet
    from gpuready.host import other_machine

    if given := other_machine(args, {}):
        raise UsageError(f"gpuready fleet reads the reports it is given; {', '.join(given)} does not apply to it")
    try:
        return run_fleet(args)
    except (ReportError, ExportUsageError) as error:
        raise UsageError(str(error)) from None


def cmd_default(args) -> int:
    """Bare `gpuready`: the TUI on a terminal, else the text summary."""
    if not args.plain and sys.stdout.isatty() and sys.stdin.isatty() and not os.environ.get("GPUREADY_PLAIN"):
        try:
            from gpuready.frontends.tui import run_tui
        except ImportError:
            pass
        else:
            return run_tui(args)
    args.json = False
    args.task = None
    args.context = None
    args.quant = None
    args.placement = "cpu"
    args.documents = None
    args.resolution = None
    return cmd_report(args)


def cmd_bench(args) -> int:
    from gpuready.bench.command import cmd_bench as bench

    return bench(args)


COMMANDS = {
    "bench": cmd_bench,
    "report": cmd_report,
    "check": cmd_check,
    "models": cmd_models,
    "estimate": cmd_estimate,
    "schema": cmd_schema,
    "record": cmd_record,
    "export": cmd_export,
    "fleet": cmd_fleet,
    None: cmd_default,
}


def one_line(message: str) -> str:
    """An error message as one line: a key or value quoted from a user's file may hold newlines or control characters."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in message)


def main(argv: Sequence[str] | None = None) -> int:
    from gpuready.catalog.loader import CatalogError
    from gpuready.hardware import HardwareFormatError
    from gpuready.host import MachineError

    parser = build_parser()
    args = parser.parse_args(argv)
    for name in ("machine", "hardware", "memory", "gpu", "catalog_dir"):
        if not hasattr(args, name):
            setattr(args, name, None)
    from gpuready.whatif import WhatIfError, assumption

    try:
        if args.gpu and (assumed := assumption(args.gpu)):
            sys.stderr.write(f"gpuready: note: {assumed}\n")
        if getattr(args, "quant", None):
            from gpuready.app import canonical_quant

            args.quant = canonical_quant(args.quant, _catalog(args), getattr(args, "model", None))
        return int(COMMANDS[args.command](args))
    except (UsageError, CatalogError, HardwareFormatError, MachineError, WhatIfError) as error:
        sys.stderr.write(f"gpuready: error: {one_line(str(error))}\n")
        return ExitCode.USAGE
    except BrokenPipeError:
        return ExitCode.READY
    except KeyboardInterrupt:
        return 130
    except OSError as error:
        if error.filename is None and error.errno in (errno.ENOSPC, errno.EIO, errno.EDQUOT):
            # The output could not be written (a full disk, `> /dev/full`): the machine's fault, not a bug to report,
            # and no answer was given, so 'could not tell'.
            sys.stderr.write(f"gpuready: error: cannot write the output: {error.strerror or error}\n")
            return ExitCode.UNKNOWN
        if error.filename is None:
            return _internal_error(error)
        # A path the user gave that cannot be read or written (record DIR, export --dir): bad input.
        sys.stderr.write(f"gpuready: error: {error.filename}: {error.strerror or error}\n")
        return ExitCode.USAGE
    except Exception as error:  # noqa: BLE001 - a bug must not look like an answer
        return _internal_error(error)


def _internal_error(error: Exception) -> int:
    if os.environ.get("GPUREADY_DEBUG"):
        raise error
    sys.stderr.write(
        f"gpuready: internal error: {type(error).__name__}: {error}\n"
        "Please report it (GPUREADY_DEBUG=1 shows the traceback; `gpuready record DIR` captures the machine).\n"
    )
    return ExitCode.UNKNOWN
