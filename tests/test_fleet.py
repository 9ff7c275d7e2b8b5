"""`gpuready fleet`: reports of the recorded machines merged into one table and JSON."""

from __future__ import annotations

import json

import pytest

from export_support import MACHINES, machine_report, small_report
from gpuready.frontends.cli import main
from gpuready.exports.capacity import USABLE_LEVELS


@pytest.fixture(scope="module")
def reports_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("reports")
    for machine in MACHINES:
        (directory / f"{machine}.json").write_text(json.dumps(machine_report(machine)))
    return directory


def run(capsys, *argv):
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_fleet_merges_every_recorded_machine_strongest_first(capsys, reports_dir):
    code, out, err = run(capsys, "fleet", str(reports_dir), "--json")
    assert code == 0, err
    data = json.loads(out)
    nodes = data["nodes"]
    assert sorted(n["node"] for n in nodes) == MACHINES
    largest = [n["text_generation_max_params"] or 0 for n in nodes]
    assert largest == sorted(largest, reverse=True)
    for node in nodes:
        report = machine_report(node["node"])
        assert {task: entry["status"] for task, entry in node["tasks"].items()} == {t["task"]: t["status"] for t in report["tasks"]}


def test_fleet_lists_under_each_model_exactly_the_nodes_that_run_it(capsys, reports_dir):
    data = json.loads(run(capsys, "fleet", str(reports_dir), "--json")[1])
    expected: dict[str, set[str]] = {}
    for machine in MACHINES:
        for verdict in machine_report(machine)["verdicts"]:
            if verdict["level"] in USABLE_LEVELS:
                expected.setdefault(verdict["model_id"], set()).add(machine)
    assert {model: {n["node"] for n in entry["nodes"]} for model, entry in data["models"].items()} == expected
    llama = data["models"]["llama-3.1-8b"]
    speeds = [n["speed"] for n in llama["nodes"]]
    assert speeds == sorted(speeds, reverse=True)
    assert (llama["task"], {n["speed_unit"] for n in llama["nodes"]}) == ("text-generation", {"tokens/s"})


def test_the_fleet_table_has_a_row_per_node(capsys, reports_dir):
    code, out, _ = run(capsys, "fleet", str(reports_dir))
    lines = out.splitlines()
    assert code == 0
    assert lines[0].split()[:2] == ["NODE", "GPU"]
    assert len(lines) == 1 + len(MACHINES)
    assert {line.split()[0] for line in lines[1:]} == set(MACHINES)


def test_fleet_model_filter_keeps_the_nodes_that_run_it(capsys, reports_dir):
    code, out, _ = run(capsys, "fleet", str(reports_dir), "--model", "llama-3.3-70b", "--json")
    data = json.loads(out)
    runs = {m for m in MACHINES if any(v["model_id"] == "llama-3.3-70b" and v["level"] in USABLE_LEVELS
                                       for v in machine_report(m)["verdicts"])}
    assert code == 0
    assert {n["node"] for n in data["nodes"]} == runs and list(data["models"]) == ["llama-3.3-70b"]


def test_a_model_no_node_runs_exits_1(capsys, tmp_path):
    report = tmp_path / "pi.json"
    report.write_text(json.dumps(machine_report("linux-raspberry-pi-5")))
    code, out, err = run(capsys, "fleet", str(report), "--model", "llama-3.3-70b")
    assert (code, out, err) == (1, "", "no node runs llama-3.3-70b\n")


def test_a_model_no_node_runs_still_prints_json_with_json(capsys, tmp_path):
    # `--json` wrote nothing to stdout when no node ran the model: a program parsing it failed on empty input.
    report = tmp_path / "pi.json"
    report.write_text(json.dumps(machine_report("linux-raspberry-pi-5")))
    code, out, err = run(capsys, "fleet", str(report), "--model", "llama-3.3-70b", "--json")
    assert (code, err) == (1, "no node runs llama-3.3-70b\n")
    data = json.loads(out)
    assert (data["nodes"], data["models"]) == ([], {"llama-3.3-70b": {"task": None, "nodes": []}})


