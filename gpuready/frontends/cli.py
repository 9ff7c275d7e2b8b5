"""Command-line interface: `gpuready [report|check|models|estimate|schema|record|export|fleet]`.

stdout carries data (text or JSON); diagnostics and hints go to stderr. Exit codes are
those of :class:`gpuready.check.ExitCode`. Neither `report` nor `check` imports Textual.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from gpuready import __version__
from gpuready.frontends.arguments import build_parser, request
from gpuready.frontends.check import ExitCode, UsageError

# --- from arguments to the application layer ----------------------------------------


def _options(args):
    from gpuready.app import make_options

    return make_options(args.context, getattr(args, "quant", None), args.placement, getattr(args, "documents", None),
                        getattr(args, "resolution", None))


def _catalog(args):
    from gpuready.app import load_catalog

    return load_catalog(args.catalog_dir)


def _hardware(args):
    from gpuready.app import load_hardware

    return load_hardware(request(args))


# --- commands ---------------------------------------------------------------------


def cmd_report(args) -> int:
    from gpuready import app
    from gpuready.report import dumps

    app.check_task(args.task)
    report = app.report(request(args, _options(args)))
    if args.json:
        sys.stdout.write(dumps(report))
    else:
        from gpuready.frontends.text import render

        sys.stdout.write(render(report, args.task))
    return ExitCode.READY


def cmd_check(args) -> int:
    from gpuready.frontends.check import (
        Requirement,
        evaluate,
        exit_code,
        load_requirements,
        validate,
    )
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
              "--max-seconds-per-image": args.max_seconds_per_image, "--min-chunks-per-minute": args.min_chunks_per_minute}
    for flag, value in speeds.items():
        if value is not None and value <= 0:
            raise UsageError(f"{flag} must be positive")
    if args.task or args.model:
        requirements.append(
            validate(
                Requirement(
                    task=None if args.model else args.task,
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
                ),
                catalog,
            )
        )
    else:
        given = [flag for flag, value in speeds.items() if value is not None]
        given += [flag for flag, value in (("--resolution", resolution), ("--documents", documents)) if value is not None]
        if given:
            raise UsageError(f"{given[0]} needs --task or --model")
    if args.min_memory:
        requirements.append(Requirement(min_memory_bytes=size_flag(args.min_memory, "--min-memory")))
    if args.min_gpu_memory:
        requirements.append(Requirement(min_gpu_memory_bytes=size_flag(args.min_gpu_memory, "--min-gpu-memory")))
    if not requirements:
        raise UsageError("nothing to check: give --task, --model, --min-memory, --min-gpu-memory or --requirements")
    if args.context is not None and args.context <= 0:
        raise UsageError("--context must be a positive number of tokens")
    hardware, problems = _hardware(args)
    outcomes = [evaluate(r, hardware, problems, catalog) for r in requirements]
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


def cmd_models(args) -> int:
    from gpuready.app import check_task

    check_task(args.task)
    catalog = _catalog(args)
    models = [m for m in catalog.models.values() if not args.task or m.task == args.task]
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
    if local:
        model, catalog, quant = _local_model(args, catalog)
        args.quant = quant
    else:
        validate(Requirement(model=args.model, quant=args.quant), catalog)
        model = catalog.get(args.model)
    hardware, problems = _hardware(args)
    verdict = judge_model(model, catalog, hardware, _options(args))
    if args.json:
        sys.stdout.write(json.dumps(verdict_json(verdict), indent=2) + "\n")
    else:
        from gpuready.frontends.text import render_estimate

        if local:
            sys.stdout.write(describe(model, catalog, args.quant))
        sys.stdout.write(render_estimate(verdict))
    for problem in problems:
        sys.stderr.write(f"problem: [{problem.probe}] {problem.message}\n")
    return ExitCode.READY


def cmd_schema(args) -> int:
    from gpuready.report import schema_text

    sys.stdout.write(schema_text())
    return ExitCode.READY


def cmd_record(args) -> int:
    from gpuready.host import host_from_environment
    from gpuready.probes import probe_hardware
    from gpuready.recording import RecordingHost
    from gpuready.units import fmt_gb

    directory = Path(args.directory)
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


COMMANDS = {
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
    from gpuready.whatif import WhatIfError

    try:
        return int(COMMANDS[args.command](args))
    except (UsageError, CatalogError, HardwareFormatError, MachineError, WhatIfError) as error:
        sys.stderr.write(f"gpuready: error: {one_line(str(error))}\n")
        return ExitCode.USAGE
    except BrokenPipeError:
        return ExitCode.READY
    except KeyboardInterrupt:
        return 130
    except Exception as error:  # noqa: BLE001 - a bug must not look like an answer
        if os.environ.get("GPUREADY_DEBUG"):
            raise
        sys.stderr.write(
            f"gpuready: internal error: {type(error).__name__}: {error}\n"
            "Please report it (GPUREADY_DEBUG=1 shows the traceback; `gpuready record DIR` captures the machine).\n"
        )
        return ExitCode.UNKNOWN
