"""The preflight: requirements judged against a Report, with exit codes setup scripts can trust.

0 ready (every requirement met), 1 not ready (one is not met), 2 usage or bad input,
3 could not tell (a probe a requirement depends on failed, and nothing else failed).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from gpuready.app import check_models, check_quant
from gpuready.catalog.loader import Catalog, CatalogError, read_toml
from gpuready.errors import ExitCode, UsageError
from gpuready.hardware import Hardware, Problem
from gpuready.probes import GPU_PROBES
from gpuready.report import TASK_PROBES, gpu_hints, gpu_missing, no_gpu_words
from gpuready.tasks import registry
from gpuready.tasks.devices import gpu_device
from gpuready.tasks.energy import WH_PER_1K_TOKENS
from gpuready.tasks.verdict import PLACEMENT_ORDER, PLACEMENT_WORDS, RUNNABLE, Options, level_words, rank_key
from gpuready.units import fmt_figures, fmt_gb, fmt_number, parse_documents, parse_resolution, parse_size

__all__ = ["ExitCode", "UsageError", "parse_size", "parse_resolution", "parse_documents", "Requirement", "Outcome",
           "validate", "load_requirements", "evaluate", "exit_code"]


@dataclass(frozen=True)
class Requirement:
    """One thing a project needs: a task, a model (with speed and placement), or an amount of memory."""

    task: str | None = None
    model: str | None = None
    quant: str | None = None
    context_tokens: int | None = None
    min_generation_tokens_per_s: float | None = None
    placement: str = "cpu"
    min_memory_bytes: int | None = None
    min_gpu_memory_bytes: int | None = None
    min_realtime: float | None = None  # speech: x real time (audio seconds per second)
    max_seconds_per_image: float | None = None  # image generation, at `resolution`
    resolution: tuple[int, int] | None = None  # image generation: width, height
    min_chunks_per_minute: float | None = None  # document search: embedding speed
    documents: int | None = None  # document search: collection size for the index
    # Fine-tuning (with task "fine-tuning" and, optionally, a model): the recipe judged.
    method: str | None = None
    sequence_tokens: int | None = None
    micro_batch: int | None = None
    lora_rank: int | None = None
    checkpointing: bool | None = None  # None: the default (on)
    users: int | None = None  # text generation: sequences served at once
    max_wh_per_1k_tokens: float | None = None  # text generation: energy budget per 1,000 generated tokens

    def label(self) -> str:
        if self.model:
            text = f"model {self.model}" + (f" ({self.task})" if self.task else "")
            if self.quant:
                text += f" {self.quant}"
        elif self.task:
            text = f"task {self.task}" + (f" {self.quant}" if self.quant else "")
        elif self.min_gpu_memory_bytes:
            text = f"GPU memory >= {fmt_gb(self.min_gpu_memory_bytes)}"
        else:
            text = f"memory >= {fmt_gb(self.min_memory_bytes)}"
        if self.context_tokens and (self.model or self.task):
            text += f" @ {self.context_tokens:,} tokens"
        for key, phrase in LABEL_PHRASES:
            value = getattr(self, key)
            if value:
                text += phrase(value)
        if self.placement != "cpu":
            text += f", placement {self.placement}"
        return text


# How each bound or setting of a requirement reads in its label, in order.
LABEL_PHRASES = (
    ("min_generation_tokens_per_s", lambda v: f", >= {v:g} tokens/s"),
    ("min_realtime", lambda v: f", >= {v:g}x real time"),
    ("max_seconds_per_image", lambda v: f", <= {v:g} s per image"),
    ("resolution", lambda v: f" at {v[0]}x{v[1]}"),
    ("min_chunks_per_minute", lambda v: f", >= {v:,.0f} chunks a minute"),
    ("documents", lambda v: f", {v:,} documents"),
    ("max_wh_per_1k_tokens", lambda v: f", <= {v:g} Wh per 1,000 tokens"),
    ("users", lambda v: f", {v} user{'s' if v != 1 else ''}"),
    ("method", lambda v: f", {v}"),
    ("sequence_tokens", lambda v: f", sequence {v:,}"),
)


@dataclass(frozen=True)
class Outcome:
    requirement: Requirement
    status: str  # met | not-met | unknown
    reason: str
    hints: tuple[str, ...] = ()


def validate(requirement: Requirement, catalog: Catalog) -> Requirement:
    """Reject unknown models, tasks, quantisations and placements with a message naming the closest match."""
    if requirement.task and requirement.task not in registry.choices():
        raise UsageError(f"unknown task '{requirement.task}' (tasks: {', '.join(registry.choices())})")
    if requirement.model:
        check_models((requirement.model,), catalog)
        model = catalog.get(requirement.model)
        if requirement.quant and requirement.quant not in model.quants:
            raise UsageError(f"model '{model.id}' has no quantisation '{requirement.quant}' (it has {', '.join(model.quants)})")
    elif requirement.quant:
        check_quant(requirement.quant, catalog)
        # As `report --quant`, a task judges only its models with that variant: none is bad input, not a silent default
        # (in each part of a task judged in parts).
        for name in part_names(requirement.task) if requirement.task else ():
            variants = {v for m in registry.models_for(catalog, name) for v in m.quants}
            if variants and requirement.quant not in variants:
                raise UsageError(f"no {name} model has quantisation '{requirement.quant}' (they have {', '.join(sorted(variants))})")
    task = requirement.task
    if requirement.model:
        own = catalog.get(requirement.model).task
        if task and not registry.judges(registry.resolve(task)[0].name, catalog.get(requirement.model)):
            raise UsageError(f"model '{requirement.model}' is a {own} model: task {task} does not judge it")
        task = task or own
    task = registry.resolve(task)[0].name if task else None  # a group (speech-to-text) measures in its task's unit
    for key, wanted_task in SPEED_TASKS.items():
        if getattr(requirement, key) is not None and task != wanted_task:
            raise UsageError(f"{FLAG_NAMES[key]} applies to {wanted_task}, not {task or 'a memory requirement'}")
    for key, only in PART_BOUNDS.items():
        # a bound in one part's unit (embedding's chunks a minute) cannot be met by another part (reranking: pairs/s)
        if getattr(requirement, key) is not None and requirement.task and only not in part_names(requirement.task):
            raise UsageError(f"{FLAG_NAMES[key]} applies to {only}, not {requirement.task}")
    if requirement.placement not in PLACEMENT_ORDER:
        raise UsageError(f"unknown placement '{requirement.placement}' (one of {', '.join(PLACEMENT_ORDER)})")
    if not (requirement.task or requirement.model or requirement.min_memory_bytes or requirement.min_gpu_memory_bytes):
        raise UsageError("nothing to check: give --task, --model, --min-memory, --min-gpu-memory or --requirements")
    return requirement


def part_names(task: str) -> tuple[str, ...]:
    """The parts a task is judged in, each on its own (speech: speech-to-text and text-to-speech), or the task alone."""
    parent, group = registry.resolve(task)
    return tuple(part.name for part in parent.groups) if group is None and parent.groups else (task,)


# Which task each speed requirement is measured in, and its flag (for messages).
SPEED_TASKS = {
    "min_generation_tokens_per_s": "text-generation",
    "min_realtime": "speech",
    "max_seconds_per_image": "image-generation",
    "resolution": "image-generation",
    "min_chunks_per_minute": "document-search",
    "documents": "document-search",
    "users": "text-generation",
    "max_wh_per_1k_tokens": "text-generation",
    "method": "fine-tuning",
    "sequence_tokens": "fine-tuning",
    "micro_batch": "fine-tuning",
    "lora_rank": "fine-tuning",
    "checkpointing": "fine-tuning",
}
FLAG_NAMES = {
    "min_generation_tokens_per_s": "--min-speed",
    "min_realtime": "--min-realtime",
    "max_seconds_per_image": "--max-seconds-per-image",
    "resolution": "--resolution",
    "min_chunks_per_minute": "--min-chunks-per-minute",
    "documents": "--documents",
    "users": "--users",
    "max_wh_per_1k_tokens": "--max-wh-per-1k-tokens",
    "method": "--method",
    "sequence_tokens": "--sequence",
    "micro_batch": "--micro-batch",
    "lora_rank": "--lora-rank",
    "checkpointing": "--no-checkpointing",
}
_FILE_KEYS = {
    "task": str,
    "model": str,
    "quant": str,
    "context": int,
    "min_generation_tokens_per_s": (int, float),
    "placement": str,
    "min_memory": str,
    "min_gpu_memory": str,
    "min_realtime": (int, float),
    "max_seconds_per_image": (int, float),
    "resolution": str,
    "min_chunks_per_minute": (int, float),
    "documents": int,
    "users": int,
    "max_wh_per_1k_tokens": (int, float),
    "method": str,
    "sequence": int,
    "micro_batch": int,
    "lora_rank": int,
    "checkpointing": bool,
}


def load_requirements(path: Path, catalog: Catalog) -> list[Requirement]:
    """A requirements file: ``[[require]]`` tables with the keys in ``_FILE_KEYS``."""
    try:
        data = read_toml(path)
    except CatalogError as error:
        raise UsageError(str(error)) from None
    tables = data.get("require")
    if not isinstance(tables, list) or not tables:
        raise UsageError(f"{path}: expected one or more [[require]] tables")
    # Every bad key in the file at once, so one edit fixes them all.
    errors = [f"{path}: unknown top-level key '{key}'" for key in sorted(set(data) - {"require"})]
    for index, table in enumerate(tables):
        where = f"{path}: require[{index}]"
        if not isinstance(table, dict):
            errors.append(f"{where}: expected a table")
            continue
        for key, value in table.items():
            expected = _FILE_KEYS.get(key)
            if expected is None:
                errors.append(f"{where}: unknown key '{key}'")
            elif isinstance(value, bool) != (expected is bool) or not isinstance(value, expected):
                errors.append(f"{where}: '{key}' has the wrong type ({_short(value)})")
            elif isinstance(value, (int, float)) and not isinstance(value, bool) and (
                    abs(value) > 2**60 or value != value or abs(value) == float("inf")):
                errors.append(f"{where}: '{key}' must be a finite number below 2^60 (got {_short(value)})")
    if errors:  # on one line, as every error is
        known = f" (known keys: {', '.join(_FILE_KEYS)})" if any("unknown key" in error for error in errors) else ""
        raise UsageError("; ".join(errors) + known)
    requirements = []
    for index, table in enumerate(tables):
        where = f"{path}: require[{index}]"
        try:
            requirement = Requirement(
                task=table.get("task"),
                model=table.get("model"),
                quant=table.get("quant"),
                context_tokens=_whole(table, "context"),
                min_generation_tokens_per_s=_positive(table, "min_generation_tokens_per_s"),
                placement=table.get("placement", "cpu"),
                min_memory_bytes=parse_size(table["min_memory"]) if "min_memory" in table else None,
                min_gpu_memory_bytes=parse_size(table["min_gpu_memory"]) if "min_gpu_memory" in table else None,
                min_realtime=_positive(table, "min_realtime"),
                max_seconds_per_image=_positive(table, "max_seconds_per_image"),
                resolution=parse_resolution(table["resolution"]) if "resolution" in table else None,
                min_chunks_per_minute=_positive(table, "min_chunks_per_minute"),
                documents=parse_documents(table["documents"]) if "documents" in table else None,
                users=_whole(table, "users"),
                max_wh_per_1k_tokens=_positive(table, "max_wh_per_1k_tokens"),
                **_tuning(table),
            )
            requirements.append(validate(requirement, catalog))
        except UsageError as error:
            raise UsageError(f"{where}: {error}") from None
    return requirements


def _tuning(table: dict) -> dict:
    """The fine-tuning keys of a requirements table, checked as the flags are (an error names the key, not the flag)."""
    from gpuready.app import fine_tuning_options

    for key in ("sequence", "micro_batch", "lora_rank"):
        _whole(table, key)
    fine_tuning_options(table.get("method"), table.get("sequence"), table.get("micro_batch"), table.get("lora_rank"))
    return {"method": table.get("method"), "sequence_tokens": table.get("sequence"), "micro_batch": table.get("micro_batch"),
            "lora_rank": table.get("lora_rank"), "checkpointing": table.get("checkpointing")}


def _whole(table: dict, key: str) -> int | None:
    if key in table and table[key] <= 0:
        raise UsageError(f"'{key}' must be a positive whole number (got {table[key]!r})")
    return table.get(key)


def _short(value) -> str:
    """A value quoted in an error, cut short: a 400-digit number must not fill the terminal."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _positive(table: dict, key: str) -> float | None:
    if key not in table:
        return None
    if table[key] <= 0:
        raise UsageError(f"'{key}' must be positive (got {table[key]!r})")
    return float(table[key])


