"""How long `gpuready estimate FILE.gguf` takes on a 40 GB model: the header only is read.

Builds a sparse file with the tensor table of Llama 3.1 70B at Q4_K_M (80 layers, hidden 8192,
FFN 28672, 8 KV heads, 128,256-token vocabulary with its 280,147 BPE merges, as the header of
a real conversion holds them) written by the gguf package, then extends it with `truncate` to
the full size the tensor table declares, so the data section is a multi-GB hole that is never
read. Times the reader alone and the whole command in a fresh process.

Run: python benchmarks/estimate_gguf.py [--keep DIR]

Measured on the development container (2 cores, Python 3.11, gguf 0.19.0), three runs:
    file size                         45.0 GB (header 9.1 MB; 9.1 MB on disk, the rest a hole)
    read_gguf (header, 723 tensors)   0.07-0.14 s (median of 5 per run)
    load_gguf (+ LanguageModel)       0.07-0.11 s
    gpuready estimate FILE --json     0.26-0.37 s (fresh process, imports and probing included)
Before string arrays were skipped in one tight loop (Cursor.skip_strings), read_gguf took 0.7 s.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import gguf as gguf_py
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gpuready.tasks.registry import load_catalog
from gpuready.modelfiles.gguf import read_gguf, read_header
from gpuready.modelfiles.localmodel import load_gguf

Q = gguf_py.GGMLQuantizationType
LAYERS, HIDDEN, FFN, KV_DIM, VOCAB, MERGES = 80, 8192, 28672, 1024, 128_256, 280_147
MACHINE = ROOT / "tests" / "fixtures" / "machines" / "linux-desktop-ryzen-7950x"


def tensor(writer: gguf_py.GGUFWriter, name: str, row_length: int, rows: int, kind: Q) -> None:
    if kind == Q.F32:
        writer.add_tensor_info(name, (row_length,), np.dtype(np.float32), row_length * 4)
        return
    block, size = gguf_py.GGML_QUANT_SIZES[kind]
    nbytes = rows * row_length // block * size
    writer.add_tensor_info(name, (rows, row_length // block * size), np.dtype(np.uint8), nbytes, raw_dtype=kind)


def write_sparse_70b(path: Path) -> int:
    """Header of a Llama-3.1-70B-sized Q4_K_M file, then a hole up to its declared size; returns the size."""
    writer = gguf_py.GGUFWriter(str(path), "llama")
    writer.add_name("Llama 3.1 70B Instruct (benchmark header)")
    writer.add_block_count(LAYERS)
    writer.add_context_length(131072)
    writer.add_embedding_length(HIDDEN)
    writer.add_feed_forward_length(FFN)
    writer.add_head_count(64)
    writer.add_head_count_kv(8)
    writer.add_rope_freq_base(500000.0)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_vocab_size(VOCAB)
    writer.add_file_type(gguf_py.LlamaFileType.MOSTLY_Q4_K_M)
    writer.add_tokenizer_model("gpt2")
    writer.add_token_list([f"token{i}" for i in range(VOCAB)])
    writer.add_token_types([1] * VOCAB)
    writer.add_token_merges([f"a{i} b{i}" for i in range(MERGES)])
    tensor(writer, "token_embd.weight", HIDDEN, VOCAB, Q.Q4_K)
    for layer in range(LAYERS):
        block = f"blk.{layer}"
        tensor(writer, f"{block}.attn_norm.weight", HIDDEN, 1, Q.F32)
        tensor(writer, f"{block}.attn_q.weight", HIDDEN, HIDDEN, Q.Q4_K)
        tensor(writer, f"{block}.attn_k.weight", HIDDEN, KV_DIM, Q.Q4_K)
        tensor(writer, f"{block}.attn_v.weight", HIDDEN, KV_DIM, Q.Q6_K)
        tensor(writer, f"{block}.attn_output.weight", HIDDEN, HIDDEN, Q.Q4_K)
        tensor(writer, f"{block}.ffn_norm.weight", HIDDEN, 1, Q.F32)
        tensor(writer, f"{block}.ffn_gate.weight", HIDDEN, FFN, Q.Q4_K)
        tensor(writer, f"{block}.ffn_up.weight", HIDDEN, FFN, Q.Q4_K)
        tensor(writer, f"{block}.ffn_down.weight", FFN, HIDDEN, Q.Q6_K)
    tensor(writer, "output_norm.weight", HIDDEN, 1, Q.F32)
    tensor(writer, "output.weight", HIDDEN, VOCAB, Q.Q6_K)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    writer.close()
    with open(path, "rb") as stream:
        header = read_header(stream)  # no file size given: the data is not there yet
    size = max(header.data_offset + t.offset + t.n_bytes for t in header.tensors)
    os.truncate(path, size)  # the multi-GB hole
    return size


def median_seconds(action, repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", metavar="DIR", help="write the sparse file here and keep it")
    args = parser.parse_args()
    directory = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="gpuready-bench-"))
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "Llama-3.1-70B-Instruct-Q4_K_M.gguf"
    size = write_sparse_70b(path)
    header = read_gguf(path)
    catalog = load_catalog()
    on_disk = os.stat(path).st_blocks * 512
    print(f"file size                         {size / 1e9:.1f} GB (header {header.data_offset / 1e6:.1f} MB, {on_disk / 1e6:.1f} MB on disk)")
    print(f"read_gguf (header, {len(header.tensors)} tensors)   {median_seconds(lambda: read_gguf(path)):.3f} s (median of 5)")
    print(f"load_gguf (+ LanguageModel)       {median_seconds(lambda: load_gguf(path, catalog)):.3f} s")
    command = [sys.executable, "-m", "gpuready", "estimate", str(path), "--json", "--machine", str(MACHINE)]
    start = time.perf_counter()
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    print(f"gpuready estimate FILE --json     {elapsed:.2f} s (fresh process, exit {result.returncode})")
    if result.returncode:
        print(result.stderr, file=sys.stderr)
    model, _ = load_gguf(path, catalog)
    print(f"model: {model.params / 1e9:.2f}B parameters, {model.gguf_sizes['Q4_K_M'] / 2**30:.2f} GiB of Q4_K_M weights")
    if not args.keep:
        path.unlink()
        directory.rmdir()


if __name__ == "__main__":
    main()
