"""The Host: everything a probe may read, behind one seam.

Probes never call ``open``, ``subprocess``, ``os.environ`` or ``sys.platform``
themselves; they ask a Host. Three hosts exist:

* :class:`LiveHost` reads the real machine;
* :class:`ReplayHost` reads a *recorded machine* directory, so every probe runs on
  Linux CI (layout documented in the README, "Recorded machines");
* :class:`RecordingHost` (in :mod:`gpuready.recording`) wraps a live host and copies
  everything read into a directory, scrubbed of serial numbers, UUIDs and the host name.
"""

from __future__ import annotations

import json
import os
import platform as _platform
import re
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from gpuready.tomlcompat import tomllib

# Environment variables a probe may read. Only these are recorded or replayed,
# so a recording never carries secrets from the user's environment.
ENV_ALLOWLIST = (
    "CUDA_VISIBLE_DEVICES",
    "CUDA_DEVICE_ORDER",
    "NVIDIA_VISIBLE_DEVICES",
    "ROCR_VISIBLE_DEVICES",
    "HIP_VISIBLE_DEVICES",
    "HSA_OVERRIDE_GFX_VERSION",
    "ONEAPI_DEVICE_SELECTOR",
    "ZE_AFFINITY_MASK",
    "WSL_DISTRO_NAME",
    "WSL_INTEROP",
    "PROCESSOR_ARCHITECTURE",
    "PROCESSOR_ARCHITEW6432",
    "NUMBER_OF_PROCESSORS",
)

# Groups whose GID the AMD probe looks up in /etc/group (may this user open /dev/kfd, root:render 0660?).
# A recording keeps only these groups' names and GIDs of /etc/group: the rest names every local user.
DEVICE_GROUPS = ("render", "video")


@dataclass(frozen=True)
class CommandResult:
    """What running a command gave: ``status`` is ok, not_found, timeout or error."""

    status: str
    returncode: int | None = None
    stdout: str = ""
    stderr: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "ok" and self.returncode == 0


def exit_words(returncode: int | None) -> str:
    """How a finished command ended, in words: "exited with code 1", or "was killed by SIGILL (illegal
    instruction)" for a negative code (Python's subprocess reports a signal as -N on POSIX)."""
    if returncode is None or returncode >= 0:
        return f"exited with code {returncode}"
    import signal

    try:
        name = signal.Signals(-returncode).name
    except ValueError:
        return f"was killed by signal {-returncode}"
    described = (signal.strsignal(-returncode) or "").split(":")[0]  # macOS says "Illegal instruction: 4"
    return f"was killed by {name}" + (f" ({described.lower()})" if described else "")


# A program that dies of SIGILL met an instruction this CPU (or this VM's view of it) lacks: llama.cpp and
# whisper.cpp builds made for another CPU (GGML_NATIVE on the build machine) or AMX/AVX-512 kernels that a
# virtual machine does not enable.
ILLEGAL_INSTRUCTION_HINT = ("it used a CPU instruction this machine (or this VM) does not offer: rebuild it here "
                            "(cmake -DGGML_NATIVE=ON, or OFF for a portable build); in a VM, llama.cpp's AMX weight "
                            "repacking is a known cause (llama-bench --repack 0 turns it off)")


def failure_words(program: str, returncode: int | None, stderr: str) -> str:
    """One line on why a benchmark program failed: how it ended, its last line of stderr, and for an illegal
    instruction what that usually means."""
    last = (stderr.strip().splitlines() or ["no message"])[-1]
    words = f"{program} {exit_words(returncode)}: {last}"
    if returncode is not None and returncode == -4:  # SIGILL
        words += f"; {ILLEGAL_INSTRUCTION_HINT}"
    return words


