"""One time budget for every external command a probe runs, and those commands run side by side.

A hung tool (``nvidia-smi`` stuck on a lost GPU, ``vulkaninfo`` waiting on a broken ICD,
``system_profiler`` on a busy Mac) must not hold the report up: :class:`BudgetedHost` wraps
any Host, starts the commands every run needs at once in background threads, caps each
command's timeout by what is left of :data:`COMMAND_BUDGET_S`, and keeps a list of the
commands that timed out, which :func:`timeout_problems` turns into Problems naming them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence

from gpuready.hardware import Problem
from gpuready.host import CommandResult, Host

# Every command of one probing run ends within this many seconds of its start, so the whole
# report stays under 2 s with every command hung (benchmarks/hung_commands.py measures it).
COMMAND_BUDGET_S = 1.2

# The probe whose facts a command supplies, for the Problem that says it timed out.
COMMAND_PROBES = {"nvidia-smi": "nvidia", "vulkaninfo": "backends", "sysctl": "cpu", "vm_stat": "memory",
                  "system_profiler": "apple", "rocm-smi": "amd", "amd-smi": "amd"}


def always_run(platform: str) -> list[tuple[str, ...]]:
    """The commands the probes run on every probing of this platform, started up front."""
    from gpuready.probes import apple, backends, macos

    if platform == "darwin":
        return [macos.SYSCTL_ARGV, macos.VM_STAT_ARGV, apple.SYSTEM_PROFILER_ARGV, backends.VULKANINFO_ARGV]
    return [backends.VULKANINFO_ARGV]


def _budgeted(argv: Sequence[str]) -> bool:
    # `--torch` imports PyTorch in a child interpreter: the user asked for it and it takes seconds.
    return "--import" not in argv


class BudgetedHost:
    """A Host whose commands share one deadline and start concurrently; everything else is the inner host's."""

    def __init__(self, inner: Host, budget_s: float | None = None, clock: Callable[[], float] = time.monotonic,
                 prefetch: Sequence[Sequence[str]] = ()) -> None:
        budget_s = COMMAND_BUDGET_S if budget_s is None else budget_s  # read when built, so a test can widen it
        self.inner = inner
        self.platform = inner.platform
        self.arch = inner.arch
        self.budget_s = budget_s
        self._clock = clock
        self._deadline = clock() + budget_s
        self._lock = threading.Lock()
        self._started: dict[tuple[str, ...], tuple[threading.Thread, list[CommandResult], float]] = {}
        self.timed_out: list[tuple[tuple[str, ...], float]] = []
        for argv in prefetch:
            self._start(tuple(argv), budget_s)

    def __getattr__(self, name: str):
        return getattr(self.inner, name)  # faults, finish, directory, ... of the wrapped host

    def _remaining(self) -> float:
        return max(0.0, self._deadline - self._clock())

    def _start(self, argv: tuple[str, ...], timeout: float) -> None:
        box: list[CommandResult] = []
        # A daemon thread: a command stuck in the kernel must not keep the process alive at exit.
        thread = threading.Thread(target=lambda: box.append(self.inner.run(argv, timeout)), daemon=True)
        self._started[argv] = (thread, box, timeout)
        thread.start()

    def run(self, argv: Sequence[str], timeout: float = 5.0) -> CommandResult:
        key = tuple(argv)
        limit = min(timeout, self._remaining()) if _budgeted(key) else timeout
        with self._lock:
            started = self._started.pop(key, None)
        if started is not None:
            thread, box, limit = started
            thread.join(self._remaining() + 0.5)  # the inner run enforces the timeout; this is a backstop
            result = box[0] if box else CommandResult("timeout")
        elif limit <= 0:
            result = CommandResult("timeout")
        else:
            result = self.inner.run(key, limit)
        if result.status == "timeout":
            self.timed_out.append((key, limit))
        return result


def timeout_problems(host: Host, problems: Sequence[Problem]) -> list[Problem]:
    """A warning for each command that timed out and that no probe has already named."""
    found = []
    for argv, limit in getattr(host, "timed_out", ()):
        name = argv[0].replace("\\", "/").rsplit("/", 1)[-1]
        if any(name in problem.message for problem in [*problems, *found]):
            continue
        found.append(Problem(
            COMMAND_PROBES.get(name, "commands"),
            f"`{name}` did not answer within {limit:.1f} s; what it reports is missing from this report",
            f"`{' '.join(argv)}` hangs on this machine: run it by hand to see why (a lost GPU or a broken driver often hangs it).",
            "warning",
        ))
    return found
