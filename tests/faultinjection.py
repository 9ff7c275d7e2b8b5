"""Fault injection over every recorded machine: every file, command and library readout a probe reads, broken in every way.

Shared by tests/test_fault_injection.py (the whole enumeration, in CI) and
benchmarks/faults.py (which prints the figures for the README). A run first traces which
probe reads what on a machine, then breaks one thing at a time through the Host seam and
checks that the report still renders, no probe crashed, every error Problem has a hint,
no probe that did not read the broken thing lost a fact, and a GPU or NPU that vanished
left a Problem behind.
"""

from __future__ import annotations

import dataclasses
import random
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from unittest import mock

import gpuready.probes as registry
from gpuready.hardware import Hardware, Problem
from gpuready.host import CommandResult, ReplayHost, command_slug

FIXTURES = Path(__file__).parent / "fixtures" / "machines"
MACHINES = sorted(p.name for p in FIXTURES.iterdir() if (p / "machine.toml").exists())

# The facts each probe contributes: a fault in what probe P read may change P's facts, never
# another's. The GPU probes share one group (on Windows and Intel Macs one probe finds every vendor's GPUs).
FACT_GROUPS = {"cpu": ("cpu",), "memory": ("memory",), "gpus": registry.GPU_PROBES, "npus": ("npu",),
               "backends": ("backends",), "system": ("system",)}


def facts(hardware: Hardware, group: str):
    if group == "cpu":
        return dataclasses.replace(hardware.cpu, memory_bandwidth_bytes_per_s=None, bandwidth_source=None)
    if group == "memory":
        return hardware.memory
    if group == "gpus":
        return tuple((g.vendor, g.name, g.memory_total_bytes, g.memory_free_bytes, g.counted) for g in hardware.gpus)
    if group == "npus":
        return hardware.npus
    if group == "backends":
        return tuple((b.name, b.available) for b in hardware.backends)
    return (hardware.os, hardware.in_container)


def _junk(seed: int, size: int) -> str:
    data = random.Random(seed).randbytes(size)
    return data.decode("utf-8", errors="replace")


