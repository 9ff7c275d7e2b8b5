"""Several users of one language model at once: batched decoding. Pure functions.

A server (llama.cpp's ``--parallel N``, vLLM) decodes one token for each of N sequences in
one step: the weights are read once a step, each sequence's KV cache is read for its own
token, and the matrix units do N tokens' worth of work. A step takes the longer of its
memory time and its compute time, so aggregate throughput rises with N until compute (or
the KV caches' reads) bounds it, and each user's speed falls.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuready.tasks.devices import Device
from gpuready.tasks import text_estimate
from gpuready.tasks.text_estimate import COMPUTE_EFFICIENCY, LanguageModel, matmul_params, weights_read_bytes

# Each user's KV cache is taken as half full on average over a conversation that fills the
# context (an assumption, stated in the basis).
AVERAGE_CACHE_FILL = 0.5


@dataclass(frozen=True)
class Batched:
    users: int
    aggregate_tokens_per_s: float
    per_user_tokens_per_s: float
    bound: str  # memory | compute: what limits a step on the device that takes longest


def step_seconds(model: LanguageModel, weights_read: float, kv_bytes_per_user: float, users: int,
                 device: Device, fraction: float, family: str = "k-quant", bf16: bool = False) -> tuple[float, str]:
    """One decoding step's time on one device holding ``fraction`` of the layers: the single-user step
    (text_estimate.step_seconds: bytes, fixed per-layer cost, unpacking) with every user's cache read, or
    the matrix work of ``users`` tokens, whichever is longer."""
    memory_time = text_estimate.step_seconds(model, weights_read + users * kv_bytes_per_user * AVERAGE_CACHE_FILL,
                                             device, fraction, family, bf16)
    compute_time = 0.0
    if device.flops:
        compute = device.flops * COMPUTE_EFFICIENCY.get(device.backend, COMPUTE_EFFICIENCY["cpu"])
        compute_time = fraction * users * 2 * matmul_params(model) / compute
    return (memory_time, "memory") if memory_time >= compute_time else (compute_time, "compute")


def batched(model: LanguageModel, weights_bytes: int, kv_bytes_per_user: int, users: int,
            gpu: Device | None, cpu: Device, gpu_fraction: float, quant_id: str = "") -> Batched | None:
    """Aggregate and per-user generation speed of ``users`` sequences decoded together;
    None when a device's bandwidth is unknown. Time on a GPU and a CPU part adds up (split placement)."""
    weights_read = weights_read_bytes(model, weights_bytes)
    family = text_estimate.quant_family(quant_id) if quant_id else "k-quant"
    total, bounds = 0.0, []
    for device, fraction in ((gpu, gpu_fraction), (cpu, 1.0 - gpu_fraction)):
        if fraction <= 0:
            continue
        if device is None or not device.bandwidth_bytes_per_s:
            return None
        seconds, bound = step_seconds(model, weights_read, kv_bytes_per_user, users, device, fraction, family,
                                      text_estimate.is_bf16(quant_id))
        total += seconds
        bounds.append((seconds, bound))
    if total <= 0:
        return None
    return Batched(users, users / total, 1 / total, max(bounds)[1])


def basis(result: Batched, context_tokens: int) -> str:
    return (
        f"{result.users} users at once: each step reads the weights once and every user's KV cache "
        f"(taken as {AVERAGE_CACHE_FILL:.0%} full of {context_tokens:,} tokens) and computes {result.users} tokens; "
        f"{result.bound} bound: {result.aggregate_tokens_per_s:,.0f} tokens/s in all, {result.per_user_tokens_per_s:,.1f} each"
    )
