"""The model catalogue: TOML data files, validated on load with errors that name file and key.

Built-in files live in ``catalog/`` at the repository root (shipped inside the wheel as
``gpuready/catalog/data``). A user catalogue directory adds entries or overrides built-in ones
by id: ``$GPUREADY_CATALOG_DIR``, else ``$XDG_CONFIG_HOME/gpuready/catalog`` (Linux),
``~/Library/Application Support/gpuready/catalog`` (macOS), ``%APPDATA%\\gpuready\\catalog``
(Windows).
"""

from __future__ import annotations

import math

import os
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuready.tomlcompat import tomllib

_ID = re.compile(r"^[a-z0-9][a-z0-9._-]*$")


# No count, size or rate in a catalogue comes near this; a bigger number is a typo and would overflow float arithmetic.
LARGEST = 2**60


class CatalogError(ValueError):
    """A catalogue file is malformed; the message names the file and the key."""


def builtin_catalog_dir() -> Path:
    """The catalogue shipped with gpuready: inside the package (wheel) or at the repo root (source)."""
    packaged = Path(__file__).resolve().parent / "data"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[2] / "catalog"


def user_catalog_dir(environ: Mapping[str, str] = os.environ, platform: str = sys.platform) -> Path:
    """Where a user keeps their own catalogue entries on this platform."""
    if environ.get("GPUREADY_CATALOG_DIR"):
        return Path(environ["GPUREADY_CATALOG_DIR"])
    home = Path(environ.get("HOME") or environ.get("USERPROFILE") or "~").expanduser()
    if platform.startswith("win"):
        base = Path(environ.get("APPDATA") or home / "AppData" / "Roaming")
    elif platform == "darwin":
        base = home / "Library" / "Application Support"
    else:
        base = Path(environ.get("XDG_CONFIG_HOME") or home / ".config")
    return base / "gpuready" / "catalog"


# --- field validation --------------------------------------------------------


class Entry:
    """Reads typed fields from one TOML table, raising CatalogError that names file and key."""

    def __init__(self, data: Any, where: str) -> None:
        if not isinstance(data, dict):
            raise CatalogError(f"{where}: expected a table")
        self.data = data
        self.where = where

    def _fail(self, key: str, expected: str) -> CatalogError:
        shown = repr(self.data.get(key))
        if len(shown) > 80:  # a 400-digit number or a long string: the message stays readable
            shown = shown[:77] + "..."
        return CatalogError(f"{self.where}: '{key}' {expected} (got {shown})")

    def has(self, key: str) -> bool:
        return key in self.data

    def text(self, key: str, default: str | None = None, required: bool = True) -> str | None:
        if key not in self.data:
            if required and default is None:
                raise CatalogError(f"{self.where}: missing '{key}'")
            return default
        value = self.data[key]
        if not isinstance(value, str) or not value.strip():
            raise self._fail(key, "must be a non-empty string")
        return value

    def number(self, key: str, required: bool = True, minimum: float = 0.0, positive: bool = True) -> float | None:
        if key not in self.data:
            if required:
                raise CatalogError(f"{self.where}: missing '{key}'")
            return None
        value = self.data[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self._fail(key, "must be a number")
        if abs(value) > LARGEST or (isinstance(value, float) and not math.isfinite(value)):
            raise self._fail(key, "must be a finite number below 2^60")
        if (positive and value <= 0) or value < minimum:
            raise self._fail(key, "must be positive" if positive else f"must be at least {minimum}")
        return float(value)

    def integer(self, key: str, required: bool = True, positive: bool = True) -> int | None:
        if key not in self.data:
            if required:
                raise CatalogError(f"{self.where}: missing '{key}'")
            return None
        value = self.data[key]
        if isinstance(value, bool) or not isinstance(value, int) or (positive and value <= 0) or value < 0 or value > LARGEST:
            raise self._fail(key, "must be a positive integer" if positive else "must be a non-negative integer")
        return value

    def strings(self, key: str, required: bool = False) -> tuple[str, ...]:
        if key not in self.data:
            if required:
                raise CatalogError(f"{self.where}: missing '{key}'")
            return ()
        value = self.data[key]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self._fail(key, "must be a list of strings")
        return tuple(value)

    def known_names(self, key: str, known, noun: str, sort: bool = False) -> tuple[str, ...]:
        """A required list of names, each one of ``known`` (a quantisation, a precision, ...)."""
        names = self.strings(key, required=True)
        if not names:  # a model with nothing to run could never be judged
            raise self._fail(key, f"must name at least one {noun}")
        for name in names:
            if name not in known:
                listed = ", ".join(sorted(known) if sort else known)
                raise CatalogError(f"{self.where}: '{key}' names unknown {noun} '{name}' (known: {listed})")
        return names

    def choice(self, key: str, options: tuple[str, ...]) -> str:
        """A required string that must be one of ``options``."""
        value = self.text(key)
        if value not in options:
            allowed = " or ".join(repr(option) for option in options)
            raise CatalogError(f"{self.where}: '{key}' must be {allowed} (got {value!r})")
        return value

    def numbers(self, key: str) -> tuple[float, ...]:
        if key not in self.data:
            return ()
        value = self.data[key]
        if not isinstance(value, list) or not all(isinstance(v, (int, float)) and not isinstance(v, bool) and 0 < v <= LARGEST for v in value):
            raise self._fail(key, "must be a list of positive numbers")
        return tuple(float(v) for v in value)

    def mapping(self, key: str) -> dict[str, float]:
        if key not in self.data:
            return {}
        value = self.data[key]
        if not isinstance(value, dict) or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 for v in value.values()
        ):
            raise self._fail(key, "must be a table of positive numbers")
        return {str(k): float(v) for k, v in value.items()}

    def card(self) -> dict[str, str | None]:
        """The fields every model entry has: its id and name, where its figures come from, what it may be used for."""
        return {
            "id": self.ident(),
            "name": self.text("name"),
            "source": self.text("source"),
            "publisher": self.text("publisher", required=False),
            "license": self.text("license", required=False),
            "hf_repo": self.text("hf_repo", required=False),
            "notes": self.text("notes", required=False),
            "origin": self.where,
        }

    def ident(self) -> str:
        value = self.text("id")
        if not _ID.match(value):
            raise self._fail("id", "must be lowercase letters, digits, '.', '_' or '-'")
        return value