def _truncated(text: str) -> str:
    """Cut inside a line: half-way through the line that holds the file's middle byte."""
    if len(text) < 2:
        return ""
    middle = len(text) // 2
    start = text.rfind("\n", 0, middle) + 1
    end = text.find("\n", middle)
    end = len(text) if end < 0 else end
    return text[: start + max(1, (end - start) // 2)]


# At the Host seam a missing file, a directory in its place, a dangling symlink and an
# unreadable file (a FIFO) all read as None: tests/test_fault_injection.py checks that once
# per host on real filesystem objects, and this table breaks each file every way that differs.
FILE_FAULTS: dict[str, Callable[[str, int], str | None]] = {
    "missing": lambda text, seed: None,
    "empty": lambda text, seed: "",
    "truncated mid-line": lambda text, seed: _truncated(text),
    "random bytes": lambda text, seed: _junk(seed, 512),
}
BIG_JUNK = 10 * 1024 * 1024  # "10 MB of junk": once per distinct path (the parser is the path's, not the machine's)

COMMAND_FAULTS: dict[str, Callable[[int], CommandResult]] = {
    "missing binary": lambda seed: CommandResult("not_found"),
    "non-zero exit": lambda seed: CommandResult("ok", 1, "", "error: failed to query the device\n"),
    "garbage stdout": lambda seed: CommandResult("ok", 0, _junk(seed, 2048), ""),
    "empty stdout": lambda seed: CommandResult("ok", 0, "", ""),
    "hang past the timeout": lambda seed: CommandResult("timeout"),
    "cannot start": lambda seed: CommandResult("error", stderr="Permission denied"),
}


def library_faults(readout: dict) -> Iterator[tuple[str, dict | None]]:
    """The readout gone, failed, empty, and each top-level field null, of the wrong type or gone."""
    yield "missing", None
    yield "failed", {"error": "READOUT_FAILED", "detail": "injected"}
    yield "empty object", {}
    for key in readout:
        yield f"{key}: null", {**readout, key: None}
        yield f"{key}: garbage", {**readout, key: "garbage"}
        yield f"{key}: wrong container", {**readout, key: [] if isinstance(readout[key], dict) else {}}
        yield f"{key}: removed", {k: v for k, v in readout.items() if k != key}


@dataclass
class FaultHost:
    """A replay host with one thing broken, that notes which probe read what."""

    inner: ReplayHost
    files: dict[str, str | None] = field(default_factory=dict)
    commands: dict[str, CommandResult] = field(default_factory=dict)
    libraries: dict[str, dict | None] = field(default_factory=dict)
    current: str = "?"
    reads: dict[tuple[str, str], set[str]] = field(default_factory=lambda: defaultdict(set))

    def __post_init__(self) -> None:
        self.platform, self.arch = self.inner.platform, self.inner.arch

    def __hash__(self) -> int:
        return id(self)

    @property
    def faults(self) -> dict[str, str]:
        return self.inner.faults

    def read_text(self, path: str) -> str | None:
        self.reads[("file", path)].add(self.current)
        return self.files[path] if path in self.files else self.inner.read_text(path)

    def list_dir(self, path: str) -> list[str] | None:
        self.reads[("dir", path)].add(self.current)
        return self.inner.list_dir(path)

    def run(self, argv: Sequence[str], timeout: float = 5.0) -> CommandResult:
        slug = command_slug(argv)
        self.reads[("command", slug)].add(self.current)
        return self.commands[slug] if slug in self.commands else self.inner.run(argv, timeout)

    def env(self, name: str) -> str | None:
        return self.inner.env(name)

    def library(self, name: str) -> dict | None:
        self.reads[("library", name)].add(self.current)
        return self.libraries[name] if name in self.libraries else self.inner.library(name)


class _NoCache(dict):
    """Stands in for the per-host caches, so that every probe's own read is seen (and attributed)."""

    def __setitem__(self, key, value) -> None:
        pass


def probe(host: FaultHost) -> tuple[Hardware, list[Problem]]:
    """probe_hardware, noting on the host which probe is running (no commands started up front, no caches)."""
    from gpuready.probes import apple, backends, macos

    original = registry.run_probe

    def attributed(name, function, host_, problems, default):
        host.current = name
        try:
            return original(name, function, host_, problems, default)
        finally:
            host.current = "?"

    with mock.patch.object(registry, "run_probe", attributed), mock.patch("gpuready.probes.commands.always_run", lambda platform: []), \
            mock.patch.object(macos, "_cache", _NoCache()), mock.patch.object(apple, "_displays_cache", _NoCache()), \
            mock.patch.object(backends, "_vulkan_cache", _NoCache()):
        return registry.probe_hardware(host)


@dataclass(frozen=True)
class Case:
    machine: str
    kind: str  # file, command, library
    target: str  # the path, command slug or library name
    fault: str


@dataclass
class Outcome:
    case: Case
    hardware: Hardware
    problems: list[Problem]
    failures: list[str]


@dataclass
class Trace:
    machine: str
    hardware: Hardware
    problems: list[Problem]
    reads: dict[tuple[str, str], set[str]]


def trace(machine: str) -> Trace:
    host = FaultHost(ReplayHost(FIXTURES / machine))
    hardware, problems = probe(host)
    return Trace(machine, hardware, problems, dict(host.reads))


def cases(machine_trace: Trace, big_paths: set[str]) -> Iterator[tuple[Case, dict]]:
    """Every fault of everything the machine's probes read; ``big_paths`` collects paths given 10 MB of junk once."""
    replay = ReplayHost(FIXTURES / machine_trace.machine)
    seed = 0
    for (kind, target), _ in sorted(machine_trace.reads.items()):
        seed += 1
        if kind == "file":
            text = replay.read_text(target)
            if text is None:
                continue  # the machine has no such file: "missing" is its normal state
            for name, fault in FILE_FAULTS.items():
                yield Case(machine_trace.machine, "file", target, name), {"files": {target: fault(text, seed)}}
            if target not in big_paths:
                big_paths.add(target)
                yield Case(machine_trace.machine, "file", target, "10 MB of junk"), {"files": {target: _junk(seed, 4096) * (BIG_JUNK // 4096)}}
        elif kind == "command":
            for name, fault in COMMAND_FAULTS.items():
                yield Case(machine_trace.machine, "command", target, name), {"commands": {target: fault(seed)}}
        elif kind == "library":
            readout = replay.library(target)
            if readout is None:
                continue
            for name, value in library_faults(readout):
                yield Case(machine_trace.machine, "library", target, name), {"libraries": {target: value}}


def check(machine_trace: Trace, case: Case, overrides: dict) -> Outcome:
    """Run one fault and list what went wrong (an empty list: the fault was handled)."""
    host = FaultHost(ReplayHost(FIXTURES / case.machine), **overrides)
    failures = []
    try:
        hardware, problems = probe(host)
    except Exception as error:  # noqa: BLE001 - this is what the suite looks for
        return Outcome(case, machine_trace.hardware, [], [f"traceback: {type(error).__name__}: {error}"])
    readers = machine_trace.reads.get((case.kind if case.kind != "command" else "command", case.target), set())
    for problem in problems:
        if problem.hint == registry.REPORT_HINT:
            failures.append(f"probe crashed: {problem.message}")
        if problem.severity == "error" and not problem.hint:
            failures.append(f"error without a hint: [{problem.probe}] {problem.message}")
    for group, probes in FACT_GROUPS.items():
        if not readers & set(probes) and facts(hardware, group) != facts(machine_trace.hardware, group):
            failures.append(f"unrelated fact lost: {group} changed though no probe of it read {case.target}")
    new = [p for p in problems if p not in machine_trace.problems]
    lost = len(machine_trace.hardware.gpus) + len(machine_trace.hardware.npus) - len(hardware.gpus) - len(hardware.npus)
    # Something absent was never seen (a missing file, a field an older recording lacks); anything garbled was.
    if lost > 0 and not new and case.fault not in ("missing", "removed") and not case.fault.endswith(": removed"):
        failures.append(f"{lost} GPU/NPU vanished without a Problem")
    return Outcome(case, hardware, problems, failures)


def run_all(machines: Sequence[str] = MACHINES) -> list[Outcome]:
    big_paths: set[str] = set()
    outcomes = []
    for machine in machines:
        machine_trace = trace(machine)
        for case, overrides in cases(machine_trace, big_paths):
            outcomes.append(check(machine_trace, case, overrides))
    return outcomes
