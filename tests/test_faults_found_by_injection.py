"""Faults that injection and fuzzing found (issue 16), each pinned at the mechanism that now handles it."""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
import time
from pathlib import Path

import pytest

from gpuready.frontends.cli import main
from gpuready.probes.commands import BudgetedHost, timeout_problems
from gpuready.hardware import Problem
from gpuready.host import CommandResult, LiveHost, ReplayHost
from gpuready.probes import REPORT_HINT, RECORDING_HINT, pci, probe_hardware
from gpuready.recording import Scrubber
from gpuready.testing import FakeHost

FIXTURES = Path(__file__).parent / "fixtures" / "machines"


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def copy_machine(tmp_path: Path, name: str) -> Path:
    target = tmp_path / name
    shutil.copytree(FIXTURES / name, target, symlinks=True)
    return target


# --- bad input: one line and exit 2, never "internal error" -----------------------------


def test_a_deeply_nested_hardware_file_is_bad_input(tmp_path, capsys):
    path = tmp_path / "hw.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    code, out, err = run(capsys, "report", "--json", "--hardware", str(path))
    assert (code, out, err) == (2, "", f"gpuready: error: {path}: not valid JSON: nested too deeply\n")


def test_an_infinite_number_in_a_hardware_file_is_bad_input(tmp_path, capsys):
    report = json.loads(run(capsys, "report", "--json", "--machine", str(FIXTURES / "linux-desktop-ryzen-7950x"))[1])
    report["hardware"]["memory"]["total_bytes"] = 1e400  # json.dumps writes Infinity
    path = tmp_path / "hw.json"
    path.write_text(json.dumps(report))
    code, _, err = run(capsys, "report", "--hardware", str(path))
    assert (code, err) == (2, f"gpuready: error: {path}: hardware.memory.total_bytes: expected an integer\n")


def _config(tmp_path: Path, **changes) -> Path:
    config = {"model_type": "qwen3_moe", "hidden_size": 2048, "num_hidden_layers": 48, "num_attention_heads": 32,
              "num_key_value_heads": 4, "head_dim": 128, "vocab_size": 151936, "max_position_embeddings": 40960,
              "num_experts": 128, "num_experts_per_tok": 8, "moe_intermediate_size": 768, "intermediate_size": 6144}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config | changes))
    return path


def test_a_config_with_a_huge_integer_is_bad_input(tmp_path, capsys):
    path = _config(tmp_path, vocab_size=10**400)
    code, out, err = run(capsys, "estimate", str(path), "--machine", str(FIXTURES / "linux-desktop-ryzen-7950x"))
    assert (code, out) == (2, "")
    assert err == f"gpuready: error: {tmp_path / 'config.json'}: 'vocab_size' is implausibly large (an integer of 401 digits; at most 2,147,483,647)\n"


@pytest.mark.parametrize("step", ["2", 1.5, [2], -1])
def test_a_config_whose_decoder_sparse_step_is_not_a_whole_number_is_bad_input(tmp_path, capsys, step):
    code, out, err = run(capsys, "estimate", str(_config(tmp_path, decoder_sparse_step=step)), "--machine", str(FIXTURES / "linux-desktop-ryzen-7950x"))
    assert (code, out, err) == (2, "", f"gpuready: error: {tmp_path / 'config.json'}: 'decoder_sparse_step' must be a positive whole number (got {step!r})\n")


def test_a_config_whose_dense_layers_are_not_numbers_is_bad_input(tmp_path, capsys):
    code, _, err = run(capsys, "estimate", str(_config(tmp_path, mlp_only_layers=[[1]])), "--machine", str(FIXTURES / "linux-desktop-ryzen-7950x"))
    assert (code, err) == (2, f"gpuready: error: {tmp_path / 'config.json'}: 'mlp_only_layers' must be a list of layer numbers (got [[1]])\n")


# --- a GPU that was seen and could not be read is a Problem naming the file ------------------

PCI_4090 = {
    "/sys/bus/pci/devices/0000:01:00.0/vendor": "0x10de\n",
    "/sys/bus/pci/devices/0000:01:00.0/device": "0x2684\n",
    "/sys/bus/pci/devices/0000:01:00.0/class": "0x030000\n",
    "/sys/bus/pci/devices/0000:01:00.0/uevent": "DRIVER=nvidia\nPCI_SLOT_NAME=0000:01:00.0\n",
}


