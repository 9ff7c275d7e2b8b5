"""psutil as one more witness for the Linux CPU counts: recorded, replayed, and which source won."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import psutil

from gpuready.hardware import Problem
from gpuready.host import LiveHost, ReplayHost
from gpuready.probes import cpu
from gpuready.probes.cpu_counts import Counts, cross_check
from gpuready.recording import RecordingHost
from gpuready.testing import FakeHost

MACHINES = Path(__file__).parent / "fixtures" / "machines"


def _with_psutil(tmp_path: Path, machine: str, readout) -> ReplayHost:
    target = tmp_path / machine
    shutil.copytree(MACHINES / machine, target)
    (target / "libraries").mkdir(exist_ok=True)
    (target / "libraries" / "psutil.json").write_text(json.dumps(readout))
    return ReplayHost(target)


def test_an_older_recording_without_psutil_keeps_its_counts_and_source():
    host = ReplayHost(MACHINES / "linux-desktop-ryzen-7950x")
    assert host.library("psutil") is None
    found, problems = cpu.probe(host)
    assert (found.logical_cores, found.physical_cores, found.source, problems) == (32, 16, "proc_cpuinfo", [])


def test_psutil_agreeing_with_cpuinfo_is_named_in_the_source(tmp_path):
    found, problems = cpu.probe(_with_psutil(tmp_path, "linux-desktop-ryzen-7950x", {"logical": 32, "physical": 16}))
    assert (found.logical_cores, found.physical_cores, found.source, problems) == (
        32, 16, "proc_cpuinfo; counts: /proc/cpuinfo, psutil agrees", [])


def test_psutil_wins_over_counts_cpuinfo_text_implies(tmp_path):
    # cpuinfo lists 32 blocks; psutil (the kernel's online CPUs and sysfs topology) says 24 and 12.
    found, problems = cpu.probe(_with_psutil(tmp_path, "linux-desktop-ryzen-7950x", {"logical": 24, "physical": 12}))
    assert (found.logical_cores, found.physical_cores, found.source) == (24, 12, "proc_cpuinfo; counts: psutil")
    assert problems == [
        Problem("cpu", "/proc/cpuinfo implies 32 logical CPUs but psutil counts 24; using psutil", severity="info"),
        Problem("cpu", "/proc/cpuinfo implies 16 cores but psutil counts 12; using psutil", severity="info"),
    ]


def test_a_broken_or_failed_psutil_readout_changes_nothing(tmp_path):
    for readout in ({"error": "PSUTIL_NOT_INSTALLED", "detail": "No module named 'psutil'"}, {"logical": "32", "physical": True},
                    {"logical": 0, "physical": None}, [1, 2]):
        found, problems = cpu.probe(_with_psutil(tmp_path / str(len(str(readout))), "linux-desktop-ryzen-7950x", readout))
        assert (found.logical_cores, found.physical_cores, found.source, problems) == (32, 16, "proc_cpuinfo", []), readout


def test_the_kernels_cpu_list_wins_over_psutil():
    assert cross_check(64, 32, "/sys/devices/system/cpu/online", {"logical": 48, "physical": 32}) == Counts(
        64, 32, "logical from /sys/devices/system/cpu/online, cores from /proc/cpuinfo",
        (Problem("cpu", "psutil counts 48 logical CPUs but /sys/devices/system/cpu/online lists 64; using /sys/devices/system/cpu/online", severity="info"),),
    )


def test_psutil_fills_an_unknown_core_count_and_ignores_more_cores_than_cpus():
    assert cross_check(8, None, "/proc/cpuinfo", {"logical": 8, "physical": 4}) == Counts(8, 4, "logical from /proc/cpuinfo, cores from psutil")
    assert cross_check(8, 4, "/proc/cpuinfo", {"logical": 8, "physical": 16}) == Counts(8, 4, "/proc/cpuinfo, psutil agrees")


def test_the_live_readout_is_psutils_own_counts():
    readout = LiveHost().library("psutil")
    assert (readout["logical"], readout["physical"]) == (psutil.cpu_count(), psutil.cpu_count(logical=False))


def test_a_recording_keeps_the_psutil_readout_and_replays_it(tmp_path):
    cpuinfo = (MACHINES / "linux-desktop-ryzen-7950x" / "root" / "proc" / "cpuinfo").read_text()
    inner = FakeHost(files={"/proc/cpuinfo": cpuinfo}, libraries={"psutil": {"logical": 32, "physical": 16, "version": "7.0.0"}})
    recorder = RecordingHost(inner, tmp_path, hostname="")
    recorded, _ = cpu.probe(recorder)
    recorder.finish("7950X with psutil", "0")
    assert json.loads((tmp_path / "libraries" / "psutil.json").read_text()) == {"logical": 32, "physical": 16, "version": "7.0.0"}
    replayed, _ = cpu.probe(ReplayHost(tmp_path))
    assert replayed == recorded
    assert replayed.source == "proc_cpuinfo; counts: /proc/cpuinfo, psutil agrees"
