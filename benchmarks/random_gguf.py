"""Write F16 GGUF files with random weights in the shapes of small published models.

Memory use and speed of llama.cpp depend on tensor shapes and types, not on weight values,
so a file with random weights in a real model's shapes measures what the real file would.
The shapes are the models' published config.json values (cited per model below); the
vocabulary is synthetic (byte-level tokens plus numbered fillers) but of the real size, so
the embedding and output tensors are the real size. Quantise the F16 file with llama.cpp's
``llama-quantize`` (benchmarks/compare_llama_fit.py does).

    python benchmarks/random_gguf.py OUT_DIR [MODEL ...]
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np


POOL_VALUES = 1 << 24  # 16 Mi random F16 values (32 MiB), reused as each matrix's source


@dataclass(frozen=True)
class Shape:
    """A model's shape, as its config.json states it."""

    key: str  # the catalogue id (catalog/text-generation.toml) this file copies
    name: str
    arch: str  # GGUF architecture: llama or qwen2
    source: str
    layers: int
    hidden: int
    intermediate: int
    heads: int
    kv_heads: int
    vocab: int
    context: int
    rope_theta: float
    rms_eps: float
    tokenizer_pre: str
    qkv_bias: bool = False
    tied: bool = True  # tie_word_embeddings: no output.weight in the file

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads


# Every value from the config.json named in `source` (num_hidden_layers, hidden_size,
# intermediate_size, num_attention_heads, num_key_value_heads, vocab_size,
# max_position_embeddings, rope_theta, rms_norm_eps, tie_word_embeddings). A model that ties its input and
# output embeddings holds no output.weight; Llama 3.1 8B does not tie them, so its file has one (as llama.cpp's
# converter writes it).
SHAPES = {
    shape.key: shape
    for shape in (
        Shape("qwen2.5-0.5b", "Qwen2.5 0.5B (random weights)", "qwen2",
              "https://huggingface.co/Qwen/Qwen2.5-0.5B-Instruct/blob/main/config.json",
              layers=24, hidden=896, intermediate=4864, heads=14, kv_heads=2, vocab=151936,
              context=32768, rope_theta=1000000.0, rms_eps=1e-6, tokenizer_pre="qwen2", qkv_bias=True),
        Shape("llama-3.2-1b", "Llama 3.2 1B (random weights)", "llama",
              "https://huggingface.co/meta-llama/Llama-3.2-1B-Instruct/blob/main/config.json",
              layers=16, hidden=2048, intermediate=8192, heads=32, kv_heads=8, vocab=128256,
              context=131072, rope_theta=500000.0, rms_eps=1e-5, tokenizer_pre="llama-bpe"),
        Shape("smollm2-1.7b", "SmolLM2 1.7B (random weights)", "llama",
              "https://huggingface.co/HuggingFaceTB/SmolLM2-1.7B-Instruct/blob/main/config.json",
              layers=24, hidden=2048, intermediate=8192, heads=32, kv_heads=32, vocab=49152,
              context=8192, rope_theta=130000.0, rms_eps=1e-5, tokenizer_pre="smollm"),
        Shape("llama-3.1-8b", "Llama 3.1 8B (random weights)", "llama",
              "https://huggingface.co/meta-llama/Llama-3.1-8B-Instruct/blob/main/config.json",
              layers=32, hidden=4096, intermediate=14336, heads=32, kv_heads=8, vocab=128256,
              context=131072, rope_theta=500000.0, rms_eps=1e-5, tokenizer_pre="llama-bpe", tied=False),
    )
}


