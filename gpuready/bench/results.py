"""What `gpuready bench` measured on one machine: plain frozen dataclasses and their JSON form."""

from __future__ import annotations

from dataclasses import dataclass, field

from gpuready.bench.stats import Spread


@dataclass(frozen=True)
class GPUMeasurement:
    """One GPU as PyTorch saw it: device-to-device copy bandwidth and half-precision matmul throughput.

    The power figures are the average watts NVML's energy counter saw during the copy (memory-bound)
    and the matmul (compute-bound) phases; None without a working counter (gpuready.bench.power_meter).
    """

    index: int
    name: str
    bandwidth_bytes_per_s: Spread | None = None
    fp16_flops: Spread | None = None
    bf16_flops: Spread | None = None
    copy_power_w: Spread | None = None
    matmul_power_w: Spread | None = None


@dataclass(frozen=True)
class ModelSpeed:
    """Real tokens/s of one model file on this machine (llama-bench pp512 / tg128).

    The model is named by its shape (layers, hidden size, KV heads, head dim, parameters), so
    the figure applies to every catalogue entry of that architecture in that quantisation.
    """

    quant: str
    layers: int
    hidden_size: int
    kv_heads: int
    head_dim: int
    params: float
    placement: str  # gpu | split | cpu, as llama-bench ran it
    generation_tokens_per_s: Spread
    prompt_tokens_per_s: Spread | None
    source: str  # e.g. "llama-bench b5163 (CUDA), model.Q4_K_M.gguf"


@dataclass(frozen=True)
class EncoderTime:
    """whisper.cpp's encoder time for one 30 s window on this machine (whisper-bench), by model shape and precision."""

    d_model: int
    encoder_layers: int
    variant: str  # fp16, fp32, q8_0, q5_0 (the catalogue's names)
    placement: str  # gpu | cpu, as whisper-bench ran it
    seconds_per_window: Spread
    source: str


@dataclass(frozen=True)
class Measurements:
    measured_at: str  # ISO date, e.g. 2026-12-03
    fingerprint: dict
    memory_read_bytes_per_s: Spread | None = None
    memory_copy_bytes_per_s: Spread | None = None
    cpu_fp32_flops: Spread | None = None
    cpu_threads: int | None = None
    gpus: tuple[GPUMeasurement, ...] = ()
    models: tuple[ModelSpeed, ...] = field(default=())
    notes: tuple[str, ...] = ()
    encoders: tuple[EncoderTime, ...] = ()


def _spread(data) -> Spread | None:
    return Spread.from_dict(data) if data else None


def _plain(spread: Spread | None):
    return spread.to_dict() if spread else None


def to_json(m: Measurements) -> dict:
    return {
        "measured_at": m.measured_at,
        "fingerprint": m.fingerprint,
        "memory_read_bytes_per_s": _plain(m.memory_read_bytes_per_s),
        "memory_copy_bytes_per_s": _plain(m.memory_copy_bytes_per_s),
        "cpu_fp32_flops": _plain(m.cpu_fp32_flops),
        "cpu_threads": m.cpu_threads,
        "gpus": [
            {"index": g.index, "name": g.name, "bandwidth_bytes_per_s": _plain(g.bandwidth_bytes_per_s),
             "fp16_flops": _plain(g.fp16_flops), "bf16_flops": _plain(g.bf16_flops),
             "copy_power_w": _plain(g.copy_power_w), "matmul_power_w": _plain(g.matmul_power_w)}
            for g in m.gpus
        ],
        "models": [
            {"quant": s.quant, "layers": s.layers, "hidden_size": s.hidden_size, "kv_heads": s.kv_heads,
             "head_dim": s.head_dim, "params": s.params, "placement": s.placement,
             "generation_tokens_per_s": _plain(s.generation_tokens_per_s),
             "prompt_tokens_per_s": _plain(s.prompt_tokens_per_s), "source": s.source}
            for s in m.models
        ],
        "notes": list(m.notes),
        "encoders": [
            {"d_model": e.d_model, "encoder_layers": e.encoder_layers, "variant": e.variant, "placement": e.placement,
             "seconds_per_window": _plain(e.seconds_per_window), "source": e.source}
            for e in m.encoders
        ],
    }


def from_json(data: dict) -> Measurements:
    """The inverse of :func:`to_json`; raises KeyError/TypeError/ValueError on a damaged file."""
    return Measurements(
        measured_at=str(data["measured_at"]),
        fingerprint=dict(data["fingerprint"]),
        memory_read_bytes_per_s=_spread(data.get("memory_read_bytes_per_s")),
        memory_copy_bytes_per_s=_spread(data.get("memory_copy_bytes_per_s")),
        cpu_fp32_flops=_spread(data.get("cpu_fp32_flops")),
        cpu_threads=data.get("cpu_threads"),
        gpus=tuple(
            GPUMeasurement(int(g["index"]), str(g["name"]), _spread(g.get("bandwidth_bytes_per_s")),
                           _spread(g.get("fp16_flops")), _spread(g.get("bf16_flops")),
                           _spread(g.get("copy_power_w")), _spread(g.get("matmul_power_w")))
            for g in data.get("gpus", ())
        ),
        models=tuple(
            ModelSpeed(str(s["quant"]), int(s["layers"]), int(s["hidden_size"]), int(s["kv_heads"]), int(s["head_dim"]),
                       float(s["params"]), str(s["placement"]), Spread.from_dict(s["generation_tokens_per_s"]),
                       _spread(s.get("prompt_tokens_per_s")), str(s["source"]))
            for s in data.get("models", ())
        ),
        notes=tuple(str(n) for n in data.get("notes", ())),
        encoders=tuple(
            EncoderTime(int(e["d_model"]), int(e["encoder_layers"]), str(e["variant"]), str(e["placement"]),
                        Spread.from_dict(e["seconds_per_window"]), str(e["source"]))
            for e in data.get("encoders", ())
        ),
    )
