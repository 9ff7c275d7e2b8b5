"""What-if hardware: --gpu NAME from the table, --memory SIZE."""

from __future__ import annotations

import json

import pytest

from gpuready.frontends.cli import main
from gpuready.whatif import WhatIfError, resolve_gpu

CPU_DESKTOP = "tests/fixtures/machines/linux-desktop-ryzen-7950x"


@pytest.mark.parametrize(
    ("typed", "table_id", "count"),
    [
        ("RTX 4090", "rtx-4090", 1),
        ("rtx4090", "rtx-4090", 1),
        ("GeForce RTX 4090", "rtx-4090", 1),
        ("NVIDIA GeForce RTX 4090", "rtx-4090", 1),
        ("2x RTX 3090", "rtx-3090", 2),
        ("7900 XTX", "rx-7900-xtx", 1),
    ],
)
def test_what_people_type_finds_the_gpu(typed, table_id, count):
    spec, how_many = resolve_gpu(typed)
    assert (spec.id, how_many) == (table_id, count)


def test_an_unknown_gpu_lists_the_closest_names():
    with pytest.raises(WhatIfError, match="no GPU in the table matches 'RTX 40'; closest: .*RTX 4090"):
        resolve_gpu("RTX 40")


def test_an_ambiguous_gpu_lists_the_candidates():
    with pytest.raises(WhatIfError, match="matches several GPUs"):
        resolve_gpu("Arc A770")


def test_a_what_if_gpu_replaces_the_machines_gpus_and_changes_verdicts(capsys):
    assert main(["report", "--json", "--machine", CPU_DESKTOP, "--gpu", "RTX 4090"]) == 0
    report = json.loads(capsys.readouterr().out)
    (gpu,) = report["hardware"]["gpus"]
    assert (gpu["name"], gpu["table_id"], gpu["bandwidth_source"]) == ("NVIDIA GeForce RTX 4090", "rtx-4090", "table:rtx-4090")
    llama = next(v for v in report["verdicts"] if v["model_id"] == "llama-3.1-8b")
    assert (llama["placement"], llama["level"]) == ("gpu", "runs-well")


def test_an_unknown_gpu_is_a_usage_error(capsys):
    assert main(["report", "--gpu", "Voodoo 5", "--machine", CPU_DESKTOP]) == 2
    assert "no GPU in the table matches 'Voodoo 5'" in capsys.readouterr().err