def _depends_failed(problems: list[Problem], names: tuple[str, ...]) -> Problem | None:
    return next((p for p in problems if p.severity == "error" and p.probe in names), None)




# A bound of a task judged in parts that only one part measures (document search's chunks a minute is embedding's
# speed; reranking is measured in pairs/s): the other parts are judged without it.
PART_BOUNDS = {"min_chunks_per_minute": "embedding"}


def _evaluate_parts(requirement: Requirement, parts: tuple[str, ...], *context) -> Outcome:
    """A task judged in parts (speech: listening and speaking) is met only when every part has a model meeting it;
    a failure gives the part's own line ('no text-to-speech model meets it; closest: ...')."""
    outcomes = [evaluate(replace(requirement, task=part, **{key: None for key, only in PART_BOUNDS.items() if only != part}),
                         *context) for part in parts]
    for status in ("not-met", "unknown"):
        failed = [outcome for outcome in outcomes if outcome.status == status]
        if failed:  # one line for a cause the parts share (no GPU, a failed probe)
            return Outcome(requirement, status, "; ".join(dict.fromkeys(o.reason for o in failed)),
                           tuple(dict.fromkeys(hint for o in failed for hint in o.hints)))
    return Outcome(requirement, "met", "; ".join(f"{registry.title(part).lower()}: {o.reason}" for part, o in zip(parts, outcomes)))


