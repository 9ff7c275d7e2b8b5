"""Privacy audit (issue 11): reports and recordings of every fixture machine and of the live test machine
carry no serial numbers, UUIDs, MAC addresses, host names, user names or home paths, unless
`record --include-identifiers` opts in."""

from __future__ import annotations

import getpass
import json
import os
import platform
import re
from pathlib import Path

import pytest

from gpuready.frontends.cli import main
from gpuready.host import ReplayHost
from gpuready.probes import probe_hardware
from gpuready.recording import RecordingHost

FIXTURES = Path(__file__).parent / "fixtures" / "machines"
MACHINES = sorted(p.name for p in FIXTURES.iterdir() if (p / "machine.toml").exists())

# A UUID as a word or right after "pod" (a Kubernetes pod UID in a cgroup path), with hyphens or systemd's underscores.
UUID = re.compile(r"(?:(?<![0-9A-Za-z])|(?<=pod))[0-9a-fA-F]{8}([-_])[0-9a-fA-F]{4}\1[0-9a-fA-F]{4}\1[0-9a-fA-F]{4}\1[0-9a-fA-F]{12}(?![0-9A-Za-z])")
PLACEHOLDER_UUID = re.compile(r"^00000000([-_])0000(?:\1)0000(?:\1)0000(?:\1)\d{12}$")
# A container id (64 hex digits, or 32): placeholders are numbers padded with zeros.
CONTAINER_ID = re.compile(r"(?<![0-9a-fA-F])[0-9a-f]{32}(?:[0-9a-f]{32})?(?![0-9a-fA-F])")
MAC = re.compile(r"(?<![0-9A-Fa-f:-])[0-9A-Fa-f]{2}([:-])(?:[0-9A-Fa-f]{2}\1){4}[0-9A-Fa-f]{2}(?![0-9A-Fa-f:-])")
SERIAL = re.compile(r"(?im)^\s*(?:serial(?: number)?|board_serial|product_serial)\s*[:=]\s*(?!REDACTED)\S+")
# A JSON "key": "value" whose key names a serial number or device id (system_profiler -json's
# "_spdisplays_display-serial-number", "platform_UUID", "provisioning_UDID"), not yet replaced.
SERIAL_JSON = re.compile(r'(?i)"[^"\n]*(?:serial|uuid|udid)[^"\n]*"\s*:\s*(?!"REDACTED"|"(?:(?:GPU|MIG)-)?00000000-0000-0000-0000-\d{12}")("[^"\n]+"|\d+)')


def identifiers(text: str, names: tuple[str, ...] = ()) -> list[str]:
    """Every identifier in ``text``: real UUIDs (not placeholders), MACs (not 02:00:00:00:... placeholders), serials, given names as whole words."""
    found = [m.group(0) for m in UUID.finditer(text) if not PLACEHOLDER_UUID.match(m.group(0))]
    found += [m.group(0) for m in CONTAINER_ID.finditer(text) if not m.group(0).startswith("0" * 24)]
    found += [m.group(0) for m in MAC.finditer(text) if not m.group(0).lower().replace("-", ":").startswith("02:00:00:00:")]
    found += [m.group(0).strip() for m in SERIAL.finditer(text)]
    found += [m.group(0) for m in SERIAL_JSON.finditer(text)]
    for name in names:
        found += re.findall(rf"(?<![A-Za-z0-9_.-]){re.escape(name)}(?![A-Za-z0-9_-])", text)
    return found


def outputs(capsys, machine: str, directory: Path) -> dict[str, str]:
    """The JSON report, the text report and every file of a recording of ``machine`` ("live" for this machine)."""
    argv = [] if machine == "live" else ["--machine", machine]
    texts = {}
    for name, command in (("report.json", ["report", "--json"]), ("report.txt", ["report"])):
        assert main([*command, *argv]) == 0
        texts[name] = capsys.readouterr().out
    assert main(["record", *argv, str(directory)]) == 0
    capsys.readouterr()
    texts |= {str(p.relative_to(directory)): p.read_text(errors="replace") for p in sorted(directory.rglob("*")) if p.is_file()}
    return texts


