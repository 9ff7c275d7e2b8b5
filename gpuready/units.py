"""Sizes and amounts a person types or reads: parsed once here for flags, requirement files and the UI."""

from __future__ import annotations

import re

from gpuready.errors import UsageError

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]i?b?|b)?\s*$", re.IGNORECASE)
_UNITS = {"": 1024**3, "b": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}
_RESOLUTION = re.compile(r"^\s*(\d+)\s*[xX×]\s*(\d+)\s*$")


LARGEST_SIZE = 2**60  # 1 EiB


def parse_size(text: str) -> int:
    """'64GB', '64G', '64 GiB', '512MB' -> bytes. Units are binary, as RAM is sold; a bare number is GB."""
    match = _SIZE.match(str(text))
    if not match:
        raise UsageError(f"not a size: {text!r} (try 16GB or 512MB)")
    number, unit = match.groups()
    unit = (unit or "").lower()
    key = unit[0] if unit and unit != "b" else unit
    value = float(number) * _UNITS[key]
    if value <= 0:
        raise UsageError(f"size must be positive: {text!r}")
    if value > LARGEST_SIZE:  # no machine comes near it; past it a size prints as 27 digits of GB
        raise UsageError(f"size too large: {text!r} (at most 1 EiB)")
    return int(value)


def parse_resolution(text: str) -> tuple[int, int]:
    """'1024x1024' -> (1024, 1024); each side a multiple of 8 (the VAE's factor) from 64 to 8192."""
    match = _RESOLUTION.match(str(text))
    if not match:
        raise UsageError(f"not a resolution: {text!r} (try 1024x1024)")
    width, height = int(match.group(1)), int(match.group(2))
    if not all(64 <= side <= 8192 and side % 8 == 0 for side in (width, height)):
        raise UsageError(f"resolution {text!r}: each side must be a multiple of 8 between 64 and 8192")
    return width, height


def parse_documents(value) -> int:
    """A collection size for document search: a positive whole number."""
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise UsageError(f"documents must be a positive whole number (got {value!r})")
    return value


def fmt_gb(value: float | None) -> str:
    """Binary gigabytes labelled GB, as RAM and VRAM are sold and as operating systems show them."""
    if value is None:
        return "unknown"
    return f"{value / 1024**3:.1f} GB"


def fmt_number(value: float) -> str:
    """A rate or amount to about three figures, never rounded to nothing: 1,234 / 12.3 / 0.184."""
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def fmt_figures(value: float, whole_from: float = 10.0, decimals: int = 1) -> str:
    """A speed to read: two figures below 1 (0.014, never 0.0), `decimals` places up to `whole_from`, whole numbers
    with thousands separators from there (tokens/s: 0.38, 1.1, 36, 2,171)."""
    if value < 1:
        return f"{value:.2g}"
    return f"{value:.{decimals}f}" if value < whole_from else f"{value:,.0f}"
