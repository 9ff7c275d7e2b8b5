"""Recording a machine: a Host wrapper that copies everything read into a directory.

The copy is scrubbed of serial numbers, UUIDs (replaced consistently, so a UUID in
CUDA_VISIBLE_DEVICES still matches the GPU it named), container ids and the host name;
`gpuready record DIR` writes one, and it replays with `--machine DIR`.
"""

from __future__ import annotations

import json
import os
import platform as _platform
import re
from pathlib import Path
from typing import Sequence

from gpuready.host import DEVICE_GROUPS, CommandResult, Host, _sibling, command_slug

# A UUID as a word, or right after "pod" (a Kubernetes pod UID in a cgroup path: kubepods/burstable/pod<uid>/),
# with hyphens or, in systemd's unit names (kubepods-burstable-pod<uid>.slice), underscores.
UUID = re.compile(
    r"(?:(?<![0-9A-Za-z])|(?<=pod))(?:(GPU|MIG)-)?[0-9a-fA-F]{8}([-_])[0-9a-fA-F]{4}\2[0-9a-fA-F]{4}\2[0-9a-fA-F]{4}\2[0-9a-fA-F]{12}(?![0-9A-Za-z])"
)
# Container and cgroup ids (docker: 64 hex digits; others 32) identify a machine's workloads. UUID and CONTAINER_ID
# are also what a report's quoted cgroup path is cleaned of (probes/fields.without_path_ids).
CONTAINER_ID = re.compile(r"(?<![0-9a-fA-F])[0-9a-f]{32}(?:[0-9a-f]{32})?(?![0-9a-fA-F])")
# MAC addresses, colon or hyphen separated (Linux sysfs/ip, Windows getmac).
_MAC = re.compile(r"(?<![0-9A-Fa-f:-])[0-9A-Fa-f]{2}([:-])(?:[0-9A-Fa-f]{2}\1){4}[0-9A-Fa-f]{2}(?![0-9A-Fa-f:-])")
# A "key: value" line whose key names a serial number or device id: "Serial Number (system): C02...",
# "Provisioning UDID: 00008103-...", /proc/cpuinfo's "Serial\t: 1000...", "board_serial=...".
_SERIAL_LINE = re.compile(r"(?im)^(\s*(?=[A-Za-z])[\w .()/-]{0,60}?(?:serial|udid|uuid)[\w .()/-]{0,40}?\s*[:=]\s*)(\S.*?)[ \t]*$")
# The same in JSON ("key": "value", as system_profiler -json writes it), whatever the key's prefix:
# "_spdisplays_display-serial-number", "serial_number", "platform_UUID", "provisioning_UDID".
_SERIAL_JSON = re.compile(r'(?i)("[^"\\\n]*(?:serial|uuid|udid)[^"\\\n]*"\s*:\s*)("(?:[^"\\\n]|\\.)*"|-?\d+(?:\.\d+)?(?![\w.]))')
# A value the UUID pass already replaced, kept so that a GPU's UUID still matches CUDA_VISIBLE_DEVICES on replay.
_PLACEHOLDER = re.compile(r'"?(?:(?:GPU|MIG)-)?00000000-0000-0000-0000-\d{12}"?')
_SCRUBBED_KEY = re.compile(r"(?i)serial|uuid|udid|^host_?name$")
_SCRUBBED_FILES = {"serial", "serial_number", "product_serial", "board_serial", "unique_id", "hostname"}


def _device_groups(text: str) -> str:
    """/etc/group cut to what the AMD probe reads: the render and video groups' GIDs, without members or passwords.

    Every other line names a local user or group. Lines are kept in order, duplicates included, so a replay
    reads the same GIDs (the probe takes a group's last line)."""
    kept = [f"{parts[0]}:x:{parts[2]}:" for parts in (line.split(":") for line in text.splitlines())
            if len(parts) >= 3 and parts[0] in DEVICE_GROUPS]
    return "".join(line + "\n" for line in kept)


