"""`gpuready export`: NFD labels, Prometheus gauges, Ray and Slurm options, over every recorded machine."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import types
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from export_support import FIXTURES, MACHINES, machine_report, small_report
from gpuready.frontends.cli import main
from gpuready.exports import capacity as capacity_module
from gpuready.exports import files, nfd, prometheus, ray, slurm
from gpuready.exports.arguments import NFD_DIR
from gpuready.exports.capacity import REFERENCE_MODELS, capacity, check_report
from gpuready.exports.command import run_export

# The label rules of k8s.io/apimachinery pkg/util/validation/validation.go, written out
# here on their own (not imported from gpuready) so the test checks the exporter against
# Kubernetes, not against itself.
QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")  # qualifiedNameFmt, <= 63
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")  # labelValueFmt, <= 63
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")  # <= 253
NOW = datetime(2026, 12, 3, 7, 0, 0, tzinfo=timezone.utc)


def kubernetes_accepts_label(key: str, value: str) -> bool:
    prefix, slash, name = key.rpartition("/")
    prefix_ok = not slash or (0 < len(prefix) <= 253 and DNS1123_SUBDOMAIN.match(prefix) is not None)
    return (prefix_ok and len(name) <= 63 and QUALIFIED_NAME.match(name) is not None
            and len(value) <= 63 and LABEL_VALUE.match(value) is not None)


def read_feature_file(text: str) -> tuple[list[str], dict[str, str]]:
    """Directives and key=value pairs, read the way NFD's local source reads a file."""
    directives, pairs = [], {}
    for line in text.splitlines():
        if line.startswith("#"):
            if line.startswith("# +"):
                directives.append(line[3:])
            continue
        key, _, value = line.partition("=")
        pairs[key] = value
    return directives, pairs


# --- capacity ---------------------------------------------------------------------


def test_the_exports_read_the_schema_version_that_report_writes():
    from gpuready.report import SCHEMA_VERSION

    assert capacity_module.SCHEMA_VERSION == SCHEMA_VERSION


def test_every_reference_model_is_in_the_catalogue():
    from gpuready.tasks.registry import judges, load_catalog

    catalog = load_catalog()
    # Fine-tuning's reference is an LLM of the text-generation catalogue, which that task judges.
    assert {task: judges(task, catalog.get(model_id)) for task, model_id in REFERENCE_MODELS.items()} == {
        task: True for task in REFERENCE_MODELS}


def test_capacity_of_a_small_report_takes_the_largest_usable_model_and_the_reference_speeds():
    cap = capacity(check_report(small_report(), "small"))
    assert cap.text_generation_max_params == 70.6e9  # llama-3.3-70b is slow but usable; 235B is too slow
    assert cap.text_generation_max_params_b == 70
    assert [(t.task, t.status, t.usable_models, t.assessed_models, t.reference_speed) for t in cap.tasks] == [
        ("text-generation", "ready", 3, 4, 80.34),
        ("image-generation", "limited", 1, 2, 11.02),
        ("speech", "not-possible", 0, 1, None),
        ("document-search", "unknown", 0, 0, None),
        ("fine-tuning", "not-assessed", 0, 0, None),  # a report without the task: not assessed
    ]
    assert cap.gpu_memory_bytes == 25756172288  # the uncounted GPU is left out


# --- NFD --------------------------------------------------------------------------


def test_the_nfd_labels_of_a_small_report_are_integers_where_affinity_compares():
    labels = nfd.labels(capacity(small_report()))
    assert labels == {
        "gpuready.io/version": "0.1.0",
        "gpuready.io/text-generation.status": "ready",
        "gpuready.io/text-generation.usable-models": "3",
        "gpuready.io/text-generation.best-model": "qwen3-32b",
        "gpuready.io/image-generation.status": "limited",
        "gpuready.io/image-generation.usable-models": "1",
        "gpuready.io/image-generation.best-model": "sdxl",
        "gpuready.io/speech.status": "not-possible",
        "gpuready.io/speech.usable-models": "0",
        "gpuready.io/document-search.status": "unknown",
        "gpuready.io/document-search.usable-models": "0",
        "gpuready.io/fine-tuning.status": "not-assessed",
        "gpuready.io/fine-tuning.usable-models": "0",
        "gpuready.io/text-generation.max-params-b": "70",
        "gpuready.io/text-generation.tokens-per-s": "80",
        "gpuready.io/image-generation.seconds-x10": "110",
        "gpuready.io/gpu.count": "1",
        "gpuready.io/gpu.memory-gib": "24",
        "gpuready.io/gpu.vendor": "nvidia",
        "gpuready.io/memory-gib": "64",
    }


