"""Snapshots of the main screens at 80x24 and 160x48 (pytest-textual-snapshot, Textual pinned in pyproject).

Deterministic: recorded machines, no clock, no blinking cursor on these screens, the dark
theme forced. After an intended change, look at the report and run
`python -m pytest tests/test_tui_snapshots.py --snapshot-update`.
"""

from __future__ import annotations

import pytest
from tui_support import CPU_ONLY, GARBLED, NVIDIA_DESKTOP, app_for, settle

pytest.importorskip("pytest_textual_snapshot")


@pytest.fixture(autouse=True)
def dark_terminal(monkeypatch):
    monkeypatch.delenv("COLORFGBG", raising=False)
    monkeypatch.delenv("NO_COLOR", raising=False)


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
def test_the_overview_of_a_cpu_only_desktop(snap_compare, size):
    assert snap_compare(app_for(CPU_ONLY), terminal_size=size, run_before=settle)


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
def test_the_text_generation_tab_of_an_nvidia_desktop(snap_compare, size):
    assert snap_compare(app_for(NVIDIA_DESKTOP), press=["2"], terminal_size=size, run_before=settle)


def test_a_models_details_on_an_nvidia_desktop(snap_compare):
    assert snap_compare(app_for(NVIDIA_DESKTOP), press=["2", "down", "enter"], terminal_size=(80, 24), run_before=settle)


def test_a_machine_with_problems_shows_them_with_hints(snap_compare):
    assert snap_compare(app_for(GARBLED), terminal_size=(160, 48), run_before=settle)


def test_the_help_screen(snap_compare):
    assert snap_compare(app_for(CPU_ONLY), press=["question_mark"], terminal_size=(80, 24), run_before=settle)


def test_the_text_generation_tab_on_a_light_terminal(snap_compare, monkeypatch):
    monkeypatch.setenv("COLORFGBG", "0;15")  # black on white, as xterm and rxvt announce it
    assert snap_compare(app_for(CPU_ONLY), press=["2"], terminal_size=(80, 24), run_before=settle)
