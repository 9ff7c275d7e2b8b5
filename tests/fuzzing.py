"""Property-based fuzzing of every parser of user input: strategies and the one property they share.

Each target takes one generated input and must end with a result or with the parser's own
error (which the CLI turns into exit code 2) carrying a one-line message; anything else is a
defect. tests/test_fuzz.py runs a few hundred inputs per parser in CI (the "ci" profile);
benchmarks/fuzz.py runs 10,000 per parser (the "benchmark" profile).
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import math
import struct
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.configuration import set_hypothesis_home_dir

# Hypothesis keeps caches in ./.hypothesis by default: keep the checkout clean (no example database either).
set_hypothesis_home_dir(Path(tempfile.gettempdir()) / "gpuready-hypothesis")

from gpuready.catalog.loader import CatalogError
from gpuready.tasks.registry import load_catalog
from gpuready.errors import UsageError
from gpuready.frontends.check import load_requirements
from gpuready.frontends.cli import main
from gpuready.frontends.cli import one_line as cli_line
from gpuready.modelfiles.gguf import GGUFError
from gpuready.hardware import HardwareFormatError, to_dict
from gpuready.modelfiles.hfconfig import HFConfigError
from gpuready.modelfiles.localmodel import load_config, load_gguf
from gpuready.report import build_report, dumps, load_hardware_json
from gpuready.catalog.tables import enrich
from gpuready.testing import cpu_machine, with_test_gpu
from gpuready.tomlcompat import tomllib
from gpuready.tasks.registry import judge_model as judge_any
from gpuready.tasks.verdict import Options

FIXTURES = Path(__file__).parent / "fixtures" / "machines"
COMMON = dict(derandomize=True, database=None, deadline=None, print_blob=False,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
settings.register_profile("ci", max_examples=150, **COMMON)
settings.register_profile("benchmark", max_examples=10_000, **COMMON)

CATALOG = load_catalog()

# --- generic values and mutations -------------------------------------------------------------

scalars = (st.none() | st.booleans() | st.integers() | st.integers(min_value=2**62, max_value=10**400)
           | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=30))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
                      max_leaves=12)
deep = st.integers(min_value=50, max_value=50_000).map(lambda n: "[" * n + "]" * n)


def _slots(value, slots=None):
    """Every (container, key) in a nested value."""
    slots = [] if slots is None else slots
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        slots.append((value, key))
        _slots(item, slots)
    return slots


@st.composite
def mutated(draw, base):
    """``base`` with one to four values replaced by anything, removed, or joined by an unknown key."""
    value = copy.deepcopy(base)
    for _ in range(draw(st.integers(1, 4))):
        slots = _slots(value)
        if not slots:
            break
        container, key = draw(st.sampled_from(slots))
        action = draw(st.sampled_from(("replace", "replace", "remove", "add")))
        if action == "replace":
            container[key] = draw(values)
        elif action == "remove":
            del container[key]
        elif isinstance(container, dict):
            container[draw(st.text(max_size=12))] = draw(values)
    return value


def toml_text(data: dict) -> str:
    """A minimal TOML writer for generated tables (strings, numbers, booleans, arrays, tables)."""

    def scalar(value) -> str:
        if value is None:
            return '""'
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, float):
            return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf") if math.isinf(value) else repr(value)
        if isinstance(value, int):
            return str(value)
        if isinstance(value, str):
            return json.dumps(value)
        if isinstance(value, list):
            return "[" + ", ".join(scalar(v) for v in value) + "]"
        if isinstance(value, dict):
            return "{" + ", ".join(f"{json.dumps(str(k))} = {scalar(v)}" for k, v in value.items()) + "}"
        return json.dumps(str(value))

    lines = []
    for key, value in data.items():
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            for table in value:
                lines.append(f"[[{key}]]")
                lines += [f"{json.dumps(str(k))} = {scalar(v)}" for k, v in table.items()]
        else:
            lines.insert(0, f"{json.dumps(str(key))} = {scalar(value)}")
    return "\n".join(lines) + "\n"


def one_line(error: Exception) -> None:
    """The error as the CLI prints it (gpuready.frontends.cli.one_line) is one non-empty line of bounded length."""
    message = cli_line(str(error))
    assert message and "\n" not in message and len(message) < 2000, repr(message[:300])


# --- the catalogue and the requirements file ----------------------------------------------------

_MODELS = tomllib.loads((Path(__file__).parents[1] / "catalog" / "text-generation.toml").read_text())["models"]
catalogue_files = (st.builds(lambda m: toml_text({"task": "text-generation", "models": [m]}), mutated(_MODELS[0]))
                   | st.text(max_size=300) | deep.map(lambda d: f"x = {d}\n"))


def catalogue_target(text: str) -> None:
    with tempfile.TemporaryDirectory() as directory:
        (Path(directory) / "text-generation.toml").write_text(text, encoding="utf-8")
        try:
            load_catalog(user=Path(directory))
        except CatalogError as error:
            one_line(error)
            return "error"
        return "result"


_REQUIREMENTS = {"require": [
    {"model": "qwen2.5-7b", "quant": "Q4_K_M", "context": 8192, "min_generation_tokens_per_s": 10, "placement": "split"},
    {"task": "speech", "min_realtime": 5}, {"task": "image-generation", "resolution": "1024x1024", "max_seconds_per_image": 30},
    {"task": "document-search", "documents": 1000, "min_chunks_per_minute": 100}, {"min_memory": "16GB"}, {"min_gpu_memory": "8GB"},
]}
requirement_files = st.builds(toml_text, mutated(_REQUIREMENTS)) | st.text(max_size=300)


def requirements_target(text: str) -> None:
    from gpuready.frontends.check import evaluate

    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "requirements.toml"
        path.write_text(text, encoding="utf-8")
        try:
            requirements = load_requirements(path, CATALOG)
        except (UsageError, CatalogError) as error:
            one_line(error)
            return "error"
        hardware = enrich(with_test_gpu(cpu_machine(32), 24, 1008))
        for requirement in requirements:
            evaluate(requirement, hardware, [], CATALOG)
        return "result"


# --- --hardware JSON ---------------------------------------------------------------------------

_HARDWARE = to_dict(enrich(with_test_gpu(cpu_machine(64), 24, 1008)))
hardware_files = st.builds(lambda h: json.dumps(h), mutated(_HARDWARE)) | st.text(max_size=200) | deep


def hardware_target(text: str) -> None:
    try:
        hardware = enrich(load_hardware_json(text, "hw.json"))
    except HardwareFormatError as error:
        one_line(error)
        return "error"
    dumps(build_report(hardware, [], CATALOG, Options()))
    return "result"


# --- config.json -------------------------------------------------------------------------------

_CONFIG = {"model_type": "qwen3_moe", "hidden_size": 2048, "num_hidden_layers": 48, "num_attention_heads": 32,
           "num_key_value_heads": 4, "head_dim": 128, "vocab_size": 151936, "max_position_embeddings": 40960,
           "num_experts": 128, "num_experts_per_tok": 8, "moe_intermediate_size": 768, "intermediate_size": 6144,
           "decoder_sparse_step": 1, "mlp_only_layers": [], "sliding_window": 4096, "use_sliding_window": False,
           "max_window_layers": 48, "tie_word_embeddings": False, "layer_types": ["full_attention"] * 2}
_TYPES = st.sampled_from(["llama", "mistral", "mixtral", "qwen2", "qwen3", "qwen3_moe", "phi3", "gemma2", "gemma3_text", "gpt_oss"])
config_files = (st.builds(lambda c, t: json.dumps(c | {"model_type": t}), mutated(_CONFIG), _TYPES)
                | st.builds(json.dumps, mutated(_CONFIG)) | st.text(max_size=200) | deep)


def config_target(text: str) -> None:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "config.json"
        path.write_text(text, encoding="utf-8")
        try:
            model, quant = load_config(path, CATALOG)
        except HFConfigError as error:
            one_line(error)
            return "error"
        judge_any(model, CATALOG, enrich(cpu_machine(64)), Options(quant=quant))
        return "result"


# --- GGUF headers ------------------------------------------------------------------------------

_GGUF_KEYS = ("general.architecture", "general.name", "llama.block_count", "llama.context_length", "llama.embedding_length",
              "llama.attention.head_count", "llama.attention.head_count_kv", "general.alignment", "general.file_type", "tokenizer.ggml.tokens")
counts = st.integers(0, 4) | st.sampled_from([2**32, 2**63 - 1, 2**64 - 1, 10**12])


@st.composite
def gguf_files(draw) -> bytes:
    """A GGUF header with lying lengths, huge counts, wrong magic or version, tensors claiming terabytes; maybe cut short."""
    out = io.BytesIO()
    out.write(draw(st.sampled_from([b"GGUF"] * 6 + [b"GGUG", b"\x00\x00\x00\x00"])))
    out.write(struct.pack("<I", draw(st.sampled_from([3, 3, 3, 2, 1, 0x03000000]) | st.integers(0, 2**32 - 1))))
    tensors, kvs = draw(counts), draw(counts)
    out.write(struct.pack("<QQ", tensors, kvs))

    def string(text: bytes) -> None:
        out.write(struct.pack("<Q", draw(st.sampled_from([len(text)] * 5 + [2**40, 2**64 - 1]))) + text)

    for _ in range(min(kvs, 6)):
        string(draw(st.sampled_from(_GGUF_KEYS)).encode())
        kind = draw(st.sampled_from([4, 4, 8, 9, 10, 5, 99]))  # uint32, string, array, uint64, int32, unknown
        out.write(struct.pack("<I", kind))
        if kind == 4:
            out.write(struct.pack("<I", draw(st.integers(0, 2**32 - 1))))
        elif kind == 5:
            out.write(struct.pack("<i", draw(st.integers(-(2**31), 2**31 - 1))))
        elif kind == 10:
            out.write(struct.pack("<Q", draw(st.integers(0, 2**64 - 1))))
        elif kind == 8:
            string(draw(st.sampled_from([b"llama", b"qwen3", b"", b"\xff\xfe"])))
        elif kind == 9:
            out.write(struct.pack("<I", draw(st.sampled_from([8, 4, 9]))) + struct.pack("<Q", draw(counts)))
    for index in range(min(tensors, 3)):
        string(f"blk.{index}.weight".encode())
        dims = draw(st.integers(0, 5))
        out.write(struct.pack("<I", dims))
        for _ in range(min(dims, 4)):
            out.write(struct.pack("<Q", draw(st.sampled_from([4096, 32, 2**40, 0]))))
        out.write(struct.pack("<IQ", draw(st.sampled_from([0, 1, 12, 2, 999])), draw(st.sampled_from([0, 2**50]))))
    data = out.getvalue()
    return data[: draw(st.integers(0, len(data)))] if draw(st.booleans()) else data


def _tiny_llama() -> tuple[bytes, int]:
    """The header bytes and file size of a real (tiny) GGUF file written by gguf-py, the format's reference writer."""
    from gpuready.modelfiles.gguf import read_gguf
    from test_gguf import write_tiny_llama

    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "tiny.gguf"
        write_tiny_llama(path)
        header = read_gguf(path)
        return path.read_bytes()[: header.data_offset], path.stat().st_size


