"""The accuracy script runs over the validation set, and gpuready's constants are its fits."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "score_estimator.py"


@pytest.fixture(scope="module")
def scored():
    spec = importlib.util.spec_from_file_location("score_estimator", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.report(), module.FITS


def test_every_fitted_constant_equals_the_median_the_validation_rows_imply(scored):
    _, fits = scored
    # CPU has no decoder constant of its own (its one usable row is not enough): it keeps text generation's.
    fitted = {key: value for key, value in fits.items() if key != ("DECODER_EFFICIENCY", "cpu")}
    assert len(fitted) >= 14
    assert {key: round(median, 2) for key, (median, _) in fitted.items()} == {key: constant for key, (_, constant) in fitted.items()}


def test_the_committed_accuracy_figures_are_what_the_script_prints_now(scored):
    text, _ = scored
    committed = (SCRIPT.parent / "ACCURACY.md").read_text(encoding="utf-8")
    assert committed.strip() == text.strip()