# --- entries -------------------------------------------------------------------


@dataclass(frozen=True)
class Quant:
    id: str
    format: str
    bits_per_weight: float
    quality: str | None
    source: str


def parse_quant(entry: Entry) -> Quant:
    return Quant(
        id=entry.text("id"),
        format=entry.text("format"),
        bits_per_weight=entry.number("bits_per_weight"),
        quality=entry.text("quality", required=False),
        source=entry.text("source"),
    )


# --- loading --------------------------------------------------------------------


def read_toml(path: Path) -> dict:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise CatalogError(f"{path}: not valid TOML: {error}") from None
    except RecursionError:
        raise CatalogError(f"{path}: not valid TOML: nested too deeply") from None
    except OSError as error:
        raise CatalogError(f"{path}: cannot read: {error.strerror or error}") from None


SCHEMA = 1  # the `schema = N` each catalogue file states; a file written for another layout is refused, not misread


def _tables(data: dict, key: str, path: Path) -> list:
    schema = data.get("schema", SCHEMA)
    if schema != SCHEMA or isinstance(schema, bool):
        raise CatalogError(f"{path}: 'schema' is {schema!r}, but this gpuready reads catalogue schema {SCHEMA}")
    tables = data.get(key, [])
    if not isinstance(tables, list):
        raise CatalogError(f"{path}: '{key}' must be an array of tables ([[{key}]])")
    return tables


@dataclass
class Catalog:
    models: dict[str, Any]
    quants: dict[str, Quant]
    files: list[Path]

    def for_task(self, task: str) -> list[Any]:
        return [model for model in self.models.values() if model.task == task]

    def get(self, model_id: str):
        """A model by id (case-insensitive), or None."""
        return self.models.get(model_id.lower())

    def closest(self, model_id: str, limit: int = 3) -> list[str]:
        import difflib

        return difflib.get_close_matches(model_id.lower(), list(self.models), n=limit, cutoff=0.5)


Parser = Callable[[Entry, Mapping[str, Quant]], Any]


def _task_of(data: dict, path: Path, parsers: Mapping[str, Parser]) -> str:
    task = data.get("task", path.stem)
    if task not in parsers:
        raise CatalogError(
            f"{path}: 'task' must be one of {', '.join(parsers)} (or name the file after the task), got {task!r}"
        )
    return task


def load_catalog(parsers: Mapping[str, Parser], builtin: Path | None = None, user: Path | None = None) -> Catalog:
    """Load the built-in catalogue, then the user's files on top (same id replaces).

    ``parsers`` maps each task's name to the function that reads one of its entries; the
    tasks own their entries, so this loader knows none of them (gpuready.tasks.registry passes them).
    """
    builtin = builtin or builtin_catalog_dir()
    quants_path = builtin / "quants.toml"
    quants: dict[str, Quant] = {}
    for index, table in enumerate(_tables(read_toml(quants_path), "quants", quants_path)):
        quant = parse_quant(Entry(table, f"{quants_path}: quants[{index}]"))
        quants[quant.id] = quant
    models: dict[str, Any] = {}
    files = [quants_path]
    builtins = [builtin / f"{task}.toml" for task in parsers if (builtin / f"{task}.toml").exists()]
    sources = list(builtins)
    if user is not None and user.is_dir():
        sources += sorted(user.glob("*.toml"))
    user_files = set(sources[len(builtins):])
    # id -> the entry that defined it, kept apart for built-in and user files: a user entry replaces a built-in one by id,
    # but two entries of the same id within either set are a mistake (which one wins would depend on file order).
    defined: dict[bool, dict[str, str]] = {False: {}, True: {}}
    for path in sources:
        data = read_toml(path)
        task = _task_of(data, path, parsers)
        files.append(path)
        for index, table in enumerate(_tables(data, "models", path)):
            label = f"{path}: models[{index}]"
            if isinstance(table, dict) and isinstance(table.get("id"), str):
                label += f" (id '{table['id']}')"
            model = parsers[task](Entry(table, label), quants)
            seen = defined[path in user_files]
            if model.id in seen:
                raise CatalogError(f"{label}: duplicate id '{model.id}' (also {seen[model.id]})")
            seen[model.id] = label
            models[model.id] = model
    return Catalog(models=models, quants=quants, files=files)
