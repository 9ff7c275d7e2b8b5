"""Several users of one LLM at once (--users N): a KV cache per user, batched decoding speeds
(aggregate rises until compute bounds it, each user's falls), the verdict when the caches no
longer fit, and the flag and requirements key."""

from __future__ import annotations

from dataclasses import replace

import json
from pathlib import Path

import pytest

from gpuready.frontends.cli import main
from gpuready.host import ReplayHost
from gpuready.probes import probe_hardware
from gpuready.report import build_report, report_json, schema_text
from gpuready.tasks import concurrency
from gpuready.tasks.devices import Device
from gpuready.tasks.registry import judge_model, load_catalog
from gpuready.tasks import text_estimate as est
from gpuready.tasks.text_estimate import (BANDWIDTH_EFFICIENCY, COMPUTE_EFFICIENCY, KV_READ_EXTRA, LAYER_SECONDS,
                                          UNPACK_OPS_PER_WEIGHT, kv_cache_bytes)
from gpuready.tasks.verdict import Options

FIXTURES = Path(__file__).parent / "fixtures" / "machines"
RTX4090 = str(FIXTURES / "nvidia-rtx4090")
CATALOG = load_catalog()
# The untied-embedding term has its own tests (tests/test_speed_model.py); these pin the rest by hand.
LLAMA = replace(CATALOG.get("llama-3.1-8b"), tied_embeddings=None)
# 1,000 GB/s and 100 TFLOPS, so the roofline can be checked by hand.
GPU = Device(kind="gpu", name="Toy GPU", backend="cuda", usable_memory_bytes=80 * 10**9, bandwidth_bytes_per_s=1e12,
             flops=100e12)
CPU = Device(kind="cpu", name="Toy CPU", backend="cpu", usable_memory_bytes=64 * 10**9, bandwidth_bytes_per_s=1e11, flops=1e12)


def hardware():
    found, _ = probe_hardware(ReplayHost(FIXTURES / "nvidia-rtx4090"))
    return found


def test_a_batched_step_reads_the_weights_once_and_each_users_half_full_cache():
    weights, kv = 4 * 10**9, 10**9
    result = concurrency.batched(LLAMA, weights, kv, 4, GPU, CPU, 1.0)
    # 6 GB over effective bandwidth, plus the step's fixed cost (32 layers' launches) and unpacking the K-quant
    # weights once: the single-user step's terms, paid once for all four users
    # (the caches' bytes once more at KV_READ_EXTRA: attention reads them at 1 / (1 + k) of the weights' rate)
    memory_s = ((weights + 4 * kv * 0.5 * (1 + KV_READ_EXTRA)) / (1e12 * BANDWIDTH_EFFICIENCY["cuda"]) + 32 * LAYER_SECONDS["cuda"]
                + LLAMA.active_params * UNPACK_OPS_PER_WEIGHT["k-quant"] / 100e12)
    compute_s = 4 * 2 * LLAMA.active_params / (100e12 * COMPUTE_EFFICIENCY["cuda"])
    assert memory_s > compute_s
    assert result == concurrency.Batched(4, pytest.approx(4 / memory_s), pytest.approx(1 / memory_s), "memory")


def test_with_enough_users_decoding_becomes_compute_bound_and_the_aggregate_stops_rising():
    result = concurrency.batched(LLAMA, 4 * 10**9, 0, 512, GPU, CPU, 1.0)
    assert result.bound == "compute"
    assert result.aggregate_tokens_per_s == pytest.approx(100e12 * COMPUTE_EFFICIENCY["cuda"] / (2 * LLAMA.active_params))


def test_one_user_in_a_batch_is_the_single_user_step_and_each_of_several_is_no_faster():
    weights, kv = 4 * 10**9, 10**9
    single = est.speed(LLAMA, est.MemoryBreakdown(weights, 0, 0, 0), 0, GPU, CPU, 1.0, "Q4_K_M")
    one = concurrency.batched(LLAMA, weights, 0, 1, GPU, CPU, 1.0, "Q4_K_M")
    assert one.per_user_tokens_per_s == pytest.approx(single.generation_tokens_per_s)
    many = concurrency.batched(LLAMA, weights, kv, 4, GPU, CPU, 1.0, "Q4_K_M")
    assert many.per_user_tokens_per_s < single.generation_tokens_per_s < many.aggregate_tokens_per_s


