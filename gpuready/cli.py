"""Command-line interface: `gpuready [report|check|models|estimate|schema|record]`.

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
from gpuready.arguments import build_parser
from gpuready.check import ExitCode, UsageError

# --- shared steps -----------------------------------------------------------------


def _catalog(args):
    from gpuready.catalog import load_catalog, user_catalog_dir

    user = Path(args.catalog_dir) if getattr(args, "catalog_dir", None) else user_catalog_dir()
    if getattr(args, "catalog_dir", None) and not user.is_dir():
        raise UsageError(f"--catalog-dir {user}: not a directory")
    return load_catalog(user=user)


def _hardware(args):
    """Probe (live or recorded), or read --hardware; then apply --memory."""
    from gpuready.report import load_hardware_json, with_memory
    from gpuready.tables import enrich

    problems = []
    if args.hardware:
        path = Path(args.hardware)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise UsageError(f"--hardware {path}: cannot read: {getattr(error, 'strerror', None) or error}") from None
        hardware = enrich(load_hardware_json(text, str(path)))
    else:
        from gpuready.host import host_from_environment
        from gpuready.probes import probe_hardware

        hardware, problems = probe_hardware(
            host_from_environment(args.machine), python=sys.executable, torch=getattr(args, "torch", False)
        )
    if args.gpu:
        from gpuready.whatif import apple_machine, resolve_gpu, with_gpu

        spec, count = resolve_gpu(args.gpu)
        from gpuready.probes import GPU_PROBES

        problems = [p for p in problems if p.probe not in GPU_PROBES]
        if spec.vendor == "apple":  # a whole Mac: the chip is CPU, GPU and memory at once
            memory = _size(args.memory, "--memory") if args.memory else None
            return apple_machine(hardware, spec, memory), problems
        hardware = with_gpu(hardware, spec, count)
    if args.memory:
        hardware = with_memory(hardware, _size(args.memory, "--memory"))
    return hardware, problems


def _size(text: str, flag: str) -> int:
    from gpuready.check import parse_size

    try:
        return parse_size(text)
    except UsageError as error:
        raise UsageError(f"{flag}: {error}") from None


def _options(args):
    from gpuready.verdict import Options

    if args.context is not None and args.context <= 0:
        raise UsageError("--context must be a positive number of tokens")
    documents, resolution = _task_sizes(args)
    return Options(context_tokens=args.context, quant=getattr(args, "quant", None), placement=args.placement,
                   documents=documents, resolution=resolution)


def _task_sizes(args) -> tuple[int | None, tuple[int, int] | None]:
    """--documents and --resolution, checked."""
    from gpuready.check import parse_documents, parse_resolution

    documents = getattr(args, "documents", None)
    resolution = getattr(args, "resolution", None)
    try:
        documents = parse_documents(documents) if documents is not None else None
        resolution = parse_resolution(resolution) if resolution is not None else None
    except UsageError as error:
        raise UsageError(f"--{'documents' if 'documents' in str(error) else 'resolution'}: {error}") from None
    return documents, resolution


def _check_task(task: str | None) -> None:
    from gpuready.catalog import TASKS

    if task and task not in TASKS:
        raise UsageError(f"unknown task '{task}' (tasks: {', '.join(TASKS)})")


# --- commands ---------------------------------------------------------------------


def cmd_report(args) -> int:
    from gpuready.report import build_report, dumps

    _check_task(args.task)
    catalog = _catalog(args)
    known = set(catalog.quants) | {variant for model in catalog.models.values() for variant in model.quants}
    if args.quant and args.quant not in known:
        raise UsageError(f"unknown quantisation '{args.quant}' (known: {', '.join(sorted(known))})")
    hardware, problems = _hardware(args)
    options = _options(args)
    if options.quant:
        catalog.models = {k: m for k, m in catalog.models.items() if options.quant in m.quants}
    report = build_report(hardware, problems, catalog, options)
    if args.json:
        sys.stdout.write(dumps(report))
    else:
        from gpuready.text import render

        sys.stdout.write(render(report, args.task))
    return ExitCode.READY


def cmd_check(args) -> int:
    from gpuready.check import (
        Requirement,
        evaluate,
        exit_code,
        load_requirements,
        validate,
    )
    from gpuready.localmodel import local_kind

    catalog = _catalog(args)
    if args.model and local_kind(args.model):
        # A local .gguf or config.json joins the catalogue for this run under its own id.
        model, catalog, quant = _local_model(args, catalog)
        catalog.models[model.id] = model
        args.model, args.quant = model.id, quant
    requirements = []
    if args.requirements:
        requirements += load_requirements(Path(args.requirements), catalog)
    documents, resolution = _task_sizes(args)
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
        requirements.append(Requirement(min_memory_bytes=_size(args.min_memory, "--min-memory")))
    if args.min_gpu_memory:
        requirements.append(Requirement(min_gpu_memory_bytes=_size(args.min_gpu_memory, "--min-gpu-memory")))
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
    _check_task(args.task)
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
    from gpuready.text import table

    rows = [
        [m.id, m.name, m.task, f"{m.params / 1e9:.2f}B" + (f" ({m.active_params / 1e9:.1f}B active)" if getattr(m, "is_moe", False) else ""),
         f"{m.context_length:,}" if hasattr(m, "context_length") else "-"]
        for m in models
    ]
    sys.stdout.write("\n".join(table(rows, ["ID", "NAME", "TASK", "PARAMS", "CONTEXT"], right={4})) + "\n")
    return ExitCode.READY


def _local_model(args, catalog):
    """A model from a local .gguf or config.json (`estimate PATH`): the model, a catalogue that knows its quant, the quant to judge."""
    from gpuready.gguf import GGUFError
    from gpuready.hfconfig import HFConfigError
    from gpuready.localmodel import load_config, load_gguf

    path = Path(args.model)
    if not path.exists():
        raise UsageError(f"{path}: no such file")
    try:
        if path.is_file() and path.name.lower().endswith(".gguf"):
            model, catalog = load_gguf(path, catalog, args.quant)
            return model, catalog, model.quants[0]
        model, quant = load_config(path, catalog, args.quant)
        return model, catalog, quant
    except (GGUFError, HFConfigError) as error:
        raise UsageError(str(error)) from None


def cmd_estimate(args) -> int:
    from gpuready.check import Requirement, validate
    from gpuready.localmodel import describe, local_kind
    from gpuready.report import verdict_json
    from gpuready.verdict import judge_any

    catalog = _catalog(args)
    local = local_kind(args.model)
    if local:
        model, catalog, quant = _local_model(args, catalog)
        args.quant = quant
    else:
        validate(Requirement(model=args.model, quant=args.quant), catalog)
        model = catalog.get(args.model)
    hardware, problems = _hardware(args)
    verdict = judge_any(model, catalog, hardware, _options(args))
    if args.json:
        sys.stdout.write(json.dumps(verdict_json(verdict), indent=2) + "\n")
    else:
        from gpuready.text import render_estimate

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
    from gpuready.verdict import fmt_gb

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


def cmd_default(args) -> int:
    """Bare `gpuready`: the TUI on a terminal, else the text summary."""
    if not args.plain and sys.stdout.isatty() and sys.stdin.isatty() and not os.environ.get("GPUREADY_PLAIN"):
        try:
            from gpuready.tui import run_tui
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
    None: cmd_default,
}


def one_line(message: str) -> str:
    """An error message as one line: a key or value quoted from a user's file may hold newlines or control characters."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in message)


def main(argv: Sequence[str] | None = None) -> int:
    from gpuready.catalog import CatalogError
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
