"""Reports of the recorded machines, built once per test session, and a small hand-made report."""

from __future__ import annotations

import contextlib
import copy
import functools
import io
import json
from pathlib import Path

from gpuready.frontends.cli import main

FIXTURES = Path(__file__).parent / "fixtures" / "machines"
MACHINES = sorted(p.name for p in FIXTURES.iterdir() if (p / "machine.toml").exists())


@functools.lru_cache(maxsize=None)
def _report_text(machine: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["report", "--json", "--machine", str(FIXTURES / machine)])
    assert code == 0
    return out.getvalue()


def machine_report(machine: str) -> dict:
    """`gpuready report --json --machine tests/fixtures/machines/<machine>`, parsed."""
    return json.loads(_report_text(machine))


def _verdict(task, model_id, params, level, speed, unit):
    return {"task": task, "model_id": model_id, "model_name": model_id, "model_params": params, "level": level,
            "speed": speed, "speed_unit": unit}


SMALL = {
    "schema_version": 1,
    "gpuready_version": "0.1.0",
    "settings": {"context_tokens": None, "quant": None, "placement": "cpu", "documents": None, "resolution": None},
    "hardware": {
        "platform": "linux", "arch": "x86_64", "os": "Linux 6.8", "in_container": False,
        "cpu": {"name": "Test CPU"},
        "memory": {"total_bytes": 64 * 1024**3, "available_bytes": 60 * 1024**3, "limit_bytes": None,
                   "usable_bytes": 60 * 1024**3, "source": "proc"},
        "gpus": [
            {"vendor": "nvidia", "name": "NVIDIA GeForce RTX 4090", "index": 0, "memory_total_bytes": 25756172288,
             "memory_free_bytes": 24066916352, "counted": True},
            {"vendor": "intel", "name": 'Odd "GPU" \\ name', "index": 0, "memory_total_bytes": None,
             "memory_free_bytes": None, "counted": False},
        ],
        "npus": [], "backends": [],
    },
    "tasks": [
        {"task": "text-generation", "status": "ready", "best_model_id": "qwen3-32b", "best_model_name": "Qwen3 32B", "summary": ""},
        {"task": "image-generation", "status": "limited", "best_model_id": "sdxl", "best_model_name": "SDXL", "summary": ""},
        {"task": "speech", "status": "not-possible", "best_model_id": None, "best_model_name": None, "summary": ""},
        {"task": "document-search", "status": "unknown", "best_model_id": None, "best_model_name": None, "summary": ""},
    ],
    "verdicts": [
        _verdict("text-generation", "qwen3-32b", 32.8e9, "runs-well", 34.2, "tokens/s"),
        _verdict("text-generation", "llama-3.3-70b", 70.6e9, "slow", 3.1, "tokens/s"),
        _verdict("text-generation", "qwen3-235b-a22b", 235e9, "too-slow", 0.5, "tokens/s"),
        _verdict("text-generation", "llama-3.1-8b", 8.03e9, "runs-well", 80.34, "tokens/s"),
        _verdict("image-generation", "sdxl", 3.47e9, "runs", 11.02, "s/image"),
        _verdict("image-generation", "flux.1-dev", 16.97e9, "does-not-fit", None, "s/image"),
        _verdict("speech", "whisper-large-v3", 1.55e9, "does-not-fit", None, "x realtime"),
    ],
    "problems": [],
    "levels": ["runs-well", "runs", "slow", "too-slow", "does-not-fit", "unknown"],
}


def small_report() -> dict:
    """A hand-made report whose every exported value is known: an RTX 4090, 64 GiB, four task states."""
    return copy.deepcopy(SMALL)
