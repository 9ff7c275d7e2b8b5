"""Several users of one language model at once: batched decoding. Pure functions.

A server (llama.cpp's ``--parallel N``, vLLM) decodes one token for each of N sequences in
one step: the weights are read once a step, each sequence's KV cache is read for its own
token, and the matrix units do N tokens' worth of work. A step takes the longer of its
memory time and its compute time, so aggregate throughput rises with N until compute (or
the KV caches' reads) bounds it, and each user's speed falls.

A mixture of experts is the exception to "the weights are read once": its shared weights
(attention, routers, embeddings) are, but the N tokens are routed independently, so a step
reads the union of their experts, more than one token's (expert_share).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuready.tasks.devices import Device
from gpuready.tasks import text_estimate
from gpuready.tasks.text_estimate import (COMPUTE_EFFICIENCY, LanguageModel, expert_params, matmul_params,
                                          routed_expert_params)

# Each user's KV cache is taken as half full on average over a conversation that fills the
# context (an assumption, stated in the basis).
AVERAGE_CACHE_FILL = 0.5


@dataclass(frozen=True)
class Batched:
    users: int
    aggregate_tokens_per_s: float
    per_user_tokens_per_s: float
    bound: str  # memory | compute: what limits a step on the device that takes longest
    # Mixture of experts: the expected share of all the experts one step reads (expert_share); None for a dense
    # model or one whose expert counts are not known.
    expert_share: float | None = None


def expert_share(model: LanguageModel, users: int) -> float | None:
    """Expected share of a mixture of experts' experts that one step of ``users`` tokens reads: 1 - (1 - k/E)^N
    for E experts a layer, k chosen a token, N tokens.

    An assumption: each token's k experts are a uniformly random k of the E, independently of the other tokens,
    so a given expert escapes one token with probability (E - k)/E and all N with ((E - k)/E)^N. Real routers
    are not uniform: some experts are picked more often than others, and users on one topic share experts.
    Both make the union smaller (with independent tokens, expected experts read = sum over experts of
    1 - (1 - p_i)^N for per-token probabilities p_i summing to k, which is concave in the p_i and so largest
    when every p_i is k/E), so this errs towards too many bytes and too low a speed. The load-balancing loss
    MoE models are trained with pushes routing towards uniform (Switch Transformer's auxiliary loss, arXiv
    2101.03961 section 2.2; Qwen3's global-batch load-balancing loss, arXiv 2505.09388 section 2, which balances
    over a whole batch and lets experts specialise more within one text), which makes uniform a fair first
    approximation. None for a dense model or one whose expert counts are not known."""
    if not expert_params(model):
        return None
    return 1.0 - (1.0 - model.experts_per_token / model.experts) ** users


def step_params_read(model: LanguageModel, users: int) -> float:
    """Parameters one decoding step of ``users`` tokens reads: one token's (matmul_params) for a dense model;
    for a mixture of experts the shared ones plus all the experts x expert_share, i.e. one token's with its
    routed experts replaced by the expected union of ``users`` tokens' experts. For one user exactly one
    token's; where the expert counts are not known, one token's whatever ``users`` is (as if every token took
    the same experts: too few bytes, said in the basis)."""
    share = expert_share(model, users)
    if share is None or users <= 1:
        return matmul_params(model)
    return matmul_params(model) - routed_expert_params(model) + expert_params(model) * share


def step_weights_read_bytes(model: LanguageModel, weights_bytes: float, users: int) -> float:
    """Bytes of weights one step of ``users`` tokens reads: the file's share of step_params_read. For one user
    this is text_estimate.weights_read_bytes, the single-sequence figure."""
    return weights_bytes * step_params_read(model, users) / model.params


def step_seconds(model: LanguageModel, weights_read: float, kv_bytes_per_user: float, users: int,
                 device: Device, share: text_estimate.Share, family: str = "k-quant",
                 bf16: bool = False) -> tuple[float, str]:
    """One decoding step's time on one device doing ``share`` of it (text_estimate.device_shares): the single-user
    step (text_estimate.step_seconds: bytes, fixed per-layer cost, unpacking) with the step's weights
    (``weights_read``: step_weights_read_bytes, unpacked once) and every user's cache read, or the matrix work of
    ``users`` tokens, whichever is longer."""
    cache_read = users * kv_bytes_per_user * AVERAGE_CACHE_FILL
    memory_time = text_estimate.step_seconds(model, weights_read + cache_read, device, share, family, bf16,
                                             step_params_read(model, users), kv_bytes=cache_read)
    compute_time = 0.0
    if device.flops:
        compute = device.flops * COMPUTE_EFFICIENCY.get(device.backend, COMPUTE_EFFICIENCY["cpu"])
        compute_time = share.weights * users * 2 * matmul_params(model) / compute
    return (memory_time, "memory") if memory_time >= compute_time else (compute_time, "compute")


def batched(model: LanguageModel, weights_bytes: int, kv_bytes_per_user: int, users: int,
            gpu: Device | None, cpu: Device, gpu_fraction: float, quant_id: str = "",
            cpu_expert_layers: int = 0) -> Batched | None:
    """Aggregate and per-user generation speed of ``users`` sequences decoded together;
    None when a device's bandwidth is unknown. Time on a GPU and a CPU part adds up (split placement: layers, or
    with ``cpu_expert_layers`` the experts of that many layers in system memory, text_estimate.device_shares)."""
    weights_read = step_weights_read_bytes(model, weights_bytes, users)
    family = text_estimate.quant_family(quant_id) if quant_id else "k-quant"
    shares = text_estimate.device_shares(model, gpu_fraction, cpu_expert_layers, step_params_read(model, users))
    total, bounds = 0.0, []
    for device, share in ((gpu, shares[0]), (cpu, shares[1])):
        if share.weights <= 0:
            continue
        if device is None or not device.bandwidth_bytes_per_s:
            return None
        seconds, bound = step_seconds(model, weights_read, kv_bytes_per_user, users, device, share, family,
                                      text_estimate.is_bf16(quant_id))
        total += seconds
        bounds.append((seconds, bound))
    if total <= 0:
        return None
    return Batched(users, users / total, 1 / total, max(bounds)[1], expert_share(model, users))


def basis(result: Batched, context_tokens: int, model: LanguageModel | None = None) -> str:
    """The batched speeds' basis line; ``model`` says a mixture of experts' share of experts read."""
    if result.expert_share is not None and model is not None:
        weights = (f"the shared weights once and about {result.expert_share:.0%} of the experts (uniform routing of "
                   f"{result.users} tokens over {model.experts} experts, {model.experts_per_token} each: "
                   f"1 - (1 - {model.experts_per_token}/{model.experts})^{result.users}: an assumption; "
                   f"real routers are less even and read fewer)")
    elif model is not None and model.is_moe:
        weights = ("one token's active weights once (a mixture of experts whose expert counts are not known: "
                   "as if every user's token took the same experts, so the step's bytes are too few and the speeds too high)")
    else:
        weights = "the weights once"
    return (
        f"{result.users} users at once: each step reads {weights} and every user's KV cache "
        f"(taken as {AVERAGE_CACHE_FILL:.0%} full of {context_tokens:,} tokens) and computes {result.users} tokens; "
        f"{result.bound} bound: {result.aggregate_tokens_per_s:,.0f} tokens/s in all, {result.per_user_tokens_per_s:,.1f} each"
    )
