"""Helpers for tests: a Host built from plain dicts, and hypothetical hardware.

Recorded machines (tests/fixtures/machines) are the main test input; this host is for
small, focused cases where a whole machine directory would hide the point of the test.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from gpuready.hardware import CPU, GIB, GPU, Hardware, Memory
from gpuready.host import ENV_ALLOWLIST, CommandResult, command_slug


@dataclass
class FakeHost:
    """A Host whose files, commands, environment and library readouts are dicts."""

    platform: str = "linux"
    arch: str = "x86_64"
    files: dict[str, str] = field(default_factory=dict)
    commands: dict[str, CommandResult] = field(default_factory=dict)  # keyed by command_slug(argv)
    environment: dict[str, str] = field(default_factory=dict)
    libraries: dict[str, dict] = field(default_factory=dict)
    runs: list[tuple[str, ...]] = field(default_factory=list)

    def __hash__(self) -> int:  # usable as a cache key, like the real hosts
        return id(self)

    def read_text(self, path: str) -> str | None:
        return self.files.get(path)

    def list_dir(self, path: str) -> list[str] | None:
        prefix = path.rstrip("/") + "/"
        names = {p[len(prefix):].split("/", 1)[0] for p in self.files if p.startswith(prefix)}
        return sorted(names) if names else None

    def run(self, argv: Sequence[str], timeout: float = 5.0) -> CommandResult:
        self.runs.append(tuple(argv))
        return self.commands.get(command_slug(argv), CommandResult("not_found"))

    def env(self, name: str) -> str | None:
        if name not in ENV_ALLOWLIST:
            raise KeyError(name)
        return self.environment.get(name)

    def library(self, name: str) -> dict | None:
        return self.libraries.get(name)


def cpu_machine(memory_gib: float, bandwidth_gb_s: float = 51.2, cores: int = 8, features=("avx2", "fma")) -> Hardware:
    """A hypothetical CPU-only Linux machine with this much free memory."""
    size = int(memory_gib * GIB)
    return Hardware(
        platform="linux",
        arch="x86_64",
        cpu=CPU(
            name="Test CPU",
            arch="x86_64",
            physical_cores=cores,
            logical_cores=cores * 2,
            features=tuple(features),
            memory_bandwidth_bytes_per_s=int(bandwidth_gb_s * 1e9),
            bandwidth_source="user",
            source="user",
        ),
        memory=Memory(total_bytes=size, available_bytes=size, source="user"),
    )


def with_test_gpu(hardware: Hardware, memory_gib: float, bandwidth_gb_s: float, fp16_tflops: float = 100.0, name: str = "Test GPU") -> Hardware:
    """The same machine plus one discrete NVIDIA-like GPU with all of its memory free."""
    size = int(memory_gib * GIB)
    gpu = GPU(
        vendor="nvidia",
        name=name,
        memory_total_bytes=size,
        memory_free_bytes=size,
        memory_usable_bytes=size,
        bandwidth_bytes_per_s=int(bandwidth_gb_s * 1e9),
        bandwidth_source="user",
        fp16_flops=fp16_tflops * 1e12,
        flops_source="user",
        backends=("cuda",),
        source="user",
    )
    from dataclasses import replace

    return replace(hardware, gpus=hardware.gpus + (gpu,))