def _byte_tokens() -> list[str]:
    """GPT-2's printable stand-ins for the 256 bytes (its bytes_to_unicode), so any text tokenises."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    codes = printable[:]
    extra = 0
    for byte in range(256):
        if byte not in printable:
            printable.append(byte)
            codes.append(256 + extra)
            extra += 1
    order = sorted(zip(printable, codes))
    return [chr(code) for _, code in order]


def tensors(shape: Shape) -> list[tuple[str, tuple[int, ...]]]:
    """Tensor names (llama.cpp's GGUF names) and numpy shapes (rows = outputs)."""
    kv_dim = shape.kv_heads * shape.head_dim
    found = [("token_embd.weight", (shape.vocab, shape.hidden)), ("output_norm.weight", (shape.hidden,))]
    if not shape.tied:
        found.append(("output.weight", (shape.vocab, shape.hidden)))
    for layer in range(shape.layers):
        block = f"blk.{layer}"
        found += [
            (f"{block}.attn_norm.weight", (shape.hidden,)),
            (f"{block}.attn_q.weight", (shape.hidden, shape.hidden)),
            (f"{block}.attn_k.weight", (kv_dim, shape.hidden)),
            (f"{block}.attn_v.weight", (kv_dim, shape.hidden)),
            (f"{block}.attn_output.weight", (shape.hidden, shape.hidden)),
            (f"{block}.ffn_norm.weight", (shape.hidden,)),
            (f"{block}.ffn_gate.weight", (shape.intermediate, shape.hidden)),
            (f"{block}.ffn_up.weight", (shape.intermediate, shape.hidden)),
            (f"{block}.ffn_down.weight", (shape.hidden, shape.intermediate)),
        ]
        if shape.qkv_bias:
            found += [(f"{block}.attn_q.bias", (shape.hidden,)), (f"{block}.attn_k.bias", (kv_dim,)),
                      (f"{block}.attn_v.bias", (kv_dim,))]
    return found


def write(shape: Shape, path: Path, seed: int = 0) -> Path:
    """Write the F16 file (1-D norms and biases in F32, as llama.cpp's converter writes them)."""
    import gguf

    writer = gguf.GGUFWriter(path, shape.arch)
    arch = shape.arch
    writer.add_name(shape.name)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    writer.add_uint32(f"{arch}.context_length", shape.context)
    writer.add_uint32(f"{arch}.embedding_length", shape.hidden)
    writer.add_uint32(f"{arch}.block_count", shape.layers)
    writer.add_uint32(f"{arch}.feed_forward_length", shape.intermediate)
    writer.add_uint32(f"{arch}.rope.dimension_count", shape.head_dim)
    writer.add_uint32(f"{arch}.attention.head_count", shape.heads)
    writer.add_uint32(f"{arch}.attention.head_count_kv", shape.kv_heads)
    writer.add_float32(f"{arch}.attention.layer_norm_rms_epsilon", shape.rms_eps)
    writer.add_float32(f"{arch}.rope.freq_base", shape.rope_theta)
    writer.add_uint32(f"{arch}.vocab_size", shape.vocab)
    byte_tokens = _byte_tokens()
    tokens = byte_tokens + [f"<tok{i}>" for i in range(shape.vocab - len(byte_tokens) - 1)] + ["<|eos|>"]
    writer.add_string("tokenizer.ggml.model", "gpt2")
    writer.add_string("tokenizer.ggml.pre", shape.tokenizer_pre)
    writer.add_array("tokenizer.ggml.tokens", tokens)
    writer.add_array("tokenizer.ggml.token_type", [1] * (shape.vocab - 1) + [3])
    writer.add_array("tokenizer.ggml.merges", [f"{byte_tokens[ord('a')]} {byte_tokens[ord('b')]}"])
    writer.add_uint32("tokenizer.ggml.bos_token_id", shape.vocab - 1)
    writer.add_uint32("tokenizer.ggml.eos_token_id", shape.vocab - 1)
    writer.add_bool("tokenizer.ggml.add_bos_token", False)
    writer.add_quantization_version(gguf.GGML_QUANT_VERSION)
    layout = tensors(shape)
    for name, dims in layout:
        dtype = np.float32 if len(dims) == 1 else np.float16
        writer.add_tensor_info(name, dims, np.dtype(dtype), int(np.prod(dims)) * np.dtype(dtype).itemsize)
    writer.write_header_to_file(path)
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    # Each matrix is a window of one pool of random values, repeated to its size: drawing 8 billion
    # normal samples took longer than the rest of a GPU run's preparation, and neither llama.cpp's
    # memory nor its speed depends on the values (the quantisers see ordinary, finite numbers).
    pool = (np.random.default_rng(seed).standard_normal(POOL_VALUES, dtype=np.float32) * 0.02).astype(np.float16)
    for index, (name, dims) in enumerate(layout):
        if len(dims) == 1:
            values = np.ones(dims, np.float32) if name.endswith("norm.weight") else np.zeros(dims, np.float32)
        else:
            start = (index * 7919) % POOL_VALUES
            values = np.resize(np.roll(pool, -start), dims)
        writer.write_tensor_data(values)
    writer.close()
    return path


def main(argv: list[str]) -> int:
    if argv and argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0
    if not argv or argv[0].startswith("-"):
        # an option is not an output folder: creating a directory named "--help" helped nobody
        sys.stderr.write(__doc__.split("\n\n")[-1] + "\n")
        return 2
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    for key in argv[1:] or list(SHAPES):
        if key not in SHAPES:
            sys.stderr.write(f"unknown model '{key}' (known: {', '.join(SHAPES)})\n")
            return 2
        path = out / f"{key}-F16.gguf"
        if not path.exists():
            write(SHAPES[key], path)
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