TINY_HEADER, TINY_SIZE = _tiny_llama()
_INTERESTING = [b"\x00", b"\xff", struct.pack("<I", 0), struct.pack("<I", 2**32 - 1), struct.pack("<Q", 0),
                struct.pack("<Q", 2**63), struct.pack("<Q", 2**64 - 1), struct.pack("<Q", 10**12), struct.pack("<I", 13)]


@st.composite
def mutated_gguf(draw) -> tuple[bytes, int]:
    """The real header with a few bytes overwritten by boundary values, maybe cut short; the data size kept."""
    header = bytearray(TINY_HEADER)
    for _ in range(draw(st.integers(0, 4))):
        position = draw(st.integers(0, 400) | st.integers(0, len(header) - 1))
        value = draw(st.sampled_from(_INTERESTING))
        header[position: position + len(value)] = value
    if draw(st.integers(0, 4)) == 0:
        header = header[: draw(st.integers(0, len(header)))]
    return bytes(header), TINY_SIZE


def gguf_target(data: bytes | tuple[bytes, int]) -> None:
    data, size = data if isinstance(data, tuple) else (data, len(data))
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "model.gguf"
        with open(path, "wb") as handle:
            handle.write(data)
            handle.truncate(max(size, len(data)))  # the tensor data as a sparse run of zeros
        try:
            model, catalog = load_gguf(path, CATALOG)
        except GGUFError as error:
            one_line(error)
            return "error"
        judge_any(model, catalog, enrich(cpu_machine(64)), Options(quant=model.quants[0]))
        return "result"


