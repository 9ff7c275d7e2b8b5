"""The GPU run's tooling (benchmarks/gpu_run.sh, random_gguf.py, llama_bench_rows.py): the validation rows are
exactly what llama-bench wrote, and the random-weight files have the published shapes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS = ROOT / "benchmarks"
RUN = BENCHMARKS / "device-runs" / "h200-2026-12-04"
sys.path.insert(0, str(BENCHMARKS))

import llama_bench_rows  # noqa: E402
import random_gguf  # noqa: E402

SOURCE = ("measured on an NVIDIA H200 lent to gpuready's development (one GPU in a 16-vCPU Firecracker microVM, "
          "2026-12-04, benchmarks/gpu_run.sh)")
HARDWARE = "NVIDIA H200 (one GPU, 16-vCPU Firecracker microVM), measured for gpuready"


def results(*names: str) -> list[dict]:
    return [json.loads(line) for name in names for line in (RUN / name).read_text().splitlines() if line.strip()]


def test_the_h200_validation_rows_are_exactly_what_llama_bench_wrote():
    printed = llama_bench_rows.gpu_rows(results("llama-bench-run1.jsonl", "llama-bench-run2.jsonl"), "h200", SOURCE, HARDWARE)
    committed = (BENCHMARKS / "validation" / "text-generation-h200.toml").read_text()
    body = committed[committed.index("[[measurements]]"):].strip()
    assert body == "\n\n".join(printed).strip()


def test_a_row_says_which_test_and_depth_it_is():
    rows = llama_bench_rows.gpu_rows(results("llama-bench-run1.jsonl"), "h200", SOURCE, HARDWARE)
    tests = [line.split(" = ")[1].strip('"') for row in rows for line in row.splitlines() if line.startswith("test = ")]
    assert tests[:2] == ["pp512", "tg128"]
    assert "tg128@d16384" in tests
    assert all('gpu_id = "h200"' in row and 'backend = "cuda"' in row for row in rows)


def test_a_run_that_left_layers_on_the_cpu_is_refused():
    partial = dict(results("llama-bench-run1.jsonl")[0], n_gpu_layers=20)
    with pytest.raises(ValueError, match="only 20 layers on the GPU"):
        llama_bench_rows.gpu_rows([partial], "h200", SOURCE, HARDWARE)


def test_from_jsonl_needs_the_gpu_and_the_source(capsys):
    with pytest.raises(SystemExit) as exit_:
        llama_bench_rows.main(["--from-jsonl", str(RUN / "llama-bench-run1.jsonl")])
    assert exit_.value.code == 2
    assert "--gpu-id" in capsys.readouterr().err


def test_llama_3_1_8b_has_its_own_output_matrix_and_the_tied_models_do_not():
    names = {name: dims for name, dims in random_gguf.tensors(random_gguf.SHAPES["llama-3.1-8b"])}
    assert names["output.weight"] == (128256, 4096) == names["token_embd.weight"]
    assert names["blk.31.ffn_down.weight"] == (4096, 14336)
    assert names["blk.0.attn_k.weight"] == (1024, 4096)  # 8 KV heads x 128
    matrices = sum(dims[0] * dims[1] for dims in names.values() if len(dims) == 2)
    vectors = sum(dims[0] for dims in names.values() if len(dims) == 1)
    # llama-bench's own count for the file written on the H200 (model_n_params)
    assert matrices + vectors == results("llama-bench-run1.jsonl")[0]["model_n_params"] == 8030261248
    assert "output.weight" not in dict(random_gguf.tensors(random_gguf.SHAPES["llama-3.2-1b"]))


def test_the_files_values_are_finite_and_not_all_alike(tmp_path):
    import gguf
    tiny = random_gguf.Shape("tiny", "Tiny (random weights)", "llama", "test", layers=2, hidden=64, intermediate=128,
                             heads=4, kv_heads=2, vocab=300, context=256, rope_theta=10000.0, rms_eps=1e-5,
                             tokenizer_pre="llama-bpe", tied=False)
    path = random_gguf.write(tiny, tmp_path / "tiny-F16.gguf")
    reader = gguf.GGUFReader(path)
    tensors = {t.name: t for t in reader.tensors}
    assert set(tensors) == {name for name, _ in random_gguf.tensors(tiny)}
    import numpy as np

    q = np.asarray(tensors["blk.0.attn_q.weight"].data, dtype=np.float32)
    v = np.asarray(tensors["blk.0.attn_v.weight"].data, dtype=np.float32)
    assert np.isfinite(q).all() and 0.01 < float(q.std()) < 0.03
    assert not np.array_equal(q.ravel()[:v.size], v.ravel())  # each matrix starts at its own place in the pool


def test_the_gpu_run_script_is_valid_bash_and_writes_what_it_documents():
    script = (BENCHMARKS / "gpu_run.sh").read_text()
    subprocess.run(["bash", "-n", str(BENCHMARKS / "gpu_run.sh")], check=True)
    for output in ("log.txt", "recording.tar.gz", "bench.json", "llama-bench.jsonl", "estimate.json", "misc.tar.gz"):
        assert f"$OUT/{output}" in script.replace('"$OUT"/', "$OUT/"), output
