"""The wheel ships the catalogue and the schema, and works outside the source tree."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    import importlib.util

    if importlib.util.find_spec("hatchling") is None:
        pytest.fail("hatchling (in the test extra) builds the wheel: pip install -e '.[test]'")
    out = tmp_path_factory.mktemp("wheel")
    result = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(ROOT)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    (path,) = out.glob("gpuready-*.whl")
    return path


def test_the_wheel_contains_the_catalogue_and_the_schema(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for expected in (
        "gpuready/catalog/data/text-generation.toml",
        "gpuready/catalog/data/quants.toml",
        "gpuready/catalog/data/gpus.toml",
        "gpuready/catalog/data/cpus.toml",
        "gpuready/schemas/report.schema.json",
    ):
        assert expected in names


def test_the_installed_wheel_finds_its_catalogue_outside_the_source_tree(wheel, tmp_path):
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    env = {**os.environ, "PYTHONPATH": str(site)}
    result = subprocess.run(
        [sys.executable, "-m", "gpuready", "models", "--json"], capture_output=True, text=True, cwd=tmp_path, env=env
    )
    assert result.returncode == 0, result.stderr
    assert len(json.loads(result.stdout)) >= 40
    where = subprocess.run(
        [sys.executable, "-c", "from gpuready.catalog.loader import builtin_catalog_dir; print(builtin_catalog_dir())"],
        capture_output=True, text=True, cwd=tmp_path, env=env,
    )
    assert where.stdout.strip() == str(site / "gpuready" / "catalog" / "data")
