"""GGUF header reading: real files written with the gguf package, and byte-exact broken ones.

The realistic file copies the metadata keys and the tensor-type layout that Ollama shows for
Llama 3.1 8B Instruct Q4_K_M (general.file_type Q4_K_M; attn_q/k/output, ffn_gate/up and
token_embd in Q4_K; attn_v and ffn_down in Q6_K; norms in F32), shrunk to tiny dimensions.
Expected sizes are worked out by hand from ggml's block sizes next to each value.
"""

from __future__ import annotations

import io
import struct

import gguf as gguf_py
import numpy as np
import pytest

from gpuready.tasks import text_estimate
from gpuready.tasks.registry import load_catalog
from gpuready.tasks.text import LanguageModel
from gpuready.modelfiles.gguf import (
    FILE_TYPES,
    GGML_TYPES,
    ArraySummary,
    GGUFError,
    TensorInfo,
    read_gguf,
    read_header,
)
from gpuready.modelfiles.localmodel import gguf_language_model, load_gguf, read_gguf_parts

Q = gguf_py.GGMLQuantizationType
HIDDEN, FFN, VOCAB, LAYERS, HEADS, KV_HEADS = 256, 512, 320, 2, 4, 2
HEAD_DIM = HIDDEN // HEADS  # 64
KV_DIM = KV_HEADS * HEAD_DIM  # 128


# --- writers ------------------------------------------------------------------------------------