class Host(Protocol):
    """What a probe may read. ``platform`` is linux, darwin or windows; ``arch`` is x86_64 or arm64."""

    platform: str
    arch: str

    def read_text(self, path: str) -> str | None:
        """The file's text, or None when it does not exist or cannot be read."""

    def list_dir(self, path: str) -> list[str] | None:
        """Sorted entry names of a directory, or None when it does not exist."""

    def run(self, argv: Sequence[str], timeout: float = 5.0) -> CommandResult:
        """Run a command with a timeout and capture its output."""

    def env(self, name: str) -> str | None:
        """An environment variable from :data:`ENV_ALLOWLIST`, or None."""

    def library(self, name: str) -> dict | None:
        """A native library's readout (nvml, amdsmi, windows, python, psutil) as a plain dict, or None."""


def normalise_arch(machine: str) -> str:
    """Map the many spellings of CPU architectures onto x86_64 or arm64."""
    lowered = machine.lower()
    if lowered in ("amd64", "x86_64", "x64", "em64t"):
        return "x86_64"
    if lowered in ("arm64", "aarch64", "armv8", "armv8l", "arm64e"):
        return "arm64"
    return lowered or "unknown"


def normalise_platform(name: str) -> str:
    lowered = name.lower()
    if lowered.startswith("linux"):
        return "linux"
    if lowered.startswith("darwin") or lowered in ("macos", "mac"):
        return "darwin"
    if lowered.startswith("win") or lowered.startswith("cygwin"):
        return "windows"
    return lowered


def command_slug(argv: Sequence[str]) -> str:
    """File name (without extension) under which a command's output is recorded."""
    parts = [os.path.basename(argv[0])] + list(argv[1:])
    slug = "_".join(re.sub(r"[^A-Za-z0-9.,=+-]+", "-", part).strip("-") or "-" for part in parts)
    if len(slug) > 180:
        import hashlib

        digest = hashlib.sha256(" ".join(argv).encode()).hexdigest()[:12]
        slug = f"{slug[:160]}-{digest}"
    return slug


# Native-library readouts, imported only when a probe asks for them.
_READOUTS: dict[str, str] = {
    "nvml": "gpuready.readouts.nvml:read",
    "amdsmi": "gpuready.readouts.amdsmi:read",
    "windows": "gpuready.readouts.windows:read",
    "python": "gpuready.probes.pyinfo:read",
    "psutil": "gpuready.readouts.psutil_counts:read",
}


def _load_readout(name: str) -> Callable[[], dict] | None:
    target = _READOUTS.get(name)
    if target is None:
        return None
    module_name, _, attribute = target.partition(":")
    import importlib

    try:
        module = importlib.import_module(module_name)
    except ImportError:
        return None
    return getattr(module, attribute)


# The most text a probe reads from one file. /proc/cpuinfo of a 1,024-thread machine is about 1.5 MB; a
# larger file is not one a probe asks for (a recording's link to /dev/zero would otherwise fill memory).
MAX_TEXT_CHARS = 16 * 1024 * 1024


def read_file_text(path: str | os.PathLike) -> str | None:
    """A file's text, or None when it is missing, not a regular file (a directory, a FIFO, a socket, a device),
    a dangling link, unreadable, or longer than MAX_TEXT_CHARS.

    Opened with O_NONBLOCK, so a FIFO in place of a file cannot hang the run (it changes nothing for
    regular files). /proc and /sys files are regular files, so every file a probe reads is one.
    """
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except (OSError, ValueError):
        return None
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            return None
        with open(descriptor, encoding="utf-8", errors="replace", closefd=False) as handle:
            text = handle.read(MAX_TEXT_CHARS + 1)
        return text if len(text) <= MAX_TEXT_CHARS else None
    except (OSError, ValueError):
        return None
    finally:
        os.close(descriptor)


def _sibling(base: Path, extension: str) -> Path:
    """``base`` plus an extension; slugs contain dots, so Path.with_suffix would cut them."""
    return base.with_name(base.name + extension)


