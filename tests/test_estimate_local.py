"""`gpuready estimate PATH` end to end: a local GGUF, a config.json, a hand-written user catalogue
entry, and broken inputs that must end in one line on stderr and exit code 2, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_gguf import TINY_WEIGHTS_BYTES, minimal_gguf, write_tiny_llama
from test_hfconfig import LLAMA_3_1_8B, QWEN_3_30B_A3B

from gpuready.tasks.registry import load_catalog
from gpuready.frontends.cli import main
from gpuready.host import ReplayHost
from gpuready.modelfiles.localmodel import load_config, load_gguf
from gpuready.probes import probe_hardware
from gpuready.report import verdict_json
from gpuready.tasks.registry import judge_model
from gpuready.tasks.verdict import Options

MACHINE = Path(__file__).parent / "fixtures" / "machines" / "linux-desktop-ryzen-7950x"


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main([*argv, "--machine", str(MACHINE)])
    out, err = capsys.readouterr()
    return code, out, err


def library_verdict(model, catalog, quant=None) -> dict:
    hardware, _ = probe_hardware(ReplayHost(MACHINE))
    return verdict_json(judge_model(model, catalog, hardware, Options(quant=quant)))


def test_a_gguf_file_is_judged_like_a_catalogue_model(tmp_path, capsys):
    path = tmp_path / "Tiny-Llama-Instruct-Q4_K_M.gguf"
    write_tiny_llama(path)
    code, out, err = run(capsys, "estimate", str(path), "--json")
    assert (code, err) == (0, "")
    model, catalog = load_gguf(path, load_catalog())
    assert json.loads(out) == library_verdict(model, catalog, "Q4_K_M")
    verdict = json.loads(out)
    assert (verdict["model_id"], verdict["quant"]) == ("tiny-llama-instruct-q4_k_m", "Q4_K_M")
    assert verdict["estimate"]["memory"]["weights_bytes"] == TINY_WEIGHTS_BYTES
    assert verdict["estimate"]["basis"][0] == "weights: real Q4_K_M file size"


def test_the_text_output_says_what_was_read_from_the_gguf_header(tmp_path, capsys):
    path = tmp_path / "tiny.gguf"
    write_tiny_llama(path)
    code, out, _ = run(capsys, "estimate", str(path))
    assert code == 0
    assert out.startswith(
        "Read from GGUF header of tiny.gguf\n"
        "  llama, 2 layers, 4 heads (2 KV, 64 dim), context 131,072\n"
        "  1,344,768 parameters\n"
        # 866,432 bytes x 8 / 1,344,768 parameters = 5.154 bits per weight
        "  Q4_K_M: 0.00 GB of weights, 5.15 bits per weight\n"
        "  21 tensors: 11 Q4_K, 5 F32, 5 Q6_K\n\n"
        "Tiny Llama Instruct (tiny) at 8,192 tokens of context\n"
    )


def test_a_config_json_is_judged_at_q4_k_m_unless_told_otherwise(tmp_path, capsys):
    directory = tmp_path / "Qwen3-30B-A3B"
    directory.mkdir()
    (directory / "config.json").write_text(json.dumps(QWEN_3_30B_A3B))
    catalog = load_catalog()
    model, quant = load_config(directory, catalog)
    assert quant == "Q4_K_M"
    for argument in (str(directory), str(directory / "config.json")):
        code, out, err = run(capsys, "estimate", argument, "--json")
        assert (code, err) == (0, "")
        assert json.loads(out) == library_verdict(model, catalog, "Q4_K_M")
    code, out, _ = run(capsys, "estimate", str(directory), "--quant", "Q8_0", "--json")
    assert (code, json.loads(out)["quant"]) == (0, "Q8_0")


@pytest.mark.parametrize("typed", ["q8_0", "Q8_0"])
def test_a_config_json_takes_quant_in_any_case(tmp_path, capsys, typed):
    # 'q8_0' is also another task's dtype (a speech model's variant); for a local text model it is llama.cpp's Q8_0.
    (tmp_path / "llama").mkdir()
    path = tmp_path / "llama" / "config.json"
    path.write_text(json.dumps(LLAMA_3_1_8B))
    code, out, err = run(capsys, "estimate", str(path), "--quant", typed, "--json")
    assert (code, err, json.loads(out)["quant"]) == (0, "", "Q8_0")
    code, out, err = run(capsys, "check", "--model", str(path), "--quant", typed)
    assert (code, err) == (0, "")
    assert out.startswith("ok   model llama Q8_0: llama runs: Q8_0 ")


def test_a_gguf_takes_its_own_quant_in_any_case(tmp_path, capsys):
    path = tmp_path / "tiny.gguf"
    write_tiny_llama(path)
    code, out, err = run(capsys, "estimate", str(path), "--quant", "q4_k_m", "--json")
    assert (code, err, json.loads(out)["quant"]) == (0, "", "Q4_K_M")
    code, _, err = run(capsys, "estimate", str(path), "--quant", "q8_0")
    assert (code, err) == (2, f"gpuready: error: {path}: this file is Q4_K_M; --quant Q8_0 does not apply to it\n")


def test_a_config_json_counts_its_own_parameters_into_the_weights(tmp_path, capsys):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(LLAMA_3_1_8B))
    code, out, _ = run(capsys, "estimate", str(path), "--json")
    # 8,030,261,248 parameters x 4.8944 bits (Q4_K_M in catalog/quants.toml) / 8
    assert (code, json.loads(out)["estimate"]["memory"]["weights_bytes"]) == (0, int(8_030_261_248 * 4.8944 / 8))


def test_a_hand_written_user_catalogue_entry_is_estimated_end_to_end(tmp_path, capsys):
    user = tmp_path / "catalog"
    user.mkdir()
    (user / "my-models.toml").write_text(
        """task = "text-generation"