def no_gpu_outcome(requirement: Requirement, missing: tuple[bool, str, tuple[str, ...]]) -> Outcome:
    """The one outcome of a requirement whose GPU placement finds no usable GPU (``gpu_missing``'s answer)."""
    unknown, words, hints = missing
    return Outcome(requirement, "unknown" if unknown else "not-met", f"could not tell: {words}" if unknown else words, hints)


def says_no_gpu(requirement: Requirement, hardware: Hardware, problems: list[Problem]) -> bool:
    """Whether ``evaluate`` answers this requirement with the missing GPU (a model or task at a GPU placement)."""
    return bool(requirement.model or requirement.task) and gpu_missing(requirement.placement, hardware, problems) is not None


def evaluate(requirement: Requirement, hardware: Hardware, problems: list[Problem], catalog: Catalog,
             measured_speeds: tuple = ()) -> Outcome:
    """Judge one requirement; 'unknown' only when a probe it depends on failed or data is missing."""
    if requirement.min_memory_bytes is not None or requirement.min_gpu_memory_bytes is not None:
        return _evaluate_memory(requirement, hardware, problems)
    if requirement.task and not requirement.model and (parts := part_names(requirement.task)) != (requirement.task,):
        return _evaluate_parts(requirement, parts, hardware, problems, catalog, measured_speeds)
    options = replace(requirement_options(requirement), measured_speeds=measured_speeds)
    if requirement.model:
        models = [catalog.get(requirement.model)]
    else:
        models = [m for m in registry.models_for(catalog, requirement.task) if not requirement.quant or requirement.quant in m.quants]
        if not models:
            return Outcome(requirement, "unknown", f"gpuready cannot assess {requirement.task} yet: no models in the catalogue")
    if missing := gpu_missing(requirement.placement, hardware, problems):
        # Every model fails the same way, so say that once instead of naming one model's memory as the 'closest'.
        return no_gpu_outcome(requirement, missing)
    failed = _depends_failed(problems, TASK_PROBES)
    best = None
    # Best first, so a task requirement reports the strongest model that meets it.
    judged = (registry.judge_model(m, catalog, hardware, options, requirement.task) for m in models)
    runnable, unfit, short = [], [], []
    for verdict in sorted(judged, key=rank_key):
        if context_short(requirement, verdict):
            short.append(verdict)  # judged at its own maximum, so its answer is not about the context asked for
            continue
        if verdict.level in RUNNABLE and fast_enough(requirement, verdict):
            where = f"{verdict.quant} on {PLACEMENT_WORDS.get(verdict.placement, verdict.placement)}" + (f" via {verdict.runtime}" if verdict.runtime else "")
            reason = f"{verdict.model_name} {level_words(verdict.level)}: {where}, {speed_text(verdict, requirement)}"
            return Outcome(requirement, "met", reason)
        if best is None:
            best = verdict
        if verdict.level in RUNNABLE or verdict.level == "too-slow":
            runnable.append(verdict)
        elif verdict.level == "does-not-fit" and verdict.supported:
            unfit.append(verdict)
    if best is None:  # every model's maximum context is below the context asked for: the longest is the closest
        verdict = max(short, key=lambda v: v.context_tokens)
        asked, word = asked_length(requirement, verdict)
        reason = (f"{verdict.model_name}: its maximum {word} is {verdict.context_tokens:,} tokens, "
                  f"fewer than the {asked:,} asked for")
        if requirement.task and not requirement.model:
            reason = f"no {requirement.task} model meets it; closest: {reason}"
        return Outcome(requirement, "not-met", reason)
    # The closest to a speed or energy bound is the model nearest to it (--min-speed 500: the fastest model, not the
    # best-ranked one at a quarter of its speed); the best-ranked where no bound can be compared.
    near = [(closeness, -position, v) for position, v in enumerate(runnable) if (closeness := bound_ratio(requirement, v))]
    verdict = max(near, key=lambda item: item[:2])[2] if near else best
    if verdict.level == "does-not-fit" and verdict.supported:
        # Nothing runs: the closest is the model nearest to fitting (the smallest shortfall), not the largest one.
        verdict = min((v for v in unfit if v.memory_needed_bytes is not None and v.memory_available_bytes is not None),
                      key=lambda v: v.memory_needed_bytes - v.memory_available_bytes, default=verdict)
    if requirement.max_wh_per_1k_tokens and verdict.level in RUNNABLE and getattr(verdict, "energy", None) is None:
        return Outcome(requirement, "unknown", f"could not tell: the power of the device {verdict.model_name} runs on is "
                                               "not known (no NVML power limit, not in catalog/power.toml)")
    if verdict.level == "unknown" or (failed and verdict.level == "does-not-fit"):
        if not failed:
            return Outcome(requirement, "unknown", f"could not tell: {verdict.reasons[0]}")
        # Every failed probe the task depends on: a Jetson without /proc read "the cpu probe failed" alone, where the
        # unread memory was what left the fit unknown.
        failures = [p for p in problems if p.severity == "error" and p.probe in TASK_PROBES]
        probes = " and ".join(dict.fromkeys(p.probe for p in failures))
        cause = f"the {probes} probe{'s' if ' and ' in probes else ''} failed: " + "; ".join(p.message for p in failures)
        return Outcome(requirement, "unknown", f"could not tell: {cause}", tuple(dict.fromkeys(p.hint for p in failures if p.hint)))
    if verdict.level in RUNNABLE or verdict.level == "too-slow":
        reason = f"{verdict.model_name}: {speed_text(verdict, requirement)}, needs {wanted_text(requirement, verdict)}"
    else:
        reason = f"{verdict.model_name}: {verdict.cause or verdict.level}"
    if requirement.task and not requirement.model:
        reason = f"no {requirement.task} model meets it; closest: {reason}"
    return Outcome(requirement, "not-met", reason, (*faster_variant(requirement, verdict, models, hardware, catalog,
                                                                     options), *verdict.suggestions))


