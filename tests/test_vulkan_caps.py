"""gpuready.tasks.vulkan_caps: the ggml_vulkan device line, parsed. Every line here is copied verbatim from the public
source named beside it (the same sources docs/vulkan-capabilities.md cites)."""

from __future__ import annotations

import glob
import tomllib
from pathlib import Path

import pytest

from gpuready.tasks.vulkan_caps import parse_device_line, validation_fields

ROOT = Path(__file__).resolve().parent.parent

# kyuz0/amd-strix-halo-toolboxes@67fb3a0 benchmark/results/llama-2-7b.Q4_0__vulkan_radv__fa1.log, line 2
STRIX_HALO_RADV = ("ggml_vulkan: 0 = Radeon 8060S Graphics (RADV GFX1151) (radv) | uma: 1 | fp16: 1 | bf16: 0 | warp size: 64"
                   " | shared memory: 65536 | int dot: 1 | matrix cores: KHR_coopmat")
# ggml-org/llama.cpp PR #17186, description by jeffbolznv
RTX_5090_KHR = ("ggml_vulkan: 0 = NVIDIA GeForce RTX 5090 (NVIDIA) | uma: 0 | fp16: 1 | bf16: 1 | warp size: 32"
                " | shared memory: 49152 | int dot: 1 | matrix cores: KHR_coopmat")
# ggml-org/llama.cpp PR #19281, description by jeffbolznv ("coopmat2 before")
RTX_5090_CM2 = ("ggml_vulkan: 0 = NVIDIA GeForce RTX 5090 (NVIDIA) | uma: 0 | fp16: 1 | bf16: 1 | warp size: 32"
                " | shared memory: 49152 | int dot: 1 | matrix cores: NV_coopmat2")
# ggml-org/llama.cpp PR #13324, comment by nalf3in 2025-05-07 (build 141a908a)
RTX_2070 = ("ggml_vulkan: 0 = NVIDIA GeForce RTX 2070 (NVIDIA) | uma: 0 | fp16: 1 | warp size: 32 | shared memory: 49152"
            " | int dot: 0 | matrix cores: none")
# ggml-org/llama.cpp PR #13324, comment by daniandtheweb 2025-05-08
RX_5700_XT_RADV = ("ggml_vulkan: 0 = AMD Radeon RX 5700 XT (RADV NAVI10) (radv) | uma: 0 | fp16: 1 | warp size: 32"
                   " | shared memory: 65536 | int dot: 0 | matrix cores: none")
# ggml-org/llama.cpp PR #11595, comment by 0cc4m ("Coopmat1:"), before "int dot" was printed
RTX_3090_NO_INT_DOT = ("ggml_vulkan: 0 = NVIDIA GeForce RTX 3090 (NVIDIA) | uma: 0 | fp16: 1 | warp size: 32"
                       " | shared memory: 49152 | matrix cores: KHR_coopmat")
# ggml-org/llama.cpp PR #11438, description by rare-magma, before "shared memory" was printed
RX_590 = ("ggml_vulkan: 0 = AMD Radeon RX 590 Series (RADV POLARIS10) (radv) | uma: 0 | fp16: 0 | warp size: 64"
          " | matrix cores: none")
# ggml-org/llama.cpp PR #5835, comment by DaniAndTheWeb 2024-03-03 (the early 2024 form)
RX_5700_XT_2024 = "Vulkan0: AMD Radeon RX 5700 XT (RADV NAVI10) | uma: 0 | fp16: 1 | warp size: 64"
# ggml-org/llama.cpp PR #2059, comment by sorasoras 2024-01-28 (the January 2024 form)
RX_7900_XTX_2024 = "ggml_vulkan: Using AMD Radeon RX 7900 XTX | fp16: 1 | warp size: 64"
# likelovewant/ROCmLibs-for-gfx1103-AMD780M-APU issue #50, comment by lovedheart (spacing as pasted)
RADEON_780M_WINDOWS = ("ggml_vulkan: 0 = AMD Radeon 780M Graphics (AMD proprietary driver) | uma: 1 | fp16: 1 | bf16: 1"
                       " | warp size:   64 | shared memory: 32768 | int dot: 1 | matrix cores: KHR_coopmat   ")
# ggml-org/llama.cpp issue #20097, comment by anakayub 2026-03-05 (Intel Mac, MoltenVK)
MOLTENVK_5600M = ("ggml_vulkan: 0 = AMD Radeon Pro 5600M (MoltenVK) | uma: 0 | fp16: 1 | bf16: 0 | warp size: 64"
                  " | shared memory: 65536 | int dot: 0 | matrix cores: none")


def test_current_form_states_every_capability():
    caps = parse_device_line(STRIX_HALO_RADV)
    assert caps.device_index == 0
    assert caps.device_name == "Radeon 8060S Graphics (RADV GFX1151) (radv)"
    assert caps.driver_label == "radv"
    assert (caps.uma, caps.fp16, caps.bf16, caps.int_dot) == (True, True, False, True)
    assert (caps.warp_size, caps.shared_memory_bytes) == (64, 65536)
    assert caps.matrix_cores == "KHR_coopmat" and caps.has_matrix_cores is True


