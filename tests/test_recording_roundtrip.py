"""`gpuready record` on the machine running the tests, replayed: the same machine comes back."""

from __future__ import annotations

import dataclasses

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
