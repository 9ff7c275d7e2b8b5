"""The Host seam: replaying and recording machines, and scrubbing what must stay private."""

from __future__ import annotations

import json
import pytest

from gpuready.host import CommandResult, ReplayHost, command_slug
from gpuready.recording import RecordingHost, Scrubber
from gpuready.testing import FakeHost


def test_command_slugs_keep_dots_and_are_file_names():
    assert command_slug(["/usr/sbin/sysctl", "hw.memsize"]) == "sysctl_hw.memsize"
    assert command_slug(["nvidia-smi", "--query-gpu=name,memory.total", "--format=csv"]) == "nvidia-smi_query-gpu=name,memory.total_format=csv"


def test_recording_scrubs_uuids_serials_and_the_host_name(tmp_path):
    inner = FakeHost(
        files={
            "/proc/cpuinfo": "model name\t: Test\nSerial\t\t: 10000000abcdef01\n",
            "/etc/motd": "welcome to kestrel-07\n",
            "/sys/class/dmi/id/product_serial": "XYZ123\n",
        },
        commands={
            command_slug(["nvidia-smi", "-L"]): CommandResult(
                "ok", 0, "GPU 0: NVIDIA GeForce RTX 4090 (UUID: GPU-3f2a1b4c-5d6e-7f80-9a1b-2c3d4e5f6a7b)\n"
            )
        },
        environment={"CUDA_VISIBLE_DEVICES": "GPU-3f2a1b4c-5d6e-7f80-9a1b-2c3d4e5f6a7b"},
        libraries={"nvml": {"devices": [{"name": "RTX", "uuid": "GPU-3f2a1b4c-5d6e-7f80-9a1b-2c3d4e5f6a7b", "serial": "1320"}]}},
    )
    host = RecordingHost(inner, tmp_path, hostname="kestrel-07")
    assert "10000000abcdef01" in host.read_text("/proc/cpuinfo")  # the probe still sees real data
    host.read_text("/etc/motd")
    host.read_text("/sys/class/dmi/id/product_serial")
    host.run(["nvidia-smi", "-L"])
    host.env("CUDA_VISIBLE_DEVICES")
    host.library("nvml")
    host.finish("test machine", "0.0")
    everything = "\n".join(p.read_text() for p in tmp_path.rglob("*") if p.is_file())
    for secret in ("10000000abcdef01", "kestrel-07", "XYZ123", "3f2a1b4c", '"1320"'):
        assert secret not in everything, secret
    placeholder = "GPU-00000000-0000-0000-0000-000000000001"
    assert placeholder in (tmp_path / "commands" / "nvidia-smi_L.txt").read_text()
    device = json.loads((tmp_path / "libraries" / "nvml.json").read_text())["devices"][0]
    assert (device["uuid"], device["serial"]) == (placeholder, "REDACTED")
    # The same UUID gets the same placeholder everywhere, so CUDA_VISIBLE_DEVICES still matches.
    assert placeholder in (tmp_path / "machine.toml").read_text()


def test_a_recording_replays_as_the_same_machine(tmp_path):
    inner = FakeHost(
        files={"/proc/meminfo": "MemTotal: 1024 kB\n"},
        commands={command_slug(["vm_stat"]): CommandResult("ok", 1, "out\n", "err\n"), command_slug(["slow"]): CommandResult("timeout")},
    )
    recorder = RecordingHost(inner, tmp_path, hostname="")
    recorder.read_text("/proc/meminfo")
    recorder.run(["vm_stat"])
    recorder.run(["slow"])
    recorder.finish("x", "0")
    replay = ReplayHost(tmp_path)
    assert replay.read_text("/proc/meminfo") == "MemTotal: 1024 kB\n"
    assert replay.run(["vm_stat"]) == CommandResult("ok", 1, "out\n", "err\n")
    assert replay.run(["slow"]).status == "timeout"
    assert replay.run(["missing"]).status == "not_found"
    assert replay.read_text("/proc/nothing") is None


def test_container_ids_in_cgroup_paths_are_scrubbed_consistently():
    scrubber = Scrubber(None)
    cgroup = scrubber.text("4:memory:/docker/" + "ab" * 32)
    path = scrubber.text("/sys/fs/cgroup/memory/docker/" + "ab" * 32 + "/memory.limit_in_bytes")
    assert "abab" not in cgroup
    assert cgroup.rsplit("/", 1)[1] == path.split("/")[-2]


def test_a_recording_of_a_platform_gpuready_does_not_probe_is_refused(tmp_path):
    # platform = "beos" was replayed as if it were Linux.
    from gpuready.host import MachineError, ReplayHost

    (tmp_path / "machine.toml").write_text('platform = "beos"\narch = "x86_64"\n')
    with pytest.raises(MachineError, match=r"'platform' must be linux, darwin or windows \(got 'beos'\)"):
        ReplayHost(tmp_path)
    (tmp_path / "machine.toml").write_text('platform = "Darwin"\narch = "arm64"\n')
    assert ReplayHost(tmp_path).platform == "darwin"