class LiveHost:
    """The real machine this process runs on."""

    def __init__(self) -> None:
        self.platform = normalise_platform(sys.platform)
        self.arch = normalise_arch(_platform.machine())
        self._libraries: dict[str, dict | None] = {}

    def read_text(self, path: str) -> str | None:
        return read_file_text(path)

    def list_dir(self, path: str) -> list[str] | None:
        try:
            return sorted(os.listdir(path))
        except OSError:
            return None

    def run(self, argv: Sequence[str], timeout: float = 5.0) -> CommandResult:
        if shutil.which(argv[0]) is None:
            return CommandResult("not_found")
        posix = os.name == "posix"
        try:
            process = subprocess.Popen(
                list(argv),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                stdin=subprocess.DEVNULL,
                text=True,
                errors="replace",
                start_new_session=posix,  # its own process group, so a timeout ends its children too
            )
        except FileNotFoundError:
            return CommandResult("not_found")
        except OSError as error:
            return CommandResult("error", stderr=str(error))
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill(process, posix)
            return CommandResult("timeout")
        return CommandResult("ok", process.returncode, stdout, stderr)

    def env(self, name: str) -> str | None:
        if name not in ENV_ALLOWLIST:
            raise KeyError(f"{name} is not in gpuready.host.ENV_ALLOWLIST")
        return os.environ.get(name)

    def library(self, name: str) -> dict | None:
        if name not in self._libraries:
            reader = _load_readout(name)
            try:
                self._libraries[name] = reader() if reader else None
            except Exception as error:  # a readout must never take the run down
                self._libraries[name] = {"error": f"{type(error).__name__}: {error}"}
        return self._libraries[name]


def _kill(process: subprocess.Popen, posix: bool) -> None:
    """End a command that ran out of time without waiting long on it: one stuck in the kernel cannot die yet."""
    import signal

    try:
        if posix:
            os.killpg(process.pid, signal.SIGKILL)
        else:
            process.kill()
    except OSError:
        pass
    try:
        process.communicate(timeout=0.1)
    except (subprocess.TimeoutExpired, OSError, ValueError):
        pass  # left to the interpreter to reap; never block the report on it


class MachineError(ValueError):
    """A recorded machine directory is missing or malformed."""