@pytest.mark.parametrize("name", ["vendor", "device", "uevent"])
def test_a_garbled_sysfs_file_of_a_gpu_is_a_warning_naming_it(name):
    path = f"/sys/bus/pci/devices/0000:01:00.0/{name}"
    files = PCI_4090 | {path: "\x00\x13garbage\x7f"}
    if name == "uevent":
        files.pop("/sys/bus/pci/devices/0000:01:00.0/class")  # the class then comes from uevent alone
    assert pci.unreadable_devices(FakeHost(files=files)) == [
        Problem("pci", f"{path}: unreadable (garbled); the device at 0000:01:00.0 may be a GPU or NPU missing from this report",
                "Compare with `lspci -nn`; a sysfs file that reads garbage points at a kernel, driver or virtualisation fault.", "warning")
    ]


def test_a_garbled_file_of_a_network_card_says_nothing():
    files = {"/sys/bus/pci/devices/0000:02:00.0/vendor": "0x8086\n", "/sys/bus/pci/devices/0000:02:00.0/class": "0x020000\n",
             "/sys/bus/pci/devices/0000:02:00.0/device": "junk"}
    assert pci.unreadable_devices(FakeHost(files=files)) == []


def test_a_recorded_gpus_garbled_vendor_file_reaches_the_report(tmp_path):
    machine = copy_machine(tmp_path, "nvidia-driver-not-loaded")
    (machine / "root/sys/bus/pci/devices/0000:01:00.0/vendor").write_text("0xZZZZ\n")
    hardware, problems = probe_hardware(ReplayHost(machine))
    assert hardware.gpus == ()
    assert [p.probe for p in problems if "/sys/bus/pci/devices/0000:01:00.0/vendor" in p.message] == ["pci"]


# --- a malformed recording is one Problem naming the file --------------------------------