@pytest.mark.parametrize("machine", MACHINES)
def test_a_fixture_machines_reports_and_re_recording_hold_no_identifiers(capsys, tmp_path, machine):
    found = {name: identifiers(text) for name, text in outputs(capsys, str(FIXTURES / machine), tmp_path / "again").items()}
    assert {name: ids for name, ids in found.items() if ids} == {}


def _personal_names() -> tuple[str, ...]:
    names = [platform.node(), str(Path.home())]
    user = getpass.getuser()
    if user != "root":  # "root" is also /etc/group's first group and a word in paths: not personal
        names.append(user)
    return tuple(n for n in names if n and n != "/")


def test_the_live_machines_reports_and_recording_hold_no_identifiers(capsys, tmp_path):
    found = {name: identifiers(text, _personal_names()) for name, text in outputs(capsys, "live", tmp_path / "live").items()}
    assert {name: ids for name, ids in found.items() if ids} == {}


def test_include_identifiers_keeps_them_in_a_recording(tmp_path):
    machine = tmp_path / "machine"
    (machine / "root" / "etc").mkdir(parents=True)
    (machine / "machine.toml").write_text('platform = "linux"\narch = "x86_64"\n')
    (machine / "libraries").mkdir()
    uuid = "GPU-3f1c2a4e-8b7d-4c21-9e5f-0a1b2c3d4e5f"
    (machine / "libraries" / "nvml.json").write_text(json.dumps({"devices": [{"index": 0, "name": "NVIDIA GeForce RTX 4090", "uuid": uuid}]}))
    for scrub, expected in ((True, "GPU-00000000-0000-0000-0000-000000000001"), (False, uuid)):
        target = tmp_path / f"scrub-{scrub}"
        probe_hardware(RecordingHost(ReplayHost(machine), target, hostname="pc", scrub=scrub))
        assert json.loads((target / "libraries" / "nvml.json").read_text())["devices"][0]["uuid"] == expected


def test_record_include_identifiers_is_a_flag_of_record(capsys, tmp_path):
    assert main(["record", "--include-identifiers", "--machine", str(FIXTURES / "nvidia-rtx4090"), str(tmp_path / "r")]) == 0
    assert "--include-identifiers" in capsys.readouterr().err
    assert os.path.exists(tmp_path / "r" / "machine.toml")


MAC_SERIALS = {
    "_spdisplays_display-serial-number": "3c2f1a09",
    "spdisplays_display-serial-number": "C02XG0FDH7JY",
    "spdisplays_serial-number": "FVFXC2ABQ6L4",
    "serial_number": 123456789,
    "platform_UUID": "3F1C2A4E-8B7D-4C21-9E5F-0A1B2C3D4E5F",
    "provisioning_UDID": "00008112-001A2B3C4D5E6F70",
}


def _mac_with_serials(tmp_path: Path) -> Path:
    """mac-m2-air-16gb whose system_profiler JSON names its display's serial numbers and the Mac's UUID/UDID, as real ones do."""
    import shutil

    machine = tmp_path / "mac"
    shutil.copytree(FIXTURES / "mac-m2-air-16gb", machine)
    answer = machine / "commands" / "system-profiler_SPDisplaysDataType_json.txt"
    data = json.loads(answer.read_text())
    data["SPDisplaysDataType"][0]["spdisplays_ndrvs"][0] |= MAC_SERIALS
    answer.write_text(json.dumps(data, indent=2))
    return machine


def test_a_recording_replaces_serials_and_ids_named_by_json_keys(capsys, tmp_path):
    machine = _mac_with_serials(tmp_path)
    assert main(["record", "--machine", str(machine), str(tmp_path / "again")]) == 0
    assert "serial numbers, UUIDs, MAC addresses and the host name were replaced" in capsys.readouterr().err
    recorded = (tmp_path / "again" / "commands" / "system-profiler_SPDisplaysDataType_json.txt").read_text()
    display = json.loads(recorded)["SPDisplaysDataType"][0]["spdisplays_ndrvs"][0]
    assert {key: display[key] for key in MAC_SERIALS} == {
        key: ("00000000-0000-0000-0000-000000000001" if key == "platform_UUID" else "REDACTED") for key in MAC_SERIALS
    }
    assert identifiers(recorded) == []
    assert all(str(value) not in recorded for value in MAC_SERIALS.values())
    assert display["_name"] == "Color LCD"  # the rest is kept


