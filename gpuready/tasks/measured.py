"""Speeds measured on this machine (`gpuready bench` with llama-bench or whisper-bench) in place of
the formulas': pure functions over an estimate and the kept measurements."""

from __future__ import annotations

import dataclasses

from gpuready.bench.results import EncoderTime, ModelSpeed
from gpuready.tasks.devices import MEASURED_HERE
from gpuready.tasks.text_estimate import Speed

# A catalogue model and a benchmarked file are the same network when their parameter
# counts agree this closely (catalogue counts are rounded; GGUF counts are exact).
PARAMS_TOLERANCE = 0.03


def matching_speed(model, quant_id: str, placement: str, speeds: tuple[ModelSpeed, ...]) -> ModelSpeed | None:
    """The llama-bench result for this model's shape, quantisation and placement, if any."""
    for speed in speeds:
        if isinstance(speed, ModelSpeed) and (speed.quant == quant_id and speed.placement == placement and speed.layers == model.layers
                and speed.hidden_size == model.hidden_size and speed.kv_heads == model.kv_heads
                and speed.head_dim == model.head_dim
                and abs(speed.params - model.params) <= PARAMS_TOLERANCE * model.params):
            return speed
    return None


def with_measured_speed(estimate, model, speeds: tuple[ModelSpeed, ...]):
    """The estimate with llama-bench's real tokens/s in place of the formula's, when one matches."""
    found = matching_speed(model, estimate.quant, estimate.placement, speeds)
    if found is None or estimate.speed is None:
        return estimate
    generation = found.generation_tokens_per_s
    ratio = estimate.speed.generation_tokens_per_s_full_context / estimate.speed.generation_tokens_per_s
    prompt = found.prompt_tokens_per_s.median if found.prompt_tokens_per_s else estimate.speed.prompt_tokens_per_s
    speed = Speed(
        generation_tokens_per_s=generation.median,
        generation_tokens_per_s_full_context=generation.median * ratio,
        prompt_tokens_per_s=prompt,
        uncertainty=generation.relative_spread,
    )
    basis = [line for line in estimate.basis if not line.startswith(("generation:", "prompt:"))]
    basis.append(f"generation: {generation.median:.1f} tokens/s {MEASURED_HERE} "
                 f"({generation.minimum:.1f}-{generation.maximum:.1f} over {generation.samples} runs; {found.source}); "
                 f"at full context scaled by the formula's ratio {ratio:.2f}")
    if found.prompt_tokens_per_s:
        basis.append(f"prompt: {prompt:.0f} tokens/s {MEASURED_HERE} ({found.source})")
    return dataclasses.replace(estimate, speed=speed, basis=tuple(basis))


def with_measured_encoder(model, variant: str, placement: str, backend: str, speed: float, encode: float,
                          lines: list[str], measured: tuple, window_seconds: float, formula_uncertainty: float):
    """Speech to text with whisper-bench's encoder time in place of the formula's, where whisper.cpp is the runtime.

    Returns (x real time, encoder seconds, uncertainty, basis lines); the decoder stays estimated,
    so the band mixes the measured spread and the formula's, weighted by each part's time.
    """
    whisper_cpp = variant.startswith("q") or backend != "cuda"  # CUDA fp16/int8 runs in faster-whisper instead
    found = next((e for e in measured if isinstance(e, EncoderTime) and whisper_cpp and e.variant == variant
                  and e.placement == placement and e.d_model == model.d_model and e.encoder_layers == model.encoder_layers), None)
    if found is None:
        return speed, encode, formula_uncertainty, lines
    decoder = window_seconds / speed - encode
    seconds = found.seconds_per_window
    window = seconds.median + decoder
    uncertainty = (seconds.relative_spread * seconds.median + formula_uncertainty * decoder) / window
    line = (f"encoder: {seconds.median:.2f} s per 30 s window {MEASURED_HERE} "
            f"({seconds.minimum:.2f}-{seconds.maximum:.2f}; {found.source})")
    return window_seconds / window, seconds.median, uncertainty, [line, *lines[1:]]
