"""A toy fifth task, built from the test files alone, to prove that adding a task is one module and one
registration: a made-up "translation" task whose speed is sentences a second, bandwidth bound."""

from __future__ import annotations

from dataclasses import dataclass

from gpuready.tasks.base import Task, TaskEstimate, bits_quality, level_at_least, listed_variants, place_whole

BITS = {"fp16": 16.0, "int8": 8.0}
FLOORS = {"runs-well": 2.0, "runs": 0.5, "slow": 0.1}  # sentences a second
TOKENS_PER_SENTENCE = 30


@dataclass(frozen=True)
class Translator:
    id: str
    name: str
    params: float
    quants: tuple[str, ...]
    source: str
    task: str = "translation"


def parse(entry, quants=None) -> Translator:
    return Translator(id=entry.ident(), name=entry.text("name"), params=entry.number("params"),
                      quants=entry.known_names("variants", BITS, "precision"), source=entry.text("source"))


def estimate(model: Translator, variant, catalog, gpu, cpu, options) -> TaskEstimate:
    weights = int(model.params * BITS[variant] / 8)
    placement, device, parts = place_whole({f"weights ({variant})": weights}, gpu, cpu)
    speed = None
    if device.bandwidth_bytes_per_s:
        speed = device.bandwidth_bytes_per_s * 0.5 / weights / TOKENS_PER_SENTENCE
    from gpuready.tasks.base import MemoryParts

    memory = MemoryParts(parts)
    return TaskEstimate(model.id, variant, placement, memory, memory.on("gpu"), memory.on("system"), speed,
                        "sentences/s", 0.5, (), (f"{model.params / 1e9:.1f}B parameters read per token",))


def toy_task(name: str = "translation", title: str = "Translation") -> Task:
    return Task(
        name=name,
        title=title,
        parse=parse,
        variants=listed_variants,
        estimate=estimate,
        level=lambda model, estimate, options: (level_at_least(estimate.speed, FLOORS), []),
        describe=lambda model, estimate, options: f"about {estimate.speed:.1f} sentences a second",
        runtime=lambda model, estimate, gpu, catalog: "CTranslate2",
        quality=bits_quality(BITS),
    )