@pytest.mark.parametrize("line, kept", [
    ("Serial Number (system): C02XG0FDH7JY", "Serial Number (system): REDACTED"),
    ("Provisioning UDID: 00008112-001A2B3C4D5E6F70", "Provisioning UDID: REDACTED"),
    ("Serial\t\t: 10000000abcdef01", "Serial\t\t: REDACTED"),
    ("GPU UUID : GPU-3f1c2a4e-8b7d-4c21-9e5f-0a1b2c3d4e5f", "GPU UUID : GPU-00000000-0000-0000-0000-000000000001"),
    ("GPU 0: NVIDIA A100 (UUID: GPU-3f1c2a4e-8b7d-4c21-9e5f-0a1b2c3d4e5f)", "GPU 0: NVIDIA A100 (UUID: GPU-00000000-0000-0000-0000-000000000001)"),
])
def test_a_recording_replaces_serials_named_at_the_start_of_a_line(line, kept):
    from gpuready.recording import Scrubber

    assert Scrubber("pc").text(f"{line}\n\nnext\n") == f"{kept}\n\nnext\n"


def test_include_identifiers_keeps_json_serials(capsys, tmp_path):
    machine = _mac_with_serials(tmp_path)
    assert main(["record", "--include-identifiers", "--machine", str(machine), str(tmp_path / "again")]) == 0
    capsys.readouterr()
    recorded = (tmp_path / "again" / "commands" / "system-profiler_SPDisplaysDataType_json.txt").read_text()
    assert all(str(value) in recorded for value in MAC_SERIALS.values())


POD_UID = "1b2c3d4e-5f6a-7b8c-9d0e-1f2a3b4c5d6e"
CONTAINER = "3f" * 32


def kubernetes_pod(tmp_path: Path, systemd: bool) -> Path:
    """linux-container-cgroup2 as a Kubernetes pod's container, its 4 GiB limit in the pod's cgroup (cgroupfs or systemd driver)."""
    import shutil

    machine = tmp_path / ("pod-systemd" if systemd else "pod")
    shutil.copytree(FIXTURES / "linux-container-cgroup2", machine)
    if systemd:
        cgroup = (f"kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{POD_UID.replace('-', '_')}.slice/"
                  f"cri-containerd-{CONTAINER}.scope")
    else:
        cgroup = f"kubepods/burstable/pod{POD_UID}/{CONTAINER}"
    (machine / "root" / "proc" / "self" / "cgroup").write_text(f"0::/{cgroup}\n")
    directory = machine / "root" / "sys" / "fs" / "cgroup" / cgroup
    directory.mkdir(parents=True)
    (directory / "memory.max").write_text(f"{4 * 1024**3}\n")
    (directory / "memory.current").write_text(f"{1024**3}\n")
    return machine


@pytest.mark.parametrize("systemd", [False, True])
def test_a_kubernetes_pods_uid_and_container_id_stay_out_of_reports_and_recordings(capsys, tmp_path, systemd):
    texts = outputs(capsys, str(kubernetes_pod(tmp_path, systemd)), tmp_path / "again")
    names = list(texts) + [str(p) for p in (tmp_path / "again").rglob("*")]  # recorded path names too
    everything = "\n".join(list(texts.values()) + names)
    for secret in (POD_UID, POD_UID.replace("-", "_"), CONTAINER):
        assert secret not in everything
    assert {name: ids for name, ids in ((name, identifiers(text)) for name, text in texts.items()) if ids} == {}
    report = json.loads(texts["report.json"])
    assert report["hardware"]["memory"]["limit_bytes"] == 4 * 1024**3  # the limit is still found
    assert "pod<uuid>" in report["hardware"]["memory"]["limit_source"]


def test_a_recording_keeps_only_the_process_ids_the_amd_probe_reads(capsys, tmp_path):
    machine = FIXTURES / "amd-rx7900xtx"
    target = tmp_path / "again"
    assert main(["record", "--machine", str(machine), str(target)]) == 0
    status = (target / "root" / "proc" / "self" / "status").read_text()
    assert [line.split(":")[0] for line in status.splitlines()] == ["Uid", "Gid", "Groups"]
    # ...and the replay still tells that this user may open /dev/kfd (the render group)
    assert probe_hardware(ReplayHost(target))[0].gpus == probe_hardware(ReplayHost(machine))[0].gpus