def test_one_report_named_twice_is_one_node(capsys, tmp_path):
    report = tmp_path / "node1.json"
    report.write_text(json.dumps(small_report()))
    data = json.loads(run(capsys, "fleet", str(report), str(tmp_path), str(report), "--json")[1])
    assert [n["node"] for n in data["nodes"]] == ["node1"]


def test_an_unknown_model_exits_2_naming_the_closest(capsys, reports_dir):
    # A typo read "no node runs nosuch" with exit 1, as if the fleet were too small for it.
    code, out, err = run(capsys, "fleet", str(reports_dir), "--model", "qwen3-235b-a22b-nonexistent")
    assert (code, out) == (2, "")
    assert err.startswith("gpuready: error: --model: unknown model 'qwen3-235b-a22b-nonexistent': no report judged it; did you mean qwen3-235b-a22b")
    assert run(capsys, "fleet", str(reports_dir), "--model", "nosuch")[::2] == (
        2, "gpuready: error: --model: unknown model 'nosuch': no report judged it; see `gpuready models`\n")


def test_two_reports_with_one_name_keep_their_paths(capsys, tmp_path):
    for rack in ("rack-a", "rack-b"):
        (tmp_path / rack).mkdir()
        (tmp_path / rack / "node1.json").write_text(json.dumps(small_report()))
    data = json.loads(run(capsys, "fleet", str(tmp_path / "rack-a"), str(tmp_path / "rack-b" / "node1.json"), "--json")[1])
    assert sorted(n["node"] for n in data["nodes"]) == [str(tmp_path / "rack-a" / "node1.json"), str(tmp_path / "rack-b" / "node1.json")]


@pytest.mark.parametrize("content, message", [
    ("{not json", "not valid JSON"),
    ("[1, 2]", "not a gpuready report (no schema_version"),
    (json.dumps({**small_report(), "schema_version": 2}), "report schema_version 2, but this gpuready reads version 1"),
    (json.dumps({**small_report(), "schema_version": "1"}), "report schema_version is the string '1'; a report states it as the number 1"),
    (json.dumps({**small_report(), "verdicts": {}}), "malformed report: 'verdicts' missing or not a list"),
    (json.dumps({**small_report(), "tasks": [{"task": "speech", "status": "great"}]}), "tasks[0] has no task or no known status"),
    (json.dumps({**small_report(), "tasks": [{"status": "ready"}]}), "tasks[0] has no task or no known status"),
    (json.dumps({**small_report(), "hardware": {"gpus": []}}), "hardware.gpus or hardware.memory missing"),
])
def test_a_malformed_or_foreign_report_exits_2_naming_the_file(capsys, tmp_path, content, message):
    good = tmp_path / "good.json"
    good.write_text(json.dumps(small_report()))
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    code, out, err = run(capsys, "fleet", str(good), str(bad))
    assert code == 2 and out == ""
    assert err.startswith(f"gpuready: error: {bad}: ") and message in err and err.count("\n") == 1


@pytest.mark.parametrize("make, message", [
    (lambda p: p / "missing.json", "no such file or directory"),
    (lambda p: p, "no *.json reports in this directory"),
])
def test_a_missing_file_or_an_empty_directory_exits_2(capsys, tmp_path, make, message):
    code, _, err = run(capsys, "fleet", str(make(tmp_path)))
    assert code == 2 and message in err


def test_the_readmes_fleet_example_is_what_fleet_prints_for_those_four_reports(capsys, reports_dir):
    from pathlib import Path

    readme = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
    start = readme.index("$ gpuready fleet ")
    block = readme[start:readme.index("```", start)].splitlines()
    files = block[0].split()[3:]
    code, out, err = run(capsys, "fleet", *(str(reports_dir / name) for name in files))
    assert code == 0, err
    assert out.splitlines() == block[1:]
