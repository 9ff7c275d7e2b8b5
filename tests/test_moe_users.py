"""Several users of a mixture of experts (--users N): a batched step reads the shared weights once and the
union of the N tokens' experts, 1 - (1 - k/E)^N of them under uniform routing (gpuready.tasks.concurrency),
not one token's. One user, dense models and models without expert counts are unchanged."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from gpuready.host import ReplayHost
from gpuready.probes import probe_hardware
from gpuready.report import build_report, report_json, schema_text
from gpuready.tasks import concurrency
from gpuready.tasks import text_estimate as est
from gpuready.tasks.devices import Device
from gpuready.tasks.registry import judge_model, load_catalog
from gpuready.tasks.text_estimate import (BANDWIDTH_EFFICIENCY, COMPUTE_EFFICIENCY, KV_READ_EXTRA, LAYER_SECONDS,
                                          MOE_LAYER_FACTOR,
                                          UNPACK_OPS_PER_WEIGHT, LanguageModel)
from gpuready.tasks.verdict import Options

FIXTURES = Path(__file__).parent / "fixtures" / "machines"
CATALOG = load_catalog()
LLAMA = CATALOG.get("llama-3.1-8b")  # dense, untied embeddings: one token reads less than all its parameters
CATALOG_MOES = [m for m in CATALOG.models.values() if isinstance(m, LanguageModel) and m.is_moe]

# A synthetic mixture of experts, by hand: 8 experts of 1B parameters each, 2 a token, 2B shared parameters.
# Total 2 + 8 x 1 = 10B, active 2 + 2 x 1 = 4B; a 4-bit file of 5 GB, so 0.5 bytes a parameter.
TOY = replace(LLAMA, id="toy-moe", name="Toy MoE", params=10e9, active_params=4e9, layers=10, experts=8,
              experts_per_token=2, tied_embeddings=None)
TOY_WEIGHTS = 5 * 10**9
# 1,000 GB/s and 100 TFLOPS (CUDA constants), so the roofline can be checked by hand.
GPU = Device(kind="gpu", name="Toy GPU", backend="cuda", usable_memory_bytes=80 * 10**9, bandwidth_bytes_per_s=1e12,
             flops=100e12)
CPU = Device(kind="cpu", name="Toy CPU", backend="cpu", usable_memory_bytes=64 * 10**9, bandwidth_bytes_per_s=1e11, flops=1e12)


def h200():
    found, _ = probe_hardware(ReplayHost(FIXTURES / "nvidia-h200"))
    return found


# users, expected share of the 8 experts read, parameters one step reads, bytes one step reads (0.5 a parameter):
#   share = 1 - (6/8)^N: N=1 0.25; N=2 1 - 0.5625 = 0.4375; N=8 1 - 0.1001129150390625 = 0.8998870849609375
#   parameters = 2B shared + 8B x share: 4B (one token's active), 5.5B, 9.1990966796875B
TABLE = [
    (1, 0.25, 4.0e9, 2.0e9),
    (2, 0.4375, 5.5e9, 2.75e9),
    (8, 0.8998870849609375, 9.1990966796875e9, 4.59954833984375e9),
]


@pytest.mark.parametrize(("users", "share", "params", "weight_bytes"), TABLE)
def test_a_batched_step_of_a_toy_moe_reads_its_shared_weights_and_the_expected_union_of_experts(users, share, params,
                                                                                                weight_bytes):
    assert est.routed_expert_params(TOY) == pytest.approx(2e9) and est.expert_params(TOY) == pytest.approx(8e9)
    assert concurrency.expert_share(TOY, users) == pytest.approx(share, rel=1e-12)
    assert concurrency.step_params_read(TOY, users) == pytest.approx(params, rel=1e-12)
    assert concurrency.step_weights_read_bytes(TOY, TOY_WEIGHTS, users) == pytest.approx(weight_bytes, rel=1e-12)


@pytest.mark.parametrize(("users", "share", "params", "weight_bytes"), TABLE)
def test_a_toy_moes_batched_speed_by_hand(users, share, params, weight_bytes):
    kv = 10**8
    result = concurrency.batched(TOY, TOY_WEIGHTS, kv, users, GPU, CPU, 1.0)
    # The step's weight bytes and every user's half-full cache over effective bandwidth, 10 layers' launches,
    # and unpacking the K-quant weights the step reads (its parameters, not one token's)
    memory_s = ((weight_bytes + users * kv * 0.5 * (1 + KV_READ_EXTRA)) / (1e12 * BANDWIDTH_EFFICIENCY["cuda"])
                + 10 * LAYER_SECONDS["cuda"] * MOE_LAYER_FACTOR
                + params * UNPACK_OPS_PER_WEIGHT["k-quant"] / 100e12)
    compute_s = users * 2 * 4e9 / (100e12 * COMPUTE_EFFICIENCY["cuda"])  # each token multiplies its 4B active
    assert memory_s > compute_s
    assert result == concurrency.Batched(users, pytest.approx(users / memory_s, rel=1e-12),
                                         pytest.approx(1 / memory_s, rel=1e-12), "memory", pytest.approx(share))


@pytest.mark.parametrize("model", [TOY, *CATALOG_MOES], ids=lambda m: m.id)
def test_one_user_reads_exactly_the_single_token_bytes_and_gets_the_single_user_speed(model):
    assert concurrency.step_params_read(model, 1) == est.matmul_params(model)
    assert concurrency.step_weights_read_bytes(model, TOY_WEIGHTS, 1) == est.weights_read_bytes(model, TOY_WEIGHTS)
    single = est.speed(model, est.MemoryBreakdown(TOY_WEIGHTS, 0, 0, 0), 0, GPU, CPU, 0.5, "Q4_K_M")
    one = concurrency.batched(model, TOY_WEIGHTS, 0, 1, GPU, CPU, 0.5, "Q4_K_M")
    assert one.per_user_tokens_per_s == single.generation_tokens_per_s


@pytest.mark.parametrize("model", [TOY, *CATALOG_MOES], ids=lambda m: m.id)
def test_more_users_never_read_fewer_expert_bytes_and_never_more_than_the_file(model):
    reads = [concurrency.step_weights_read_bytes(model, TOY_WEIGHTS, users) for users in range(1, 257)]
    assert all(a < b for a, b in zip(reads[:16], reads[1:16]))  # each more user reads more, before it saturates
    assert reads == sorted(reads) and reads[-1] <= TOY_WEIGHTS * (1 + 1e-12)
    assert reads[-1] == pytest.approx(TOY_WEIGHTS, rel=1e-3)  # 256 tokens read practically every expert


def test_the_catalogs_moes_read_the_shares_the_formula_gives():
    assert concurrency.expert_share(CATALOG.get("mixtral-8x7b"), 8) == pytest.approx(1 - (6 / 8) ** 8)  # ~90%
    assert concurrency.expert_share(CATALOG.get("qwen3-235b-a22b"), 8) == pytest.approx(1 - (120 / 128) ** 8)  # ~40%


@pytest.mark.parametrize("users", [1, 2, 8, 64])
def test_dense_models_are_unchanged(users):
    assert concurrency.expert_share(LLAMA, users) is None
    assert concurrency.step_params_read(LLAMA, users) == est.matmul_params(LLAMA)
    assert concurrency.step_weights_read_bytes(LLAMA, 4 * 10**9, users) == est.weights_read_bytes(LLAMA, 4 * 10**9)
    result = concurrency.batched(LLAMA, 4 * 10**9, 10**8, users, GPU, CPU, 1.0)
    assert result.expert_share is None
    assert "each step reads the weights once and" in concurrency.basis(result, 8192, LLAMA)


@pytest.mark.parametrize("users", [1, 2, 8])
def test_a_moe_without_expert_counts_keeps_one_tokens_bytes_and_says_so(users):
    unknown = replace(TOY, experts=None, experts_per_token=None)
    assert concurrency.expert_share(unknown, users) is None
    assert concurrency.step_weights_read_bytes(unknown, TOY_WEIGHTS, users) == est.weights_read_bytes(unknown, TOY_WEIGHTS)
    result = concurrency.batched(unknown, TOY_WEIGHTS, 0, users, GPU, CPU, 1.0)
    assert "expert counts are not known" in concurrency.basis(result, 8192, unknown)


@pytest.mark.parametrize(("model_id", "share", "experts"), [("mixtral-8x7b", "90%", "8 experts, 2 each"),
                                                             ("qwen3-235b-a22b", "40%", "128 experts, 8 each")])
def test_the_verdict_the_check_and_the_basis_use_the_union_of_experts(model_id, share, experts):
    model = CATALOG.get(model_id)
    verdict = judge_model(model, CATALOG, h200(), Options(users=8))
    batched = verdict.estimate.batched
    assert verdict.speed == batched.per_user_tokens_per_s  # what `check --users` levels and the report shows
    # The old model (every user's token took the same experts) is what a model without expert counts still gets,
    # on the same variant and placement: faster
    same_experts = judge_model(replace(model, experts=None), CATALOG, h200(), Options(users=8, quant=verdict.quant))
    assert same_experts.placement == verdict.placement
    assert verdict.estimate.speed == same_experts.estimate.speed  # the single-user figures do not move
    assert batched.per_user_tokens_per_s < same_experts.speed
    assert batched.expert_share == pytest.approx(float(share.rstrip("%")) / 100, abs=0.005)
    assert any(f"each step reads the shared weights once and about {share} of the experts "
               f"(uniform routing of 8 tokens over {experts}" in line for line in verdict.estimate.basis)


def test_the_json_report_carries_the_expert_share_and_validates():
    import jsonschema

    report = build_report(h200(), [], CATALOG, Options(users=8))
    data = json.loads(json.dumps(report_json(report)))
    jsonschema.validate(data, json.loads(schema_text()))
    mixtral = next(v for v in data["verdicts"] if v["model_id"] == "mixtral-8x7b" and v["task"] == "text-generation")
    llama = next(v for v in data["verdicts"] if v["model_id"] == "llama-3.1-8b" and v["task"] == "text-generation")
    assert mixtral["estimate"]["batched"]["expert_share"] == pytest.approx(1 - 0.75 ** 8)
    assert llama["estimate"]["batched"]["expert_share"] is None
