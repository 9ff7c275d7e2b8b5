"""Bring your own model: a local GGUF file or a Hugging Face config.json, judged like a catalogue entry.

A GGUF header gives the architecture (``{arch}.block_count`` and friends), the quantisation
(``general.file_type``) and every tensor's type and shape, so parameters and the real weight
bytes are summed exactly. A config.json gives the architecture only; its weights are sized
from the chosen quantisation's bits per weight (``--quant``, default Q4_K_M).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import replace
from pathlib import Path

from gpuready.catalog.loader import Catalog, Quant
from gpuready.errors import UsageError
from gpuready.modelfiles.gguf import GGUFError, GGUFHeader, read_gguf
from gpuready.modelfiles.hfconfig import HFConfigError, read_config
from gpuready.modelfiles.hfconfig import language_model as config_language_model
from gpuready.tasks.text import LanguageModel

DEFAULT_CONFIG_QUANT = "Q4_K_M"
# GGUF file types whose catalogue id differs from llama-quantize's name.
QUANT_ALIASES = {"MXFP4_MOE": "MXFP4"}
# Which layers use the sliding window, per GGUF architecture, where llama.cpp hard-codes it
# rather than writing it to the file (src/llama-model.cpp: gemma2 every other layer, gemma3
# five of every six, gpt-oss every other layer).
WINDOW_LAYERS_PER_ARCH = {"gemma2": (1, 2), "gemma3": (5, 6), "gpt-oss": (1, 2)}
_SPLIT_NAME = re.compile(r"^(?P<stem>.*)-(?P<part>\d{5})-of-(?P<count>\d{5})\.gguf$")


def local_kind(argument: str) -> str | None:
    """'gguf' or 'config' when the argument names a local model file (or a directory with a config.json), else None."""
    path = Path(argument)
    if path.is_dir() and (path / "config.json").is_file():
        return "config"
    if path.name.lower().endswith(".gguf"):
        return "gguf"
    if path.name == "config.json":
        return "config"
    return None


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9._-]+", "-", text.lower()).strip("-._") or "local-model"


# --- GGUF -----------------------------------------------------------------------------


def read_gguf_parts(path: Path) -> GGUFHeader:
    """Read a GGUF file; for a split model (name-00001-of-00003.gguf) read every part and merge the tensor tables."""
    header = read_gguf(path)
    count = header.metadata.get("split.count", 1)
    match = _SPLIT_NAME.match(path.name)
    if not isinstance(count, int) or count <= 1:
        return header
    if not match or int(match["count"]) != count:
        raise GGUFError(
            f"{path}: part of a {count}-file split model, but its name does not say which"
            f" (expected NAME-0000N-of-{count:05d}.gguf)"
        )
    headers = []
    for number in range(1, count + 1):
        part = path.with_name(f"{match['stem']}-{number:05d}-of-{count:05d}.gguf")
        if not part.is_file():
            raise GGUFError(f"{path}: split model part {number} of {count} is missing ({part.name})")
        headers.append(header if part == path else read_gguf(part))
    first = headers[0]
    return replace(first, tensors=tuple(t for h in headers for t in h.tensors))


def _meta_int(header: GGUFHeader, key: str, required: bool = True, path: Path | None = None) -> int | None:
    """A whole-number metadata value; a per-layer array counts by its largest entry."""
    value = header.metadata.get(key)
    if isinstance(value, tuple) and value and all(isinstance(v, int) for v in value):
        value = max(value)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        if value is None and not required:
            return None
        what = "missing" if value is None else f"invalid ({value!r})"
        raise GGUFError(f"{path}: metadata '{key}' is {what}; it is needed to size the model")
    return value


def _quant_name(header: GGUFHeader) -> str:
    """general.file_type by name, else (older files) the type that holds most of the weight bytes."""
    if header.file_type is not None:
        return header.file_type
    by_type = Counter()
    for tensor in header.tensors:
        if len(tensor.shape) >= 2:
            by_type[tensor.type_name] += tensor.n_bytes
    return by_type.most_common(1)[0][0] if by_type else "F32"


def _window(header: GGUFHeader, arch: str, layers: int) -> tuple[int | None, int]:
    window = header.metadata.get(f"{arch}.attention.sliding_window")
    if isinstance(window, bool) or not isinstance(window, int) or window <= 0:
        return None, 0
    pattern = header.metadata.get(f"{arch}.attention.sliding_window_pattern")
    if isinstance(pattern, tuple) and pattern and all(isinstance(p, bool) for p in pattern):
        return window, min(layers, sum(pattern))  # true: this layer uses the window
    if isinstance(pattern, int) and not isinstance(pattern, bool) and pattern > 1:
        windowed, period = pattern - 1, pattern  # every pattern-th layer is global
    elif arch in WINDOW_LAYERS_PER_ARCH:
        windowed, period = WINDOW_LAYERS_PER_ARCH[arch]
    else:
        return None, 0  # unknown layout: count a full KV cache, which overstates rather than understates
    return window, layers // period * windowed + min(layers % period, windowed)


def gguf_language_model(header: GGUFHeader, path: Path) -> tuple[LanguageModel, str]:
    """A LanguageModel from a GGUF header, and its quantisation name (e.g. Q4_K_M)."""
    arch = header.metadata.get("general.architecture")
    if not isinstance(arch, str) or not arch:
        raise GGUFError(f"{path}: metadata 'general.architecture' is missing; it is needed to read the model's shape")
    if not header.tensors:
        raise GGUFError(f"{path}: holds no tensors (a vocabulary-only file?)")
    layers = _meta_int(header, f"{arch}.block_count", path=path)
    hidden = _meta_int(header, f"{arch}.embedding_length", path=path)
    heads = _meta_int(header, f"{arch}.attention.head_count", path=path)
    context = _meta_int(header, f"{arch}.context_length", path=path)
    kv_heads = _meta_int(header, f"{arch}.attention.head_count_kv", required=False, path=path) or heads
    head_dim = _meta_int(header, f"{arch}.attention.key_length", required=False, path=path) or hidden // heads
    experts = _meta_int(header, f"{arch}.expert_count", required=False, path=path)
    experts_used = _meta_int(header, f"{arch}.expert_used_count", required=False, path=path) if experts else None
    vocab = _meta_int(header, f"{arch}.vocab_size", required=False, path=path)
    embedding = next((t for t in header.tensors if t.name == "token_embd.weight"), None)
    if vocab is None and embedding is not None and len(embedding.shape) == 2:
        vocab = embedding.shape[1]
    params = header.params
    active = params
    expert_bytes = None
    if experts and experts_used and experts_used < experts:
        # Routed expert tensors (blk.N.ffn_{gate,up,down}_exps) hold every expert; a token reads experts_used of them.
        expert_tensors = [t for t in header.tensors if "_exps" in t.name]
        expert_elements = sum(t.n_elements for t in expert_tensors)
        active = params - expert_elements * (experts - experts_used) // experts
        # Their bytes as stored: a file may keep its experts at fewer bits than the rest (gpt-oss: MXFP4 experts,
        # BF16 attention), which decides how many layers' experts fit the GPU.
        expert_bytes = float(sum(t.n_bytes for t in expert_tensors)) or None
    window, window_layers = _window(header, arch, layers)
    quant = _quant_name(header)
    types = Counter(t.type_name for t in header.tensors)
    stem = path.name[: -len(".gguf")] if path.name.lower().endswith(".gguf") else path.name
    name = header.metadata.get("general.name")
    model = LanguageModel(
        id=_slug(stem),
        name=name if isinstance(name, str) and name.strip() else stem,
        params=float(params),
        active_params=float(active),
        layers=layers,
        hidden_size=hidden,
        attention_heads=heads,
        kv_heads=min(kv_heads, heads),
        head_dim=head_dim,
        context_length=context,
        quants=(),
        source=f"GGUF header of {path.name}",
        family=arch,
        vocab_size=vocab,
        # llama.cpp writes output.weight only when the output projection has its own matrix.
        tied_embeddings=not any(t.name == "output.weight" for t in header.tensors),
        sliding_window=window if window_layers else None,
        sliding_window_layers=window_layers,
        experts=experts,
        experts_per_token=experts_used,
        expert_bytes=expert_bytes,
        gguf_sizes={},
        gguf_source=f"tensor table of {path.name}",
        notes=f"{len(header.tensors)} tensors: " + ", ".join(f"{n} {t}" for t, n in sorted(types.items(), key=lambda i: -i[1])),
        origin=str(path),
    )
    return model, quant


def with_quant(catalog: Catalog, quant: Quant) -> Catalog:
    """A copy of the catalogue that also knows this quantisation."""
    return replace(catalog, quants={**catalog.quants, quant.id: quant})


def load_gguf(path: Path, catalog: Catalog, quant_asked: str | None = None) -> tuple[LanguageModel, Catalog]:
    """The model in a GGUF file, with its real weight bytes, and a catalogue that knows its quantisation."""
    header = read_gguf_parts(path)
    model, quant_name = gguf_language_model(header, path)
    weights = header.weights_bytes
    quant_id = QUANT_ALIASES.get(quant_name, quant_name)
    if quant_asked and quant_asked.casefold() not in (quant_id.casefold(), quant_name.casefold()):
        raise GGUFError(f"{path}: this file is {quant_name}; --quant {quant_asked} does not apply to it")
    quant = catalog.quants.get(quant_id)
    if quant is None:
        quant = Quant(
            id=quant_id,
            format="gguf",
            bits_per_weight=round(weights * 8 / header.params, 4),
            quality=None,
            source=f"measured: {weights:,} bytes of tensors / {header.params:,} parameters in {path.name}",
        )
        catalog = with_quant(catalog, quant)
    model = replace(model, quants=(quant.id,), gguf_sizes={quant.id: float(weights)})
    return model, catalog


# --- config.json ------------------------------------------------------------------------------


def load_config(path: Path, catalog: Catalog, quant_asked: str | None = None) -> tuple[LanguageModel, str]:
    """The model a config.json describes, offered in every GGUF quantisation; returns it and the quantisation to judge."""
    quant_id = quant_asked or DEFAULT_CONFIG_QUANT
    if quant_id not in catalog.quants:
        raise HFConfigError(f"unknown quantisation '{quant_id}' (known: {', '.join(sorted(catalog.quants))})")
    config_path = path / "config.json" if path.is_dir() else path
    config = read_config(config_path)
    label = config_path.parent.name or "config"
    name = config.get("_name_or_path") if isinstance(config.get("_name_or_path"), str) else None
    name = (name or label).rstrip("/").split("/")[-1] or label
    try:
        model = config_language_model(config, _slug(name), name, f"config.json in {label}")
    except HFConfigError as error:
        raise HFConfigError(f"{config_path}: {error}") from None  # read_config's own errors name it; these must too
    # Offer the GGUF ladder (so suggestions can name a smaller one) plus the one asked for.
    ladder = tuple(q.id for q in catalog.quants.values() if q.format == "gguf")
    quants = ladder if quant_id in ladder else (*ladder, quant_id)
    return replace(model, quants=quants, origin=str(config_path)), quant_id


def _count(value: float) -> str:
    return f"{value / 1e9:.2f}B" if value >= 1e8 else f"{value:,.0f}"


def describe(model: LanguageModel, catalog: Catalog, quant_id: str) -> str:
    """What was read from the file, for the text output."""
    quant = catalog.quants[quant_id]
    shape = f"{model.family}, {model.layers} layers, {model.attention_heads} heads ({model.kv_heads} KV, {model.head_dim} dim)"
    params = f"{_count(model.params)} parameters" + (
        f" ({_count(model.active_params)} active: {model.experts_per_token} of {model.experts} experts)" if model.is_moe else ""
    )
    if quant_id in model.gguf_sizes:
        size = model.gguf_sizes[quant_id]
        weights = f"{quant_id}: {size / 1024**3:.2f} GB of weights, {size * 8 / model.params:.2f} bits per weight"
    else:
        weights = f"{quant_id}: about {model.params * quant.bits_per_weight / 8 / 1024**3:.2f} GB of weights at {quant.bits_per_weight:.2f} bits per weight"
    lines = [f"Read from {model.source}", f"  {shape}, context {model.context_length:,}", f"  {params}", f"  {weights}"]
    if model.notes:
        lines.append(f"  {model.notes}")
    return "\n".join(lines) + "\n\n"


def load_local_model(path_text: str, catalog: Catalog, quant: str | None):
    """A model from a local .gguf or config.json: the model, a catalogue that knows its quant,
    and the quant to judge. Bad files raise UsageError (exit code 2)."""
    path = Path(path_text)
    if not path.exists():
        raise UsageError(f"{path}: no such file")
    try:
        if path.is_file() and path.name.lower().endswith(".gguf"):
            model, catalog = load_gguf(path, catalog, quant)
            return model, catalog, model.quants[0]
        model, chosen = load_config(path, catalog, quant)
        return model, catalog, chosen
    except (GGUFError, HFConfigError) as error:
        raise UsageError(str(error)) from None
