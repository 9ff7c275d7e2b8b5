"""Groups of identical GPUs: memory adds up, speed does not (except where the work really runs in parallel).

llama.cpp's default layer split runs the cards one after another for a token and for a 512-token
prompt (one micro-batch); diffusers, faster-whisper and sentence-transformers put a model on one device
(a diffusers pipeline can spread whole components over cards with device_map="balanced", which still runs
them in turn); fine-tuning is data parallel, so its speed adds up.
"""

from __future__ import annotations

import json

import pytest

from gpuready.frontends.cli import main
from gpuready.tasks import devices, finetune, image
from gpuready.tasks.registry import load_catalog, models_for
from gpuready.tasks.verdict import Options

CPU_DESKTOP = "tests/fixtures/machines/linux-desktop-ryzen-7950x"


def report(capsys, gpu: str, *extra: str) -> dict:
    assert main(["report", "--json", "--machine", CPU_DESKTOP, "--gpu", gpu, *extra]) in (0, 1)
    return json.loads(capsys.readouterr().out)


def verdict(data: dict, model_id: str, task: str | None = None) -> dict:
    return next(v for v in data["verdicts"] if v["model_id"] == model_id and (task is None or v["task"] == task))


def test_a_group_device_keeps_one_cards_rates_and_adds_up_the_memory():
    one = devices.Device("gpu", "X", "cuda", 24_000_000_000, 936e9, 71.2e12, vector_flops=35.6e12, power_watts=350)
    card = devices.one_card(devices.Device("gpu", "2 x X", "cuda", 48_000_000_000, 936e9, 71.2e12, count=2,
                                           vector_flops=35.6e12, power_watts=350))
    assert card == one
    assert devices.one_card(one) is one and devices.one_card(None) is None


def test_two_cards_run_a_model_that_fits_one_no_faster_than_one_card(capsys):
    one, two = report(capsys, "RTX 3090"), report(capsys, "2x RTX 3090")
    for model_id, task in (("llama-3.1-8b", "text-generation"), ("sd-1.5", "image-generation"),
                           ("whisper-large-v3", "speech"), ("bge-m3", "document-search")):
        a, b = verdict(one, model_id, task), verdict(two, model_id, task)
        assert a["placement"] == b["placement"] == "gpu", model_id
        assert a["speed"] and b["speed"] == pytest.approx(a["speed"], rel=1e-9), model_id
    prompt = [verdict(r, "llama-3.1-8b", "text-generation")["estimate"]["speed"]["prompt_tokens_per_s"] for r in (one, two)]
    assert prompt[0] and prompt[1] == pytest.approx(prompt[0], rel=1e-9)


def test_a_text_model_split_over_two_cards_fits_where_one_card_is_too_small(capsys):
    one, two = report(capsys, "RTX 3090"), report(capsys, "2x RTX 3090")
    llama70 = verdict(two, "llama-3.1-70b")
    assert llama70["placement"] == "gpu"
    assert verdict(one, "llama-3.1-70b")["placement"] != "gpu"


def test_one_gpu_runtimes_get_one_card_of_a_group():
    # 30 GB of weights: fits the group's 48 GB but not a 24 GB card, so speech and search go to the CPU.
    cpu = devices.Device("cpu", "CPU", "cpu", 64_000_000_000, 80e9, 1e12)
    group = devices.Device("gpu", "2 x X", "cuda", 48_000_000_000, 936e9, 71.2e12, count=2)
    from gpuready.tasks.base import place_whole

    placement, device, _ = place_whole({"weights": 30_000_000_000}, group, cpu)
    assert (placement, device.name) == ("cpu", "CPU")
    placement, device, _ = place_whole({"weights": 20_000_000_000}, group, cpu)
    assert (placement, device.name, device.count, device.usable_memory_bytes) == ("gpu", "X", 1, 24_000_000_000)


def test_a_pipeline_too_big_for_one_card_spreads_its_components_and_runs_at_one_cards_speed():
    catalog = load_catalog()
    flux = next(m for m in models_for(catalog, "image-generation") if m.id == "flux.1-schnell")
    cpu = devices.Device("cpu", "CPU", "cpu", 128_000_000_000, 80e9, 1e12)
    card = devices.Device("gpu", "X", "cuda", 32_000_000_000, 1792e9, 209.5e12)  # an RTX 5090's 32 GB
    group = devices.Device("gpu", "2 x X", "cuda", 64_000_000_000, 1792e9, 209.5e12, count=2)
    alone = image.estimate(flux, "bf16", 1024, 1024, flux.steps, card, cpu)
    spread = image.estimate(flux, "bf16", 1024, 1024, flux.steps, group, cpu)
    assert alone.placement == "offload" and spread.placement == "gpu"
    assert any('device_map="balanced"' in line and "card 1: denoiser" in line for line in spread.basis)
    # Same kernels on the same card: only model offload's PCIe transfer separates the two times.
    transfer = dict(alone.details)["offload_transfer_s"]
    assert spread.speed == pytest.approx(alone.speed - transfer, rel=1e-9)


def test_components_that_fit_no_card_are_not_spread():
    group = devices.Device("gpu", "2 x X", "cuda", 16_000_000_000, 936e9, 71.2e12, count=2)
    assert image.spread_over_cards({"denoiser": 9_000_000_000, "text encoders": 1}, 0, 0, group) is None
    assert image.spread_over_cards({"denoiser": 7_000_000_000, "text encoders": 7_000_000_000}, 0, 0, group) == [
        ["denoiser"], ["text encoders"]]
    assert image.spread_over_cards({"denoiser": 1}, 0, 0, devices.Device("gpu", "X", "cuda", 8, 1, 1)) is None


def test_fine_tuning_on_a_group_is_data_parallel_and_its_speed_adds_up():
    catalog = load_catalog()
    model = next(m for m in models_for(catalog, "fine-tuning") if m.id == "llama-3.2-1b")
    cpu = devices.Device("cpu", "CPU", "cpu", 64_000_000_000, 80e9, 1e12)
    card = devices.Device("gpu", "X", "cuda", 24_000_000_000, 936e9, 71.2e12)
    group = devices.Device("gpu", "2 x X", "cuda", 48_000_000_000, 936e9, 71.2e12, count=2)
    alone = finetune.estimate(model, "lora", catalog, card, cpu, Options(method="lora"))
    both = finetune.estimate(model, "lora", catalog, group, cpu, Options(method="lora"))
    assert alone.placement == both.placement == "gpu"
    assert both.gpu_memory_bytes == alone.gpu_memory_bytes  # a whole copy on each card
    assert both.speed == pytest.approx(2 * alone.speed, rel=1e-9)
