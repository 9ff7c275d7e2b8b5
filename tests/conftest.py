"""Keep tests independent of the developer's machine: no user catalogue, no kept measurements, no replay variable."""

import pytest


@pytest.fixture(autouse=True)
def _isolated_environment(monkeypatch, tmp_path_factory):
    monkeypatch.setenv("GPUREADY_CATALOG_DIR", str(tmp_path_factory.mktemp("user-catalog")))
    monkeypatch.setenv("GPUREADY_CACHE_DIR", str(tmp_path_factory.mktemp("user-cache")))
    monkeypatch.delenv("GPUREADY_MACHINE", raising=False)


# Files whose tests share one slow module fixture (the accuracy report: about 3 minutes on a 2-core machine). Run in
# parallel (`pytest -n auto`, the README's command), `--dist loadfile` keeps each file on one worker, so the fixture is
# computed once; putting these files first lets that worker start on them while the others share the rest, instead of
# the whole suite waiting on them at the end.
LONGEST_FIRST = ("test_score_estimator.py",)


def pytest_collection_modifyitems(items):
    items.sort(key=lambda item: item.path.name not in LONGEST_FIRST)  # stable: every other test keeps its order
