"""Energy per unit of work: power x estimated time on recorded machines, NVML's enforced power
limit before the table, the units of each task, and `check --max-wh-per-1k-tokens`."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from gpuready.catalog.power import power_table
from gpuready.frontends.cli import main
from gpuready.report import build_report, report_json, schema_text
from gpuready.tasks.energy import UNITS
from gpuready.tasks.registry import judge_all, judge_model, load_catalog
from gpuready.tasks.verdict import Options
from replay_support import replayed_hardware

FIXTURES = Path(__file__).parent / "fixtures" / "machines"
RTX4090 = FIXTURES / "nvidia-rtx4090"
CATALOG = load_catalog()


def test_energy_is_the_board_power_times_the_time_of_one_unit_for_every_task():
    hardware = replayed_hardware(RTX4090)
    seen = set()
    for verdict in judge_all(CATALOG, hardware, Options()):
        if verdict.placement != "gpu" or verdict.speed is None:
            continue
        unit, seconds_of = UNITS[verdict.speed_unit]
        seconds = seconds_of(verdict.speed)
        assert verdict.energy.unit == unit
        assert verdict.energy.power_w == 450  # catalog/power.toml: RTX 4090 total graphics power
        assert verdict.energy.wh == pytest.approx(450 * seconds / 3600)
        assert verdict.energy.low_wh < verdict.energy.wh < verdict.energy.high_wh
        seen.add(verdict.energy.unit)
    assert seen == {"Wh per 1,000 tokens", "Wh per image", "Wh per hour of audio", "Wh per 10,000 chunks",
                    "Wh per 10,000 pairs", "Wh per million training tokens"}


def test_llama_3_1_8b_on_450_watts_takes_power_times_the_time_of_1000_tokens():
    verdict = judge_model(CATALOG.get("llama-3.1-8b"), CATALOG, replayed_hardware(RTX4090), Options(quant="Q8_0"))
    # 1,000 tokens at the estimated speed (about 84 tokens/s: 11.9 s) x the 4090's 450 W board power / 3,600
    seconds = 1000 / verdict.speed
    assert 70 < verdict.speed < 100
    assert verdict.energy.unit == "Wh per 1,000 tokens"
    assert (verdict.energy.seconds, verdict.energy.wh) == (pytest.approx(seconds), pytest.approx(seconds * 450 / 3600))


def test_nvmls_enforced_power_limit_wins_over_the_table(tmp_path):
    copy = tmp_path / "rtx4090-limited"
    shutil.copytree(RTX4090, copy)
    readout = copy / "libraries" / "nvml.json"
    data = json.loads(readout.read_text())
    data["devices"][0]["power_limit_mw"] = 300000  # a 4090 capped at 300 W with nvidia-smi -pl
    readout.write_text(json.dumps(data))
    hardware = replayed_hardware(copy)
    assert hardware.gpus[0].power_limit_w == 300
    verdict = judge_model(CATALOG.get("llama-3.1-8b"), CATALOG, hardware, Options(quant="Q8_0"))
    assert (verdict.energy.power_w, verdict.energy.power_source) == (300, "nvml")
    assert verdict.energy.wh == pytest.approx(300 * verdict.energy.seconds / 3600)


def test_several_users_share_the_energy_of_a_batched_step():
    one = judge_model(CATALOG.get("llama-3.1-8b"), CATALOG, replayed_hardware(RTX4090), Options(quant="Q4_K_M"))
    eight = judge_model(CATALOG.get("llama-3.1-8b"), CATALOG, replayed_hardware(RTX4090), Options(quant="Q4_K_M", users=8))
    assert eight.energy.wh == pytest.approx(450 * 1000 / eight.estimate.batched.aggregate_tokens_per_s / 3600)
    assert eight.energy.wh < one.energy.wh


def test_a_cpu_only_ryzen_uses_its_default_tdp_and_an_unknown_cpu_gives_no_figure():
    ryzen = replayed_hardware(FIXTURES / "linux-desktop-ryzen-7950x")
    verdict = judge_model(CATALOG.get("whisper-small"), CATALOG, ryzen, Options())
    assert (verdict.placement, verdict.energy.power_w, verdict.energy.power_source) == ("cpu", 170, "table")
    assert verdict.energy.wh == pytest.approx(170 / verdict.speed)  # Wh per hour of audio = W / x realtime
    graviton = replayed_hardware(FIXTURES / "linux-arm-graviton3")
    assert judge_model(CATALOG.get("whisper-small"), CATALOG, graviton, Options()).energy is None


def test_a_mac_studio_uses_apples_whole_machine_maximum():
    mac = replayed_hardware(FIXTURES / "mac-studio-m2-ultra-192gb-wired")
    verdict = judge_model(CATALOG.get("llama-3.1-8b"), CATALOG, mac, Options(quant="Q4_K_M"))
    assert (verdict.placement, verdict.energy.power_w) == ("gpu", 295)


def test_every_power_row_names_a_gpu_of_the_table_and_cites_a_source():
    from gpuready.catalog.tables import gpu_table

    ids = {spec.id for spec in gpu_table()}
    table = power_table()
    assert set(table.gpus) <= ids
    assert all(power.source and power.watts > 0 for power in list(table.gpus.values()) + [p for _, p in table.cpus])


def test_the_report_with_energy_validates_against_the_schema():
    import jsonschema

    data = json.loads(json.dumps(report_json(build_report(replayed_hardware(RTX4090), [], CATALOG, Options()))))
    jsonschema.validate(data, json.loads(schema_text()))
    llama = next(v for v in data["verdicts"] if v["model_id"] == "llama-3.1-8b" and v["task"] == "text-generation")
    assert (llama["energy"]["unit"], llama["energy"]["power_source"]) == ("Wh per 1,000 tokens", "table")


@pytest.mark.parametrize(
    ("path", "argv", "code"),
    [
        (RTX4090, ["--model", "llama-3.1-8b", "--max-wh-per-1k-tokens", "5"], 0),
        (RTX4090, ["--model", "llama-3.1-8b", "--max-wh-per-1k-tokens", "0.5"], 1),
        (RTX4090, ["--task", "text-generation", "--max-wh-per-1k-tokens", "0.5"], 0),
        (FIXTURES / "linux-arm-graviton3", ["--model", "llama-3.2-1b", "--max-wh-per-1k-tokens", "5"], 3),
        (RTX4090, ["--model", "whisper-small", "--max-wh-per-1k-tokens", "5"], 2),
        (RTX4090, ["--model", "llama-3.1-8b", "--max-wh-per-1k-tokens", "0"], 2),
    ],
)
def test_check_max_wh_per_1k_tokens_exit_codes(capsys, path, argv, code):
    got = main(["check", "--machine", str(path), *argv])
    out, err = capsys.readouterr()
    assert got == code, (out, err)
    assert "Traceback" not in err


def test_with_a_context_the_energy_budget_is_judged_at_the_speed_with_that_context_filled(capsys):
    # At 131,072 tokens the RTX 4090 generates Llama 3.1 8B at about a quarter of its empty-context speed, so each
    # 1,000 tokens take four times as long at the same power: the budget once passed on the empty-context figure.
    capsys.readouterr()
    assert main(["check", "--machine", str(RTX4090), "--model", "llama-3.1-8b", "--max-wh-per-1k-tokens", "1.5"]) == 0
    empty = capsys.readouterr().out
    code = main(["check", "--machine", str(RTX4090), "--model", "llama-3.1-8b", "--context", "131072",
                 "--max-wh-per-1k-tokens", "1.5"])
    full = capsys.readouterr().out
    assert code == 1, full
    wh = [float(re.search(r"about ([\d.]+) Wh per 1,000", text).group(1)) for text in (empty, full)]
    speeds = [float(re.search(r"about ([\d,.]+) tokens/s", text).group(1).replace(",", "")) for text in (empty, full)]
    assert wh[1] > 1.5 >= wh[0]
    assert wh[1] / wh[0] == pytest.approx(speeds[0] / speeds[1], rel=0.1)  # printed figures are rounded


def test_a_requirements_file_can_budget_energy(capsys, tmp_path):
    path = tmp_path / "needs.toml"
    path.write_text('[[require]]\ntask = "text-generation"\nmax_wh_per_1k_tokens = 0.5\n')
    code = main(["check", "--machine", str(RTX4090), "--requirements", str(path)])
    out, _ = capsys.readouterr()
    assert (code, out.split(":")[0]) == (0, "ok   task text-generation, <= 0.5 Wh per 1,000 tokens")


@pytest.mark.parametrize(("low", "high", "shown"), [
    (33.1, 149.0, "33-150"), (0.58, 1.63, "0.58-1.6"), (1.6, 4.2, "1.6-4.2"), (96.0, 15_234.0, "96-15,000"),
])
def test_an_energy_range_shows_both_ends_alike_never_in_e_notation(low, high, shown):
    from gpuready.tasks.energy import Energy, low_high

    assert low_high(Energy(1.0, "Wh", 1.0, "table", 1.0, low, high, "")) == shown


def test_estimate_prints_a_fine_tuning_energy_range_without_e_notation(capsys):
    # "99.3 Wh per million training tokens (33-1.5e+02)": the high end crossed 100 and .2g wrote it in e-notation.
    assert main(["estimate", "llama-3.1-8b", "--task", "fine-tuning", "--machine", str(RTX4090)]) == 0
    out = capsys.readouterr().out
    assert "Wh per million training tokens (38-170)" in out and "e+" not in out
