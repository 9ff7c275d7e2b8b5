"""The power table (catalog/power.toml): board power of GPUs by gpus.toml id, Apple chips'
published maximum, and CPUs' default TDP by a pattern on their name. Data only."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

from gpuready.catalog.loader import CatalogError, Entry, builtin_catalog_dir, read_toml


@dataclass(frozen=True)
class Power:
    watts: float
    source: str


@dataclass(frozen=True)
class PowerTable:
    gpus: dict[str, Power]  # gpus.toml id -> power
    cpus: tuple[tuple[re.Pattern, Power], ...]

    def gpu(self, table_id: str | None) -> Power | None:
        return self.gpus.get(table_id) if table_id else None

    def cpu(self, name: str | None) -> Power | None:
        return next((power for pattern, power in self.cpus if name and pattern.search(name)), None)


def _power(entry: Entry) -> Power:
    return Power(watts=entry.number("watts"), source=entry.text("source"))


@functools.lru_cache(maxsize=4)
def power_table(directory: Path | None = None) -> PowerTable:
    path = (directory or builtin_catalog_dir()) / "power.toml"
    data = read_toml(path)
    gpus: dict[str, Power] = {}
    for index, table in enumerate(data.get("gpus", [])):
        entry = Entry(table, f"{path}: gpus[{index}]")
        ids = table.get("ids")
        if not isinstance(ids, list) or not ids or not all(isinstance(i, str) for i in ids):
            raise CatalogError(f"{entry.where}: 'ids' must be a list of catalog/gpus.toml ids")
        for gpu_id in ids:
            gpus[gpu_id] = _power(entry)
    cpus = []
    for index, table in enumerate(data.get("cpus", [])):
        entry = Entry(table, f"{path}: cpus[{index}]")
        try:
            pattern = re.compile(entry.text("pattern"), re.IGNORECASE)
        except re.error as error:
            raise CatalogError(f"{entry.where}: 'pattern' is not a regular expression: {error}") from None
        cpus.append((pattern, _power(entry)))
    return PowerTable(gpus, tuple(cpus))
