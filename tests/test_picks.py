"""The lines a person reads are the right ones: best picks, speech split into listening and
speaking, what-if names that just work, honest headers and messages (issue 12)."""

from __future__ import annotations

import json

import pytest

from gpuready.frontends.cli import main
from gpuready.tasks import image
from gpuready.tasks.base import level_at_most

DESKTOP = "tests/fixtures/machines/linux-desktop-ryzen-7950x"
LOW = ("fair", "poor")


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def report(capsys, *argv):
    code, out, _ = run(capsys, "report", "--json", "--machine", DESKTOP, *argv)
    assert code == 0
    return json.loads(out)


# --- best picks -------------------------------------------------------------------------


@pytest.mark.parametrize("gpu", ["RTX 4090", "RX 7900 XTX"])
def test_the_best_text_model_runs_well_at_a_good_quality(capsys, gpu):
    data = report(capsys, "--gpu", gpu)
    summary = next(t for t in data["tasks"] if t["task"] == "text-generation")
    best = next(v for v in data["verdicts"] if v["model_id"] == summary["best_model_id"])
    assert best["level"] == "runs-well"
    assert best["quality"] not in LOW
    mixtral = next(v for v in data["verdicts"] if v["model_id"] == "mixtral-8x7b")
    assert mixtral["quant"] != "Q3_K_M"


def test_a_low_quality_variant_counts_one_level_lower_everywhere_it_is_shown(capsys):
    data = report(capsys, "--gpu", "RTX 4090")
    for verdict in data["verdicts"]:
        if verdict["task"] == "text-generation" and verdict["quality"] in LOW and verdict["placement"]:
            # the reason says so, and the level is the lowered one, not the raw speed level
            assert any("quality: counted one level lower" in reason for reason in verdict["reasons"]), verdict["model_id"]
            assert verdict["level"] != "runs-well"


def test_a_fixed_low_quality_quant_is_lowered_with_its_reason(capsys):
    code, out, _ = run(capsys, "estimate", "mistral-7b-v0.3", "--quant", "Q3_K_M", "--json", "--machine", DESKTOP)
    verdict = json.loads(out)
    assert code == 0
    assert verdict["quality"] == "fair"
    assert "Q3_K_M is of fair quality: counted one level lower than its speed ('runs')" in verdict["reasons"]
    assert verdict["level"] == "slow"


# --- speech and search in their groups ---------------------------------------------------


def test_speech_reports_listening_and_speaking_separately(capsys):
    data = report(capsys)
    speech = next(t for t in data["tasks"] if t["task"] == "speech")
    groups = {group["task"]: group["best_model_id"] for group in speech["groups"]}
    # Kokoro on the 7950X's 16 cores: 1.54 TFLOPS (Zen 4's FMA pipes, 32 FP32 FLOPs a cycle) x 54% for one thread /
    # (0.15 x 16 + 0.85) (Amdahl, tasks/speech.py) / 59.5 GFLOPs per audio second = 4.3x real time, under the 5x floor of
    # "runs well": it runs, and Piper (7.1 GFLOPs per audio second: 36x) runs well and leads the group
    assert groups == {"speech-to-text": "whisper-small", "text-to-speech": "piper-medium"}
    assert ("speech to text: Whisper small (fp16, runs well); text to speech: Piper (medium voice) (fp32, runs well)"
            in speech["summary"])
    kokoro = next(v for v in data["verdicts"] if v["model_id"] == "kokoro-82m")
    # (Kokoro at fp32: on a CPU its runtime runs the published fp32 weights, tasks/speech.py refuse)
    assert kokoro["level"] == "runs" and kokoro["quant"] == "fp32" and kokoro["speed"] == pytest.approx(4.29, abs=0.01)
    kinds = {v["model_id"]: v["group"] for v in data["verdicts"] if v["task"] == "speech"}
    assert kinds["whisper-large-v3"] == "speech-to-text" and kinds["kokoro-82m"] == "text-to-speech"


@pytest.mark.parametrize(("task", "model"), [("speech-to-text", "Whisper small"), ("text-to-speech", "Piper (medium voice)"),
                                             ("speech", "speech to text: Whisper small")])
def test_check_takes_speech_to_text_and_text_to_speech_as_tasks(capsys, task, model):
    code, out, _ = run(capsys, "check", "--task", task, "--machine", DESKTOP)
    assert code == 0
    assert out.startswith(f"ok   task {task}: {model} runs well")
    if task == "speech":  # both parts, each with its own model
        assert "; text to speech: Piper (medium voice) runs well" in out


