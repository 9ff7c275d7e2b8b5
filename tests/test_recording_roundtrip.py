"""`gpuready record` on the machine running the tests, replayed: the same machine comes back."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

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


GROUPS = """root:x:0:
daemon:x:1:
video:x:44:alice,bob
sudo:x:27:alice
render:x:993:alice,bob,carol
alice:x:1000:
bob:x:1001:
docker:x:998:alice
"""


def amd_machine(tmp_path: Path, groups: str, name: str = "amd") -> Path:
    machine = tmp_path / name
    shutil.copytree(FIXTURES / "amd-rx7900xtx", machine)
    (machine / "root" / "etc" / "group").write_text(groups)
    return machine


def test_a_recording_keeps_of_etc_group_only_the_render_and_video_gids(tmp_path):
    again = replays_alike(amd_machine(tmp_path, GROUPS), tmp_path / "again")
    assert (again / "root" / "etc" / "group").read_text() == "video:x:44:\nrender:x:993:\n"  # no user or other group named


@pytest.mark.parametrize("groups, counted", [
    (GROUPS, True),                                        # in render (993)
    ("video:x:44:alice\nrender:x:995:\n", False),         # render is a group this user is not in
    ("video:x:44:alice\nwheel:x:10:\n", True),            # no render group: video decides
    ("render:x:993:\nrender:x:995:\n", False),            # the last line of a group wins, as in the probe
    ("users:x:100:\n", True),                              # neither group: cannot be told, the GPU stays counted
])
def test_the_reduced_etc_group_gives_the_same_access_answer_on_replay(tmp_path, groups, counted):
    machine = amd_machine(tmp_path, groups)
    replays_alike(machine, tmp_path / "again")
    gpus = probe_hardware(ReplayHost(tmp_path / "again"))[0].gpus
    assert [gpu.counted for gpu in gpus] == [counted]


def test_podmans_containerenv_is_recorded_empty_and_still_says_container(tmp_path):
    machine = tmp_path / "podman"
    shutil.copytree(FIXTURES / "linux-container-cgroup2", machine)
    (machine / "root" / ".dockerenv").unlink()
    (machine / "root" / "run").mkdir()
    (machine / "root" / "run" / ".containerenv").write_text(
        'engine="podman-4.9.3"\nname="alice-finance-db"\nid="' + "ab" * 32 + '"\nimage="registry.corp.example/alice/db:latest"\n'
        'imageid="' + "cd" * 32 + '"\nrootless=1\n')
    hardware, _ = probe_hardware(ReplayHost(machine))
    assert hardware.in_container
    again = replays_alike(machine, tmp_path / "again")
    assert (again / "root" / "run" / ".containerenv").read_text() == ""
