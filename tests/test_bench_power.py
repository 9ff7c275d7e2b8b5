"""Energy measured by `gpuready bench`: NVML's energy counter around the copy and matmul phases
(with a fake clock, fake torch and fake NVML), its JSON, the GPU fields it fills, and the energy
per unit that prefers it over the power limit or the table."""

from __future__ import annotations

import dataclasses
import json
import sys
import time
import types
from pathlib import Path

import jsonschema
import pytest

from gpuready.bench import cache, torch_worker
from gpuready.bench.apply import with_measurements
from gpuready.bench.gpu import parse_worker_output
from gpuready.bench.power_meter import combined_power, open_meter, phase_power
from gpuready.bench.results import GPUMeasurement, Measurements, from_json, to_json
from gpuready.bench.stats import Spread
from gpuready.hardware import hardware_from_dict, to_dict
from gpuready.host import ReplayHost
from gpuready.probes import probe_hardware
from gpuready.report import build_report, report_json, schema_text
from gpuready.tasks.registry import judge_model, load_catalog
from gpuready.tasks.verdict import Options

RTX4090 = Path(__file__).parent / "fixtures" / "machines" / "nvidia-rtx4090"
COPY_W = Spread(196.0, 200.0, 204.0, 1)  # ±2%
MATMUL_W = Spread(405.0, 420.0, 435.0, 1)  # ±3.6%
SOURCE = "measured on this machine with NVML's energy counter during `gpuready bench`, 2026-12-03"


# --- the arithmetic -----------------------------------------------------------------------


def test_a_phase_power_is_the_energy_over_the_seconds_with_the_counters_lag_as_its_band():
    # 3,000 J over 10 s: 300 W; each of two reads may lag 0.1 s, so ±2 x 0.1 / 10 = ±2%
    assert phase_power(3_000_000, 10.0) == Spread(294.0, 300.0, 306.0, 1)
    assert phase_power(0, 10.0) is None and phase_power(1000, 0) is None


def test_the_matmul_power_adds_up_fp16_and_bf16_and_a_missing_reading_gives_none():
    assert combined_power([(1_000_000, 2.0), (3_000_000, 6.0)]).median == 500.0
    assert combined_power([(1_000_000, 2.0), None]) is None
    assert combined_power([]) is None


# --- the worker with fakes ----------------------------------------------------------------


class Clock:
    """A fake perf_counter: every read and every kernel advances 10 ms at the watts of the phase running."""

    def __init__(self) -> None:
        self.now, self.watts, self.millijoules = 0.0, 0.0, 0.0

    def tick(self) -> float:
        self.now += 0.01
        self.millijoules += self.watts * 0.01 * 1000
        return self.now


def fake_torch(clock: Clock, bf16_fails: bool = False):
    class Tensor:
        def copy_(self, other):
            clock.tick()

        def __matmul__(self, other):
            clock.tick()

    def empty(*_args, **_kwargs):
        clock.watts = 200.0  # the copy phase draws 200 W
        return Tensor()

    def randn(*_args, dtype=None, **_kwargs):
        if bf16_fails and dtype == "bf16":
            raise RuntimeError("BF16 is not supported")
        clock.watts = 420.0  # the matmul phase draws 420 W
        return Tensor()

    return types.SimpleNamespace(uint8="u8", float16="fp16", bfloat16="bf16", empty=empty,
                                 empty_like=lambda _: Tensor(), randn=randn)


