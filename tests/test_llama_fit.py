"""llama.cpp's own plan beside gpuready's: `gpuready estimate FILE.gguf` runs llama-fit-params when it
is on PATH. The fake executable here prints outputs captured from a real build
(tests/fixtures/llama_fit_params/README.md says which); absent, failing, hanging or garbled
binaries must never stop the estimate."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest
from test_gguf import write_tiny_llama

from gpuready.frontends.cli import main
from gpuready.host import CommandResult, LiveHost
from gpuready.modelfiles import llamafit

FIXTURES = Path(__file__).parent / "fixtures" / "llama_fit_params"
MIB = 1024**2
FAKE = """#!{python}
import os, sys, time
from pathlib import Path
fixtures = Path({fixtures!r})
mode = os.environ.get("FAKE_FIT_MODE", "ok")
if "--version" in sys.argv:
    name = "version"
elif mode == "hang":
    time.sleep(60)
    name = "fit"
elif mode == "garbled":
    print("something else entirely")
    sys.exit(0)
elif mode == "fail":
    name = "fail-fit"
else:
    name = "print" if "--fit-print" in sys.argv else "fit"
sys.stdout.write((fixtures / (name + ".stdout")).read_text())
sys.stderr.write((fixtures / (name + ".stderr")).read_text())
sys.exit(1 if name == "fail-fit" else 0)
"""


@pytest.fixture
def fake_on_path(tmp_path, monkeypatch):
    """A llama-fit-params on PATH that prints the captured outputs; returns a setter for its mode."""
    folder = tmp_path / "bin"
    folder.mkdir()
    script = folder / "llama-fit-params"
    script.write_text(FAKE.format(python=sys.executable, fixtures=str(FIXTURES)))
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("FAKE_FIT_MODE", "ok")
    return lambda mode: monkeypatch.setenv("FAKE_FIT_MODE", mode)


@pytest.fixture
def gguf(tmp_path) -> Path:
    path = tmp_path / "tiny-Q4_K_M.gguf"
    write_tiny_llama(path)
    return path


def test_the_captured_outputs_parse_into_megabytes_arguments_and_a_build():
    devices = llamafit.parse_memory((FIXTURES / "print.stdout").read_text())
    assert devices == (llamafit.DeviceMemory("Host", 303 * MIB, 96 * MIB, 300 * MIB),)
    assert llamafit.parse_arguments((FIXTURES / "fit.stdout").read_text()) == ("-c 8192 -ngl -1", -1)
    assert llamafit.parse_version((FIXTURES / "version.stderr").read_text()) == "build 1, commit 0c1e570"


def test_a_gpu_line_and_tensor_overrides_are_read_too():
    # The shapes llama.cpp's tools/fit-params/README.md shows for a CUDA machine.
    devices = llamafit.parse_memory("CUDA0 17904 384 898 \nHost 58259 0 12 \n")
    assert [d.device for d in devices] == ["CUDA0", "Host"]
    assert devices[0].total_bytes == (17904 + 384 + 898) * MIB
    line = '-c 4096 -ngl 48 -ot "blk\\.14\\.ffn_(up|down|gate)_(ch|)exps=CPU"'
    assert llamafit.parse_arguments(line + "\n") == (line, 48)


@pytest.mark.parametrize("text", ["", "Host 1 2\n", "CUDA0 1 2 3\n", "-ngl 3\n"])
def test_other_output_is_an_error_not_a_guess(text):
    with pytest.raises(llamafit.FitOutputError):
        llamafit.parse_memory(text)
    with pytest.raises(llamafit.FitOutputError):
        llamafit.parse_arguments(text)


def test_estimate_shows_llama_cpps_plan_beside_its_own(gguf, fake_on_path, capsys):
    assert main(["estimate", str(gguf)]) == 0
    out = capsys.readouterr().out
    memory = out.index("Memory\n")
    plan = out.index("llama.cpp's own plan (llama-fit-params, build 1, commit 0c1e570, context 8,192)")
    assert memory < plan < out.index("Basis\n")
    assert "  system memory  model    303 MiB   KV cache    96 MiB   compute   300 MiB" in out
    assert "  total          0.68 GB (gpuready, without its runtime overhead:" in out
    assert "  fitted         -c 8192 -ngl -1  (no GPU in this llama.cpp build: every layer in system memory)" in out


def test_estimate_json_carries_llama_cpps_answer(gguf, fake_on_path, capsys):
    assert main(["estimate", str(gguf), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["llama_cpp_fit"] == {
        "tool": "llama-fit-params",
        "build": "build 1, commit 0c1e570",
        "context_tokens": 8192,
        "devices": [{"device": "Host", "model_bytes": 303 * MIB, "context_bytes": 96 * MIB, "compute_bytes": 300 * MIB}],
        "total_bytes": (303 + 96 + 300) * MIB,
        "fitted_arguments": "-c 8192 -ngl -1",
        "gpu_layers": -1,
        "errors": [],
    }


def test_the_context_asked_for_is_the_one_llama_cpp_is_asked_about(gguf):
    seen = []

    class Recording(LiveHost):
        def run(self, argv, timeout=5.0):
            seen.append(tuple(argv))
            return CommandResult("not_found")

    assert llamafit.fit(Recording(), str(gguf), 2048) is None
    assert sorted(seen) == sorted([
        ("llama-fit-params", "-m", str(gguf), "-c", "2048", "--fit-print", "on"),
        ("llama-fit-params", "-m", str(gguf), "-c", "2048"),
        ("llama-fit-params", "--version"),
    ])


def test_without_the_binary_nothing_is_shown_and_nothing_fails(gguf, tmp_path, monkeypatch, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    assert main(["estimate", str(gguf)]) == 0
    out, err = capsys.readouterr()
    assert "llama.cpp's own plan" not in out and "llama-fit-params" not in out + err
    assert main(["estimate", str(gguf), "--json"]) == 0
    assert "llama_cpp_fit" not in json.loads(capsys.readouterr().out)


def test_a_failing_binary_is_a_clear_note_and_the_estimate_still_stands(gguf, fake_on_path, capsys):
    fake_on_path("fail")
    assert main(["estimate", str(gguf)]) == 0
    out = capsys.readouterr().out
    assert ("  note: llama-fit-params could not plan this file (exited with code 1: gguf_init_from_file: failed to open"
            " GGUF file 'missing.gguf' (No such file or directory))") in out
    assert "Speed" in out and "Basis" in out
    assert main(["estimate", str(gguf), "--json"]) == 0
    fit = json.loads(capsys.readouterr().out)["llama_cpp_fit"]
    assert (fit["devices"], fit["total_bytes"], fit["errors"][0][:25]) == ([], None, "could not plan this file ")


def test_garbled_output_is_named_not_parsed(gguf, fake_on_path, capsys):
    fake_on_path("garbled")
    assert main(["estimate", str(gguf)]) == 0
    out = capsys.readouterr().out
    assert "  note: llama-fit-params no 'Host MODEL CONTEXT COMPUTE' line in llama-fit-params --fit-print output" in out
    assert "  note: llama-fit-params no '-c N -ngl N' line in llama-fit-params output" in out


def test_a_hanging_binary_is_cut_off_at_the_budget(gguf, fake_on_path):
    fake_on_path("hang")
    started = time.monotonic()
    found = llamafit.fit(LiveHost(), str(gguf), 8192, budget_s=1.0)
    assert time.monotonic() - started < 5
    assert found.devices == () and found.build == "build 1, commit 0c1e570"
    assert found.errors == ("memory print did not answer within 1 s", "fit did not answer within 1 s")


def test_hardware_that_is_not_this_machine_is_not_planned_by_this_machines_llama_cpp(gguf, fake_on_path, capsys):
    assert main(["estimate", str(gguf), "--gpu", "RTX 4090", "--json"]) == 0
    assert "llama_cpp_fit" not in json.loads(capsys.readouterr().out)


def test_a_recorded_machine_answers_from_its_recording_where_the_command_is_absent(gguf, fake_on_path, capsys):
    machine = Path(__file__).parent / "fixtures" / "machines" / "linux-desktop-ryzen-7950x"
    assert main(["estimate", str(gguf), "--machine", str(machine), "--json"]) == 0
    assert "llama_cpp_fit" not in json.loads(capsys.readouterr().out)


def test_the_schema_documents_the_new_field():
    schema = json.loads((Path(llamafit.__file__).parent.parent / "schemas" / "report.schema.json").read_text())
    field = schema["$defs"]["verdict"]["properties"]["llama_cpp_fit"]
    assert set(field["properties"]) == set(llamafit.to_json(llamafit.LlamaFit(8192)))


def test_the_text_names_offloaded_layers_and_the_amx_buffer_the_planner_leaves_out():
    found = llamafit.LlamaFit(8192, llamafit.parse_memory("CUDA0 4000 256 300 \nHost 500 0 12 \n"), "-c 8192 -ngl 17", 17)
    text = llamafit.render(found, 5_000_000_000, 24, amx=True)
    assert "  CUDA0          model  4,000 MiB   KV cache   256 MiB   compute   300 MiB\n" in text
    assert "  total          4.95 GB (gpuready, without its runtime overhead: 4.66 GB, -6%)\n" in text
    assert "  fitted         -c 8192 -ngl 17  (17 of 24 layers on the GPU)\n" in text
    assert "AMX buffer" in text
    assert "AMX" not in llamafit.render(found, 5_000_000_000, 24)
    everything = llamafit.LlamaFit(8192, found.devices, "-c 8192 -ngl -1", -1)
    assert "(every layer on the GPU)" in llamafit.render(everything, None, 24)


def test_on_a_real_cuda_gpu_llama_cpps_plan_matches_gpureadys_memory_model():
    """llama-fit-params and `gpuready estimate` on the H200 (benchmarks/device-runs/h200-2026-12-04), for the same
    Llama 3.1 8B Q4_K_M file at 8,192 tokens: the weights, KV cache and compute buffers agree within 1% in total;
    llama.cpp keeps the input embedding (and a small compute buffer) on the host, which gpuready counts on the
    GPU, so gpuready's GPU figure is the higher, by those and its own reserve."""
    run = Path(__file__).parent.parent / "benchmarks" / "device-runs" / "h200-2026-12-04"
    devices = {d.device: d for d in llamafit.parse_memory((run / "fit-print.txt").read_text())}
    assert set(devices) == {"CUDA0", "Host"}
    assert (devices["CUDA0"].model_bytes, devices["CUDA0"].context_bytes, devices["CUDA0"].compute_bytes) == (
        4403 * MIB, 1024 * MIB, 258 * MIB)
    ours = json.loads((run / "gpuready-estimate.json").read_text())
    memory = ours["estimate"]["memory"]
    assert ours["llama_cpp_fit"]["devices"][0]["model_bytes"] == devices["CUDA0"].model_bytes  # what ran there parsed alike
    weights = sum(d.model_bytes for d in devices.values())
    assert abs(memory["weights_bytes"] - weights) <= 0.01 * weights
    assert memory["kv_cache_bytes"] == devices["CUDA0"].context_bytes
    compute = sum(d.compute_bytes for d in devices.values())
    assert abs(memory["compute_bytes"] - compute) <= 0.01 * compute
    host = devices["Host"].model_bytes + devices["Host"].compute_bytes
    assert ours["estimate"]["gpu_memory_bytes"] - devices["CUDA0"].total_bytes == pytest.approx(
        host + memory["overhead_bytes"], rel=0.02)
