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
        "rocm-smi is not installed; amd-smi is not installed)")]


def test_rocm_smi_listing_another_number_of_cards_is_not_guessed_from(tmp_path):
    machine = tmp_path / "machine"
    shutil.copytree(MACHINES / "amd-rx7900xt-rocm-smi", machine)
    (machine / "commands" / "rocm-smi_showmeminfo_vram_json.txt").write_text(
        '{"card0": {"VRAM Total Memory (B)": "1", "VRAM Total Used Memory (B)": "0"}, "card1": {"VRAM Total Memory (B)": "2"}}')
    gpus, problems = amd.probe(ReplayHost(machine))
    assert [g.memory_total_bytes for g in gpus] == [None]
    assert "rocm-smi listed 2 card(s) with VRAM figures for 1 AMD GPU(s); amd-smi is not installed" in problems[0].message


# `amd-smi metric --mem-usage --json` as amdsmi_cli writes it (ROCm/amdsmi 0ceca28f): a list, sizes in MiB labelled "MB".
AMD_SMI = (MACHINES / "amd-rx7900xt-amd-smi" / "commands" / "amd-smi_metric_mem-usage_json.txt").read_text()


def test_amd_smi_json_gives_total_and_used_vram_per_gpu_in_mib():
    assert amd_tools.parse_amd_smi_mem(AMD_SMI) == [(20464 * 1024**2, 26 * 1024**2)]


def test_amd_smi_json_in_its_gpu_data_form_with_a_warning_line_and_n_a_values_is_read_in_gpu_order():
    text = ('WARNING: User is missing the following required groups: render, video\n'
            '{"gpu_data": [{"gpu": 1, "mem_usage": {"total_vram": "N/A", "used_vram": "N/A"}},'
            ' {"gpu": 0, "mem_usage": {"total_vram": {"value": 196592, "unit": "MB"}, "used_vram": {"value": 283, "unit": "MB"}}}]}')
    assert amd_tools.parse_amd_smi_mem(text) == [(196592 * 1024**2, 283 * 1024**2), (None, None)]
    assert [amd_tools.parse_amd_smi_mem(t) for t in ("", "[]", '{"gpu_data": 3}', "[{}]")] == [[], [], [], []]


def test_without_rocm_smi_the_vram_comes_from_amd_smi():
    gpus, problems = amd.probe(ReplayHost(MACHINES / "amd-rx7900xt-amd-smi"))
    assert [(g.name, g.memory_total_bytes, g.memory_free_bytes, g.source) for g in gpus] == [
        ("AMD Radeon RX 7900 XT", 20464 * 1024**2, 20438 * 1024**2, "sysfs+kfd+amd-smi")]
    assert problems == []
