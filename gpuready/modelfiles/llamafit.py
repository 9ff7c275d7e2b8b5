"""llama.cpp's own memory plan for a local GGUF: run ``llama-fit-params`` and read its answer.

llama.cpp's fit planner (tools/fit-params, common/fit.cpp) sizes a model against the free
memory of every device it sees without loading weights. Two runs of it, started side by
side under one time budget (:class:`gpuready.probes.commands.BudgetedHost`):

* ``llama-fit-params -m FILE -c N --fit-print on`` prints, in MiB, what each device and the
  host would hold with every layer offloaded: one line per device, ``NAME MODEL CONTEXT
  COMPUTE``, then ``Host MODEL CONTEXT COMPUTE`` (common/fit.cpp, ``common_fit_print``).
* ``llama-fit-params -m FILE -c N`` prints the arguments it fitted to free memory, e.g.
  ``-c 8192 -ngl 17`` (plus ``-ts`` and ``-ot`` where it splits across devices or moves
  expert tensors to the host), or exits 1 when nothing fits.

``llama-fit-params --version`` says which build answered (``version: 0.5.0-dev (build 1, commit
0c1e570)`` on stderr). The three run side by side. Gathering (``fit``) and parsing (the pure
functions) are separate; tests feed outputs captured from a real build
(tests/fixtures/llama_fit_params/).

On CPUs with AMX, llama.cpp keeps the layers' weights in an "AMX" buffer that belongs to no
device, and the planner's per-device lines leave it out (captured: a Qwen2.5-0.5B Q4_K_M prints
``Host 303 96 300`` while its verbose log lists ``AMX 225`` MiB more; benchmarks/MEMORY_FIT.md),
so gpuready shows llama.cpp's figure beside its own rather than in place of it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpuready.host import CommandResult, Host, exit_words

FIT_PARAMS = "llama-fit-params"
# Both runs together end within this many seconds: the planner reads the GGUF header and
# builds the graph without weights (about 0.3-1.2 s in llama.cpp's tools/fit-params/README.md).
FIT_BUDGET_S = 20.0
MIB = 1024**2

_MEMORY_LINE = re.compile(r"^(?P<device>\S+) (?P<model>\d+) (?P<context>\d+) (?P<compute>\d+)\s*$")
_ARGUMENTS = re.compile(r"^-c (?P<context>\d+) -ngl (?P<ngl>-?\d+)(?P<rest>.*)$")
_VERSION = re.compile(r"^version: (?P<version>\S+) \(build (?P<number>\d+), commit (?P<commit>\w+)\)", re.MULTILINE)


@dataclass(frozen=True)
class DeviceMemory:
    """What llama.cpp projects one device (or ``Host``, system memory) to hold, in bytes."""

    device: str
    model_bytes: int
    context_bytes: int  # the KV cache (and recurrent state)
    compute_bytes: int

    @property
    def total_bytes(self) -> int:
        return self.model_bytes + self.context_bytes + self.compute_bytes


@dataclass(frozen=True)
class LlamaFit:
    """llama.cpp's answer for one GGUF at one context; ``errors`` says what could not be read."""

    context_tokens: int
    devices: tuple[DeviceMemory, ...] = ()
    fitted_arguments: str | None = None
    gpu_layers: int | None = None  # -ngl it fitted; -1 means all layers
    build: str | None = None
    errors: tuple[str, ...] = ()

    @property
    def total_bytes(self) -> int | None:
        return sum(d.total_bytes for d in self.devices) if self.devices else None


class FitOutputError(ValueError):
    """llama-fit-params printed something other than what its source says it prints."""


def parse_memory(stdout: str) -> tuple[DeviceMemory, ...]:
    """The per-device lines of ``--fit-print on`` (MiB), ending with the Host line."""
    found = []
    for line in stdout.splitlines():
        match = _MEMORY_LINE.match(line.strip())
        if match:
            found.append(DeviceMemory(match["device"], *(int(match[k]) * MIB for k in ("model", "context", "compute"))))
    if not found or found[-1].device != "Host":
        raise FitOutputError("no 'Host MODEL CONTEXT COMPUTE' line in llama-fit-params --fit-print output")
    return tuple(found)


def parse_arguments(stdout: str) -> tuple[str, int]:
    """The fitted arguments line (``-c N -ngl N ...``) and its -ngl."""
    for line in reversed(stdout.splitlines()):
        match = _ARGUMENTS.match(line.strip())
        if match:
            return line.strip(), int(match["ngl"])
    raise FitOutputError("no '-c N -ngl N' line in llama-fit-params output")


def parse_version(text: str) -> str | None:
    """llama.cpp's build and commit from ``--version`` (``build 1, commit 0c1e570``)."""
    match = _VERSION.search(text)
    return f"build {match['number']}, commit {match['commit']}" if match else None


_LOG_PREFIX = re.compile(r"^\d+\.\d+\.\d+\.\d+ (?P<level>[A-Z]) ")


def _why(result: CommandResult, budget_s: float) -> str:
    """One line on why a run gave no answer: its first logged error, else its last line."""
    if result.status == "timeout":
        return f"did not answer within {budget_s:.0f} s"
    if result.status != "ok":
        return (result.stderr.strip().splitlines() or ["could not be started"])[-1][:200]
    lines = [line.strip() for line in (result.stderr + "\n" + result.stdout).splitlines() if line.strip()]
    logged = [(_LOG_PREFIX.match(line), line) for line in lines]
    errors = [line[match.end():] for match, line in logged if match and match["level"] == "E"]
    reason = errors[0] if errors else (_LOG_PREFIX.sub("", lines[-1]) if lines else "no output")
    return f"{exit_words(result.returncode)}: {reason[:200]}"