def _process_ids(text: str) -> str:
    """/proc/self/status cut to the Uid, Gid and Groups lines the AMD probe reads (may this process open /dev/kfd?):
    the rest is the recording process's own state (its PIDs, namespaces, CPU and memory masks, signal sets)."""
    return "".join(line + "\n" for line in text.splitlines() if line.partition(":")[0] in ("Uid", "Gid", "Groups"))


# Files a probe reads only part of, recorded as that part alone (whatever --include-identifiers says):
# /run/.containerenv (Podman) only needs to exist, yet names the container and its image.
_REDUCED_FILES = {"/etc/group": _device_groups, "/proc/self/status": _process_ids, "/run/.containerenv": lambda text: ""}


class Scrubber:
    """Replaces UUIDs, serial numbers and the host name, consistently within one recording."""

    def __init__(self, hostname: str | None, enabled: bool = True) -> None:
        self.enabled = enabled  # False: `record --include-identifiers`, the user opted in to sharing them
        self.hostname = hostname.strip() if hostname and hostname.strip() else None
        # A host name of any length, as a whole word: "pc" is scrubbed, "pci" and "epc1" are not.
        self._hostname = re.compile(rf"(?<![A-Za-z0-9_.-]){re.escape(self.hostname)}(?![A-Za-z0-9_-])") if self.hostname else None
        self._uuids: dict[str, str] = {}
        self._macs: dict[str, str] = {}

    def _mac(self, match: re.Match) -> str:
        original = match.group(0).lower().replace("-", ":")
        if original not in self._macs:
            # Locally administered addresses (02:...), numbered in the order they were met.
            self._macs[original] = "02:00:00:00:" + f"{len(self._macs) + 1:04x}"[:2] + ":" + f"{len(self._macs) + 1:04x}"[2:]
        return self._macs[original].replace(":", match.group(1))

    def _uuid(self, match: re.Match) -> str:
        # A pod UID written with underscores (systemd) is the same UID as with hyphens: one placeholder, in the form met.
        original = match.group(0).lower().replace("_", "-")
        prefix = (match.group(1) + "-") if match.group(1) else ""
        if original not in self._uuids:
            number = len(self._uuids) + 1
            self._uuids[original] = f"{prefix}00000000-0000-0000-0000-{number:012d}"
        placeholder = self._uuids[original]
        return prefix + placeholder[len(prefix):].replace("-", match.group(2))

    def _hex_id(self, match: re.Match) -> str:
        original = match.group(0)
        if original not in self._uuids:
            self._uuids[original] = f"{len(self._uuids) + 1:0{len(original)}x}"
        return self._uuids[original]

    def _field(self, key: str, item):
        if not _SCRUBBED_KEY.search(key) or item is None or not self.enabled:
            return self.data(item)
        # A GPU/MIG UUID becomes the same placeholder as in the environment, so that
        # CUDA_VISIBLE_DEVICES=GPU-... still selects the same GPU when the recording is replayed.
        if isinstance(item, str) and UUID.fullmatch(item.strip()):
            return self.text(item.strip())
        return "REDACTED"

    def text(self, value: str) -> str:
        if not self.enabled:
            return value
        value = UUID.sub(self._uuid, value)
        value = CONTAINER_ID.sub(self._hex_id, value)
        value = _MAC.sub(self._mac, value)
        value = _SERIAL_LINE.sub(lambda m: m.group(0) if _PLACEHOLDER.fullmatch(m.group(2)) else m.group(1) + "REDACTED", value)
        value = _SERIAL_JSON.sub(lambda m: m.group(0) if _PLACEHOLDER.fullmatch(m.group(2)) else m.group(1) + '"REDACTED"', value)
        if self._hostname:
            value = self._hostname.sub("HOSTNAME", value)
        return value

    def data(self, value):
        if isinstance(value, dict):
            return {key: self._field(key, item) for key, item in value.items()}
        if isinstance(value, list):
            return [self.data(item) for item in value]
        if isinstance(value, str):
            return self.text(value)
        return value