# --- recorded machine directories ------------------------------------------------------------------

_BASE_MACHINES = ("nvidia-rtx4090", "mac-m2-air-16gb", "windows-ryzen-5800x", "amd-strix-halo", "linux-container-cgroup2")


@st.composite
def machine_dirs(draw) -> dict[str, bytes]:
    """A recorded machine: a real one with its manifest, files, readouts and command outputs rewritten."""
    base = FIXTURES / draw(st.sampled_from(_BASE_MACHINES))
    files = {str(p.relative_to(base)): p.read_bytes() for p in sorted(base.rglob("*")) if p.is_file()}
    names = sorted(files)
    for name in draw(st.lists(st.sampled_from(names), max_size=4, unique=True)):
        if name.endswith(".json"):
            files[name] = json.dumps(draw(mutated(json.loads(files[name])))).encode()
        elif name == "machine.toml":
            files[name] = draw(st.sampled_from([b"", b'platform = "linux"\n', b'platform = 3\narch = "x"\n', b"[[[", b'platform = "windows"\narch = "arm64"\n[env]\nCUDA_VISIBLE_DEVICES = 1\n']))
        else:
            files[name] = draw(st.binary(max_size=200) | st.just(files[name][: len(files[name]) // 2]) | st.just(b""))
    return files


def machine_target(files: dict[str, bytes]) -> None:
    with tempfile.TemporaryDirectory() as directory:
        for name, data in files.items():
            path = Path(directory) / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["report", "--json", "--machine", directory])
        assert code in (0, 2), err.getvalue()
        if code == 2:
            assert err.getvalue().startswith("gpuready: error: ") and err.getvalue().count("\n") == 1, err.getvalue()
            return "error"
        report = json.loads(out.getvalue())
        crashed = [p for p in report["problems"] if "gpuready bug" in (p["hint"] or "")]
        assert crashed == [], crashed
        assert [p for p in report["problems"] if p["severity"] == "error" and not p["hint"]] == []
        return "result"


TARGETS = {
    "catalogue": (catalogue_files, catalogue_target),
    "requirements": (requirement_files, requirements_target),
    "hardware": (hardware_files, hardware_target),
    "config.json": (config_files, config_target),
    "gguf": (gguf_files() | mutated_gguf() | mutated_gguf(), gguf_target),
    "machine": (machine_dirs(), machine_target),
}
