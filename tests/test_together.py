"""Several models resident at once (--with MODEL): each companion takes its memory off the
device it sits on before anything else is judged; memory sums per device."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuready.frontends.cli import main
from gpuready.report import build_report, report_json, schema_text
from gpuready.tasks.devices import cpu_device, gpu_device
from gpuready.tasks.registry import judge_model, load_catalog
from gpuready.tasks.together import reserve
from gpuready.tasks.verdict import Options
from replay_support import replayed_hardware

FIXTURES = Path(__file__).parent / "fixtures" / "machines"
RTX4090 = FIXTURES / "nvidia-rtx4090"
CATALOG = load_catalog()


def test_companions_on_the_gpu_take_their_memory_off_it_in_turn():
    hardware = replayed_hardware(RTX4090)
    before = gpu_device(hardware).usable_memory_bytes
    resident = reserve(hardware, CATALOG, ("whisper-large-v3", "bge-m3"), Options())
    whisper, bge = resident.verdicts
    assert (whisper.placement, bge.placement, resident.all_run) == ("gpu", "gpu", True)
    assert gpu_device(resident.hardware).usable_memory_bytes == before - whisper.estimate.gpu_memory_bytes - bge.estimate.gpu_memory_bytes
    # Whatever each estimate keeps in system memory (a speech runtime's host buffers) comes off system memory.
    host = whisper.estimate.system_memory_bytes + bge.estimate.system_memory_bytes
    assert cpu_device(resident.hardware).usable_memory_bytes == cpu_device(hardware).usable_memory_bytes - host
    # The second companion was judged on what the first left.
    assert bge.memory_available_bytes == before - whisper.estimate.gpu_memory_bytes


def test_a_companion_on_the_cpu_takes_system_memory():
    ryzen = replayed_hardware(FIXTURES / "linux-desktop-ryzen-7950x")
    resident = reserve(ryzen, CATALOG, ("whisper-small",), Options())
    (whisper,) = resident.verdicts
    assert whisper.placement == "cpu"
    assert resident.hardware.memory.usable_bytes == ryzen.memory.usable_bytes - whisper.estimate.system_memory_bytes


def test_on_unified_memory_a_companion_on_the_gpu_also_leaves_the_system_less():
    mac = replayed_hardware(FIXTURES / "mac-m3-max-40c-64gb")
    resident = reserve(mac, CATALOG, ("whisper-large-v3",), Options())
    (whisper,) = resident.verdicts
    taken = whisper.estimate.gpu_memory_bytes
    assert whisper.placement == "gpu" and taken > 0
    assert resident.hardware.memory.usable_bytes == mac.memory.usable_bytes - taken


def test_a_model_that_fit_alone_no_longer_fits_beside_its_companions():
    hardware = replayed_hardware(RTX4090)
    options = Options(quant="Q8_0", placement="gpu")
    qwen = CATALOG.get("qwen2.5-14b")
    assert judge_model(qwen, CATALOG, hardware, options).level == "runs-well"
    resident = reserve(hardware, CATALOG, ("whisper-large-v3", "flux.1-dev"), options)
    assert judge_model(qwen, CATALOG, resident.hardware, options).level == "does-not-fit"


def test_the_report_lists_the_resident_models_keeps_the_machines_own_memory_and_validates():
    import jsonschema

    from gpuready import app

    hardware = replayed_hardware(RTX4090)
    report = app.report(app.Request(options=Options(with_models=("whisper-large-v3",))), CATALOG, (hardware, []))
    data = json.loads(json.dumps(report_json(report)))
    jsonschema.validate(data, json.loads(schema_text()))
    assert [v["model_id"] for v in data["resident"]] == ["whisper-large-v3"] and data["settings"]["with"] == ["whisper-large-v3"]
    assert report.hardware == hardware  # the report describes the machine; only the verdicts see less
    plain = build_report(hardware, [], CATALOG, Options())
    assert report.verdict("llama-3.1-8b", "text-generation").memory_available_bytes < plain.verdict(
        "llama-3.1-8b", "text-generation").memory_available_bytes


@pytest.mark.parametrize(
    ("argv", "code"),
    [
        (["--model", "qwen2.5-14b", "--quant", "Q4_K_M", "--with", "whisper-large-v3", "--with", "bge-m3"], 0),
        (["--model", "qwen2.5-14b", "--quant", "Q8_0", "--placement", "gpu", "--with", "whisper-large-v3", "--with", "flux.1-dev"], 1),
        (["--model", "qwen2.5-14b", "--with", "no-such-model"], 2),
    ],
)
def test_check_with_companions_exit_codes(capsys, argv, code):
    got = main(["check", "--machine", str(RTX4090), *argv])
    out, err = capsys.readouterr()
    assert got == code, (out, err)
    if code != 2:
        assert out.startswith("ok   model whisper-large-v3: loaded alongside: Whisper large-v3 (fp16) on GPU: ")


CPU_ONLY = FIXTURES / "linux-desktop-ryzen-7950x"


def test_a_gpu_placement_without_a_gpu_fails_once_not_once_a_companion(capsys):
    # Each companion read "does not fit (placement 'cpu' is not accepted (only gpu))" above the one real reason.
    got = main(["check", "--machine", str(CPU_ONLY), "--model", "qwen2.5-14b", "--with", "whisper-large-v3",
                "--with", "bge-m3", "--placement", "gpu"])
    out, err = capsys.readouterr()
    assert (got, out, err) == (1, "FAIL model qwen2.5-14b, placement gpu: placement gpu needs a GPU: no GPU found\n", "")


def test_companions_without_a_model_to_judge_say_the_missing_gpu_on_one_line(capsys):
    got = main(["check", "--machine", str(CPU_ONLY), "--min-memory", "8GB", "--with", "whisper-large-v3",
                "--with", "bge-m3", "--placement", "gpu", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert (got, data["exit_code"]) == (1, 1)
    assert [(r["requirement"], r["status"], r["reason"]) for r in data["requirements"]] == [
        ("model whisper-large-v3, bge-m3, placement gpu", "not-met", "placement gpu needs a GPU: no GPU found"),
        ("memory >= 8.0 GB", "met", "usable system memory is 56.0 GB, needs 8.0 GB"),
    ]


def test_an_unknown_companion_is_still_a_usage_error_without_a_gpu(capsys):
    got = main(["check", "--machine", str(CPU_ONLY), "--model", "qwen2.5-14b", "--with", "no-such-model",
                "--placement", "gpu"])
    assert (got, capsys.readouterr().err) == (2, "gpuready: error: --with: unknown model 'no-such-model'; see `gpuready models`\n")


def test_a_companion_that_fits_but_is_too_slow_says_so_in_its_failure(capsys):
    # It failed check with "BGE-M3 (int8) on CPU: 1.2 GB, 1.7 chunks/s alone" and no word of why.
    code = main(["check", "--machine", str(FIXTURES / "linux-desktop-ryzen-7950x"), "--model", "qwen2.5-14b",
                 "--with", "bge-m3"])
    out = capsys.readouterr().out
    assert code == 1
    (line,) = [line for line in out.splitlines() if line.startswith("FAIL")]
    assert line.startswith("FAIL model bge-m3: loaded alongside: BGE-M3 (int8) on CPU: 1.2 GB, 1.7 chunks/s alone; too slow: int8: about 1.72 chunks/s")