def faster_variant(requirement: Requirement, verdict, models, hardware: Hardware, catalog: Catalog,
                   options: Options) -> tuple[str, ...]:
    """For one model that runs but misses a speed or energy bound: the best-quality variant of it that meets the
    bound, as a hint ("--quant Q4_K_M would reach about 35 tokens/s"). A 70B at Q8_0 failing --min-speed 30 at
    128k said nothing, where Q4_K_M passes."""
    if not requirement.model or requirement.quant or bound_ratio(requirement, verdict) is None:
        return ()
    if registry.resolve(verdict.task)[0].variant_flag != "--quant":
        return ()  # fine-tuning's variants are methods, hinted by its own suggestions
    (model,) = models
    meeting = []
    for variant in model.quants:
        if variant == verdict.quant:
            continue
        other = registry.judge_model(model, catalog, hardware, replace(options, quant=variant), requirement.task)
        if other.level in RUNNABLE and fast_enough(requirement, other) and not context_short(requirement, other):
            meeting.append(other)
    if not meeting:
        return ()
    # the most bits among those that meet it: the user gives up as little quality as the bound asks for
    best = max(meeting, key=lambda v: min(catalog.quants[v.quant].bits_per_weight, 8.6) if v.quant in catalog.quants else 0)
    return (f"--quant {best.quant} would reach {speed_text(best, requirement)}",)