[[models]]
id = "my-llama-finetune"
name = "My Llama 3.1 8B fine-tune"
params = 8.03e9
layers = 32
hidden_size = 4096
attention_heads = 32
kv_heads = 8
head_dim = 128
context_length = 131072
vocab_size = 128256
quants = ["Q4_K_M", "Q8_0"]
gguf_sizes = { Q4_K_M = 4_920_734_016 }
source = "my own fine-tune of meta-llama/Llama-3.1-8B"
"""
    )
    code, out, err = run(capsys, "estimate", "my-llama-finetune", "--catalog-dir", str(user), "--json")
    assert (code, err) == (0, "")
    catalog = load_catalog(user=user)
    assert json.loads(out) == library_verdict(catalog.get("my-llama-finetune"), catalog)
    verdict = json.loads(out)
    assert verdict["model_name"] == "My Llama 3.1 8B fine-tune"
    assert {v["quant"] for v in verdict["variants"]} == {"Q4_K_M", "Q8_0"}
    q4 = library_verdict(catalog.get("my-llama-finetune"), catalog, "Q4_K_M")
    assert q4["estimate"]["memory"]["weights_bytes"] == 4_920_734_016


def broken_files(tmp_path: Path) -> list[tuple[Path, str]]:
    cases = {
        "wrong-magic.gguf": (b"GGML" + bytes(60), "not a GGUF file"),
        "version-9.gguf": (minimal_gguf(version=9), "unsupported GGUF version 9"),
        "truncated.gguf": (minimal_gguf()[:30], "truncated: "),
        "absurd-count.gguf": (minimal_gguf(tensor_count=2**63), "corrupt header: tensor count"),
        "no-shape.gguf": (minimal_gguf(), "metadata 'llama.block_count' is missing"),
    }
    found = []
    for name, (raw, message) in cases.items():
        (tmp_path / name).write_bytes(raw)
        found.append((tmp_path / name, message))
    (tmp_path / "config.json").write_text(json.dumps({k: v for k, v in LLAMA_3_1_8B.items() if k != "intermediate_size"}))
    found.append((tmp_path / "config.json", f"{tmp_path / 'config.json'}: missing 'intermediate_size', which a llama config needs"))
    (tmp_path / "untyped").mkdir()
    (tmp_path / "untyped" / "config.json").write_text(json.dumps({"hidden_size": 4096}))
    found.append((tmp_path / "untyped", f"{tmp_path / 'untyped' / 'config.json'}: missing 'model_type'"))
    (tmp_path / "notjson").mkdir()
    (tmp_path / "notjson" / "config.json").write_text("{not json")
    found.append((tmp_path / "notjson", "config.json: not valid JSON"))
    found.append((tmp_path / "missing.gguf", "missing.gguf: no such file"))
    return found


def test_every_broken_input_is_one_line_on_stderr_and_exit_code_2(tmp_path, capsys):
    for path, message in broken_files(tmp_path):
        code, out, err = run(capsys, "estimate", str(path))
        assert (code, out) == (2, ""), path
        assert err.startswith("gpuready: error: ") and err.count("\n") == 1, err
        assert message in err, (message, err)
        assert "Traceback" not in err


def test_a_gguf_cannot_be_judged_at_another_quant_than_its_own(tmp_path, capsys):
    path = tmp_path / "tiny.gguf"
    write_tiny_llama(path)
    code, _, err = run(capsys, "estimate", str(path), "--quant", "Q8_0")
    assert code == 2
    assert err == f"gpuready: error: {path}: this file is Q4_K_M; --quant Q8_0 does not apply to it\n"


@pytest.mark.parametrize("quant", ["Q4_K_M", None])
def test_a_catalogue_id_still_works_as_before(capsys, quant):
    extra = ["--quant", quant] if quant else []
    code, out, _ = run(capsys, "estimate", "llama-3.1-8b", "--json", *extra)
    catalog = load_catalog()
    assert (code, json.loads(out)) == (0, library_verdict(catalog.get("llama-3.1-8b"), catalog, quant))


def test_check_accepts_a_local_config_json_as_the_model(tmp_path, capsys):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(LLAMA_3_1_8B))
    desktop = "tests/fixtures/machines/linux-desktop-ryzen-7950x"
    assert main(["check", "--model", str(path), "--machine", desktop]) == 0
    assert capsys.readouterr().out.startswith("ok   model ")
    assert main(["check", "--model", str(path), "--min-speed", "500", "--machine", desktop]) == 1
    capsys.readouterr()
    assert main(["check", "--model", str(tmp_path / "missing.gguf"), "--machine", desktop]) == 2