@pytest.mark.parametrize("machine", MACHINES)
def test_every_nfd_key_and_value_on_every_recorded_machine_obeys_kubernetes_label_rules(machine):
    text = nfd.feature_file(capacity(machine_report(machine)), NOW, timedelta(hours=2))
    directives, pairs = read_feature_file(text)
    assert directives == ["expiry-time=2026-12-03T09:00:00Z"]
    assert len(text.encode()) < 64 * 1024
    assert pairs, "no labels"
    bad = {key: value for key, value in pairs.items() if not kubernetes_accepts_label(key, value)}
    assert bad == {}
    assert all(key.startswith("gpuready.io/") for key in pairs)
    for key, value in pairs.items():
        if key.rsplit(".", 1)[-1] in ("max-params-b", "tokens-per-s", "seconds-x10", "realtime-x10", "chunks-per-s",
                                      "count", "memory-gib", "usable-models") or key.endswith("/memory-gib"):
            assert value.isdigit(), (key, value)


def test_a_catalogue_id_that_is_not_a_label_value_is_left_out():
    report = small_report()
    report["tasks"][0]["best_model_id"] = "my model/v2 (local)"
    labels = nfd.labels(capacity(report))
    assert "gpuready.io/text-generation.best-model" not in labels
    assert labels["gpuready.io/text-generation.status"] == "ready"


def test_the_label_checker_refuses_what_kubernetes_refuses():
    assert nfd.is_label_key("gpuready.io/text-generation.max-params-b")
    assert not nfd.is_label_key("gpuready.io/" + "x" * 64)
    assert not nfd.is_label_key("Gpuready.IO/x")
    assert not nfd.is_label_key("-bad")
    assert nfd.is_label_value("") and nfd.is_label_value("flux.1-schnell")
    assert not nfd.is_label_value("a b") and not nfd.is_label_value("x" * 64) and not nfd.is_label_value("end.")


def test_export_nfd_writes_the_feature_file_into_the_directory(tmp_path, capsys):
    code = main(["export", "nfd", "--dir", str(tmp_path), "--machine", str(FIXTURES / "nvidia-rtx4090")])
    assert code == 0, capsys.readouterr().err
    assert [p.name for p in tmp_path.iterdir()] == ["gpuready"]
    directives, pairs = read_feature_file((tmp_path / "gpuready").read_text())
    assert directives[0].startswith("expiry-time=")
    assert pairs["gpuready.io/gpu.memory-gib"] == "24"
    assert pairs["gpuready.io/gpu.vendor"] == "nvidia"
    assert oct((tmp_path / "gpuready").stat().st_mode & 0o777) == "0o644"


def test_the_readmes_nfd_example_is_what_export_nfd_writes_for_the_rtx_4090(tmp_path, capsys):
    # the README quotes some of the 4090 desktop's labels: each quoted line is one the tool writes today
    readme = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
    block = readme[readme.index("# +expiry-time=2026"):]
    quoted = [line for line in block[:block.index("```")].splitlines()[1:] if line.startswith("gpuready.io/")]
    assert len(quoted) >= 5
    assert main(["export", "nfd", "--oneshot", "--dir", str(tmp_path), "--machine", str(FIXTURES / "nvidia-rtx4090")]) == 0
    written = (tmp_path / "gpuready").read_text().splitlines()
    assert [line for line in quoted if line not in written] == []