def asked_length(requirement: Requirement, verdict) -> tuple[int | None, str]:
    """The length asked for that a verdict's model may not hold, and its word: a text model's context, a fine-tuning
    sequence (each judged at the model's maximum where it is shorter)."""
    if verdict.task == "text-generation":
        return requirement.context_tokens, "context"
    if verdict.task == "fine-tuning":
        return requirement.sequence_tokens, "training sequence"
    return None, ""


def context_short(requirement: Requirement, verdict) -> bool:
    """Whether a model's maximum context is below the context (or training sequence) asked for (the verdict is judged at
    its maximum)."""
    asked, _ = asked_length(requirement, verdict)
    return asked is not None and verdict.context_tokens is not None and verdict.context_tokens < asked


def requirement_options(requirement: Requirement) -> Options:
    """The Options a requirement is judged under."""
    return Options(context_tokens=requirement.context_tokens, quant=requirement.quant, placement=requirement.placement,
                   documents=requirement.documents, resolution=requirement.resolution, method=requirement.method,
                   sequence_tokens=requirement.sequence_tokens, micro_batch=requirement.micro_batch,
                   lora_rank=requirement.lora_rank, checkpointing=requirement.checkpointing is not False,
                   users=requirement.users)


def speed_bounds(requirement: Requirement) -> tuple[tuple[float | None, str, int, bool], ...]:
    """Each speed bound a requirement may set: (bound, the headline unit it applies to, the factor from that unit to
    the bound's, whether it is a floor rather than a ceiling)."""
    return (
        (requirement.min_generation_tokens_per_s, "tokens/s", 1, True),
        (requirement.min_realtime, "x realtime", 1, True),
        (requirement.max_seconds_per_image, "s/image", 1, False),
        (requirement.min_chunks_per_minute, "chunks/s", 60, True),
    )


