"""The command line's flags: one parser for `gpuready [report|check|models|estimate|schema|record|bench|export|fleet]`."""

from __future__ import annotations

import argparse

from gpuready import __version__


TASKS_PLACEHOLDER = "{tasks}"


class Parser(argparse.ArgumentParser):
    """Fills the task names into help text only when help is shown: listing them needs the task
    registry, which every other run would pay for at start-up."""

    def format_help(self) -> str:
        for action in self._actions:
            if action.help and TASKS_PLACEHOLDER in action.help:
                from gpuready.tasks.registry import choices

                action.help = action.help.replace(TASKS_PLACEHOLDER, ", ".join(choices()))
        return super().format_help()


def _common(parser: argparse.ArgumentParser, top: bool = False) -> None:
    # Subcommands repeat these options without defaults, so `gpuready --machine X report`
    # and `gpuready report --machine X` both work.
    default = None if top else argparse.SUPPRESS
    group = parser.add_argument_group("machine")
    group.add_argument("--machine", metavar="DIR", default=default, help="replay a recorded machine (also GPUREADY_MACHINE)")
    group.add_argument("--hardware", metavar="FILE", default=default, help="what-if: a hardware description (the report's 'hardware' JSON)")
    group.add_argument("--memory", metavar="SIZE", default=default, help="what-if: this much system memory, e.g. 64GB")
    group.add_argument("--gpu", metavar="NAME", default=default, help="what-if: this GPU from the table instead of the machine's, e.g. 'RTX 4090' or '2x RTX 3090'")
    group.add_argument("--catalog-dir", metavar="DIR", default=default, help="user catalogue directory (default: platform config dir)")