def test_the_write_is_a_dot_file_renamed_over_the_target(tmp_path, monkeypatch):
    target = tmp_path / "gpuready"
    target.write_text("old\n")
    seen = []
    real_replace = os.replace

    def spy(source, destination):
        source = Path(source)
        seen.append((source.parent, source.name.startswith("."), source.read_text(), Path(destination).read_text()))
        real_replace(source, destination)

    monkeypatch.setattr(os, "replace", spy)
    files.write_atomic(target, "new\n")
    assert seen == [(tmp_path, True, "new\n", "old\n")]  # complete before the rename; the old file until then
    assert [p.name for p in tmp_path.iterdir()] == ["gpuready"]
    assert target.read_text() == "new\n"


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path, monkeypatch):
    target = tmp_path / "gpuready"
    target.write_text("old\n")

    def fail(source, destination):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError):
        files.write_atomic(target, "new\n")
    assert [p.name for p in tmp_path.iterdir()] == ["gpuready"]
    assert target.read_text() == "old\n"


def _export_args(**given):
    values = {"format": "nfd", "dir": None, "oneshot": False, "interval": None, "expiry": None, "json": False}
    values.update(given)
    return types.SimpleNamespace(**values)


def test_interval_rewrites_the_file_each_time_until_sigterm(tmp_path):
    clock = [NOW]
    builds = []
    written = []

    def build():
        builds.append(1)
        report = small_report()
        report["tasks"][0]["status"] = "ready" if len(builds) < 3 else "limited"  # the machine changed
        return report

    def sleep(seconds):
        written.append((seconds, (tmp_path / "gpuready").read_text()))
        clock[0] += timedelta(seconds=seconds)
        if len(written) == 3:
            os.kill(os.getpid(), signal.SIGTERM)  # what the kubelet sends when the pod stops

    before = signal.getsignal(signal.SIGTERM)
    code = run_export(_export_args(dir=str(tmp_path), interval="1h"), build, now=lambda: clock[0], sleep=sleep)
    assert code == 0
    assert signal.getsignal(signal.SIGTERM) == before
    assert len(builds) == 3
    expiries = [read_feature_file(text)[0] for _, text in written]
    assert expiries == [["expiry-time=2026-12-03T09:00:00Z"], ["expiry-time=2026-12-03T10:00:00Z"],
                        ["expiry-time=2026-12-03T11:00:00Z"]]
    assert [seconds for seconds, _ in written] == [3600, 3600, 3600]
    statuses = [read_feature_file(text)[1]["gpuready.io/text-generation.status"] for _, text in written]
    assert statuses == ["ready", "ready", "limited"]


def test_ctrl_c_ends_the_loop_cleanly(tmp_path):
    def sleep(seconds):
        raise KeyboardInterrupt

    code = run_export(_export_args(format="prometheus", dir=str(tmp_path), interval="90s"),
                      small_report, now=lambda: NOW, sleep=sleep)
    assert code == 0
    assert (tmp_path / "gpuready.prom").read_text() == prometheus.text(capacity(small_report()))


def test_the_expiry_flag_sets_the_directive(tmp_path):
    run_export(_export_args(dir=str(tmp_path), expiry="30m", oneshot=True), small_report, now=lambda: NOW)
    assert read_feature_file((tmp_path / "gpuready").read_text())[0] == ["expiry-time=2026-12-03T07:30:00Z"]


@pytest.mark.parametrize("argv, message", [
    (["export", "nfd", "--dir", "/nonexistent/features.d"], "--dir /nonexistent/features.d: not a directory"),
    (["export", "nfd", "--dir", ".", "--interval", "soon"], "--interval: 'soon' is not a duration"),
    (["export", "prometheus", "--dir", ".", "--interval", "0s"], "--interval: '0s' is not a positive duration"),
    (["export", "ray", "--dir", "."], "export ray prints to stdout"),
    (["export", "slurm", "--json"], "--json is for export ray"),
    (["export", "prometheus", "--dir", ".", "--expiry", "1h"], "--expiry is for export nfd"),
])
def test_bad_export_flags_exit_2_with_one_line(capsys, argv, message):
    code = main([*argv, "--machine", str(FIXTURES / "linux-desktop-ryzen-7950x")])
    err = capsys.readouterr().err
    assert code == 2
    assert message in err and err.count("\n") == 1


def test_durations_read_seconds_minutes_hours_and_days():
    assert [files.parse_duration(t) for t in ("90", "90s", "30m", "1h", "2d", "1.5h")] == [90, 90, 1800, 3600, 172800, 5400]


