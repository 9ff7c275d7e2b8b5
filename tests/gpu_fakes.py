"""An in-memory Host for GPU probe tests: files, directories, commands, env and library readouts from dicts."""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field

from gpuready.host import CommandResult


@dataclass
class FakeHost:
    platform: str = "linux"
    arch: str = "x86_64"
    files: dict[str, str] = field(default_factory=dict)
    commands: dict[tuple[str, ...], CommandResult] = field(default_factory=dict)
    environment: dict[str, str] = field(default_factory=dict)
    libraries: dict[str, dict] = field(default_factory=dict)

    def read_text(self, path: str) -> str | None:
        return self.files.get(path)

    def list_dir(self, path: str) -> list[str] | None:
        prefix = path.rstrip("/") + "/"
        entries = {name[len(prefix):].split("/")[0] for name in self.files if name.startswith(prefix)}
        return sorted(entries) if entries else None

    def run(self, argv, timeout: float = 5.0) -> CommandResult:
        return self.commands.get(tuple(argv), CommandResult("not_found"))

    def env(self, name: str) -> str | None:
        return self.environment.get(name)

    def library(self, name: str) -> dict | None:
        return self.libraries.get(name)


def pci_files(address: str, vendor: str, device: str, driver: str | None = None, klass: str = "0x030000") -> dict[str, str]:
    base = posixpath.join("/sys/bus/pci/devices", address)
    uevent = (f"DRIVER={driver}\n" if driver else "") + f"PCI_SLOT_NAME={address}\n"
    return {f"{base}/vendor": vendor + "\n", f"{base}/device": device + "\n", f"{base}/class": klass + "\n", f"{base}/uevent": uevent}