def test_the_text_summary_has_one_table_per_group_each_in_one_unit(capsys):
    code, out, _ = run(capsys, "report", "--task", "document-search", "--machine", DESKTOP)
    lines = out.splitlines()
    embedding = lines.index(next(line for line in lines if line.startswith("  Embedding: ")))
    reranking = lines.index(next(line for line in lines if line.startswith("  Reranking: ")))
    embedders, rerankers = lines[embedding + 2:reranking], lines[reranking + 2:lines.index("", reranking)]
    assert embedders and all(line.split("  ")[-2].strip().endswith("/min") for line in embedders if "CPU" in line)
    assert rerankers and all("pairs/s" in line for line in rerankers if "CPU" in line)
    assert "Each table: best verdict first, then the largest (most capable) model first." in lines


def test_report_task_may_name_one_group(capsys):
    code, out, _ = run(capsys, "report", "--task", "text-to-speech", "--machine", DESKTOP)
    assert code == 0
    assert "  Text to speech: ready" in out and "Speech to text:" not in out


# --- image floors -----------------------------------------------------------------------


def test_twelve_seconds_an_image_is_not_running_well():
    assert level_at_most(12.0, image.SECONDS_PER_IMAGE_CEILINGS) == "runs"
    assert level_at_most(9.5, image.SECONDS_PER_IMAGE_CEILINGS) == "runs-well"


# --- what-if names ------------------------------------------------------------------------


@pytest.mark.parametrize(("typed", "gpu_name", "other"), [
    ("M1", "Apple M1 (8-core GPU)", "'M1 7-core GPU'"),
    ("M1 Max", "Apple M1 Max (32-core GPU)", "'M1 Max 24-core GPU'"),
    ("M4 Pro", "Apple M4 Pro (20-core GPU)", None),
    ("Arc A770", "Intel(R) Arc(TM) A770 Graphics 16GB", "'Arc A770 8GB'"),
])
def test_bins_of_one_chip_pick_the_full_chip_and_say_how_to_pick_another(capsys, typed, gpu_name, other):
    code, out, err = run(capsys, "report", "--json", "--gpu", typed, "--machine", DESKTOP)
    assert code == 0
    assert json.loads(out)["hardware"]["gpus"][0]["name"] == gpu_name
    assert err.startswith(f"gpuready: note: --gpu '{typed}': assumed {gpu_name}, the full chip; for the other, type ")
    if other:
        assert other in err


@pytest.mark.parametrize(("typed", "gpu_name", "note"), [
    # The 8 GB row owns the alias 'RTX 4060 Ti', the 40 GB row 'A100': the other sizes were taken silently.
    ("RTX 4060 Ti", "NVIDIA GeForce RTX 4060 Ti",
     "assumed NVIDIA GeForce RTX 4060 Ti with 8 GB; for another memory size, type 'RTX 4060 Ti 16GB' (16 GB)"),
    ("A100", "NVIDIA A100-PCIE-40GB",
     "assumed NVIDIA A100-PCIE-40GB with 40 GB; for another memory size, type 'A100 80GB PCIe' (80 GB) or "
     "'A100 80GB' (80 GB)"),
    ("2x A100", "NVIDIA A100-PCIE-40GB",
     "assumed NVIDIA A100-PCIE-40GB with 40 GB; for another memory size, type 'A100 80GB PCIe' (80 GB) or "
     "'A100 80GB' (80 GB)"),
])
def test_a_card_sold_in_several_memory_sizes_says_which_it_took(capsys, typed, gpu_name, note):
    code, out, err = run(capsys, "report", "--json", "--gpu", typed, "--machine", DESKTOP)
    assert code == 0
    assert json.loads(out)["hardware"]["gpus"][0]["name"] == gpu_name
    name = typed.removeprefix("2x ")
    assert err == f"gpuready: note: --gpu '{name}': {note}\n"


@pytest.mark.parametrize("typed", ["RTX 4060 Ti 16GB", "RTX 4060 Ti 8GB", "RTX 4090", "A100 80GB", "A100-PCIE-40GB"])
def test_a_name_that_picks_one_size_says_nothing(capsys, typed):
    code, _, err = run(capsys, "report", "--json", "--gpu", typed, "--machine", DESKTOP)
    assert (code, err) == (0, "")