@pytest.mark.parametrize("damage", ["truncated", "not json", "a list", "a directory"])
def test_a_malformed_library_readout_is_one_problem_naming_the_file(tmp_path, damage):
    machine = copy_machine(tmp_path, "nvidia-rtx4090")
    path = machine / "libraries" / "nvml.json"
    text = path.read_text()
    if damage == "a directory":
        path.unlink()
        path.mkdir()
    else:
        path.write_text({"truncated": text[: len(text) // 2], "not json": "NVML says hello", "a list": "[1, 2]"}[damage])
    _, problems = probe_hardware(ReplayHost(machine))
    recording = [p for p in problems if p.probe == "recording"]
    assert len(recording) == 1 and recording[0].message.startswith("recorded file libraries/nvml.json: ")
    assert (recording[0].hint, recording[0].severity) == (RECORDING_HINT, "error")
    assert not [p for p in problems if p.hint == REPORT_HINT]


def test_a_non_integer_exit_code_is_one_problem_and_the_command_reads_as_failed(tmp_path):
    machine = copy_machine(tmp_path, "nvidia-driver-not-loaded")
    rc = next((machine / "commands").glob("nvidia-smi*.rc"))
    rc.write_text("nine\n")
    _, problems = probe_hardware(ReplayHost(machine))
    assert [p.message for p in problems if p.probe == "recording"] == [f"recorded file commands/{rc.name}: not an integer exit code ('nine')"]
    assert not [p for p in problems if p.hint == REPORT_HINT]


def test_a_directory_in_place_of_a_recorded_command_output_is_one_problem(tmp_path):
    machine = copy_machine(tmp_path, "nvidia-driver-not-loaded")
    output = next((machine / "commands").glob("nvidia-smi*.txt"))
    output.unlink()
    output.mkdir()
    _, problems = probe_hardware(ReplayHost(machine))
    assert [p.message for p in problems if p.probe == "recording"] == [f"recorded file commands/{output.name}: cannot be read (not a regular file, unreadable or too long)"]


def test_windows_memory_that_is_not_an_object_is_an_error_with_a_hint(tmp_path):
    machine = copy_machine(tmp_path, "windows-ryzen-5800x")
    path = machine / "libraries" / "windows.json"
    readout = json.loads(path.read_text())
    path.write_text(json.dumps(readout | {"memory": "garbage", "cpu": ["garbage"]}))
    hardware, problems = probe_hardware(ReplayHost(machine))
    assert hardware.memory.total_bytes is None and hardware.cpu.name is None
    assert [(p.probe, p.severity, bool(p.hint)) for p in problems if p.probe in ("cpu", "memory")] == [("cpu", "error", True), ("memory", "error", True)]
    assert not [p for p in problems if p.hint == REPORT_HINT]


def test_an_unusable_recording_is_exit_2(tmp_path, capsys):
    (tmp_path / "machine.toml").mkdir()
    code, out, err = run(capsys, "report", "--machine", str(tmp_path))
    assert (code, out) == (2, "") and err.startswith("gpuready: error: ") and err.count("\n") == 1


def test_a_fifo_in_place_of_a_file_does_not_hang_the_live_host(tmp_path):
    fifo = tmp_path / "meminfo"
    os.mkfifo(fifo)
    assert LiveHost().read_text(str(fifo)) is None


def test_a_device_in_place_of_a_file_reads_as_missing_on_the_live_host():
    # A character device is not a file a probe asks for; /dev/zero would otherwise be read until memory ran out.
    assert LiveHost().read_text("/dev/zero") is None


def test_a_file_longer_than_any_probe_reads_is_missing(tmp_path, monkeypatch):
    from gpuready import host as host_module

    monkeypatch.setattr(host_module, "MAX_TEXT_CHARS", 10)
    (tmp_path / "short").write_text("0123456789")
    (tmp_path / "long").write_text("0123456789a")
    assert [LiveHost().read_text(str(tmp_path / name)) for name in ("short", "long")] == ["0123456789", None]


def test_a_recording_that_links_out_of_itself_reads_nothing_of_this_computer(tmp_path, capsys):
    # A recording is a bug report's attachment: a link in it to /proc/cpuinfo once reported this computer's CPU as
    # the recorded one, and a link to /dev/zero hung the run while it filled memory.
    machine = tmp_path / "machine"
    shutil.copytree(FIXTURES / "linux-desktop-ryzen-7950x", machine)
    (machine / "root" / "proc" / "cpuinfo").unlink()
    (machine / "root" / "proc" / "cpuinfo").symlink_to("/proc/cpuinfo")
    (machine / "root" / "proc" / "meminfo").unlink()
    (machine / "root" / "proc" / "meminfo").symlink_to("/dev/zero")
    code, out, err = run(capsys, "report", "--json", "--machine", str(machine))
    report = json.loads(out)
    assert report["hardware"]["cpu"]["name"] is None and report["hardware"]["memory"]["total_bytes"] is None
    recording = sorted(p["message"] for p in report["problems"] if p["probe"] == "recording")
    assert "recorded file root/proc/cpuinfo: leads outside the recording (a link); read as missing" in recording
    assert "recorded file root/proc/meminfo: leads outside the recording (a link); read as missing" in recording


# --- hung commands: one budget, run side by side, named in a Problem -----------------------


class ClockHost(FakeHost):
    """A host whose commands each take ``seconds`` on a fake clock and then time out."""

    def __init__(self, clock: list[float], seconds: float, **kwargs) -> None:
        super().__init__(**kwargs)
        self.clock, self.seconds, self.timeouts = clock, seconds, []

    def run(self, argv, timeout=5.0):
        self.timeouts.append((tuple(argv), timeout))
        self.clock[0] += min(timeout, self.seconds)
        return CommandResult("timeout")


def test_each_command_gets_only_what_is_left_of_the_budget():
    clock = [100.0]
    inner = ClockHost(clock, seconds=0.4)
    host = BudgetedHost(inner, budget_s=1.0, clock=lambda: clock[0])
    for argv in (("nvidia-smi",), ("vulkaninfo",), ("rocm-smi",), ("amd-smi",)):
        host.run(argv, timeout=10.0)
    assert [round(t, 6) for _, t in inner.timeouts] == [1.0, 0.6, 0.2]  # the fourth is never started
    assert [argv for argv, _ in host.timed_out] == [("nvidia-smi",), ("vulkaninfo",), ("rocm-smi",), ("amd-smi",)]


def test_the_torch_check_keeps_its_own_timeout():
    clock = [0.0]
    inner = ClockHost(clock, seconds=0.0)
    BudgetedHost(inner, budget_s=1.0, clock=lambda: clock[0]).run(("python", "-m", "gpuready.probes.pyinfo", "--import"), timeout=30.0)
    assert inner.timeouts == [(("python", "-m", "gpuready.probes.pyinfo", "--import"), 30.0)]


class SleepyHost(FakeHost):
    """Every command sleeps out its timeout (short real sleeps) and times out."""

    def run(self, argv, timeout=5.0):
        time.sleep(timeout)
        return CommandResult("timeout")


def test_commands_started_up_front_run_side_by_side():
    argvs = [("sysctl",), ("vm_stat",), ("system_profiler",), ("vulkaninfo",)]
    start = time.monotonic()
    host = BudgetedHost(SleepyHost(platform="darwin"), budget_s=0.2, prefetch=argvs)
    results = [host.run(argv) for argv in argvs]
    elapsed = time.monotonic() - start
    assert [r.status for r in results] == ["timeout"] * 4
    assert elapsed < 0.6  # one after another would take 0.8 s


def test_every_hung_command_is_a_warning_naming_it():
    clock = [0.0]
    host = BudgetedHost(ClockHost(clock, seconds=5.0), budget_s=1.5, clock=lambda: clock[0])
    host.run(("nvidia-smi", "--query-gpu=index"), timeout=10.0)
    host.run(("vulkaninfo", "--summary"), timeout=5.0)
    already = [Problem("backends", "Vulkan: vulkaninfo timed out", None, "info")]
    assert timeout_problems(host, already) == [
        Problem("nvidia", "`nvidia-smi` did not answer within 1.5 s; what it reports is missing from this report",
                "`nvidia-smi --query-gpu=index` hangs on this machine: run it by hand to see why (a lost GPU or a broken driver often hangs it).",
                "warning")
    ]


@pytest.mark.skipif(sys.platform == "win32", reason="shell scripts stand in for the tools")
def test_a_hung_live_command_and_its_children_are_ended_within_the_timeout(tmp_path, monkeypatch):
    script = tmp_path / "nvidia-smi"
    script.write_text("#!/bin/sh\nsleep 30 &\nsleep 30\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    start = time.monotonic()
    result = LiveHost().run(("nvidia-smi",), timeout=0.3)
    assert result == CommandResult("timeout")
    assert time.monotonic() - start < 2.0


# --- record --machine, and scrubbing ------------------------------------------------------


def test_record_with_machine_rerecords_the_recording(tmp_path, capsys):
    source = FIXTURES / "nvidia-a100-mig"
    code, out, _ = run(capsys, "record", "--machine", str(source), str(tmp_path / "again"))
    assert code == 0 and out.startswith("recorded ")
    replayed = [run(capsys, "report", "--json", "--machine", str(d))[1] for d in (source, tmp_path / "again")]
    assert replayed[0] == replayed[1]
    assert "re-recorded by gpuready" in (tmp_path / "again" / "machine.toml").read_text()


def test_a_short_host_name_is_scrubbed_as_a_whole_word():
    assert Scrubber("pc").text("pc pc.lan pci epc pc2 (pc)") == "HOSTNAME HOSTNAME.lan pci epc pc2 (HOSTNAME)"


def test_mac_addresses_are_scrubbed_consistently():
    text = "eth0 3C:22:FB:aa:01:02 wlan 00-1b-44-11-3a-b7 again 3c:22:fb:AA:01:02 bus 0000:01:00.0 at 12:30:45"
    assert Scrubber(None).text(text) == "eth0 02:00:00:00:00:01 wlan 02-00-00-00-00-02 again 02:00:00:00:00:01 bus 0000:01:00.0 at 12:30:45"


# --- one failed file must not take an unrelated fact with it (issue 11) ---------------------------


def test_an_unreadable_meminfo_keeps_the_containers_memory_limit(tmp_path):
    machine = copy_machine(tmp_path, "linux-container-cgroup2")
    (machine / "root/proc/meminfo").unlink()
    hardware, problems = probe_hardware(ReplayHost(machine))
    memory = hardware.memory
    assert (memory.total_bytes, memory.available_bytes, memory.limit_source) == (None, None, "cgroup v2 /sys/fs/cgroup/memory.max")
    assert memory.limit_bytes == 8589934592  # the fixture's memory.max: 8 GiB
    assert [(p.message, p.severity) for p in problems if p.probe == "memory"] == [("cannot read /proc/meminfo; only the container limit is known", "error")]


def _first_block(name: str) -> str:
    return (FIXTURES / name / "root/proc/cpuinfo").read_text().split("\n\n")[0] + "\n"


def test_a_cpuinfo_with_one_block_counts_every_cpu_from_siblings_and_cpu_cores():
    # The first block of a real 64-core EPYC 7742 (fixture nvidia-a100-mig): siblings 128, cpu cores 64.
    host = FakeHost(files={"/proc/cpuinfo": _first_block("nvidia-a100-mig")})
    from gpuready.probes import cpu

    found, problems = cpu.probe(host)
    assert (found.logical_cores, found.physical_cores) == (128, 64)
    assert problems == [Problem("cpu", "/proc/cpuinfo lists 1 processor(s) but /proc/cpuinfo siblings counts 128; using /proc/cpuinfo siblings",
                                severity="info")]


def test_the_kernels_online_list_wins_over_a_short_cpuinfo():
    from gpuready.probes import cpu

    host = FakeHost(files={"/proc/cpuinfo": _first_block("nvidia-a100-mig"), "/sys/devices/system/cpu/online": "0-95\n"})
    found, problems = cpu.probe(host)
    assert (found.logical_cores, found.physical_cores) == (96, 64)
    assert [p.message for p in problems] == ["/proc/cpuinfo lists 1 processor(s) but /sys/devices/system/cpu/online counts 96; "
                                             "using /sys/devices/system/cpu/online"]


def test_processor_blocks_without_blank_lines_are_split_on_processor_lines():
    from gpuready.probes import cpu

    text = (FIXTURES / "linux-arm-graviton3/root/proc/cpuinfo").read_text()
    joined = "\n".join(line for line in text.splitlines() if line.strip()) + "\n"
    assert [len(cpu.parse_proc_cpuinfo(t)) for t in (text, joined)] == [4, 4]
    assert cpu.probe(ReplayHost(FIXTURES / "linux-arm-graviton3"))[0].logical_cores == 4


@pytest.mark.parametrize("sign", ["version", "WSL_DISTRO_NAME", "WSL_INTEROP", "/usr/lib/wsl"])
def test_wsl_is_recognised_without_a_microsoft_kernel_release(sign):
    from gpuready.probes import nvidia

    files = {"/dev/dxg": ""}
    environment = {}
    if sign == "version":
        files["/proc/version"] = "Linux version 5.15.153.1-microsoft-standard-WSL2\n"  # the kernel release of fixture nvidia-wsl2
    elif sign == "/usr/lib/wsl":
        files["/usr/lib/wsl/lib/libcuda.so.1"] = ""
    else:
        environment[sign] = "Ubuntu" if sign == "WSL_DISTRO_NAME" else "/run/WSL/1_interop"
    host = FakeHost(files=files, environment=environment, libraries={"nvml": {"error": "NVML_ERROR_LIBRARY_NOT_FOUND"}})
    assert nvidia.probe(host) == ([], [Problem("nvidia", "a WSL2 GPU (/dev/dxg) but the driver cannot be used: NVML_ERROR_LIBRARY_NOT_FOUND",
                                               nvidia.WSL_HINT, "warning")])


def test_a_directory_where_a_recording_holds_a_file_is_a_recording_problem(tmp_path, capsys):
    # It read as an unmounted /proc ("Is /proc mounted?") with nothing to say the recording itself was damaged.
    machine = tmp_path / "machine"
    shutil.copytree(FIXTURES / "linux-desktop-ryzen-7950x", machine)
    (machine / "root" / "proc" / "meminfo").unlink()
    (machine / "root" / "proc" / "meminfo").mkdir()
    code, out, _ = run(capsys, "report", "--json", "--machine", str(machine))
    problems = [p["message"] for p in json.loads(out)["problems"] if p["probe"] == "recording"]
    assert problems == ["recorded file root/proc/meminfo: is not a regular file; read as missing"]
