"""Keep tests independent of the developer's machine: no user catalogue, no kept measurements, no replay variable."""

import pytest


@pytest.fixture(autouse=True)
def _isolated_environment(monkeypatch, tmp_path_factory):
    monkeypatch.setenv("GPUREADY_CATALOG_DIR", str(tmp_path_factory.mktemp("user-catalog")))
    monkeypatch.setenv("GPUREADY_CACHE_DIR", str(tmp_path_factory.mktemp("user-cache")))
    monkeypatch.delenv("GPUREADY_MACHINE", raising=False)
