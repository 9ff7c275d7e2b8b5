"""`gpuready record` on the machine running the tests, replayed: the same machine comes back."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

from gpuready.hardware import to_dict
from gpuready.host import LiveHost, ReplayHost
from gpuready.probes import probe_hardware
from gpuready.recording import RecordingHost


def _stable(hardware) -> dict:
    """The hardware without what changes from one moment to the next (free memory, cgroup usage)."""
    memory = dataclasses.replace(hardware.memory, available_bytes=None, limit_usage_bytes=None)
    return to_dict(dataclasses.replace(hardware, memory=memory))


def test_a_recording_of_this_machine_replays_as_the_same_machine(tmp_path):
    recorder = RecordingHost(LiveHost(), tmp_path / "machine")
    recorded, recorded_problems = probe_hardware(recorder)
    recorder.finish("this test machine", "test")
    replayed, replayed_problems = probe_hardware(ReplayHost(tmp_path / "machine"))
    assert _stable(replayed) == _stable(recorded)
    assert replayed_problems == recorded_problems


FIXTURES = Path(__file__).parent / "fixtures" / "machines"


def replays_alike(machine: Path, directory: Path) -> Path:
    """Record ``machine`` (scrubbed) into ``directory``, replay that, and check the probes answer as they did."""
    recorder = RecordingHost(ReplayHost(machine), directory, hostname="pc")
    recorded, recorded_problems = probe_hardware(recorder)
    recorder.finish("round trip", "test")
    replayed, replayed_problems = probe_hardware(ReplayHost(directory))
    assert to_dict(replayed) == to_dict(recorded)
    assert replayed_problems == recorded_problems
    return directory


def test_a_mac_whose_serials_are_replaced_replays_as_the_same_mac(tmp_path):
    machine = tmp_path / "mac"
    shutil.copytree(FIXTURES / "mac-m2-air-16gb", machine)
    answer = machine / "commands" / "system-profiler_SPDisplaysDataType_json.txt"
    data = json.loads(answer.read_text())
    data["SPDisplaysDataType"][0]["spdisplays_ndrvs"][0]["_spdisplays_display-serial-number"] = "3c2f1a09"
    data["SPDisplaysDataType"][0]["spdisplays_serial-number"] = "FVFXC2ABQ6L4"
    answer.write_text(json.dumps(data, indent=2))
    again = replays_alike(machine, tmp_path / "again")
    assert "3c2f1a09" not in (again / "commands" / answer.name).read_text()


def test_a_kubernetes_pods_recording_with_its_uid_replaced_replays_with_the_same_limit(tmp_path):
    from test_privacy_audit import kubernetes_pod

    for systemd in (False, True):
        again = replays_alike(kubernetes_pod(tmp_path, systemd), tmp_path / f"again-{systemd}")
        recorded = (again / "root" / "proc" / "self" / "cgroup").read_text()
        assert "1b2c3d4e" not in recorded and ("pod00000000_0000_0000_0000_" if systemd else "pod00000000-0000-0000-0000-") in recorded