class RecordingHost:
    """Wraps another host and writes everything read into a recorded-machine directory."""

    def __init__(self, inner: Host, directory: Path, hostname: str | None = None, scrub: bool = True) -> None:
        self.inner = inner
        self.platform = inner.platform
        self.arch = inner.arch
        self.directory = Path(directory)
        self.scrubber = Scrubber(hostname if hostname is not None else _platform.node(), enabled=scrub)
        self._env: dict[str, str] = {}
        self.directory.mkdir(parents=True, exist_ok=True)

    @property
    def faults(self) -> dict[str, str]:
        """Malformed files of a replayed recording being re-recorded (none on a live machine)."""
        return getattr(self.inner, "faults", {})

    def _root_path(self, path: str) -> Path:
        return self.directory / "root" / self.scrubber.text(path).lstrip("/")

    def read_text(self, path: str) -> str | None:
        text = self.inner.read_text(path)
        if text is not None and "\\" not in path and ".." not in path:
            target = self._root_path(path)
            target.parent.mkdir(parents=True, exist_ok=True)
            secret = os.path.basename(path) in _SCRUBBED_FILES and self.scrubber.enabled
            reduced = _REDUCED_FILES.get(path, lambda whole: whole)(text)
            scrubbed = "REDACTED\n" if secret else self.scrubber.text(reduced)
            target.write_text(scrubbed, encoding="utf-8")
        return text  # the probe sees the real value; only the recording is scrubbed

    def list_dir(self, path: str) -> list[str] | None:
        entries = self.inner.list_dir(path)
        if entries is not None and "\\" not in path and ".." not in path:
            target = self._root_path(path)
            target.mkdir(parents=True, exist_ok=True)
            for entry in entries:
                live = os.path.join(path, entry)
                recorded = target / self.scrubber.text(entry)
                if self.inner.list_dir(live) is not None:  # a directory, on a live machine or in a recording
                    recorded.mkdir(exist_ok=True)
                elif not recorded.exists():
                    recorded.touch()
        return entries

    def run(self, argv: Sequence[str], timeout: float = 5.0) -> CommandResult:
        result = self.inner.run(argv, timeout)
        commands = self.directory / "commands"
        commands.mkdir(exist_ok=True)
        base = commands / command_slug(argv)
        if result.status == "timeout":
            _sibling(base, ".timeout").write_text("")
        elif result.status == "ok":
            _sibling(base, ".txt").write_text(self.scrubber.text(result.stdout), encoding="utf-8")
            if result.returncode:
                _sibling(base, ".rc").write_text(f"{result.returncode}\n")
            if result.stderr:
                _sibling(base, ".err").write_text(self.scrubber.text(result.stderr), encoding="utf-8")
        return result

    def env(self, name: str) -> str | None:
        value = self.inner.env(name)
        if value is not None:
            self._env[name] = self.scrubber.text(value)
        return value

    def library(self, name: str) -> dict | None:
        value = self.inner.library(name)
        if value is not None:
            libraries = self.directory / "libraries"
            libraries.mkdir(exist_ok=True)
            (libraries / f"{name}.json").write_text(
                json.dumps(self.scrubber.data(value), indent=2, sort_keys=True) + "\n", encoding="utf-8"
            )
        return value

    def _source(self, version: str) -> str:
        original = getattr(self.inner, "source", None)
        if original:  # re-recording a recording keeps where its data came from
            return f"re-recorded by gpuready {version} (gpuready record --machine) from: {original}"
        return f"recorded by gpuready {version} (gpuready record)"

    def finish(self, description: str, version: str) -> None:
        """Write machine.toml once every probe has run."""
        lines = [
            f'platform = "{self.platform}"',
            f'arch = "{self.arch}"',
            f"description = {json.dumps(description)}",
            f"source = {json.dumps(self._source(version))}",
            "",
            "[env]",
        ]
        lines += [f"{name} = {json.dumps(value)}" for name, value in sorted(self._env.items())]
        (self.directory / "machine.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")


