"""AMD VRAM from `rocm-smi --showmeminfo vram --json` when sysfs has no mem_info_vram_total."""

from __future__ import annotations

import shutil
from pathlib import Path

from gpuready.host import ReplayHost
from gpuready.probes import amd, amd_tools

MACHINES = Path(__file__).parent / "fixtures" / "machines"
# An RX 7900 XT as rocm-smi prints it (https://github.com/marimo-team/marimo/issues/9237).
ROCM_SMI = '{"card0": {"VRAM Total Memory (B)": "21458059264", "VRAM Total Used Memory (B)": "27856896"}}'


def test_rocm_smi_json_gives_total_and_used_vram_per_card_in_card_order():
    two = '{"card1": {"VRAM Total Memory (B)": "8573157376", "VRAM Total Used Memory (B)": "N/A"}, "card0": ' + ROCM_SMI[10:]
    assert amd_tools.parse_rocm_smi_vram(ROCM_SMI) == [(21458059264, 27856896)]
    assert amd_tools.parse_rocm_smi_vram(two) == [(21458059264, 27856896), (8573157376, None)]


def test_anything_but_rocm_smi_json_gives_no_figures():
    assert [amd_tools.parse_rocm_smi_vram(t) for t in ("", "WARNING: No JSON data to report", "[1, 2]", '{"system": {"Driver version": "6.7"}}')] == [[], [], [], []]


def test_a_card_without_vram_files_in_sysfs_takes_its_vram_from_rocm_smi():
    gpus, problems = amd.probe(ReplayHost(MACHINES / "amd-rx7900xt-rocm-smi"))
    assert [(g.name, g.memory_total_bytes, g.memory_free_bytes, g.source) for g in gpus] == [
        ("AMD Radeon RX 7900 XT", 21458059264, 21458059264 - 27856896, "sysfs+kfd+rocm-smi")]
    assert problems == []


def test_without_vram_files_or_rocm_smi_the_unreadable_vram_is_a_warning_naming_what_failed(tmp_path):
    machine = tmp_path / "machine"
    shutil.copytree(MACHINES / "amd-rx7900xt-rocm-smi", machine)
    (machine / "commands" / "rocm-smi_showmeminfo_vram_json.txt").unlink()
    gpus, problems = amd.probe(ReplayHost(machine))
    assert [(g.name, g.memory_total_bytes) for g in gpus] == [("AMD Radeon RX 7900 XT", None)]
    assert [(p.severity, p.message) for p in problems] == [(
        "warning", "AMD Radeon RX 7900 XT: cannot read its VRAM size (/sys/class/drm/card1/device/mem_info_vram_total is missing; "
        "rocm-smi is not installed)")]


def test_rocm_smi_listing_another_number_of_cards_is_not_guessed_from(tmp_path):
    machine = tmp_path / "machine"
    shutil.copytree(MACHINES / "amd-rx7900xt-rocm-smi", machine)
    (machine / "commands" / "rocm-smi_showmeminfo_vram_json.txt").write_text(
        '{"card0": {"VRAM Total Memory (B)": "1", "VRAM Total Used Memory (B)": "0"}, "card1": {"VRAM Total Memory (B)": "2"}}')
    gpus, problems = amd.probe(ReplayHost(machine))
    assert [g.memory_total_bytes for g in gpus] == [None]
    assert "rocm-smi listed 2 card(s) with VRAM figures for 1 AMD GPU(s)" in problems[0].message