def fast_enough(requirement: Requirement, verdict) -> bool:
    """Whether a verdict's speed (judged_speed) meets the requirement's bound in the task's unit."""
    speed = judged_speed(requirement, verdict)[0]
    for bound, unit, factor, floor in speed_bounds(requirement):
        if bound is None:
            continue
        if speed is None or verdict.speed_unit != unit:
            return False
        if not (speed * factor >= bound if floor else speed * factor <= bound):
            return False
    budget = requirement.max_wh_per_1k_tokens
    if budget is not None:
        energy = judged_energy(requirement, verdict)
        return energy is not None and energy <= budget
    return True


def judged_energy(requirement: Requirement | None, verdict) -> float | None:
    """Watt-hours per 1,000 generated tokens at the speed a bound is judged at (judged_speed): the verdict's figure is
    at its headline speed, so with --context it is scaled by how much longer a token takes with the cache filled (the
    same power for longer); None where the verdict has no such figure."""
    energy = getattr(verdict, "energy", None)
    if energy is None or energy.unit != WH_PER_1K_TOKENS or not energy.wh:
        return None
    speed, depth = judged_speed(requirement, verdict) if requirement else (verdict.speed, None)
    if depth is not None and speed and verdict.speed:
        return energy.wh * verdict.speed / speed
    return energy.wh


