"""`gpuready bench` as a user runs it: measuring (with the kernels replaced by fixed figures), --show,
--clear, --llama-bench with a stand-in llama-bench, and numpy missing."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from gpuready.bench import cache, command
from gpuready.bench.results import Measurements
from gpuready.bench.stats import Spread
from gpuready.frontends.cli import main

FIXTURES = Path(__file__).parent / "fixtures"
READ = Spread(4.0e9, 5.0e9, 5.5e9, 9)


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def fixed_measurement(monkeypatch):
    """The kernels replaced by fixed figures: 5 GB/s, a slow machine, so verdicts move."""

    def measure_machine(hardware, quick, advance):
        advance()
        return Measurements(measured_at="2026-12-03", fingerprint=cache.fingerprint(hardware),
                            memory_read_bytes_per_s=READ, memory_copy_bytes_per_s=Spread(4e9, 4.5e9, 5e9, 9),
                            cpu_fp32_flops=Spread(1e11, 1.2e11, 1.3e11, 9), cpu_threads=2), []

    monkeypatch.setattr(command, "measure_machine", measure_machine)


def test_bench_keeps_its_figures_and_report_uses_them_and_lists_what_moved(capsys, fixed_measurement):
    code, out, _ = run(capsys, "bench", "--json")
    assert code == 0
    kept = json.loads(out)["measurements"]
    assert kept["memory_read_bytes_per_s"] == {"min": 4.0e9, "median": 5.0e9, "max": 5.5e9, "samples": 9}
    code, out, _ = run(capsys, "report", "--json")
    report = json.loads(out)
    assert report["hardware"]["cpu"]["bandwidth_source"] == "measured on this machine, 2026-12-03, ±15.0%"
    assert report["measured"]["measured_at"] == "2026-12-03"
    assert report["measured"]["changed"], "a 5 GB/s machine judges some models lower than the table does"
    assert all(change["level_without"] != change["level"] for change in report["measured"]["changed"])
    code, out, _ = run(capsys, "report")
    assert "Measured on this machine (2026-12-03; `gpuready bench --show`):" in out
    assert "verdicts changed by the measurements:" in out


def test_a_what_if_report_does_not_list_changes_it_cannot_attribute(capsys, fixed_measurement):
    run(capsys, "bench")
    code, out, _ = run(capsys, "report", "--json", "--gpu", "RTX 4090")
    report = json.loads(out)
    assert "measured" not in report
    assert report["hardware"]["cpu"]["bandwidth_source"] == "measured on this machine, 2026-12-03, ±15.0%"


def test_a_replayed_machine_ignores_this_machines_measurements(capsys, fixed_measurement):
    run(capsys, "bench")
    machine = FIXTURES / "machines" / "linux-desktop-ryzen-7950x"
    code, out, _ = run(capsys, "report", "--json", "--machine", str(machine))
    report = json.loads(out)
    assert "measured" not in report
    assert report["hardware"]["cpu"]["bandwidth_source"].startswith("table:")


def test_bench_show_and_clear(capsys, fixed_measurement):
    code, out, err = run(capsys, "bench", "--show")
    assert (code, out) == (1, "")
    assert "no measurements of this machine are kept" in err
    run(capsys, "bench")
    code, out, _ = run(capsys, "bench", "--show")
    assert code == 0
    assert out.splitlines()[1].startswith("  memory read        5.0 GB/s  (min 4.0, max 5.5, 9 runs, ±15.0%)")
    assert run(capsys, "bench", "--clear")[:2] == (0, "cleared the kept measurements\n")
    assert run(capsys, "bench", "--clear")[:2] == (0, "no measurements were kept\n")
    code, out, _ = run(capsys, "report", "--json")
    assert "measured" not in json.loads(out)


def test_bench_without_numpy_names_the_extra_and_exits_2(capsys, monkeypatch):
    real = command.importlib.util.find_spec
    monkeypatch.setattr(command.importlib.util, "find_spec", lambda name: None if name == "numpy" else real(name))
    code, out, err = run(capsys, "bench")
    assert (code, out) == (2, "")
    assert err == "gpuready: error: gpuready bench needs numpy: pip install numpy (the 'bench' extra: pip install '.[bench]' in gpuready's folder)\n"


def fake_llama_bench(directory: Path) -> None:
    """A stand-in llama-bench on PATH that prints llama.cpp's published JSON output."""
    script = directory / "llama-bench"
    fixture = FIXTURES / "llama-bench" / "rtx4080-qwen2.5-7b-q4_k_m.json"
    script.write_text(f"#!/bin/sh\necho \"$@\" > {directory / 'argv.txt'}\ncat {fixture}\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)


@pytest.mark.skipif(os.name == "nt", reason="a shell script stands in for llama-bench")
def test_llama_bench_results_are_kept_with_the_models_shape(capsys, monkeypatch, tmp_path):
    from test_gguf import write_tiny_llama

    fake_llama_bench(tmp_path)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    model = tmp_path / "tiny.gguf"
    write_tiny_llama(model)
    code, out, _ = run(capsys, "bench", "--llama-bench", str(model), "--json")
    assert code == 0
    (speed,) = json.loads(out)["measurements"]["models"]
    assert speed["generation_tokens_per_s"] == {"min": 117.464, "median": 119.03, "max": 120.178, "samples": 5}
    assert speed["placement"] == "gpu"
    assert (tmp_path / "argv.txt").read_text().split() == ["-m", str(model), "-p", "512", "-n", "128", "-r", "5", "-o", "json"]
    run(capsys, "bench", "--llama-bench", str(model))  # again: replaces, does not add
    code, out, _ = run(capsys, "bench", "--show", "--json")
    assert len(json.loads(out)["measurements"]["models"]) == 1


def test_llama_bench_missing_or_a_wrong_file_is_a_one_line_error(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    code, _, err = run(capsys, "bench", "--llama-bench", str(tmp_path / "nope.gguf"))
    assert (code, err) == (2, f"gpuready: error: --llama-bench {tmp_path / 'nope.gguf'}: not a .gguf file\n")
    from test_gguf import write_tiny_llama

    write_tiny_llama(tmp_path / "tiny.gguf")
    code, _, err = run(capsys, "bench", "--llama-bench", str(tmp_path / "tiny.gguf"))
    assert (code, err) == (2, "gpuready: error: llama-bench (llama.cpp) is not on PATH\n")


@pytest.mark.skipif(os.name == "nt", reason="a shell script stands in for llama-bench")
def test_a_llama_bench_killed_by_an_illegal_instruction_says_what_that_means(capsys, monkeypatch, tmp_path):
    # It printed "llama-bench failed (exit -4): no message" on a VM whose CPU hides AMX from llama.cpp's repacking.
    from test_gguf import write_tiny_llama

    script = tmp_path / "llama-bench"
    script.write_text("#!/bin/sh\necho 'load_backend: loaded CPU backend' >&2\nkill -ILL $$\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    write_tiny_llama(tmp_path / "tiny.gguf")
    code, out, err = run(capsys, "bench", "--llama-bench", str(tmp_path / "tiny.gguf"))
    assert (code, out) == (2, "")
    assert err.startswith("gpuready: error: llama-bench was killed by SIGILL (illegal instruction): "
                          "load_backend: loaded CPU backend; it used a CPU instruction this machine (or this VM) does not offer")
    assert "--repack 0" in err and err.count("\n") == 1


def test_an_exit_status_reads_as_words():
    from gpuready.host import exit_words

    assert exit_words(1) == "exited with code 1"
    assert exit_words(-9) == "was killed by SIGKILL (killed)"
    assert exit_words(-4) == "was killed by SIGILL (illegal instruction)"
    assert exit_words(-200) == "was killed by signal 200"


@pytest.mark.parametrize("argv", [["--machine", "tests/fixtures/machines/mac-m2-air-16gb", "bench", "--show"],
                                  ["--gpu", "RTX 4090", "bench", "--quick"]])
def test_bench_refuses_a_recording_or_a_what_if(capsys, tmp_path, monkeypatch, argv):
    # it printed this computer's kept figures under a recorded M2's name
    monkeypatch.setenv("GPUREADY_CACHE_DIR", str(tmp_path))
    assert main(argv) == 2
    assert "gpuready bench measures this computer" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_bench_show_json_with_nothing_kept_prints_json(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("GPUREADY_CACHE_DIR", str(tmp_path))
    assert main(["bench", "--show", "--json"]) == 1
    assert json.loads(capsys.readouterr().out) == {"measurements": None, "problems": []}


def test_llama_bench_is_placed_as_gpuready_places_the_model():
    from dataclasses import replace as _replace

    from gpuready.bench.llama import placement_arguments
    from gpuready.host import ReplayHost
    from gpuready.probes import probe_hardware
    from gpuready.tasks import devices
    from gpuready.tasks import text_estimate as est
    from gpuready.tasks.registry import load_catalog

    hardware, _ = probe_hardware(ReplayHost(Path(__file__).parent / "fixtures" / "machines" / "nvidia-rtx4090"))
    gpu, cpu = devices.gpu_device(hardware), devices.cpu_device(hardware)
    catalog = load_catalog()

    def placed(model_id, quant):
        found = est.estimate(catalog.get(model_id), catalog.quants[quant], 640, gpu, cpu, cpu.usable_memory_bytes)
        return found, placement_arguments(found)

    moe, args = placed("gpt-oss-120b", "MXFP4")  # experts of some layers in system memory
    assert args == ("-ngl", "999", "-ncmoe", str(moe.cpu_expert_layers)) and 0 < moe.cpu_expert_layers < 36
    dense, args = placed("llama-3.3-70b", "Q4_K_M")  # whole layers
    assert args == ("-ngl", str(round(dense.gpu_fraction * 80))) and 0 < dense.gpu_fraction < 1
    whole, args = placed("llama-3.1-8b", "Q4_K_M")
    assert (whole.placement, args) == ("gpu", ())  # llama-bench's default puts it all on the GPU
    assert placement_arguments(_replace(whole, placement="cpu")) == ()  # no GPU: llama-bench's default again
    assert placement_arguments(None) == ()
