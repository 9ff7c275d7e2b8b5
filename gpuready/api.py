"""A small importable API over gpuready.app: probe, assess and serialise, returning the dataclasses the CLI uses."""

from __future__ import annotations

import os

from gpuready import app
from gpuready.catalog.loader import Catalog
from gpuready.hardware import Hardware, Problem
from gpuready.report import Report, build_report, dumps
from gpuready.tasks.verdict import Options


def probe(machine: str | os.PathLike | None = None) -> tuple[Hardware, list[Problem]]:
    """Probe this machine, or replay a recorded one; problems say what could not be read."""
    return app.load_hardware(app.Request(machine=str(machine) if machine else None))


def catalog(user_dir: str | os.PathLike | None = None) -> Catalog:
    """The built-in catalogue plus the user's (the platform's config directory by default)."""
    return app.load_catalog(str(user_dir) if user_dir else None)


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