def _model_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--context", type=int, metavar="TOKENS", help="context length to judge at (default 8192, capped at the model's maximum)")
    parser.add_argument("--quant", metavar="Q", help="judge only this quantisation or variant, e.g. Q4_K_M, fp8, int8")
    parser.add_argument(
        "--placement",
        choices=("gpu", "offload", "split", "cpu"),
        default="cpu",
        help="the weakest place a model may run and still count: gpu = only all on the GPU; offload = also image models "
        "whose parts take turns on the GPU; split = also layers split between GPU and CPU; cpu = anywhere (default)",
    )
    parser.add_argument("--documents", type=int, metavar="N", help="document search: documents to index (default 10,000 of ~5 chunks)")
    parser.add_argument("--resolution", metavar="WxH", help="image generation: image size, e.g. 1024x1024 (default: each model's native size)")
    parser.add_argument("--with", dest="with_models", action="append", metavar="MODEL",
                        help="a model kept loaded alongside (repeatable): its memory is taken first, e.g. --with whisper-large-v3")
    parser.add_argument("--users", type=int, metavar="N", help="text generation: N users at once, each with its own KV cache (default 1)")
    tuning = parser.add_argument_group("fine-tuning")
    tuning.add_argument("--method", metavar="METHOD", help="fine-tuning: judge only full-adamw, full-8bit, lora or qlora (default: all)")
    tuning.add_argument("--sequence", type=int, metavar="TOKENS", help="fine-tuning: training sequence length (default 2048)")
    tuning.add_argument("--micro-batch", type=int, metavar="N", help="fine-tuning: sequences a step (default 1)")
    tuning.add_argument("--lora-rank", type=int, metavar="R", help="fine-tuning: LoRA rank (default 16)")
    tuning.add_argument("--no-checkpointing", action="store_true", help="fine-tuning: gradient checkpointing off (default on)")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="gpuready",
        description="Which AI work can this machine do locally, and how well? With no command, on a terminal, "
        "gpuready opens its terminal UI; otherwise (or with --plain) it prints the text summary.",
        epilog="Exit codes: 0 ready, 1 not ready, 2 usage or bad input, 3 could not tell.",
    )
    parser.add_argument("--version", action="version", version=f"gpuready {__version__}")
    parser.add_argument("--plain", action="store_true", help="print the text summary instead of starting the terminal UI")
    _common(parser, top=True)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    report = commands.add_parser("report", help="the machine and every model's verdict (text, or --json)")
    report.add_argument("--json", action="store_true", help="print the versioned JSON report")
    report.add_argument("--task", help="only this task: one of " + TASKS_PLACEHOLDER)
    report.add_argument("--torch", action="store_true", help="also ask PyTorch and OpenVINO which devices they see (a subprocess; takes seconds)")
    _model_options(report)
    _common(report)

    check = commands.add_parser("check", help="preflight: exit 0 when every requirement is met")
    check.add_argument("--task", help="a task must be feasible: one of " + TASKS_PLACEHOLDER)
    check.add_argument("--model", help="this model must run: a catalogue id, a .gguf file or a config.json")
    check.add_argument("--min-speed", type=float, metavar="TOKENS_PER_S", help="minimum generation speed")
    check.add_argument("--min-realtime", type=float, metavar="X", help="speech: at least X times real time, e.g. 5")
    check.add_argument("--max-seconds-per-image", type=float, metavar="S", help="image generation: at most S seconds per image")
    check.add_argument("--min-chunks-per-minute", type=float, metavar="N", help="document search: embed at least N chunks a minute")
    check.add_argument("--max-wh-per-1k-tokens", type=float, metavar="WH", help="text generation: at most WH watt-hours per 1,000 generated tokens")
    check.add_argument("--min-memory", metavar="SIZE", help="minimum usable system memory, e.g. 16GB")
    check.add_argument("--min-gpu-memory", metavar="SIZE", help="minimum usable GPU memory, e.g. 12GB")
    check.add_argument("--requirements", metavar="FILE", help="a TOML file of [[require]] tables")
    check.add_argument("--json", action="store_true", help="print the outcome as JSON")
    _model_options(check)
    _common(check)

    models = commands.add_parser("models", help="list the catalogue")
    models.add_argument("--task", help="only this task: one of " + TASKS_PLACEHOLDER)
    models.add_argument("--json", action="store_true", help="print the catalogue as JSON")
    models.add_argument("--gpus", action="store_true", help="list the GPUs --gpu knows (names to type), not the models")
    _common(models)

    estimate = commands.add_parser("estimate", help="memory and speed breakdown for one model on this machine")
    estimate.add_argument("model", help="a catalogue model id, a local .gguf file, or a Hugging Face config.json (or its directory)")
    estimate.add_argument("--json", action="store_true", help="print the verdict, its estimate and basis as JSON")
    estimate.add_argument("--task", help="judge it for another task over the same entry: fine-tuning")
    _model_options(estimate)
    _common(estimate)

    commands.add_parser("schema", help="print the JSON Schema of `report --json`")

    bench = commands.add_parser("bench", help="measure this machine (memory bandwidth, matmul, GPUs); later verdicts use it")
    bench.add_argument("--quick", action="store_true", help="about 5 s instead of about 20 s")
    bench.add_argument("--json", action="store_true", help="print the measurements as JSON")
    bench.add_argument("--show", action="store_true", help="show the kept measurements of this machine")
    bench.add_argument("--clear", action="store_true", help="forget the kept measurements")
    bench.add_argument("--llama-bench", metavar="GGUF", help="run llama-bench (llama.cpp, on PATH) on this model file: real tokens/s")
    bench.add_argument("--whisper-bench", metavar="MODEL", help="run whisper-bench (whisper.cpp, on PATH) on this ggml model file: real encoder time")

    record = commands.add_parser("record", help="record this machine into DIR (scrubbed), for bug reports and tests")
    record.add_argument("directory", metavar="DIR")
    record.add_argument("--description", help="a one-line description for machine.toml")
    record.add_argument("--machine", metavar="DIR", default=argparse.SUPPRESS,
                        help="re-record a recorded machine instead of this one (to scrub it, or move it to a new format)")
    record.add_argument("--include-identifiers", action="store_true",
                        help="keep serial numbers, UUIDs, MAC addresses and the host name (scrubbed by default)")

    from gpuready.exports.arguments import add_commands

    add_commands(commands, _common)
    return parser


def request(args, options=None):
    """The application-layer Request these arguments describe."""
    from gpuready.app import Request
    from gpuready.tasks.verdict import Options

    return Request(machine=args.machine, hardware_file=args.hardware, gpu=args.gpu, memory=args.memory,
                   catalog_dir=args.catalog_dir, torch=getattr(args, "torch", False), options=options or Options())