@pytest.mark.parametrize("kv", [0, 10**8, 10**9])
def test_per_user_speed_never_rises_and_aggregate_never_falls_below_one_users(kv):
    results = [concurrency.batched(LLAMA, 4 * 10**9, kv, users, GPU, CPU, 0.5) for users in (1, 2, 4, 8, 16, 64, 256)]
    per_user = [r.per_user_tokens_per_s for r in results]
    assert per_user == sorted(per_user, reverse=True)
    assert all(r.aggregate_tokens_per_s >= results[0].aggregate_tokens_per_s for r in results)


def test_more_users_never_lower_memory_and_the_kv_cache_is_one_per_user():
    totals = []
    for users in (1, 2, 4, 8, 32):
        verdict = judge_model(LLAMA, CATALOG, hardware(), Options(quant="Q4_K_M", users=users, context_tokens=8192))
        assert verdict.estimate.memory.kv_cache_bytes == users * kv_cache_bytes(LLAMA, 8192)
        totals.append(verdict.estimate.memory.total_bytes)
    assert totals == sorted(totals)


def test_the_verdict_changes_when_the_caches_no_longer_fit_the_gpu():
    one = judge_model(LLAMA, CATALOG, hardware(), Options(quant="Q4_K_M", context_tokens=8192))
    many = judge_model(LLAMA, CATALOG, hardware(), Options(quant="Q4_K_M", context_tokens=8192, users=64))
    assert (one.placement, one.level) == ("gpu", "runs-well")
    assert (many.placement, many.level) == ("split", "too-slow")  # 64 x 1.07 GB of caches


def test_several_users_lead_with_each_users_speed_and_say_the_aggregate():
    verdict = judge_model(LLAMA, CATALOG, hardware(), Options(quant="Q4_K_M", context_tokens=8192, users=8))
    batched = verdict.estimate.batched
    assert verdict.speed == batched.per_user_tokens_per_s < verdict.estimate.speed.generation_tokens_per_s
    assert verdict.reasons[0] == (f"Q4_K_M: about {batched.per_user_tokens_per_s:.0f} tokens/s for each of 8 users, "
                                  f"{batched.aggregate_tokens_per_s:.0f} tokens/s in all (+/-{verdict.uncertainty:.0%})")


def test_one_user_is_the_single_sequence_estimate_unchanged():
    plain = judge_model(LLAMA, CATALOG, hardware(), Options(quant="Q4_K_M"))
    one = judge_model(LLAMA, CATALOG, hardware(), Options(quant="Q4_K_M", users=1))
    assert one == plain and one.estimate.batched is None


def test_the_report_with_users_still_validates_against_the_schema():
    import jsonschema

    report = build_report(hardware(), [], CATALOG, Options(users=4))
    data = json.loads(json.dumps(report_json(report)))
    jsonschema.validate(data, json.loads(schema_text()))
    llama = next(v for v in data["verdicts"] if v["model_id"] == "llama-3.1-8b" and v["task"] == "text-generation")
    assert (data["settings"]["users"], llama["estimate"]["users"], llama["estimate"]["batched"]["users"]) == (4, 4, 4)


@pytest.mark.parametrize(
    ("argv", "code"),
    [
        (["--model", "llama-3.1-8b", "--quant", "Q4_K_M", "--users", "16"], 0),
        (["--model", "llama-3.1-8b", "--quant", "Q4_K_M", "--users", "64"], 1),
        (["--model", "llama-3.1-8b", "--users", "0"], 2),
        (["--model", "whisper-small", "--users", "4"], 2),
        (["--users", "4"], 2),
    ],
)
def test_check_users_exit_codes(capsys, argv, code):
    got = main(["check", "--machine", RTX4090, *argv])
    out, err = capsys.readouterr()
    assert got == code, (out, err)
    assert "Traceback" not in err


def test_a_requirements_file_can_ask_for_several_users(capsys, tmp_path):
    path = tmp_path / "needs.toml"
    path.write_text('[[require]]\nmodel = "llama-3.1-8b"\nquant = "Q4_K_M"\nusers = 16\n')
    code = main(["check", "--machine", RTX4090, "--requirements", str(path)])
    out, _ = capsys.readouterr()
    assert (code, out.split(":")[0]) == (0, "ok   model llama-3.1-8b Q4_K_M, 16 users")
    path.write_text('[[require]]\nmodel = "llama-3.1-8b"\nusers = 0\n')
    assert main(["check", "--machine", RTX4090, "--requirements", str(path)]) == 2