def test_the_daemonset_mounts_the_features_d_host_path_and_loops():
    root = Path(__file__).parent.parent / "deploy" / "kubernetes"
    daemonset = yaml.safe_load((root / "gpuready-daemonset.yaml").read_text())
    assert daemonset["kind"] == "DaemonSet"
    spec = daemonset["spec"]["template"]["spec"]
    container = spec["containers"][0]
    assert container["command"] == ["gpuready", "export", "nfd", "--interval", "1h"]
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    volumes = {v["name"]: v["hostPath"]["path"] for v in spec["volumes"]}
    assert mounts["output-dir"] == volumes["output-dir"] == NFD_DIR
    assert "limits" not in container["resources"]  # a memory limit would become the node's memory


def test_the_example_pod_asks_for_a_label_the_export_writes():
    root = Path(__file__).parent.parent / "deploy" / "kubernetes"
    pod = yaml.safe_load((root / "example-pod.yaml").read_text())
    terms = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    expression = terms[0]["matchExpressions"][0]
    assert expression == {"key": "gpuready.io/text-generation.max-params-b", "operator": "Gt", "values": ["7"]}
    labels = nfd.labels(capacity(machine_report("nvidia-rtx4090")))
    assert int(labels[expression["key"]]) > 7


# --- Prometheus -------------------------------------------------------------------


def parse_prom(text: str) -> dict[str, object]:
    return {family.name: family for family in text_string_to_metric_families(text)}


def test_the_prometheus_file_of_a_small_report_parses_back_to_the_same_values():
    families = parse_prom(prometheus.text(capacity(small_report())))
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value for f in families.values() for s in f.samples}
    gpu0 = (("hw_id", "gpu0"), ("hw_model", "NVIDIA GeForce RTX 4090"), ("hw_type", "gpu"), ("hw_vendor", "nvidia"))
    gpu1 = (("hw_id", "gpu1"), ("hw_model", 'Odd "GPU" \\ name'), ("hw_type", "gpu"), ("hw_vendor", "intel"))
    expected = {
        ("gpuready_info", (("version", "0.1.0"),)): 1,
        ("gpuready_text_generation_max_parameters", ()): 70.6e9,
        ("gpuready_text_generation_tokens_per_second", (("model", "llama-3.1-8b"),)): 80.34,
        ("gpuready_image_generation_seconds", (("model", "sdxl"),)): 11.02,
        ("gpuready_memory_total_bytes", ()): 64 * 1024**3,
        ("gpuready_memory_usable_bytes", ()): 60 * 1024**3,
        ("gpuready_gpu_counted", gpu0): 1,
        ("gpuready_gpu_counted", gpu1): 0,
        ("hw_gpu_memory_limit_bytes", gpu0): 25756172288,
        ("hw_gpu_memory_usage_bytes", gpu0): 25756172288 - 24066916352,
    }
    statuses = {"text-generation": "ready", "image-generation": "limited", "speech": "not-possible", "document-search": "unknown",
                "fine-tuning": "not-assessed"}  # a report without the task: not assessed
    usable = {"text-generation": 3, "image-generation": 1, "speech": 0, "document-search": 0, "fine-tuning": 0}
    assessed = {"text-generation": 4, "image-generation": 2, "speech": 1, "document-search": 0, "fine-tuning": 0}
    for task, status in statuses.items():
        for state in capacity_module.STATUSES:
            expected[("gpuready_task_status", tuple(sorted({"task": task, "status": state}.items())))] = 1 if state == status else 0
        expected[("gpuready_task_usable_models", (("task", task),))] = usable[task]
        expected[("gpuready_task_assessed_models", (("task", task),))] = assessed[task]
    assert samples == expected


@pytest.mark.parametrize("machine", MACHINES)
def test_every_recorded_machine_gives_a_prometheus_file_that_prometheus_client_parses(machine):
    text = prometheus.text(capacity(machine_report(machine)))
    families = parse_prom(text)
    assert text.count("# HELP ") == text.count("# TYPE ") == len(families)
    for family in families.values():
        assert family.type == "gauge" and family.documentation, family.name
        for sample in family.samples:
            assert sample.timestamp is None  # node_exporter refuses client-side timestamps
            assert sample.name == family.name
    status = {(s.labels["task"], s.labels["status"]): s.value for s in families["gpuready_task_status"].samples}
    assert {task for (task, _), value in status.items() if value == 1} == {t["task"] for t in machine_report(machine)["tasks"]}
    gpus = machine_report(machine)["hardware"]["gpus"]
    limits = families.get("hw_gpu_memory_limit_bytes")
    limit_values = [s.value for s in limits.samples] if limits else []
    assert limit_values == [g["memory_total_bytes"] for g in gpus if g["memory_total_bytes"]]


