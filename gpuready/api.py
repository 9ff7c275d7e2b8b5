"""A small importable API: probe, assess and serialise, returning the dataclasses the CLI uses."""

from __future__ import annotations

import os

from gpuready.catalog import Catalog, load_catalog, user_catalog_dir
from gpuready.hardware import Hardware, Problem
from gpuready.report import Report, build_report, dumps
from gpuready.verdict import Options


def probe(machine: str | os.PathLike | None = None) -> tuple[Hardware, list[Problem]]:
    """Probe this machine, or replay a recorded one; problems say what could not be read."""
    from gpuready.host import host_from_environment
    from gpuready.probes import probe_hardware

    return probe_hardware(host_from_environment(machine))


def catalog(user_dir: str | os.PathLike | None = None) -> Catalog:
    """The built-in catalogue plus the user's (the platform's config directory by default)."""
    from pathlib import Path

    return load_catalog(user=Path(user_dir) if user_dir else user_catalog_dir())


def assess(
    hardware: Hardware,
    problems: list[Problem] | None = None,
    *,
    context_tokens: int | None = None,
    quant: str | None = None,
    placement: str = "cpu",
    models: Catalog | None = None,
) -> Report:
    """Judge every catalogue model on this hardware."""
    options = Options(context_tokens=context_tokens, quant=quant, placement=placement)
    return build_report(hardware, list(problems or []), models or catalog(), options)


def to_json(report: Report) -> str:
    """The report as `gpuready report --json` prints it."""
    return dumps(report)