def test_different_chips_stay_an_error_with_names_to_type(capsys):
    code, _, err = run(capsys, "report", "--gpu", "RX 7900", "--machine", DESKTOP)
    assert code == 2
    assert "'RX 7900 XTX' (AMD Radeon RX 7900 XTX)" in err and "type one of the quoted names" in err


def test_a_what_if_integrated_gpu_shares_system_memory_and_says_so(capsys):
    data = report(capsys, "--gpu", "Radeon 780M")
    (gpu,) = data["hardware"]["gpus"]
    assert gpu["memory_usable_bytes"] == data["hardware"]["memory"]["usable_bytes"]
    assert any(p["probe"] == "whatif" and "integrated graphics" in p["message"] for p in data["problems"])
    on_gpu = [v for v in data["verdicts"] if v["placement"] == "gpu"]
    assert on_gpu  # it changes verdicts, not silently nothing


def test_a_name_that_matches_nothing_suggests_nothing_far_fetched(capsys):
    code, _, err = run(capsys, "report", "--gpu", "nonsense", "--machine", DESKTOP)
    assert code == 2
    assert err == ("gpuready: error: --gpu: no GPU in the table matches 'nonsense'; "
                   "see `gpuready models --gpus` for the names it knows\n")
    code, _, err = run(capsys, "report", "--gpu", "RTX 40", "--machine", DESKTOP)
    assert "closest: NVIDIA GeForce RTX 4090" in err


def test_models_gpus_lists_names_that_resolve(capsys):
    code, out, _ = run(capsys, "models", "--gpus", "--json")
    rows = json.loads(out)
    assert code == 0 and len(rows) > 100
    from gpuready.whatif import resolve_gpu

    for row in rows:
        assert resolve_gpu(row["type"])[0].id == row["id"], row


# --- honest headers and messages -----------------------------------------------------------


def test_a_context_longer_than_every_model_warns_once_and_shows_each_cap(capsys):
    code, out, err = run(capsys, "report", "--task", "text-generation", "--context", "10000000", "--machine", DESKTOP)
    assert code == 0
    assert err.count("warning:") == 1
    assert "--context 10,000,000 is longer than every model's maximum" in err
    header = next(line for line in out.splitlines() if line.strip().startswith("MODEL"))
    assert header.split()[-1] == "CONTEXT"
    llama = next(line for line in out.splitlines() if line.strip().startswith("Llama 3.1 8B"))
    assert llama.split()[-1] == "131,072"


def test_a_context_every_model_has_gets_no_warning_and_no_column(capsys):
    code, out, err = run(capsys, "report", "--task", "text-generation", "--context", "4096", "--machine", DESKTOP)
    assert (code, err) == (0, "")
    assert "CONTEXT" not in out


@pytest.mark.parametrize("target", ["/proc/nope", "README.md"])
def test_record_into_a_bad_target_is_bad_input_in_one_line(capsys, target):
    code, out, err = run(capsys, "record", target)
    assert code == 2
    assert err.startswith(f"gpuready: error: {target}: ") and err.count("\n") == 1


def test_headers_use_words_and_the_json_keeps_tokens(capsys):
    code, out, _ = run(capsys, "report", "--machine", DESKTOP)
    assert "runs-well" not in out and "does-not-fit" not in out
    data = report(capsys)
    assert {v["level"] for v in data["verdicts"]} <= {"runs-well", "runs", "slow", "too-slow", "does-not-fit", "unknown"}


def test_help_describes_every_flag_and_lists_the_tasks(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "opens its terminal UI" in capsys.readouterr().out
    for command in ("models", "estimate"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        text = capsys.readouterr().out
        json_help = text[text.index("--json"):].split("\n")[0]
        assert len(json_help.split()) > 1, command
    with pytest.raises(SystemExit):
        main(["check", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "one of text-generation, image-generation, speech, speech-to-text," in text and "embedding, reranking" in text
    assert "the weakest place a model may run and still count" in text


def test_a_requirements_file_names_every_bad_key(capsys, tmp_path):
    path = tmp_path / "needs.toml"
    path.write_text('colour = "blue"\n[[require]]\ntask = "speech"\nspeed = 3\n[[require]]\nmodle = "x"\ncontext = "long"\n')
    code, _, err = run(capsys, "check", "--requirements", str(path), "--machine", DESKTOP)
    assert code == 2
    for part in ("unknown top-level key 'colour'", "require[0]: unknown key 'speed'", "require[1]: unknown key 'modle'",
                 "require[1]: 'context' has the wrong type ('long')", "(known keys: task, model"):
        assert part in err, part