def test_export_prometheus_writes_a_prom_file(tmp_path, capsys):
    code = main(["export", "prometheus", "--dir", str(tmp_path), "--machine", str(FIXTURES / "amd-780m-plus-7900xtx")])
    assert code == 0, capsys.readouterr().err
    families = parse_prom((tmp_path / "gpuready.prom").read_text())
    models = sorted(s.labels["hw_model"] for s in families["hw_gpu_memory_limit_bytes"].samples)
    assert models == ["AMD Radeon 780M Graphics", "AMD Radeon RX 7900 XTX"]


# --- Ray and Slurm ----------------------------------------------------------------


def parse_ray_labels(option: str) -> dict[str, str]:
    """`ray start --labels`: key=value pairs separated by commas (ray _private/label_utils.py)."""
    pairs = [pair.split("=") for pair in option.split(",")]
    assert all(len(pair) == 2 for pair in pairs)
    return {key.strip(): value.strip() for key, value in pairs}


def test_ray_gets_a_resource_per_task_it_can_do_and_the_nfd_labels():
    cap = capacity(small_report())
    assert ray.resources(cap) == {"gpuready:text-generation": 1, "gpuready:image-generation": 1,
                                  "gpuready:gpu-memory-gib": 24}
    assert parse_ray_labels(ray.labels_option(cap)) == nfd.labels(cap)
    assert ray.command_line(cap).startswith(
        """--resources='{"gpuready:text-generation":1,"gpuready:image-generation":1,"gpuready:gpu-memory-gib":24}' --labels=""")


@pytest.mark.parametrize("machine", MACHINES)
def test_every_recorded_machine_gives_ray_labels_kubernetes_accepts(machine):
    cap = capacity(machine_report(machine))
    labels = parse_ray_labels(ray.labels_option(cap))
    assert all(kubernetes_accepts_label(k, v) and not k.startswith("ray.io/") for k, v in labels.items())
    assert all(isinstance(v, int) and v > 0 for v in ray.resources(cap).values())


def test_export_ray_json_prints_resources_and_labels(capsys):
    code = main(["export", "ray", "--json", "--machine", str(FIXTURES / "mac-m2-air-16gb")])
    data = json.loads(capsys.readouterr().out)
    assert code == 0
    assert data["resources"]["gpuready:gpu-memory-gib"] == 16
    assert data["labels"]["gpuready.io/gpu.vendor"] == "apple"


def test_slurm_features_are_tiers_a_constraint_can_name():
    text = slurm.text(capacity(small_report()))
    assert text == (
        "# slurm.conf: add to this node's NodeName= line\n"
        "Features=gpuready-text-generation,gpuready-text-generation-ready,gpuready-image-generation,"
        "gpuready-llm-1b,gpuready-llm-3b,gpuready-llm-7b,gpuready-llm-8b,gpuready-llm-13b,gpuready-llm-14b,"
        "gpuready-llm-30b,gpuready-llm-32b,gpuready-llm-70b,"
        "gpuready-gpu-4gib,gpuready-gpu-8gib,gpuready-gpu-12gib,gpuready-gpu-16gib,gpuready-gpu-24gib Gres=gpu:1\n"
        "# slurm.conf also needs GresTypes=gpu (once, among its global options)\n"
        "# gres.conf on this node\n"
        "AutoDetect=nvml\n"
    )


@pytest.mark.parametrize("machine", MACHINES)
def test_every_slurm_feature_is_a_plain_name(machine):
    for feature in slurm.features(capacity(machine_report(machine))):
        assert re.fullmatch(r"[a-z0-9][a-z0-9-]*", feature), feature