@pytest.mark.parametrize("line, matrix_cores, bf16, int_dot", [
    (RTX_5090_KHR, "KHR_coopmat", True, True),
    (RTX_5090_CM2, "NV_coopmat2", True, True),
    (RTX_2070, "none", None, False),
    (RX_5700_XT_RADV, "none", None, False),
    (RTX_3090_NO_INT_DOT, "KHR_coopmat", None, None),
    (RX_590, "none", None, None),
    (MOLTENVK_5600M, "none", False, False),
])
def test_fields_absent_from_older_lines_stay_unknown(line, matrix_cores, bf16, int_dot):
    caps = parse_device_line(line)
    assert caps.matrix_cores == matrix_cores
    assert caps.has_matrix_cores is (matrix_cores != "none")
    assert caps.bf16 is bf16
    assert caps.int_dot is int_dot


def test_fp16_zero_and_missing_shared_memory():
    caps = parse_device_line(RX_590)
    assert caps.fp16 is False
    assert caps.shared_memory_bytes is None
    assert caps.driver_label == "radv"


def test_early_2024_forms_say_nothing_about_matrix_cores_or_bf16():
    old = parse_device_line(RX_5700_XT_2024)
    assert old.device_index == 0
    assert old.device_name == "AMD Radeon RX 5700 XT (RADV NAVI10)"
    assert old.driver_label is None  # "(RADV NAVI10)" is part of the device name in this form, not a driver
    assert (old.uma, old.fp16, old.warp_size) == (False, True, 64)
    assert old.matrix_cores is None and old.has_matrix_cores is None
    assert old.bf16 is None and old.int_dot is None

    oldest = parse_device_line(RX_7900_XTX_2024)
    assert oldest.device_index is None
    assert oldest.device_name == "AMD Radeon RX 7900 XTX"
    assert (oldest.uma, oldest.fp16, oldest.warp_size) == (None, True, 64)


def test_irregular_spacing_as_pasted():
    caps = parse_device_line(RADEON_780M_WINDOWS)
    assert caps.driver_label == "AMD proprietary driver"
    assert caps.warp_size == 64
    assert caps.bf16 is True
    assert caps.matrix_cores == "KHR_coopmat"


def test_newest_fields_dot2_fp4_and_coopmat2v():
    # the format string of ggml_vk_print_gpu_info since ggml-org/llama.cpp PR #25338 (fp16 prints "dot2" since #24123)
    caps = parse_device_line("ggml_vulkan: 1 = Some GPU (Some driver) | uma: 0 | fp16: dot2 | bf16: 0 | fp4: 1"
                             " | warp size: 64 | shared memory: 65536 | int dot: 1 | matrix cores: NV_coopmat2v")
    assert caps.device_index == 1
    assert (caps.fp16, caps.fp16_dot2, caps.fp4) == (True, True, True)
    assert caps.matrix_cores == "NV_coopmat2v" and caps.has_matrix_cores is True
    assert parse_device_line(RTX_2070).fp16_dot2 is None


def test_unknown_fields_are_kept_not_dropped():
    caps = parse_device_line(RTX_2070 + " | new thing: 7")
    assert caps.extra == (("new thing", "7"),)


@pytest.mark.parametrize("text", [
    "ggml_vulkan: Found 1 Vulkan devices:",
    "build: 1c398dc9e (7034)",
    "| llama 7B Q4_0 | 3.56 GiB | 6.74 B | Vulkan | 99 | pp512 | 1094.33 ± 3.06 |",
    "",
])
def test_other_log_lines_are_refused(text):
    with pytest.raises(ValueError, match="not a ggml_vulkan device line"):
        parse_device_line(text)


@pytest.mark.parametrize("line, message", [
    (RTX_2070.replace("fp16: 1", "fp16: yes"), "expected 0 or 1"),
    (RTX_2070.replace("warp size: 32", "warp size: x"), "expected a whole number"),
    ("ggml_vulkan: 0 =  | uma: 0", "names no device"),
])
def test_malformed_values_are_refused(line, message):
    with pytest.raises(ValueError, match=message):
        parse_device_line(line)


def test_validation_fields_carry_only_what_the_line_states():
    assert validation_fields(RTX_2070) == {
        "vulkan_device_line": RTX_2070, "vulkan_fp16": True, "vulkan_int_dot": False, "vulkan_matrix_cores": "none"}
    assert validation_fields(RX_5700_XT_2024) == {"vulkan_device_line": RX_5700_XT_2024, "vulkan_fp16": True}
    assert validation_fields(RADEON_780M_WINDOWS)["vulkan_device_line"] == RADEON_780M_WINDOWS.strip()


def test_validation_rows_agree_with_their_device_line():
    """Every text-generation row that records a ggml_vulkan line carries exactly the fields that line states."""
    checked = inferred = 0
    for path in sorted(glob.glob(str(ROOT / "benchmarks" / "validation" / "text-generation*.toml"))):
        with open(path, "rb") as handle:
            rows = tomllib.load(handle)["measurements"]
        for row in rows:
            recorded = {key: value for key, value in row.items() if key.startswith("vulkan_")}
            if not recorded:
                continue
            assert row["backend"] == "vulkan", (path, row["source"])
            if "vulkan_device_line" not in row:
                # A capability inferred from the same machine's line in the same source says so, and why.
                assert set(recorded) == {"vulkan_matrix_cores", "vulkan_caps_note"}, (path, row["source"])
                assert "Inferred" in recorded["vulkan_caps_note"], (path, row["source"])
                inferred += 1
                continue
            assert recorded == validation_fields(row["vulkan_device_line"]), (path, row["source"])
            checked += 1
    assert checked >= 25 and inferred <= 2