def bound_ratio(requirement: Requirement, verdict) -> float | None:
    """How near a verdict comes to the requirement's speed and energy bounds: the product of speed / bound (inverted
    for an upper bound), 1 or more when met; None where the requirement sets none or a figure is missing."""
    speed, ratio = judged_speed(requirement, verdict)[0], None
    for bound, unit, factor, floor in speed_bounds(requirement):
        if bound is not None:
            if not speed or verdict.speed_unit != unit:
                return None
            ratio = (ratio or 1.0) * (speed * factor / bound if floor else bound / (speed * factor))
    if requirement.max_wh_per_1k_tokens is not None:
        energy = judged_energy(requirement, verdict)
        if energy is None:
            return None
        ratio = (ratio or 1.0) * requirement.max_wh_per_1k_tokens / energy
    return ratio


def judged_speed(requirement: Requirement, verdict) -> tuple[float | None, int | None]:
    """The speed a bound is compared with, and the context depth it is taken at: with --context, generation with the
    KV cache filled to it (the 'context full' figure `estimate` prints), else the headline at an empty context (None).
    Several users' batched speed already reads each user's cache, half full on average, so it stays the headline."""
    speed = getattr(getattr(verdict.estimate, "speed", None), "generation_tokens_per_s_full_context", None)
    if (requirement.context_tokens and verdict.speed_unit == "tokens/s" and speed is not None
            and getattr(verdict.estimate, "batched", None) is None):
        return speed, verdict.context_tokens
    return verdict.speed, None


def speed_text(verdict, requirement: Requirement | None = None) -> str:
    text = _speed_text(verdict, *(judged_speed(requirement, verdict) if requirement else (verdict.speed, None)))
    energy = judged_energy(requirement, verdict)
    if energy is not None:
        text += f", about {energy:.2g} Wh per 1,000 tokens"
    return text


def _speed_text(verdict, speed: float | None, depth: int | None) -> str:
    unit = verdict.speed_unit
    if speed is None:
        return "speed unknown"
    # two or three figures, so a slow speed never reads as "about 0"
    if unit == "tokens/s":
        text = f"about {fmt_figures(speed)} tokens/s"
        return text + (f" at {depth:,} tokens of context" if depth else "")
    if unit == "x realtime":
        return f"about {fmt_figures(speed, 1000)}x real time"
    if unit == "s/image":
        return f"about {fmt_figures(speed, 1000)} s per image"
    if unit == "chunks/s":
        return f"about {fmt_number(speed * 60)} chunks a minute"
    return f"about {fmt_number(speed)} {unit}"