def quantised(rows: int, row_length: int, kind: Q) -> np.ndarray:
    """Zero bytes shaped as the gguf writer expects for a quantised tensor (rows x bytes per row)."""
    block, size = gguf_py.GGML_QUANT_SIZES[kind]
    return np.zeros((rows, row_length // block * size), dtype=np.uint8)


def add_llama_metadata(writer: gguf_py.GGUFWriter) -> None:
    writer.add_name("Tiny Llama Instruct")
    writer.add_block_count(LAYERS)
    writer.add_context_length(131072)
    writer.add_embedding_length(HIDDEN)
    writer.add_feed_forward_length(FFN)
    writer.add_head_count(HEADS)
    writer.add_head_count_kv(KV_HEADS)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_rope_dimension_count(HEAD_DIM)
    writer.add_rope_freq_base(500000.0)
    writer.add_vocab_size(VOCAB)
    writer.add_file_type(gguf_py.LlamaFileType.MOSTLY_Q4_K_M)
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("llama-bpe")
    writer.add_token_list([f"tok{i}" for i in range(VOCAB * 20)])  # long: summarised, not kept
    writer.add_token_types([1] * (VOCAB * 20))
    writer.add_bos_token_id(128000)
    writer.add_eos_token_id(128009)


def write_tiny_llama(path, split_max_tensors: int = 0, output: bool = True) -> None:
    writer = gguf_py.GGUFWriter(str(path), "llama", split_max_tensors=split_max_tensors)
    add_llama_metadata(writer)
    writer.add_tensor("token_embd.weight", quantised(VOCAB, HIDDEN, Q.Q4_K), raw_dtype=Q.Q4_K)
    for layer in range(LAYERS):
        block = f"blk.{layer}"
        writer.add_tensor(f"{block}.attn_norm.weight", np.zeros(HIDDEN, dtype=np.float32))
        writer.add_tensor(f"{block}.attn_q.weight", quantised(HIDDEN, HIDDEN, Q.Q4_K), raw_dtype=Q.Q4_K)
        writer.add_tensor(f"{block}.attn_k.weight", quantised(KV_DIM, HIDDEN, Q.Q4_K), raw_dtype=Q.Q4_K)
        writer.add_tensor(f"{block}.attn_v.weight", quantised(KV_DIM, HIDDEN, Q.Q6_K), raw_dtype=Q.Q6_K)
        writer.add_tensor(f"{block}.attn_output.weight", quantised(HIDDEN, HIDDEN, Q.Q4_K), raw_dtype=Q.Q4_K)
        writer.add_tensor(f"{block}.ffn_norm.weight", np.zeros(HIDDEN, dtype=np.float32))
        writer.add_tensor(f"{block}.ffn_gate.weight", quantised(FFN, HIDDEN, Q.Q4_K), raw_dtype=Q.Q4_K)
        writer.add_tensor(f"{block}.ffn_up.weight", quantised(FFN, HIDDEN, Q.Q4_K), raw_dtype=Q.Q4_K)
        writer.add_tensor(f"{block}.ffn_down.weight", quantised(HIDDEN, FFN, Q.Q6_K), raw_dtype=Q.Q6_K)
    writer.add_tensor("output_norm.weight", np.zeros(HIDDEN, dtype=np.float32))
    if output:  # without it the model's output projection reuses token_embd (tied embeddings)
        writer.add_tensor("output.weight", quantised(VOCAB, HIDDEN, Q.Q6_K), raw_dtype=Q.Q6_K)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


# Element counts: token_embd 256x320 = 81,920; per layer 256 + 65,536 + 32,768 + 32,768 +
# 65,536 + 256 + 3 x 131,072 = 590,336; output_norm 256; output 81,920.
TINY_PARAMS = 81_920 + 2 * 590_336 + 256 + 81_920  # 1,344,768
# Bytes: Q4_K is 144 bytes per 256 elements, Q6_K 210 per 256, F32 4 per element.
TINY_LAYER_BYTES = (
    1_024  # attn_norm
    + 256 * 144  # attn_q: 65,536 / 256 blocks
    + 128 * 144  # attn_k
    + 128 * 210  # attn_v (Q6_K)
    + 256 * 144  # attn_output
    + 1_024  # ffn_norm
    + 2 * 512 * 144  # ffn_gate, ffn_up
    + 512 * 210  # ffn_down (Q6_K)
)  # 376,064
TINY_WEIGHTS_BYTES = 320 * 144 + 2 * TINY_LAYER_BYTES + 1_024 + 320 * 210  # 866,432


@pytest.fixture
def catalog():
    return load_catalog()


@pytest.fixture
def tiny_llama(tmp_path):
    path = tmp_path / "Tiny-Llama-Instruct-Q4_K_M.gguf"
    write_tiny_llama(path)
    return path


# --- the type tables --------------------------------------------------------------------------------


def test_every_ggml_type_size_matches_the_gguf_package():
    ours = {kind: (t.block_size, t.type_size) for kind, t in GGML_TYPES.items()}
    theirs = {int(kind): sizes for kind, sizes in gguf_py.GGML_QUANT_SIZES.items()}
    assert {k: v for k, v in ours.items() if k in theirs} == {k: v for k, v in theirs.items() if k in ours}
    assert {GGML_TYPES[k].name for k in ours} == {Q(k).name for k in theirs if k in ours}


def test_every_file_type_name_matches_llama_ftype():
    expected = {
        int(ftype): ftype.name.removeprefix("MOSTLY_").removeprefix("ALL_")
        for ftype in gguf_py.LlamaFileType
        if ftype.name != "GUESSED"
    }
    assert FILE_TYPES == expected


# --- real files -------------------------------------------------------------------------------------


def test_a_llama_file_reads_its_metadata_and_tensor_table(tiny_llama):
    header = read_gguf(tiny_llama)
    assert header.version == 3
    assert header.file_type == "Q4_K_M"
    assert header.metadata["general.architecture"] == "llama"
    assert header.metadata["llama.attention.head_count_kv"] == KV_HEADS
    assert header.metadata["tokenizer.ggml.tokens"] == ArraySummary("string", 6_400)
    assert header.metadata["tokenizer.ggml.token_type"] == ArraySummary("i32", 6_400)
    assert [(t.name, t.shape, t.type_name, t.n_bytes) for t in header.tensors[:10]] == [
        ("token_embd.weight", (256, 320), "Q4_K", 320 * 144),
        ("blk.0.attn_norm.weight", (256,), "F32", 1_024),
        ("blk.0.attn_q.weight", (256, 256), "Q4_K", 256 * 144),
        ("blk.0.attn_k.weight", (256, 128), "Q4_K", 128 * 144),
        ("blk.0.attn_v.weight", (256, 128), "Q6_K", 128 * 210),
        ("blk.0.attn_output.weight", (256, 256), "Q4_K", 256 * 144),
        ("blk.0.ffn_norm.weight", (256,), "F32", 1_024),
        ("blk.0.ffn_gate.weight", (256, 512), "Q4_K", 512 * 144),
        ("blk.0.ffn_up.weight", (256, 512), "Q4_K", 512 * 144),
        ("blk.0.ffn_down.weight", (512, 256), "Q6_K", 512 * 210),
    ]
    assert header.params == TINY_PARAMS
    assert header.weights_bytes == TINY_WEIGHTS_BYTES
    # The data section holds exactly the tensors (each padded to the 32-byte alignment).
    last = max(header.tensors, key=lambda t: t.offset)
    assert header.data_offset + last.offset + last.n_bytes == header.file_size


def test_a_llama_file_becomes_a_language_model_with_its_real_weight_bytes(tiny_llama, catalog):
    model, catalog_with_quant = load_gguf(tiny_llama, catalog)
    assert model == LanguageModel(
        id="tiny-llama-instruct-q4_k_m",
        name="Tiny Llama Instruct",
        params=float(TINY_PARAMS),
        active_params=float(TINY_PARAMS),
        layers=LAYERS,
        hidden_size=HIDDEN,
        attention_heads=HEADS,
        kv_heads=KV_HEADS,
        head_dim=HEAD_DIM,
        context_length=131072,
        quants=("Q4_K_M",),
        source="GGUF header of Tiny-Llama-Instruct-Q4_K_M.gguf",
        family="llama",
        vocab_size=VOCAB,
        tied_embeddings=False,  # the file has its own output.weight
        gguf_sizes={"Q4_K_M": float(TINY_WEIGHTS_BYTES)},
        gguf_source="tensor table of Tiny-Llama-Instruct-Q4_K_M.gguf",
        notes="21 tensors: 11 Q4_K, 5 F32, 5 Q6_K",  # Q4_K: token_embd + 5 a layer; F32: 2 norms a layer + output_norm
        origin=str(tiny_llama),
    )
    assert catalog_with_quant.quants["Q4_K_M"] == catalog.quants["Q4_K_M"]


def test_a_file_without_an_output_matrix_has_tied_embeddings_and_reads_its_table_every_token(tmp_path, catalog):
    path = tmp_path / "tied.gguf"
    write_tiny_llama(path, output=False)
    tied, _ = load_gguf(path, catalog)
    untied, _ = load_gguf(write_tiny_llama(tmp_path / "untied.gguf") or tmp_path / "untied.gguf", catalog)
    assert (tied.tied_embeddings, untied.tied_embeddings) == (True, False)
    # tied: every parameter takes part in a token's matrix products; untied: all but the 256 x 320 input table
    assert text_estimate.matmul_params(tied) == tied.active_params
    assert text_estimate.matmul_params(untied) == untied.active_params - VOCAB * HIDDEN


def test_a_file_type_missing_from_the_catalogue_gets_a_measured_quant(tmp_path, catalog):
    path = tmp_path / "tiny-iq2.gguf"
    writer = gguf_py.GGUFWriter(str(path), "llama")
    add_llama_metadata(writer)
    writer.add_file_type(gguf_py.LlamaFileType.MOSTLY_IQ2_XXS)  # overrides Q4_K_M above
    writer.add_tensor("token_embd.weight", quantised(VOCAB, HIDDEN, Q.IQ2_XXS), raw_dtype=Q.IQ2_XXS)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    model, catalog_with_quant = load_gguf(path, catalog)
    # IQ2_XXS: 66 bytes per 256 elements = 2.0625 bits per weight.
    assert model.quants == ("IQ2_XXS",)
    assert model.gguf_sizes == {"IQ2_XXS": 320 * 66.0}
    quant = catalog_with_quant.quants["IQ2_XXS"]
    assert (quant.format, quant.bits_per_weight, quant.quality) == ("gguf", 2.0625, None)
    assert "IQ2_XXS" not in catalog.quants


def test_a_header_read_in_tiny_chunks_is_the_same_header(tiny_llama, monkeypatch):
    whole = read_gguf(tiny_llama)
    monkeypatch.setattr("gpuready.modelfiles.gguf._CHUNK", 7)  # every string and array crosses a buffer edge
    assert read_gguf(tiny_llama) == whole


class CountingReader(io.BytesIO):
    """A stream that remembers how far into the file anything was read."""

    furthest = 0

    def read(self, size=-1):
        data = super().read(size)
        self.furthest = max(self.furthest, self.tell())
        return data


def test_the_reader_stops_at_the_data_section(tiny_llama, monkeypatch):
    monkeypatch.setattr("gpuready.modelfiles.gguf._CHUNK", 64)
    raw = tiny_llama.read_bytes()
    stream = CountingReader(raw)
    header = read_header(stream, len(raw))
    assert header.weights_bytes == TINY_WEIGHTS_BYTES
    assert stream.furthest <= header.data_offset + 64  # at most one 64-byte chunk past the header
    assert len(raw) >= header.data_offset + TINY_WEIGHTS_BYTES  # ... of a file whose tensor bytes follow it


def test_a_file_cut_inside_the_tokenizer_vocabulary_is_truncated(tiny_llama):
    raw = tiny_llama.read_bytes()
    cut = raw.index(b"tok6399") + 3  # inside the last token; the count itself still fits
    with pytest.raises(GGUFError, match=r"^truncated: an element of metadata array 'tokenizer.ggml.tokens'"):
        parse(raw[:cut])


def test_a_file_without_a_file_type_is_named_after_the_type_holding_most_bytes(tmp_path, catalog):
    path = tmp_path / "old.gguf"
    writer = gguf_py.GGUFWriter(str(path), "llama")
    writer.add_block_count(1)
    writer.add_context_length(4096)
    writer.add_embedding_length(HIDDEN)
    writer.add_head_count(HEADS)
    writer.add_tensor("token_embd.weight", quantised(VOCAB, HIDDEN, Q.Q8_0), raw_dtype=Q.Q8_0)  # 320 x 8 blocks x 34 B
    writer.add_tensor("output.weight", quantised(2, HIDDEN, Q.Q6_K), raw_dtype=Q.Q6_K)  # 2 x 210 B
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    model, catalog_with_quant = load_gguf(path, catalog)
    assert (model.quants, model.gguf_sizes) == (("Q8_0",), {"Q8_0": 320 * 8 * 34 + 2 * 210.0})
    assert catalog_with_quant.quants["Q8_0"] == catalog.quants["Q8_0"]


def test_a_mixture_of_experts_file_counts_only_the_used_experts_as_active(tmp_path, catalog):
    path = tmp_path / "tiny-moe.gguf"
    writer = gguf_py.GGUFWriter(str(path), "qwen3moe")
    writer.add_block_count(1)
    writer.add_context_length(40960)
    writer.add_embedding_length(HIDDEN)
    writer.add_head_count(HEADS)
    writer.add_head_count_kv(KV_HEADS)
    writer.add_key_length(128)
    writer.add_expert_count(8)
    writer.add_expert_used_count(2)
    writer.add_file_type(gguf_py.LlamaFileType.MOSTLY_Q8_0)
    # 8 experts of 256 x 256 gate/up/down each: shape (256, 256, 8) in ggml order.
    for name in ("ffn_gate_exps", "ffn_up_exps", "ffn_down_exps"):
        writer.add_tensor(f"blk.0.{name}.weight", np.zeros((8, 256, 256 // 32 * 34), dtype=np.uint8), raw_dtype=Q.Q8_0)
    writer.add_tensor("blk.0.ffn_gate_inp.weight", np.zeros((8, 256), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    model, _ = load_gguf(path, catalog)
    experts = 3 * 8 * 256 * 256  # 1,572,864
    assert (model.params, model.active_params) == (experts + 2_048.0, experts * 2 / 8 + 2_048.0)
    assert (model.experts, model.experts_per_token, model.head_dim) == (8, 2, 128)
    # The experts' bytes as stored (Q8_0: 34 bytes a block of 32), beside the F32 router's 8 x 256 x 4:
    assert model.expert_bytes == 3 * 8 * 256 * 256 // 32 * 34
    assert model.gguf_sizes["Q8_0"] == model.expert_bytes + 8 * 256 * 4


@pytest.mark.parametrize(
    ("arch", "layers", "pattern", "window_layers"),
    [
        ("gemma3", 34, None, 29),  # llama.cpp set_swa_pattern(6): layers 0-4 of every 6 windowed: 5 x 5 + 4
        ("gemma2", 5, None, 3),  # every other layer, starting with the first: 0, 2, 4
        ("gpt-oss", 24, None, 12),
        ("gemma3", 12, 4, 9),  # an explicit pattern: every 4th layer is global
        ("gemma3", 4, (True, False, True, True), 3),  # a per-layer pattern: true means windowed
        ("llama", 32, None, 0),  # unknown layout: the KV cache is counted in full
    ],
)
def test_sliding_window_layers_follow_the_architecture(tmp_path, catalog, arch, layers, pattern, window_layers):
    path = tmp_path / "windowed.gguf"
    writer = gguf_py.GGUFWriter(str(path), arch)
    writer.add_block_count(layers)
    writer.add_context_length(131072)
    writer.add_embedding_length(HIDDEN)
    writer.add_head_count(HEADS)
    writer.add_sliding_window(1024)
    if isinstance(pattern, int):
        writer.add_uint32(f"{arch}.attention.sliding_window_pattern", pattern)
    elif pattern:
        writer.add_array(f"{arch}.attention.sliding_window_pattern", list(pattern))
    writer.add_tensor("output_norm.weight", np.zeros(HIDDEN, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    model, _ = load_gguf(path, catalog)
    assert (model.sliding_window, model.sliding_window_layers) == ((1024, window_layers) if window_layers else (None, 0))


def test_version_2_files_are_read_like_version_3():
    assert parse(minimal_gguf(version=2)).tensors == parse(minimal_gguf(version=3)).tensors


def test_a_split_model_is_read_across_all_its_parts(tmp_path, catalog):
    write_tiny_llama(tmp_path / "tiny.gguf", split_max_tensors=8)
    parts = sorted(p.name for p in tmp_path.iterdir())
    assert parts == ["tiny-00001-of-00003.gguf", "tiny-00002-of-00003.gguf", "tiny-00003-of-00003.gguf"]
    header = read_gguf_parts(tmp_path / "tiny-00002-of-00003.gguf")
    assert (len(header.tensors), header.params, header.weights_bytes) == (21, TINY_PARAMS, TINY_WEIGHTS_BYTES)
    model, _ = gguf_language_model(header, tmp_path / "tiny-00001-of-00003.gguf")
    assert model.layers == LAYERS
    (tmp_path / "tiny-00003-of-00003.gguf").unlink()
    with pytest.raises(GGUFError, match=r"split model part 3 of 3 is missing \(tiny-00003-of-00003.gguf\)"):
        read_gguf_parts(tmp_path / "tiny-00001-of-00003.gguf")


# --- byte-exact broken files ------------------------------------------------------------------------


def gguf_string(text: str) -> bytes:
    raw = text.encode()
    return struct.pack("<Q", len(raw)) + raw


def minimal_gguf(
    version: int = 3,
    tensor_count: int | None = None,
    kv_count: int | None = None,
    kv: bytes | None = None,
    tensors: bytes | None = None,
    data: bytes = b"\0" * 64,
) -> bytes:
    """GGUF bytes by hand: one string KV (general.architecture) and one F32 tensor of 16 elements."""
    if kv is None:
        kv = gguf_string("general.architecture") + struct.pack("<I", 8) + gguf_string("llama")
    if tensors is None:
        tensors = gguf_string("w") + struct.pack("<I", 1) + struct.pack("<Q", 16) + struct.pack("<I", 0) + struct.pack("<Q", 0)
    head = b"GGUF" + struct.pack("<I", version)
    head += struct.pack("<QQ", 1 if tensor_count is None else tensor_count, 1 if kv_count is None else kv_count)
    body = head + kv + tensors
    return body + b"\0" * (-len(body) % 32) + data


def parse(raw: bytes):
    return read_header(io.BytesIO(raw), len(raw))


def test_the_minimal_writer_makes_a_file_the_reader_accepts():
    header = parse(minimal_gguf())
    assert header.metadata == {"general.architecture": "llama"}
    assert header.tensors == (TensorInfo(name="w", shape=(16,), ggml_type=0, offset=0),)
    assert header.weights_bytes == 64


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"GGML" + b"\0" * 40, "not a GGUF file: it starts with b'GGML', not b'GGUF'"),
        (minimal_gguf(version=1), "GGUF version 1 is not supported (convert it again with a current llama.cpp)"),
        (minimal_gguf(version=4), "unsupported GGUF version 4 (supported: 2, 3)"),
        (minimal_gguf(version=3 << 24), "big-endian GGUF files are not supported"),
    ],
)
def test_a_foreign_or_unsupported_file_is_refused_with_one_line(raw, message):
    with pytest.raises(GGUFError) as error:
        parse(raw)
    assert str(error.value) == message


def test_every_truncation_of_the_header_is_a_clear_error():
    raw = minimal_gguf()
    header_end = len(raw) - 64
    for length in range(header_end - 1):
        with pytest.raises(GGUFError, match="^truncated: "):
            parse(raw[:length])


def test_a_file_cut_inside_the_tensor_data_says_so():
    raw = minimal_gguf(data=b"\0" * 10)
    with pytest.raises(GGUFError, match=r"^truncated: tensor 'w' ends at byte \d+ but the file has \d+ bytes"):
        parse(raw)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (minimal_gguf(tensor_count=2**64 - 1), r"^corrupt header: tensor count is 18,446,744,073,709,551,615, but at most \d+ could fit"),
        (minimal_gguf(kv_count=2**40), r"^corrupt header: metadata count is 1,099,511,627,776"),
        (
            minimal_gguf(kv=gguf_string("tokens") + struct.pack("<IIQ", 9, 8, 2**62)),
            r"^corrupt header: length of metadata array 'tokens' is 4,611,686,018,427,387,904",
        ),
        (minimal_gguf(kv=struct.pack("<Q", 2**60)), r"^corrupt header: metadata key 0 claims 1,152,921,504,606,846,976 bytes"),
        (minimal_gguf(kv=gguf_string("x") + struct.pack("<I", 13)), "^corrupt header: metadata 'x' has unknown value type 13"),
        (
            minimal_gguf(tensors=gguf_string("w") + struct.pack("<I", 5) + struct.pack("<5Q", 1, 1, 1, 1, 1) + struct.pack("<IQ", 0, 0)),
            r"^corrupt header: tensor 'w' has 5 dimensions \(1 to 4 allowed\)",
        ),
        (
            minimal_gguf(tensors=gguf_string("w") + struct.pack("<I", 1) + struct.pack("<Q", 16) + struct.pack("<IQ", 99, 0)),
            r"^tensor 'w' has ggml type 99, which this reader does not know",
        ),
        (
            minimal_gguf(tensors=gguf_string("w") + struct.pack("<I", 1) + struct.pack("<Q", 100) + struct.pack("<IQ", 12, 0)),
            r"^corrupt header: tensor 'w' row of 100 is not a whole number of 256-element blocks",
        ),
        (
            minimal_gguf(tensors=gguf_string("w") + struct.pack("<I", 2) + struct.pack("<QQ", 2**40, 2**40) + struct.pack("<IQ", 0, 0)),
            r"^corrupt header: tensor 'w' has an impossible shape",
        ),
    ],
)
def test_a_corrupt_count_is_refused_before_anything_is_allocated(raw, message):
    with pytest.raises(GGUFError, match=message):
        parse(raw)


def test_a_header_without_the_architecture_shape_names_the_missing_key(tmp_path, catalog):
    path = tmp_path / "bare.gguf"
    path.write_bytes(minimal_gguf())
    with pytest.raises(GGUFError, match=r"bare.gguf: metadata 'llama.block_count' is missing; it is needed to size the model$"):
        load_gguf(path, catalog)


@pytest.mark.parametrize("task", ["image-generation", "speech", "document-search", "embedding"])
def test_a_local_language_model_under_a_task_that_does_not_judge_it_is_bad_input(tiny_llama, capsys, task):
    from gpuready.frontends.cli import main

    # it crashed with AttributeError ('LanguageModel' object has no attribute 'resolution') and exit 3
    code = main(["estimate", str(tiny_llama), "--task", task, "--machine", "tests/fixtures/machines/nvidia-rtx4090"])
    assert code == 2
    assert f"text-generation model: task {task} does not judge it" in capsys.readouterr().err


@pytest.mark.parametrize(("task", "code"), [("speech", 2), ("image-generation", 2), ("text-generation", 0), ("fine-tuning", 0)])
def test_check_model_with_another_tasks_name_is_bad_input_as_in_a_requirements_file(capsys, task, code):
    from gpuready.frontends.cli import main

    # the flag was dropped unseen (ok, exit 0) where a requirements file with the same pair exits 2
    assert main(["check", "--model", "llama-3.1-8b", "--task", task, "--machine", "tests/fixtures/machines/nvidia-rtx4090"]) == code