def argv_for(path: str, context_tokens: int, executable: str = FIT_PARAMS) -> tuple[tuple[str, ...], ...]:
    """The three command lines: the memory print, the fit, the version."""
    base = (executable, "-m", path, "-c", str(context_tokens))
    return (*base, "--fit-print", "on"), base, (executable, "--version")


def start(host: Host, path: str, context_tokens: int, budget_s: float = FIT_BUDGET_S,
          executable: str = FIT_PARAMS) -> tuple:
    """Start the three runs in the background (so they overlap the probing); ``collect`` reads them."""
    from gpuready.probes.commands import BudgetedHost

    commands = argv_for(path, context_tokens, executable)
    return BudgetedHost(host, budget_s, prefetch=commands), commands, context_tokens, budget_s


def collect(started: tuple) -> LlamaFit | None:
    """What the runs ``start`` began gave; None when llama-fit-params is not installed."""
    budgeted, commands, context_tokens, budget_s = started
    printed, fitted, version = (budgeted.run(argv, budget_s) for argv in commands)
    if printed.status == "not_found" and fitted.status == "not_found":
        return None
    return read_results(printed, fitted, context_tokens, budget_s, version)


def fit(host: Host, path: str, context_tokens: int, budget_s: float = FIT_BUDGET_S,
        executable: str = FIT_PARAMS) -> LlamaFit | None:
    """Ask llama-fit-params about this GGUF at this context; None when it is not installed."""
    return collect(start(host, path, context_tokens, budget_s, executable))


def read_results(printed: CommandResult, fitted: CommandResult, context_tokens: int,
                 budget_s: float = FIT_BUDGET_S, version: CommandResult | None = None) -> LlamaFit:
    """A LlamaFit from the runs' results; whatever could not be read becomes an error line."""
    errors: list[str] = []
    failed: dict[str, str] = {}  # run -> why it gave no answer
    devices: tuple[DeviceMemory, ...] = ()
    arguments, layers = None, None
    if printed.ok:
        try:
            devices = parse_memory(printed.stdout)
        except FitOutputError as error:
            errors.append(str(error))
    else:
        failed["memory print"] = _why(printed, budget_s)
    if fitted.ok:
        try:
            arguments, layers = parse_arguments(fitted.stdout)
        except FitOutputError as error:
            errors.append(str(error))
    else:
        failed["fit"] = _why(fitted, budget_s)
    reasons = {why.split(": ", 1)[-1] for why in failed.values()}
    if len(failed) == 2 and len(reasons) == 1 and ": " in failed["fit"]:
        errors.append(f"could not plan this file ({failed['fit']})")  # both failed the same way: say it once
    else:
        errors += [f"{run} {why}" for run, why in failed.items()]
    build = parse_version(version.stderr + version.stdout) if version is not None and version.ok else None
    return LlamaFit(context_tokens, devices, arguments, layers, build, tuple(errors))


def to_json(found: LlamaFit) -> dict:
    """The ``llama_cpp_fit`` object of ``gpuready estimate PATH.gguf --json`` (documented in the schema)."""
    return {
        "tool": FIT_PARAMS,
        "build": found.build,
        "context_tokens": found.context_tokens,
        "devices": [
            {"device": d.device, "model_bytes": d.model_bytes, "context_bytes": d.context_bytes,
             "compute_bytes": d.compute_bytes}
            for d in found.devices
        ],
        "total_bytes": found.total_bytes,
        "fitted_arguments": found.fitted_arguments,
        "gpu_layers": found.gpu_layers,
        "errors": list(found.errors),
    }


def _mib(value: int) -> str:
    return f"{value / MIB:,.0f} MiB"


def render(found: LlamaFit, ours_bytes: int | None, layers: int, amx: bool = False) -> str:
    """The text section shown after gpuready's own breakdown; ``ours_bytes`` is gpuready's
    weights + KV cache + compute buffers (llama.cpp counts no runtime overhead); ``amx``: this
    CPU has AMX, whose buffer of repacked weights the planner's lines leave out."""
    title = f"llama.cpp's own plan (llama-fit-params{', ' + found.build if found.build else ''}, context {found.context_tokens:,})"
    lines = [title]
    for device in found.devices:
        where = "system memory" if device.device == "Host" else device.device
        lines.append(f"  {where:<14} model {_mib(device.model_bytes):>10}   KV cache {_mib(device.context_bytes):>9}"
                     f"   compute {_mib(device.compute_bytes):>9}")
    total = found.total_bytes
    if total and ours_bytes is None:
        lines.append(f"  total          {total / 1024**3:.2f} GB")
    elif total:
        difference = (ours_bytes - total) / total * 100
        lines.append(f"  total          {total / 1024**3:.2f} GB (gpuready, without its runtime overhead: {ours_bytes / 1024**3:.2f} GB,"
                     f" {difference:+.0f}%)")
    if found.fitted_arguments:
        gpus = [d for d in found.devices if d.device != "Host"]
        if found.devices and not gpus:
            placed = "no GPU in this llama.cpp build: every layer in system memory"
        elif found.gpu_layers is not None and (found.gpu_layers < 0 or found.gpu_layers >= layers):
            placed = "every layer on the GPU"
        else:
            placed = f"{found.gpu_layers} of {layers} layers on the GPU"
        lines.append(f"  fitted         {found.fitted_arguments}  ({placed})")
    if amx and found.devices:
        lines.append("  note: this CPU has AMX: llama.cpp also keeps a repacked copy of the layers' weights in an AMX buffer,"
                     " which these lines leave out (benchmarks/MEMORY_FIT.md)")
    for error in found.errors:
        lines.append(f"  note: llama-fit-params {error}")
    return "\n".join(lines) + "\n"
