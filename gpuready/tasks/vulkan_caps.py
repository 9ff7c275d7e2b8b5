"""Read the per-device line llama.cpp's Vulkan backend prints at start-up.

ggml-vulkan prints one line per device when it initialises, e.g.

    ggml_vulkan: 0 = NVIDIA GeForce RTX 2070 (NVIDIA) | uma: 0 | fp16: 1 | warp size: 32 | shared memory: 49152 | int dot: 0 | matrix cores: none

(ggml/src/ggml-vulkan/ggml-vulkan.cpp, ggml_vk_print_gpu_info). The fields grew over time: early 2024 builds print
"ggml_vulkan: Using NAME | fp16: 1 | warp size: 64" or "Vulkan0: NAME | uma: 0 | fp16: 1 | warp size: 64"; later
builds add "matrix cores" (none / KHR_coopmat / NV_coopmat2, Dec 2024), "shared memory" (Feb 2025), "int dot"
(Mar 2025), "bf16" (Jul 2025), "fp16: dot2" (Jun 2026), "fp4" and "NV_coopmat2v" (Jul 2026). The line says
which paths the run could take: matrix cores decide whether prompt-processing matmuls run on the tensor/matrix units
(coopmat shaders) or on the scalar shader at the vector rate; bf16 decides whether BF16 weights are multiplied
natively; int dot whether the integer-dot (DP4A-style) quantized paths are available. See docs/vulkan-capabilities.md.

`parse_device_line` is pure: it states only what the line states. A field the line does not print is None, never a
guessed default, so an old-format line says nothing about bf16 or matrix cores.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# "ggml_vulkan: 0 = NAME | ...", "ggml_vulkan: Using NAME | ...", "Vulkan0: NAME | ..."
_PREFIX = re.compile(r"^\s*(?:ggml_vulkan:\s*(?:(?P<index>\d+)\s*=|Using)\s*|Vulkan(?P<vindex>\d+):\s*)(?P<rest>.*)$")
# the driver llama.cpp appends to the device name, e.g. "(radv)", "(NVIDIA)", "(AMD proprietary driver)"
_TRAILING_PAREN = re.compile(r"\(([^()]*)\)\s*$")

_BOOL_KEYS = {"uma": "uma", "bf16": "bf16", "fp4": "fp4", "int dot": "int_dot"}
_INT_KEYS = {"warp size": "warp_size", "shared memory": "shared_memory_bytes"}


@dataclass(frozen=True)
class VulkanDeviceCaps:
    """What one ggml_vulkan device line states; None where the line does not print the field."""

    device_index: int | None
    device_name: str
    driver_label: str | None  # the driver llama.cpp appended: "radv", "NVIDIA", "AMD proprietary driver", ...
    uma: bool | None
    fp16: bool | None
    fp16_dot2: bool | None  # True when the line prints "fp16: dot2" (builds from June 2026 on); None otherwise
    bf16: bool | None
    fp4: bool | None
    int_dot: bool | None
    warp_size: int | None
    shared_memory_bytes: int | None
    matrix_cores: str | None  # "none", "KHR_coopmat", "NV_coopmat2", "NV_coopmat2v", ... as printed
    extra: tuple[tuple[str, str], ...] = ()  # fields this parser does not know, as printed

    @property
    def has_matrix_cores(self) -> bool | None:
        """True when the run could use cooperative-matrix shaders; None when the line does not say."""
        if self.matrix_cores is None:
            return None
        return self.matrix_cores.lower() != "none"


def _flag(key: str, value: str, line: str) -> bool:
    if value in ("0", "1"):
        return value == "1"
    raise ValueError(f"ggml_vulkan line: {key!r} is {value!r}, expected 0 or 1: {line!r}")


def _number(key: str, value: str, line: str) -> int:
    if value.isdigit():
        return int(value)
    raise ValueError(f"ggml_vulkan line: {key!r} is {value!r}, expected a whole number: {line!r}")


def parse_device_line(line: str) -> VulkanDeviceCaps:
    """The fields of one ggml_vulkan device line. ValueError when `line` is not such a line."""
    match = _PREFIX.match(line)
    if match is None:
        raise ValueError(f"not a ggml_vulkan device line: {line!r}")
    parts = [part.strip() for part in match.group("rest").split("|")]
    name = parts[0]
    if not name:
        raise ValueError(f"ggml_vulkan line names no device: {line!r}")
    index_text = match.group("index") or match.group("vindex")
    # Only the "ggml_vulkan: N = NAME (DRIVER)" form appends the driver name (since June 2024); in the older
    # "Vulkan0: NAME" / "Using NAME" forms a trailing "(RADV NAVI10)" is part of the device name itself.
    driver = _TRAILING_PAREN.search(name) if match.group("index") is not None else None
    fields: dict[str, object] = {}
    extra: list[tuple[str, str]] = []
    for part in parts[1:]:
        if not part:
            continue
        key, sep, value = part.partition(":")
        key = " ".join(key.split()).lower()
        value = value.strip()
        if not sep:
            extra.append((part, ""))
        elif key == "fp16":
            # "1"/"0", and since llama.cpp PR #24123 "dot2" for fp16 with a mixed f16->f32 dot product
            if value == "dot2":
                fields["fp16"], fields["fp16_dot2"] = True, True
            else:
                fields["fp16"] = _flag(key, value, line)
        elif key in _BOOL_KEYS:
            fields[_BOOL_KEYS[key]] = _flag(key, value, line)
        elif key in _INT_KEYS:
            fields[_INT_KEYS[key]] = _number(key, value, line)
        elif key == "matrix cores":
            if not value:
                raise ValueError(f"ggml_vulkan line: 'matrix cores' is empty: {line!r}")
            fields["matrix_cores"] = value
        else:
            extra.append((key, value))
    return VulkanDeviceCaps(
        device_index=int(index_text) if index_text is not None else None,
        device_name=name,
        driver_label=driver.group(1).strip() if driver else None,
        uma=fields.get("uma"),  # type: ignore[arg-type]
        fp16=fields.get("fp16"),  # type: ignore[arg-type]
        fp16_dot2=fields.get("fp16_dot2"),  # type: ignore[arg-type]
        bf16=fields.get("bf16"),  # type: ignore[arg-type]
        fp4=fields.get("fp4"),  # type: ignore[arg-type]
        int_dot=fields.get("int_dot"),  # type: ignore[arg-type]
        warp_size=fields.get("warp_size"),  # type: ignore[arg-type]
        shared_memory_bytes=fields.get("shared_memory_bytes"),  # type: ignore[arg-type]
        matrix_cores=fields.get("matrix_cores"),  # type: ignore[arg-type]
        extra=tuple(extra),
    )


def validation_fields(line: str) -> dict[str, object]:
    """The vulkan_* fields a validation row carries for this line: the line itself plus only what it states."""
    caps = parse_device_line(line)
    fields: dict[str, object] = {"vulkan_device_line": line.strip()}
    for name, value in (("vulkan_fp16", caps.fp16), ("vulkan_bf16", caps.bf16), ("vulkan_int_dot", caps.int_dot),
                        ("vulkan_matrix_cores", caps.matrix_cores)):
        if value is not None:
            fields[name] = value
    return fields