def test_export_slurm_on_a_cpu_machine_declares_no_gres(capsys):
    code = main(["export", "slurm", "--machine", str(FIXTURES / "linux-desktop-ryzen-7950x")])
    out = capsys.readouterr().out
    assert code == 0
    assert "Gres=" not in out and "# (no GPU to declare)" in out


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed (Debian: apt-get install kubectl)")
@pytest.mark.parametrize("machine", MACHINES)
def test_kubectl_accepts_every_nfd_label_on_a_node(tmp_path, machine):
    # `kubectl label --local` applies Kubernetes' own label validation without a cluster
    # (it checks values; keys are checked by the regular expressions above).
    node = tmp_path / "node.json"
    node.write_text(json.dumps({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1"}}))
    labels = nfd.labels(capacity(machine_report(machine)))
    result = subprocess.run(["kubectl", "label", "--local", "-f", str(node), "-o", "json",
                             *(f"{key}={value}" for key, value in labels.items())],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["metadata"]["labels"] == labels


@pytest.mark.skipif(shutil.which("slurmd") is None, reason="slurmd not installed (Debian: apt-get install slurmd)")
@pytest.mark.parametrize("machine", MACHINES)
def test_slurmd_parses_the_slurm_conf_line_and_gres_conf(tmp_path, machine):
    # `slurmd -G` reads slurm.conf and gres.conf and stops with a parse error on an
    # unknown key or AutoDetect flag; a missing NVML/ROCm library is only a notice here.
    out = slurm.text(capacity(machine_report(machine))).splitlines()
    node_line = out[1] if not out[1].startswith("#") else ""
    (tmp_path / "slurm.conf").write_text(
        f"ClusterName=test\nSlurmctldHost=localhost\nSlurmdSpoolDir={tmp_path}\nGresTypes=gpu\n"
        f"NodeName=node-1 CPUs=1 {node_line}\nPartitionName=debug Nodes=node-1 Default=YES\n")
    (tmp_path / "gres.conf").write_text("\n".join(out[out.index("# gres.conf on this node") + 1:]) + "\n")
    result = subprocess.run(["slurmd", "-N", "node-1", "-G"], capture_output=True, text=True, timeout=60,
                            env={**os.environ, "SLURM_CONF": str(tmp_path / "slurm.conf")})
    text = result.stdout + result.stderr
    assert result.returncode == 0 and "error" not in text and "fatal" not in text, text


def test_gpu_memory_is_the_largest_pool_one_model_can_use(capsys):
    # an A100's 20 GB and 5 GB MIG instances are not one 24 GiB GPU: a CUDA process uses one instance
    assert capacity(machine_report("nvidia-a100-mig")).gpu_memory_bytes == 21072183296
    # identical GPUs pool, as the verdicts split layers across them
    two = small_report()
    two["hardware"]["gpus"] = [dict(two["hardware"]["gpus"][0], index=i) for i in range(2)]
    one = capacity(small_report()).gpu_memory_bytes
    assert capacity(two).gpu_memory_bytes == 2 * one


def test_an_h200_has_a_slurm_memory_tier_above_128_gib():
    # its 139.8 GiB usable topped out at gpuready-gpu-128gib: a job needing Qwen3 235B's 136 GB had nothing to ask for
    features = slurm.features(capacity(machine_report("nvidia-h200")))
    assert [f for f in features if f.startswith("gpuready-gpu-")][-2:] == ["gpuready-gpu-128gib", "gpuready-gpu-140gib"]
    assert "gpuready-llm-235b" in features


@pytest.mark.parametrize(("argv", "message"), [
    (["nfd", "--oneshot", "--expiry", "99999999999999h"], "--expiry: 99999999999999h is longer than a year (365d), the longest taken"),
    (["prometheus", "--interval", "9999999h"], "--interval: 9999999h is longer than a year (365d), the longest taken"),
    (["nfd", "--interval", "1h", "--expiry", "1s"], "--expiry 1s is not longer than --interval 1h: the labels would expire before each rewrite"),
])
def test_a_duration_no_export_can_keep_is_bad_input(tmp_path, capsys, argv, message):
    # Huge durations overflowed the clock arithmetic (an internal error, exit 3); labels that expire a second after
    # each hourly write would vanish from the node between rewrites.
    code = main(["export", *argv, "--dir", str(tmp_path), "--machine", str(FIXTURES / "nvidia-rtx4090")])
    out, err = capsys.readouterr()
    assert (code, out, err) == (2, "", f"gpuready: error: {message}\n")
    assert list(tmp_path.iterdir()) == []