@pytest.fixture
def clock(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(time, "perf_counter", clock.tick)
    return clock


def test_the_worker_reports_the_watts_of_the_copy_and_of_the_matmul_phase(clock):
    result = torch_worker._measure(fake_torch(clock), "cuda:0", lambda: None, True, meter=lambda: clock.millijoules)
    assert result["copy_power_w"]["median"] == pytest.approx(200, rel=0.05)
    assert result["matmul_power_w"]["median"] == pytest.approx(420, rel=0.05)
    assert result["bandwidth_bytes_per_s"]["median"] > 0 and result["fp16_flops"]["median"] > 0


def test_a_worker_whose_nvml_raises_still_returns_bandwidth_and_flops_without_power(clock):
    def broken():
        raise OSError("NVML: GPU is lost")

    result = torch_worker._measure(fake_torch(clock, bf16_fails=True), "cuda:0", lambda: None, True, meter=broken)
    assert (result["copy_power_w"], result["matmul_power_w"], result["bf16_flops"]) == (None, None, None)
    assert result["bandwidth_bytes_per_s"]["median"] > 0 and result["fp16_flops"]["median"] > 0
    assert result["errors"] == ["bf16_flops: BF16 is not supported"]


def test_a_worker_without_a_meter_reports_no_power(clock):
    result = torch_worker._measure(fake_torch(clock), "cuda:0", lambda: None, True)
    assert (result["copy_power_w"], result["matmul_power_w"]) == (None, None)


def fake_nvml(monkeypatch, buses, energy_mj=5_000_000, fail=None):
    """A pynvml with one device per PCI bus; ``fail`` names the call that raises."""
    module = types.ModuleType("pynvml")

    def call(name, value):
        def function(*args):
            if name == fail:
                raise RuntimeError(f"{name} failed")
            return value(*args) if callable(value) else value
        return function

    module.nvmlInit = call("nvmlInit", None)
    module.nvmlDeviceGetCount = call("nvmlDeviceGetCount", len(buses))
    module.nvmlDeviceGetHandleByIndex = call("nvmlDeviceGetHandleByIndex", lambda i: f"handle{i}")
    module.nvmlDeviceGetPciInfo = call("nvmlDeviceGetPciInfo", lambda h: types.SimpleNamespace(
        domain=0, bus=buses[int(h[-1])], device=0))
    module.nvmlDeviceGetTotalEnergyConsumption = call(
        "nvmlDeviceGetTotalEnergyConsumption", lambda h: energy_mj + 1000 * int(h[-1]))
    monkeypatch.setitem(sys.modules, "pynvml", module)


def torch_seeing(bus):
    properties = types.SimpleNamespace(pci_domain_id=0, pci_bus_id=bus, pci_device_id=0)
    return types.SimpleNamespace(cuda=types.SimpleNamespace(get_device_properties=lambda i: properties,
                                                           device_count=lambda: 1))


def test_the_meter_finds_the_nvml_device_by_pci_address_not_by_index(monkeypatch):
    fake_nvml(monkeypatch, buses=[0x01, 0x41])
    # CUDA_VISIBLE_DEVICES=1: torch's device 0 is NVML's device 1, on bus 0x41
    assert open_meter(torch_seeing(0x41), 0)() == 5_001_000


@pytest.mark.parametrize("fail", ["nvmlInit", "nvmlDeviceGetCount", "nvmlDeviceGetPciInfo",
                                  "nvmlDeviceGetTotalEnergyConsumption"])
def test_any_nvml_failure_means_no_meter(monkeypatch, fail):
    fake_nvml(monkeypatch, buses=[0x41], fail=fail)
    assert open_meter(torch_seeing(0x41), 0) is None


def test_no_meter_when_no_nvml_device_has_torchs_pci_address_or_pynvml_is_missing(monkeypatch):
    fake_nvml(monkeypatch, buses=[0x01])
    assert open_meter(torch_seeing(0x41), 0) is None
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml raises ImportError
    assert open_meter(torch_seeing(0x01), 0) is None


# --- results, apply, energy ---------------------------------------------------------------


def gpu_measurement(**changes) -> GPUMeasurement:
    return dataclasses.replace(GPUMeasurement(0, "NVIDIA GeForce RTX 4090", None, None, None, COPY_W, MATMUL_W), **changes)


def measurements(hardware, gpu) -> Measurements:
    return Measurements(measured_at="2026-12-03", fingerprint=cache.fingerprint(hardware), gpus=(gpu,))


def test_the_power_figures_survive_the_json_round_trip_and_older_files_still_load():
    kept = Measurements(measured_at="2026-12-03", fingerprint={"cpu": "x"}, gpus=(gpu_measurement(),))
    assert from_json(json.loads(json.dumps(to_json(kept)))) == kept
    old = to_json(kept)
    for gpu in old["gpus"]:
        del gpu["copy_power_w"], gpu["matmul_power_w"]
    assert from_json(old).gpus == (gpu_measurement(copy_power_w=None, matmul_power_w=None),)


def test_the_worker_output_carries_the_power_figures():
    line = json.dumps({"torch": "2.5.1", "gpus": [{"index": 0, "name": "NVIDIA GeForce RTX 4090", "fp16_flops": None,
                                                    "copy_power_w": COPY_W.to_dict(), "matmul_power_w": MATMUL_W.to_dict()}]})
    gpus, problems = parse_worker_output(line)
    assert (gpus, problems) == ([gpu_measurement()], [])


def rtx4090():
    hardware, _ = probe_hardware(ReplayHost(RTX4090))
    return hardware


def test_apply_puts_the_measured_watts_on_the_gpu_and_they_survive_the_hardware_json():
    hardware = rtx4090()
    result, notes = with_measurements(hardware, measurements(hardware, gpu_measurement()))
    gpu = result.gpus[0]
    assert (gpu.measured_power_memory_bound_w, gpu.measured_power_compute_bound_w) == (200.0, 420.0)
    assert gpu.measured_power_spread == pytest.approx(15 / 420)
    assert gpu.measured_power_source == SOURCE
    assert notes == ["NVIDIA GeForce RTX 4090: 200 W during the copy, 420 W during the matmul (NVML energy counter)"]
    assert hardware_from_dict(json.loads(json.dumps(to_dict(result)))) == result


def test_a_measurement_without_power_leaves_the_power_fields_empty():
    hardware = rtx4090()
    result, notes = with_measurements(hardware, measurements(hardware, gpu_measurement(copy_power_w=None, matmul_power_w=None)))
    assert result.gpus[0] == hardware.gpus[0] and notes == []


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


@pytest.fixture(scope="module")
def measured_4090():
    hardware = rtx4090()
    return with_measurements(hardware, measurements(hardware, gpu_measurement()))[0]


@pytest.mark.parametrize(("model", "watts", "phase"), [
    ("llama-3.1-8b", 200.0, "copy"),  # token generation: memory-bound
    ("whisper-large-v3", 200.0, "copy"),  # speech: the decoder reads its weights per token
    ("flux.1-schnell", 420.0, "matmul"),  # image generation: compute-bound
    ("bge-m3", 420.0, "matmul"),  # embedding
])
def test_energy_uses_the_measured_watts_of_the_phase_that_matches_the_work(catalog, measured_4090, model, watts, phase):
    verdict = judge_model(catalog.get(model), catalog, measured_4090, Options())
    assert verdict.placement == "gpu"
    energy = verdict.energy
    assert (energy.power_w, energy.power_source) == (watts, "measured")
    assert energy.wh == pytest.approx(watts * energy.seconds / 3600)
    assert energy.basis.startswith(f"{watts:.0f} W during the {phase} ({SOURCE}) x ")


def test_fine_tuning_uses_the_matmul_watts(catalog, measured_4090):
    verdict = judge_model(catalog.get("llama-3.2-3b"), catalog, measured_4090, Options(), task="fine-tuning")
    assert (verdict.energy.power_w, verdict.energy.power_source) == (420.0, "measured")


def test_the_measured_band_is_the_speeds_and_the_powers_spread_not_half_the_limit(catalog, measured_4090):
    verdict = judge_model(catalog.get("llama-3.1-8b"), catalog, measured_4090, Options(quant="Q4_K_M"))
    energy, spread = verdict.energy, 15 / 420
    assert energy.low_wh == pytest.approx(energy.wh / (1 + verdict.uncertainty) * (1 - spread))
    assert energy.high_wh == pytest.approx(energy.wh * (1 + verdict.uncertainty) * (1 + spread))
    assert energy.low_wh > energy.wh * 0.5


def test_the_report_with_measured_power_validates_against_the_schema(catalog, measured_4090):
    data = json.loads(json.dumps(report_json(build_report(measured_4090, [], catalog, Options()))))
    jsonschema.validate(data, json.loads(schema_text()))
    assert data["hardware"]["gpus"][0]["measured_power_memory_bound_w"] == 200.0


def test_bench_show_lists_the_watts_of_each_phase():
    from gpuready.bench.command import render

    hardware = rtx4090()
    text = render(measurements(hardware, gpu_measurement()), hardware)
    assert "  NVIDIA GeForce RTX 4090 power during the copy     200.0 W  (min 196.0, max 204.0, 1 runs, ±2.0%) (NVML energy counter)" in text
    assert "  NVIDIA GeForce RTX 4090 power during the matmul     420.0 W  (min 405.0, max 435.0, 1 runs, ±3.6%) (NVML energy counter)" in text
