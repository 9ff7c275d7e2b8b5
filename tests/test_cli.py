"""The command line as a user and a setup script meet it: output, exit codes, bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from gpuready.frontends.cli import main
from gpuready.report import schema_text

FIXTURES = Path(__file__).parent / "fixtures" / "machines"
MACHINES = sorted(p.name for p in FIXTURES.iterdir() if (p / "machine.toml").exists())
SCHEMA = json.loads(schema_text())
CPU_DESKTOP = str(FIXTURES / "linux-desktop-ryzen-7950x")
GARBLED = str(FIXTURES / "linux-garbled-proc")


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("machine", MACHINES)
def test_every_recorded_machine_gives_a_report_that_matches_the_schema(capsys, machine):
    code, out, err = run(capsys, "report", "--json", "--machine", str(FIXTURES / machine))
    assert code == 0, err
    report = json.loads(out)
    jsonschema.validate(report, SCHEMA)
    assert report["schema_version"] == 1


@pytest.mark.parametrize("machine", MACHINES)
def test_every_recorded_machine_gives_a_readable_text_summary(capsys, machine):
    code, out, _ = run(capsys, "report", "--machine", str(FIXTURES / machine))
    assert code == 0
    assert out.startswith("gpuready ") and "Text generation:" in out


def test_the_schema_is_valid_json_schema():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


def test_the_report_carries_no_timestamps_hostnames_or_uuids(capsys):
    _, out, _ = run(capsys, "report", "--json", "--machine", str(FIXTURES / "linux-cloud-epyc-cgroup1"))
    import re

    assert not re.search(r"\d{4}-\d{2}-\d{2}T\d{2}:", out)
    assert not re.search(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", out)
    assert "hostname" not in out.lower()


def test_a_garbled_proc_becomes_problems_not_a_traceback(capsys):
    code, out, err = run(capsys, "report", "--json", "--machine", GARBLED)
    assert code == 0 and "Traceback" not in err
    problems = {(p["probe"], p["severity"]) for p in json.loads(out)["problems"]}
    assert {("cpu", "error"), ("memory", "error")} <= problems


@pytest.mark.parametrize("machine", ["linux-garbled-proc", "nvidia-jetson-agx-orin-l4t"])
def test_an_unknown_prompt_speed_is_null_not_0(capsys, machine):
    # No CPU FLOPS known here: prompt_tokens_per_s read 0.0, where the README's policy is null for unknown, never 0.
    data = json.loads(run(capsys, "report", "--json", "--machine", str(FIXTURES / machine))[1])
    speeds = [v["estimate"]["speed"] for v in data["verdicts"]
              if v["task"] == "text-generation" and v["estimate"] and isinstance(v["estimate"]["speed"], dict)]
    assert speeds and all(s["prompt_tokens_per_s"] != 0 for s in speeds)
    assert any(s["prompt_tokens_per_s"] is None and s["time_to_first_token_s"] is None for s in speeds)


# --- check ----------------------------------------------------------------------------


def test_check_passes_when_a_small_model_runs(capsys):
    code, out, _ = run(capsys, "check", "--model", "qwen2.5-0.5b", "--machine", CPU_DESKTOP)
    assert code == 0
    assert out.startswith("ok   model qwen2.5-0.5b")


def test_check_fails_with_a_reason_when_a_model_does_not_fit(capsys):
    code, out, err = run(capsys, "check", "--model", "llama-3.3-70b", "--quant", "Q8_0", "--machine", CPU_DESKTOP)
    assert code == 1
    assert out.startswith("FAIL model llama-3.3-70b Q8_0") and "needs" in out


def test_check_fails_when_the_speed_floor_is_not_reached(capsys):
    code, out, _ = run(capsys, "check", "--model", "qwen2.5-7b", "--min-speed", "500", "--machine", CPU_DESKTOP)
    assert code == 1 and "needs 500" in out


def test_check_gpu_only_placement_fails_on_a_cpu_only_machine_and_says_there_is_no_gpu(capsys):
    # It named Qwen3 235B's system memory as the 'closest' model, then an NPU note as the reason.
    code, out, _ = run(capsys, "check", "--task", "text-generation", "--placement", "gpu", "--machine", CPU_DESKTOP)
    assert (code, out) == (1, "FAIL task text-generation, placement gpu: placement gpu needs a GPU: no GPU found\n")


def test_a_gpu_placement_where_the_gpu_is_unusable_or_only_vulkan_lists_it_says_so_with_the_fix(capsys):
    code, out, err = run(capsys, "check", "--task", "speech", "--placement", "split", "--machine",
                         str(FIXTURES / "nvidia-driver-not-loaded"))
    assert code == 1
    assert out.startswith("FAIL task speech, placement split: placement split needs a GPU: NVIDIA GPU 10de:2684 is not usable: ")
    assert "hint: The NVIDIA kernel driver is not loaded" in err
    code, out, err = run(capsys, "check", "--task", "text-generation", "--placement", "gpu", "--machine",
                         str(FIXTURES / "linux-strix-ryzen-ai-370"))
    assert (code, out) == (1, "FAIL task text-generation, placement gpu: placement gpu needs a GPU: no GPU found\n")
    assert "none of them shows this one here" in err  # the Radeon 890M only Vulkan lists


def test_the_closest_model_to_a_speed_floor_is_the_fastest_not_the_best_ranked(capsys):
    from gpuready.host import ReplayHost
    from gpuready.probes import probe_hardware
    from gpuready.tasks.registry import judge_all, load_catalog
    from gpuready.tasks.verdict import RUNNABLE, Options

    hardware, _ = probe_hardware(ReplayHost(Path(CPU_DESKTOP)))
    verdicts = [v for v in judge_all(load_catalog(), hardware, Options(), "text-generation") if v.level in RUNNABLE]
    fastest = max(verdicts, key=lambda v: v.speed)
    assert fastest.model_id != verdicts[0].model_id  # else this test could not tell the two apart
    code, out, _ = run(capsys, "check", "--task", "text-generation", "--min-speed", "5000", "--machine", CPU_DESKTOP)
    assert code == 1 and f"closest: {fastest.model_name}: about {fastest.speed:.0f} tokens/s, " in out
    # An upper bound: the quickest image is the closest to '<= 0.01 s per image'.
    images = [v for v in judge_all(load_catalog(), hardware, Options(), "image-generation") if v.level in RUNNABLE]
    quickest = min(images, key=lambda v: v.speed)
    code, out, _ = run(capsys, "check", "--task", "image-generation", "--max-seconds-per-image", "0.01", "--machine", CPU_DESKTOP)
    assert code == 1 and f"closest: {quickest.model_name}: about " in out


def test_check_names_the_closest_models_own_cause_not_the_notes_after_it(capsys):
    # The Strix Point laptop's verdicts end with a note on its NPU; the closest model's cause comes before it.
    code, out, _ = run(capsys, "check", "--model", "qwen3-235b-a22b", "--machine", str(FIXTURES / "linux-strix-ryzen-ai-370"))
    assert code == 1 and out.startswith("FAIL model qwen3-235b-a22b: Qwen3 235B-A22B (MoE): needs ") and "NPU" not in out


def test_check_memory_requirements(capsys):
    assert run(capsys, "check", "--min-memory", "8GB", "--machine", CPU_DESKTOP)[0] == 0
    assert run(capsys, "check", "--min-memory", "512GB", "--machine", CPU_DESKTOP)[0] == 1
    assert run(capsys, "check", "--min-gpu-memory", "8GB", "--machine", CPU_DESKTOP)[0] == 1


def test_check_could_not_tell_when_the_memory_probe_failed(capsys):
    code, out, err = run(capsys, "check", "--min-memory", "8GB", "--machine", GARBLED)
    assert code == 3
    assert out.startswith("??") and "memory probe failed" in out
    assert "hint:" in err


def test_check_model_could_not_tell_when_probes_failed(capsys):
    code, out, _ = run(capsys, "check", "--model", "qwen2.5-0.5b", "--machine", GARBLED)
    assert code == 3


def test_check_json_output_is_for_machines(capsys):
    code, out, _ = run(capsys, "check", "--json", "--model", "qwen2.5-0.5b", "--min-memory", "1TB", "--machine", CPU_DESKTOP)
    payload = json.loads(out)
    assert code == 1
    assert payload["ready"] is False and payload["exit_code"] == 1
    assert [r["status"] for r in payload["requirements"]] == ["met", "not-met"]


def test_a_requirements_file_holds_several_requirements(capsys, tmp_path):
    path = tmp_path / "gpuready.toml"
    path.write_text(
        '[[require]]\nmodel = "qwen2.5-0.5b"\nquant = "Q4_K_M"\ncontext = 4096\n\n'
        '[[require]]\ntask = "text-generation"\n\n[[require]]\nmin_memory = "4GB"\n'
    )
    code, out, _ = run(capsys, "check", "--requirements", str(path), "--machine", CPU_DESKTOP)
    assert code == 0
    assert len(out.splitlines()) == 3


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("[[require]]\nmodel = 3\n", "'model' has the wrong type"),
        ("[[require]]\nmodle = \"x\"\n", "unknown key 'modle'"),
        ("[[require]\n", "not valid TOML"),
        ("title = \"x\"\n", "expected one or more [[require]] tables"),
        ("[[require]]\nmodel = \"no-such-model\"\n", "unknown model 'no-such-model'"),
        ("[[require]]\nmin_memory = \"lots\"\n", "not a size"),
    ],
)
def test_a_malformed_requirements_file_is_a_usage_error(capsys, tmp_path, content, message):
    path = tmp_path / "req.toml"
    path.write_text(content)
    code, out, err = run(capsys, "check", "--requirements", str(path), "--machine", CPU_DESKTOP)
    assert code == 2 and out == ""
    assert message in err and "Traceback" not in err


def test_an_unknown_model_names_the_closest_ones(capsys):
    code, _, err = run(capsys, "check", "--model", "llama-3.1-8", "--machine", CPU_DESKTOP)
    assert code == 2
    assert "did you mean" in err and "llama-3.1-8b" in err


@pytest.mark.parametrize(
    "argv",
    [
        ["check"],
        ["check", "--model", "qwen2.5-0.5b", "--quant", "Q9_9"],
        ["check", "--min-speed", "5"],
        ["estimate", "no-such-model"],
        ["report", "--task", "painting"],
        ["report", "--context", "0"],
        ["report", "--memory", "many"],
        ["report", "--machine", "/nonexistent/machine"],
    ],
)
def test_bad_input_exits_2_with_one_line(capsys, argv):
    code, _, err = run(capsys, *argv)
    assert code == 2
    assert err.startswith("gpuready: error:") and len(err.strip().splitlines()) == 1


def test_a_broken_hardware_file_is_a_usage_error_naming_the_key(capsys, tmp_path):
    broken = tmp_path / "hw.json"
    broken.write_text("{not json")
    assert run(capsys, "report", "--hardware", str(broken))[0] == 2
    _, out, _ = run(capsys, "report", "--json", "--machine", CPU_DESKTOP)
    hardware = json.loads(out)["hardware"]
    hardware["memory"]["total_bytes"] = "lots"
    broken.write_text(json.dumps(hardware))
    code, _, err = run(capsys, "report", "--hardware", str(broken))
    assert code == 2 and "hardware.memory.total_bytes: expected an integer" in err


@pytest.mark.parametrize(("section", "key", "value", "message"), [
    ("memory", "total_bytes", 0, "memory: the total must be positive (null where unknown), got 0"),
    ("memory", "available_bytes", 10**15, "memory: available_bytes (1,000,000,000,000,000) is larger than the total"),
])
def test_a_hardware_file_whose_memory_cannot_be_is_a_usage_error(capsys, tmp_path, section, key, value, message):
    # "0.0 GB total, 55.3 GB available" was judged as given.
    _, out, _ = run(capsys, "report", "--json", "--machine", CPU_DESKTOP)
    hardware = json.loads(out)["hardware"]
    hardware[section][key] = value
    path = tmp_path / "hw.json"
    path.write_text(json.dumps(hardware))
    code, out, err = run(capsys, "report", "--hardware", str(path))
    assert (code, out) == (2, "") and message in err and err.count("\n") == 1


@pytest.mark.parametrize(("key", "value", "message"), [
    ("pcie_link_gt_s", -5, "gpus[0]: pcie_link_gt_s must be a PCIe rate (2.5, 5, 8, 16, 32, 64 GT/s) or null, got -5"),
    ("pcie_link_gt_s", 12.0, "gpus[0]: pcie_link_gt_s must be a PCIe rate"),
    ("pcie_link_width", 3, "gpus[0]: pcie_link_width must be a PCIe width (1, 2, 4, 8, 12, 16 or 32 lanes) or null, got 3"),
    ("pcie_link_width", 0, "gpus[0]: pcie_link_width must be a PCIe width"),
])
def test_a_hardware_file_whose_pcie_link_cannot_be_is_a_usage_error(capsys, tmp_path, key, value, message):
    # A link of -5 GT/s timed a split prompt at -38 tokens/s.
    _, out, _ = run(capsys, "report", "--json", "--machine", str(FIXTURES / "nvidia-rtx4090"))
    hardware = json.loads(out)["hardware"]
    hardware["gpus"][0].update(pcie_link_gt_s=16.0, pcie_link_width=16, pcie_link_source="nvml")
    hardware["gpus"][0][key] = value
    path = tmp_path / "hw.json"
    path.write_text(json.dumps(hardware))
    code, out, err = run(capsys, "estimate", "gpt-oss-120b", "--hardware", str(path))
    assert (code, out) == (2, "") and message in err and err.count("\n") == 1


def test_a_hardware_file_round_trips_through_the_report(capsys, tmp_path):
    _, out, _ = run(capsys, "report", "--json", "--machine", CPU_DESKTOP)
    path = tmp_path / "hw.json"
    path.write_text(out)  # a whole report is accepted too
    code, again, _ = run(capsys, "report", "--json", "--hardware", str(path))
    assert code == 0
    assert json.loads(again)["verdicts"] == json.loads(out)["verdicts"]


def test_more_memory_what_if_changes_the_answer(capsys):
    _, small, _ = run(capsys, "check", "--model", "llama-3.3-70b", "--machine", CPU_DESKTOP, "--memory", "16GB")
    code, _, _ = run(capsys, "check", "--model", "llama-3.3-70b", "--quant", "Q4_K_M", "--memory", "128GB", "--machine", CPU_DESKTOP)
    assert small.startswith("FAIL")
    # 128 GB holds a 70B model at Q4_K_M, but a desktop CPU generates it too slowly to pass.
    assert code == 1


def test_models_lists_the_catalogue(capsys):
    code, out, _ = run(capsys, "models", "--json")
    rows = json.loads(out)
    assert code == 0 and len(rows) >= 40
    assert {"id", "name", "task", "params", "quants", "source"} <= set(rows[0])


def test_estimate_prints_the_breakdown(capsys):
    code, out, _ = run(capsys, "estimate", "llama-3.1-8b", "--quant", "Q4_K_M", "--context", "4096", "--machine", CPU_DESKTOP)
    assert code == 0
    for line in ("weights", "KV cache", "compute buffers", "runtime overhead", "Basis", "Variants"):
        assert line in out


def test_schema_command_prints_the_shipped_schema(capsys):
    code, out, _ = run(capsys, "schema")
    assert code == 0 and json.loads(out)["title"] == "gpuready report"


def test_gpuready_machine_environment_variable_replays_a_machine(capsys, monkeypatch):
    monkeypatch.setenv("GPUREADY_MACHINE", CPU_DESKTOP)
    _, out, _ = run(capsys, "report", "--json")
    assert json.loads(out)["hardware"]["cpu"]["name"] == "AMD Ryzen 9 7950X 16-Core Processor"


@pytest.mark.parametrize("argv", [["report", "--json"], ["check", "--min-memory", "1GB"]])
def test_report_and_check_never_import_textual(argv):
    code = (
        "import sys\nfrom gpuready.frontends.cli import main\n"
        f"rc = main({argv + ['--machine', CPU_DESKTOP]!r})\n"
        "assert 'textual' not in sys.modules, 'textual imported'\n"
        "assert 'torch' not in sys.modules, 'torch imported'\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_python_dash_m_gpuready_runs():
    result = subprocess.run([sys.executable, "-m", "gpuready", "--version"], capture_output=True, text=True)
    assert result.returncode == 0 and result.stdout.startswith("gpuready ")


def test_the_python_api_returns_the_same_report_as_the_cli(capsys):
    from gpuready import api

    hardware, problems = api.probe(machine=CPU_DESKTOP)
    report = api.assess(hardware, problems)
    _, out, _ = run(capsys, "report", "--json", "--machine", CPU_DESKTOP)
    assert json.loads(api.to_json(report)) == json.loads(out)


def test_a_task_requirement_reports_the_strongest_model_that_meets_it(capsys):
    code, out, _ = run(capsys, "check", "--task", "text-generation", "--machine", CPU_DESKTOP)
    _, report, _ = run(capsys, "report", "--json", "--machine", CPU_DESKTOP)
    best = json.loads(report)["tasks"][0]["best_model_name"]
    assert code == 0 and f": {best} runs well" in out


def test_an_internal_error_is_one_line_and_exit_3_not_a_traceback(capsys, monkeypatch):
    import gpuready.frontends.cli as cli

    def broken(args):
        raise RuntimeError("boom")

    monkeypatch.setitem(cli.COMMANDS, "models", broken)
    code, out, err = run(capsys, "models")
    assert code == 3 and out == ""
    assert err.startswith("gpuready: internal error: RuntimeError: boom") and "Traceback" not in err


def test_a_mac_without_sysctl_or_vm_stat_gives_problems_and_exit_3_not_a_traceback(capsys, tmp_path):
    (tmp_path / "machine.toml").write_text('platform = "darwin"\narch = "arm64"\ndescription = "no commands at all"\n')
    code, out, err = run(capsys, "report", "--json", "--machine", str(tmp_path))
    assert code == 0 and "Traceback" not in err
    problems = {(p["probe"], p["severity"]) for p in json.loads(out)["problems"]}
    assert {("cpu", "error"), ("memory", "error")} <= problems
    code, out, _ = run(capsys, "check", "--min-memory", "8GB", "--machine", str(tmp_path))
    assert code == 3 and out.startswith("??")


def test_a_gpu_whose_driver_is_unusable_is_named_with_the_reason_not_called_missing(capsys):
    machine = str(FIXTURES / "nvidia-driver-not-loaded")
    code, out, err = run(capsys, "check", "--min-gpu-memory", "8GB", "--machine", machine)
    assert code == 1
    assert "no GPU found" not in out and "is not usable: the NVIDIA driver is not usable" in out
    assert "hint: The NVIDIA kernel driver is not loaded" in err


@pytest.mark.parametrize("argv", [
    ["--resolution", "768x512", "--documents", "50000", "--context", "4096", "--placement", "split"],
    ["--users", "4", "--with", "whisper-small", "--quant", "Q4_K_M"],
    ["--method", "qlora", "--sequence", "1024", "--micro-batch", "2", "--lora-rank", "8", "--no-checkpointing"],
])
def test_a_report_with_every_setting_given_matches_the_schema(capsys, argv):
    code, out, err = run(capsys, "report", "--json", "--machine", str(FIXTURES / "nvidia-rtx4090"), *argv)
    assert code == 0, err
    jsonschema.validate(json.loads(out), SCHEMA)


@pytest.mark.parametrize("task, group", [("speech", None), ("text-to-speech", "text-to-speech"), ("fine-tuning", None)])
def test_report_json_with_a_task_holds_that_task_alone_and_says_so(capsys, task, group):
    # --task filtered the text output only: the JSON held every task and all 120 verdicts, its settings silent.
    machine = str(FIXTURES / "nvidia-rtx4090")
    whole = json.loads(run(capsys, "report", "--json", "--machine", machine)[1])
    code, out, err = run(capsys, "report", "--json", "--task", task, "--machine", machine)
    assert code == 0, err
    data = json.loads(out)
    jsonschema.validate(data, SCHEMA)
    parent = "speech" if group else task
    assert data["settings"]["task"] == task and whole["settings"]["task"] is None
    summary = next(t for t in whole["tasks"] if t["task"] == parent)
    assert data["tasks"] == [{**summary, "groups": [g for g in summary["groups"] if group is None or g["task"] == group]}]
    assert data["verdicts"] == [v for v in whole["verdicts"] if v["task"] == parent and (group is None or v["group"] == group)]
    assert data["verdicts"] and len(data["verdicts"]) < len(whole["verdicts"])


def test_a_task_with_no_model_of_the_quant_asked_says_so_not_that_the_catalogue_has_none(capsys):
    # --quant Q4_K_M read "Image generation: not assessed yet — no models for this task in the catalogue yet".
    machine = str(FIXTURES / "nvidia-rtx4090")
    code, out, _ = run(capsys, "report", "--quant", "Q4_K_M", "--machine", machine)
    assert code == 0 and "in the catalogue yet" not in out
    assert "Image generation: not assessed yet — no model of this task has variant Q4_K_M" in out
    assert "Text generation: ready" in out
    data = json.loads(run(capsys, "report", "--json", "--quant", "q8_0", "--machine", machine)[1])
    tasks = {t["task"]: t for t in data["tasks"]}
    assert (tasks["document-search"]["status"], tasks["document-search"]["summary"]) == ("not-assessed", "no model of this task has variant q8_0")
    speech = {g["task"]: g for g in tasks["speech"]["groups"]}
    assert speech["text-to-speech"]["summary"] == "no model of this task has variant q8_0"
    assert "text to speech: no model of this task has variant q8_0" in tasks["speech"]["summary"]


@pytest.mark.parametrize("machine, status, words", [
    ("linux-desktop-ryzen-7950x", "not-possible", "placement gpu needs a GPU: no GPU found"),
    ("nvidia-driver-not-loaded", "not-possible", "placement gpu needs a GPU: NVIDIA GPU 10de:2684 is not usable: the NVIDIA "
     "driver is not usable: NVML_ERROR_DRIVER_NOT_LOADED; hint: The NVIDIA kernel driver is not loaded"),
    ("windows-ryzen-5800x", "unknown", "the windows-gpu probe failed: could not read the display adapters"),
])
def test_a_gpu_placement_without_a_usable_gpu_says_so_in_every_task_as_check_does(capsys, machine, status, words):
    # Each task read "not possible — ... the smallest needs 0.9 GB (56.0 GB available)" on a machine with no GPU,
    # and a GPU whose driver is not loaded had no hint in the task lines.
    code, out, _ = run(capsys, "report", "--json", "--placement", "gpu", "--machine", str(FIXTURES / machine))
    assert code == 0
    tasks = json.loads(out)["tasks"]
    summaries = tasks + [group for task in tasks for group in task["groups"]]
    assert {t["status"] for t in summaries} == {status}
    assert all(t["summary"].startswith(words) and "smallest needs" not in t["summary"] for t in summaries)
    check = run(capsys, "check", "--task", "speech", "--placement", "gpu", "--machine", str(FIXTURES / machine))[1]
    assert words.split("; hint")[0] in check


def test_check_could_not_tell_names_every_failed_probe_the_task_needs(capsys):
    # A Jetson container without /proc: the CPU and the memory are both unread, and the unread memory is what leaves
    # the fit unknown; the line said only "the cpu probe failed".
    jetson = str(FIXTURES / "nvidia-jetson-agx-orin-l4t")
    code, out, err = run(capsys, "check", "--task", "text-generation", "--machine", jetson)
    assert code == 3
    assert out.strip() == ("??   task text-generation: could not tell: the cpu and memory probes failed: "
                           "cannot read /proc/cpuinfo; cannot read /proc/meminfo")
    assert err.splitlines() == ["hint: Is /proc mounted? gpuready needs it to identify the CPU.",
                                "hint: Is /proc mounted? gpuready needs it to size system memory."]


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs Linux's /dev/full")
def test_output_that_cannot_be_written_is_a_clear_error_not_an_internal_one():
    # `gpuready report > file` on a full disk said "internal error ... please report it".
    with open("/dev/full", "w") as full:
        completed = subprocess.run([sys.executable, "-m", "gpuready", "--machine", CPU_DESKTOP, "check", "--task", "speech"],
                                   stdout=full, stderr=subprocess.PIPE, text=True, timeout=60)
    assert completed.returncode == 3
    assert completed.stderr == "gpuready: error: cannot write the output: No space left on device\n"


@pytest.mark.parametrize(
    ("argv", "code"),
    [
        (["estimate", "llama-3.1-8b", "--quant", "q8_0"], 0),  # the model's Q8_0, typed in lower case
        (["check", "--model", "whisper-large-v3", "--quant", "FP16"], 0),  # the model's fp16, typed in upper case
        (["report", "--quant", "q4_k_m"], 0),  # the catalogue's one Q4_K_M
        (["check", "--model", "llama-3.1-8b", "--quant", "Fp16"], 2),  # not a spelling of any of its variants
    ],
)
def test_a_quant_typed_in_another_case_is_the_catalogues_spelling(capsys, argv, code):
    assert main([*argv, "--machine", "tests/fixtures/machines/nvidia-rtx4090"]) == code
    out = capsys.readouterr().out
    if argv[0] == "estimate":
        assert "Variant   Q8_0" in out
    if argv[0] == "report":
        assert "Q4_K_M" in out and "not assessed" not in out.split("Image generation")[0]


def test_the_text_tables_note_says_which_generation_speed_the_column_holds(capsys):
    # With --users 8 the column silently became each user's speed at a half-full cache.
    machine = str(Path(__file__).parent / "fixtures" / "machines" / "nvidia-h200")
    assert main(["report", "--machine", machine, "--task", "text-generation"]) == 0
    assert "; GEN tok/s: at an empty context" in capsys.readouterr().out
    assert main(["report", "--machine", machine, "--task", "text-generation", "--users", "8"]) == 0
    assert "; GEN tok/s: each of 8 users at once, caches 50% full" in capsys.readouterr().out


def test_the_context_hint_names_the_longest_context_that_would_do(capsys):
    # Asking for 32k where 28k fits on an H200 gave "--context 4096 would make it 'runs-well'": only 4,096 and
    # 2,048 were tried. The hint now names the longest context, in steps of 1,024, that reaches a better level.
    machine = str(Path(__file__).parent / "fixtures" / "machines" / "nvidia-h200")
    argv = ["check", "--machine", machine, "--model", "qwen3-235b-a22b", "--quant", "Q4_K_M", "--placement", "gpu"]
    assert main([*argv, "--context", "32768"]) == 1
    hints = [line for line in capsys.readouterr().err.splitlines() if line.startswith("hint: --context ")]
    assert len(hints) == 1
    tokens = int(hints[0].split()[2])
    assert tokens % 1024 == 0 and "would make it 'runs well'" in hints[0]
    assert main([*argv, "--context", str(tokens)]) == 0  # it does
    capsys.readouterr()
    assert main([*argv, "--context", str(tokens + 1024)]) == 1  # and 1,024 more does not


def test_a_speed_failure_names_the_variant_of_that_model_that_would_meet_it(capsys):
    # A 70B at Q8_0 failing --min-speed 30 at 128k on an H200 said nothing, where lower-bit variants pass.
    machine = str(Path(__file__).parent / "fixtures" / "machines" / "nvidia-h200")
    argv = ["check", "--machine", machine, "--model", "llama-3.1-70b", "--min-speed", "30", "--context", "131072"]
    assert main(argv) == 1
    (hint,) = [line for line in capsys.readouterr().err.splitlines() if line.startswith("hint: --quant ")]
    quant = hint.split()[2]
    assert "would reach about" in hint and "at 131,072 tokens of context" in hint
    assert main([*argv, "--quant", quant]) == 0  # the variant named does meet it
    capsys.readouterr()
    # a bound no variant meets gives no such hint
    assert main(["check", "--machine", machine, "--model", "llama-3.1-70b", "--min-speed", "5000"]) == 1
    assert "hint: --quant" not in capsys.readouterr().err


def test_the_readmes_text_summary_example_is_what_the_recorded_desktop_prints(capsys):
    # The README shows an excerpt of `gpuready --plain` on the recorded Ryzen 9 7950X ("  ..." marks lines left out):
    # every line it quotes is one the tool prints today, in the same order, so a refit cannot leave it stale.
    readme = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
    start = readme.index("gpuready 0.2.0: what this machine can run locally")
    quoted = [line for line in readme[start:readme.index("```", start)].splitlines() if line != "  ..."]
    code, out, err = run(capsys, "--plain", "--machine", CPU_DESKTOP)
    assert code == 0, err
    printed, at = out.splitlines(), 0
    for line in quoted:  # each quoted line at or after the one before it
        assert line in printed[at:], line
        at = printed.index(line, at) + 1
    assert len(quoted) >= 10


def test_the_text_summary_shows_a_speed_under_one_with_two_figures(capsys):
    # F5-TTS on a Raspberry Pi 5's CPU, at about a seventieth of real time, read "0.0x" in the speech table
    code, out, _ = run(capsys, "--plain", "--machine", str(FIXTURES / "linux-raspberry-pi-5"))
    assert code == 0
    f5 = next(line for line in out.splitlines() if line.strip().startswith("F5-TTS "))
    shown = next(cell for cell in f5.split() if cell.endswith("x") and cell[0].isdigit())
    assert shown != "0.0x" and 0 < float(shown[:-1]) < 1 and shown.startswith("0.0")


def test_an_apple_gpus_line_gives_the_memory_the_verdicts_use_beside_metals_limit(capsys):
    # The M2 Air said "10.7 GB usable" (Metal's working-set limit) while every verdict and `check --min-gpu-memory`
    # used the 5.2 GB free now: the line now says both, the smaller first.
    assert main(["--plain", "--machine", str(FIXTURES / "mac-m2-air-16gb")]) == 0
    gpus = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("GPUs"))
    assert "· 16.0 GB (5.2 GB usable now, of a 10.7 GB Metal limit) ·" in gpus
    main(["check", "--min-gpu-memory", "4GB", "--machine", str(FIXTURES / "mac-m2-air-16gb")])
    assert "is 5.2 GB of 16.0 GB" in capsys.readouterr().out


@pytest.mark.parametrize("argv", [["--gpu", "RTX 4090", "record", "DIR"], ["--memory", "8GB", "record", "DIR"],
                                  ["--memory", "8GB", "schema"], ["--gpu", "RTX 4090", "fleet", "report.json"]])
def test_a_what_if_given_to_a_command_it_does_not_apply_to_is_refused(capsys, tmp_path, argv):
    # `gpuready --hardware hw.json record DIR` recorded this computer and said nothing of the what-if.
    argv = [str(tmp_path / "rec") if a == "DIR" else a for a in argv]
    code, out, err = run(capsys, *argv)
    assert (code, out) == (2, "") and "does not apply to it" in err and err.count("\n") == 1
    assert not (tmp_path / "rec").exists()


def test_a_verdict_counted_below_its_speed_is_marked_in_the_table_with_a_note(capsys):
    # Mixtral Q2_K at 6.1 tokens/s read "too slow" right under Qwen3 32B at 3.9 "slow", with nothing to say that the
    # 2-bit quant's quality, not its speed, set the word; the reason was only in the JSON and `estimate`.
    assert main(["--plain", "--machine", str(FIXTURES / "nvidia-wsl2")]) == 0
    out = capsys.readouterr().out
    text = out[out.index("Text generation:"):out.index("Image generation:")]
    mixtral = next(line for line in text.splitlines() if line.startswith("  Mixtral 8x7B"))
    assert " too slow* " in mixtral
    assert text.count("  * counted a level below its speed: a low-quality variant") == 1
    qwen = next(line for line in text.splitlines() if line.startswith("  Qwen3 32B "))
    assert " slow " in qwen and "*" not in qwen  # Q4_K_S, judged by its speed alone