@dataclass
class ReplayHost:
    """A recorded machine directory (see README, "Recorded machines")."""

    directory: Path
    platform: str = field(init=False)
    arch: str = field(init=False)
    description: str = field(init=False, default="")
    source: str = field(init=False, default="")
    _env: dict[str, str] = field(init=False, default_factory=dict)
    # Recorded files that are there but malformed: path (relative to the directory) -> why.
    faults: dict[str, str] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        self.directory = Path(self.directory)
        manifest = self.directory / "machine.toml"
        if not manifest.is_file():
            raise MachineError(f"{self.directory}: not a recorded machine (no machine.toml)")
        try:
            data = tomllib.loads(manifest.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError, OSError) as error:
            raise MachineError(f"{manifest}: {error}") from None
        except RecursionError:
            raise MachineError(f"{manifest}: nested too deeply") from None
        for key in ("platform", "arch"):
            if not isinstance(data.get(key), str):
                raise MachineError(f"{manifest}: '{key}' must be a string")
        self.platform = normalise_platform(data["platform"])
        if self.platform not in ("linux", "darwin", "windows"):
            raise MachineError(f"{manifest}: 'platform' must be linux, darwin or windows (got {data['platform']!r})")
        self.arch = normalise_arch(data["arch"])
        self.description = str(data.get("description", ""))
        self.source = str(data.get("source", ""))
        env = data.get("env", {})
        if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
            raise MachineError(f"{manifest}: [env] must map names to strings")
        self._env = dict(env)

    def _path(self, path: str) -> Path:
        return self.directory / "root" / path.lstrip("/")

    def _escapes(self, path: Path, within: str = "") -> bool:
        """Whether ``path`` leads out of the recording's ``within`` folder (a link to /proc/cpuinfo or /dev/zero): a
        recording comes from a bug report, and replaying it must read only what it holds, never this computer's files."""
        try:
            path.resolve().relative_to((self.directory / within).resolve())
        except (OSError, RuntimeError, ValueError):
            self._fault(path, "leads outside the recording (a link); read as missing")
            return True
        return False

    def read_text(self, path: str) -> str | None:
        target = self._path(path)
        if self._escapes(target, "root"):
            return None
        text = read_file_text(target)
        if text is None and target.exists() and not target.is_file():
            # A directory, FIFO or device where the recording should hold a file: the recording is damaged, and the
            # probe's own hint ("Is /proc mounted?") would send the reader to the wrong place.
            self._fault(target, "is not a regular file; read as missing")
        return text

    def list_dir(self, path: str) -> list[str] | None:
        target = self._path(path)
        if self._escapes(target, "root"):
            return None
        try:
            return sorted(entry.name for entry in target.iterdir())
        except OSError:
            return None

    def _fault(self, path: Path, why: str) -> None:
        """Note a malformed recorded file once; the probes see it as unusable, not as a crash."""
        self.faults.setdefault(str(path.relative_to(self.directory)), why)

    def _recorded(self, path: Path) -> str | None:
        """A recorded file's text; None (and a fault) when it is there but cannot be read as text."""
        if self._escapes(path):
            return None
        text = read_file_text(path)
        if text is None:
            self._fault(path, "cannot be read (not a regular file, unreadable or too long)"
                        if path.is_dir() or path.exists() else "cannot be read")
        return text

    def run(self, argv: Sequence[str], timeout: float = 5.0) -> CommandResult:
        base = self.directory / "commands" / command_slug(argv)
        if _sibling(base, ".timeout").exists():
            return CommandResult("timeout")
        stdout_file = _sibling(base, ".txt")
        if not stdout_file.exists():
            return CommandResult("not_found")
        broken = CommandResult("error", stderr="the recording of this command is malformed")
        rc_file = _sibling(base, ".rc")
        returncode = 0
        if rc_file.exists():
            text = self._recorded(rc_file)
            if text is None:
                return broken
            try:
                returncode = int(text.strip())
            except ValueError:
                self._fault(rc_file, f"not an integer exit code ({text.strip()[:40]!r})")
                return broken
        stderr_file = _sibling(base, ".err")
        stderr = (self._recorded(stderr_file) or "") if stderr_file.exists() else ""
        stdout = self._recorded(stdout_file)
        if stdout is None:
            return broken
        return CommandResult("ok", returncode, stdout, stderr)

    def env(self, name: str) -> str | None:
        if name not in ENV_ALLOWLIST:
            raise KeyError(f"{name} is not in gpuready.host.ENV_ALLOWLIST")
        return self._env.get(name)

    def library(self, name: str) -> dict | None:
        """The recorded readout; a malformed one is a fault and reads as absent."""
        path = self.directory / "libraries" / f"{name}.json"
        if not path.exists():
            return None
        text = self._recorded(path)
        if text is None:
            return None
        try:
            value = json.loads(text)
        except ValueError as error:
            self._fault(path, f"not valid JSON ({error})")
            return None
        except RecursionError:
            self._fault(path, "not valid JSON (nested too deeply)")
            return None
        if not isinstance(value, dict):
            self._fault(path, "expected a JSON object")
            return None
        return value


def replayed_machine(machine: str | os.PathLike | None, environ: Mapping[str, str] = os.environ) -> str | os.PathLike | None:
    """The recorded machine a command replays: --machine, then GPUREADY_MACHINE; None for this computer."""
    return machine or environ.get("GPUREADY_MACHINE") or None


def other_machine(args, environ: Mapping[str, str] = os.environ) -> list[str]:
    """What makes the machine these command-line arguments name another than this computer: the flags given
    (--machine, --hardware, --gpu, --memory), else GPUREADY_MACHINE where set; empty for this computer."""
    given = [f"--{name}" for name in ("machine", "hardware", "gpu", "memory") if getattr(args, name, None)]
    return given or (["GPUREADY_MACHINE"] if replayed_machine(None, environ) else [])


def host_from_environment(machine: str | os.PathLike | None, environ: Mapping[str, str] = os.environ) -> Host:
    """The host a command should use: --machine, then GPUREADY_MACHINE, else the live machine."""
    chosen = replayed_machine(machine, environ)
    if chosen:
        return ReplayHost(Path(chosen))
    return LiveHost()