def wanted_text(requirement: Requirement, verdict) -> str:
    if requirement.max_wh_per_1k_tokens:
        return f"at most {requirement.max_wh_per_1k_tokens:g} Wh per 1,000 tokens"
    if requirement.min_realtime:
        return f"{requirement.min_realtime:g}x real time"
    if requirement.max_seconds_per_image:
        return f"at most {requirement.max_seconds_per_image:g} s per image"
    if requirement.min_chunks_per_minute:
        return f"{requirement.min_chunks_per_minute:,.0f} chunks a minute"
    if requirement.min_generation_tokens_per_s or verdict.task == "text-generation":
        return f"{requirement.min_generation_tokens_per_s or 3:g} tokens/s"
    return "a usable speed"


def _evaluate_memory(requirement: Requirement, hardware: Hardware, problems: list[Problem]) -> Outcome:
    if requirement.min_gpu_memory_bytes is not None:
        failed = _depends_failed(problems, GPU_PROBES)
        device = gpu_device(hardware)
        have = device.usable_memory_bytes if device else 0
        wanted = requirement.min_gpu_memory_bytes
        what = f"usable GPU memory ({device.name if device else no_gpu_words(hardware)})"
        if device is not None and have is None:
            # A GPU whose memory is not known: could not tell, not a shortfall (unified memory is system memory's).
            failed = failed or (_depends_failed(problems, ("memory",)) if device.unified else None)
            cause = f"the {failed.probe} probe failed: {failed.message}" if failed else f"{what} is unknown"
            return Outcome(requirement, "unknown", f"could not tell: {cause}", (failed.hint,) if failed and failed.hint else ())
        if device is None and failed:
            return Outcome(requirement, "unknown", f"could not tell: the {failed.probe} probe failed: {failed.message}")
    else:
        failed = _depends_failed(problems, ("memory",))
        have = hardware.memory.usable_bytes
        wanted = requirement.min_memory_bytes
        what = "usable system memory"
        if have is None:
            cause = f"the memory probe failed: {failed.message}" if failed else "system memory is unknown"
            return Outcome(requirement, "unknown", f"could not tell: {cause}", (failed.hint,) if failed and failed.hint else ())
    status = "met" if have and have >= wanted else "not-met"
    hints = ()
    if status == "not-met" and requirement.min_gpu_memory_bytes is not None:
        # A GPU that is there but unusable: pass on the probe's hint (driver, permissions).
        hints = gpu_hints(problems)
    return Outcome(requirement, status, f"{what} is {fmt_gb(have)}{_of_total(requirement, hardware, have)}, needs {fmt_gb(wanted)}", hints)


def _of_total(requirement: Requirement, hardware: Hardware, usable: int | None) -> str:
    """Where a GPU's usable memory is less than its total, both: a 24 GB card failing '--min-gpu-memory 24GB' says
    what the rest is taken by, so the figure is not read as the card's size. (Usable is what is checked: it is what
    a model can be loaded into now.)"""
    if requirement.min_gpu_memory_bytes is None or not usable:
        return ""
    device = gpu_device(hardware)
    totals = [gpu.memory_total_bytes for gpu in hardware.accelerators
              if device is not None and gpu.name == device.name and gpu.memory_total_bytes]
    total = sum(totals[: device.count]) if device is not None and len(totals) >= device.count else None
    if not total or total - usable < 0.05 * 1024**3:
        return ""
    taken = "in use or kept for the system" if device.unified else "in use or kept by the driver"
    return f" of {fmt_gb(total)} ({fmt_gb(total - usable)} {taken})"


def exit_code(outcomes: list[Outcome]) -> ExitCode:
    statuses = {o.status for o in outcomes}
    if "not-met" in statuses:
        return ExitCode.NOT_READY
    if "unknown" in statuses:
        return ExitCode.UNKNOWN
    return ExitCode.READY
