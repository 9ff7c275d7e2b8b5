"""Many machines' reports merged into one view: which node can run which task and model.

Reads report files (``gpuready report --json`` from each machine, gathered by ssh,
Ansible or a CI matrix) or directories of them (``*.json``). A report names no host, so
a node is named after its file (``gpu-7.json`` -> ``gpu-7``). A file that is not a
readable report of this schema_version is refused, naming the file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from gpuready.exports.capacity import TASKS, Capacity, ReportError, capacity, check_report, gib

FLEET_FORMAT = 1  # version of the `fleet --json` shape


@dataclass(frozen=True)
class Node:
    name: str
    path: str
    capacity: Capacity


def report_paths(arguments: list[str]) -> list[Path]:
    """The report files named, with each directory's *.json files in name order."""
    paths: list[Path] = []
    for argument in arguments:
        path = Path(argument)
        if path.is_dir():
            found = sorted(path.glob("*.json"))
            if not found:
                raise ReportError(f"{path}: no *.json reports in this directory")
            paths += found
        elif path.is_file():
            paths.append(path)
        else:
            raise ReportError(f"{path}: no such file or directory")
    # One file named twice (a file and its directory, or a typo) is one node, not two.
    unique: dict[Path, Path] = {}
    for path in paths:
        unique.setdefault(path.resolve(), path)
    return list(unique.values())


def load_node(path: Path) -> Node:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as error:
        raise ReportError(f"{path}: cannot read: {getattr(error, 'strerror', None) or error}") from None
    except ValueError as error:
        raise ReportError(f"{path}: not valid JSON: {error}") from None
    return Node(name=path.stem, path=str(path), capacity=capacity(check_report(data, str(path))))


def load_fleet(arguments: list[str]) -> list[Node]:
    """Every node, strongest first; two files with one name keep their paths apart."""
    nodes = [load_node(path) for path in report_paths(arguments)]
    stems = [node.name for node in nodes]
    nodes = [Node(node.path if stems.count(node.name) > 1 else node.name, node.path, node.capacity) for node in nodes]
    return sorted(nodes, key=_strength)


def _strength(node: Node) -> tuple:
    cap = node.capacity
    speed = cap.task("text-generation").reference_speed
    return (-(cap.text_generation_max_params or 0), -(cap.gpu_memory_bytes or 0), -(speed or 0), node.name)


def fleet_json(nodes: list[Node]) -> dict:
    """Nodes (strongest first) and, per model, the nodes that run it, fastest first."""
    models: dict[str, dict] = {}
    for node in nodes:
        for task, model_id, level, speed, unit in node.capacity.usable_models:
            entry = models.setdefault(model_id, {"task": task, "nodes": []})
            entry["nodes"].append({"node": node.name, "level": level, "speed": speed, "speed_unit": unit})
    for entry in models.values():
        entry["nodes"].sort(key=lambda n: (-(n["speed"] or 0), n["node"]))
    return {
        "fleet_format": FLEET_FORMAT,
        "nodes": [_node_json(node) for node in nodes],
        "models": dict(sorted(models.items())),
    }


def _node_json(node: Node) -> dict:
    cap = node.capacity
    return {
        "node": node.name,
        "report": node.path,
        "gpuready_version": cap.gpuready_version,
        "gpus": [{"vendor": g.vendor, "model": g.model, "memory_total_bytes": g.memory_total_bytes, "counted": g.counted}
                 for g in cap.gpus],
        "gpu_memory_bytes": cap.gpu_memory_bytes,
        "memory_total_bytes": cap.memory_total_bytes,
        "text_generation_max_params": cap.text_generation_max_params,
        "tasks": {
            t.task: {
                "status": t.status,
                "best_model_id": t.best_model_id,
                "usable_models": t.usable_models,
                "reference_model_id": t.reference_model_id,
                "reference_speed": t.reference_speed,
                "reference_unit": t.reference_unit,
            }
            for t in cap.tasks
        },
    }


def running(nodes: list[Node], model: str) -> list[Node]:
    """The nodes on which `model` runs at or above its task's usable floor."""
    return [node for node in nodes if any(usable[1] == model for usable in node.capacity.usable_models)]


def text(nodes: list[Node]) -> str:
    """The text table: one row per node, in the order given."""
    rows = [HEADERS, *(_row(node) for node in nodes)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(HEADERS))]
    lines = ["  ".join(cell.rjust(widths[i]) if i in _RIGHT else cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip()
             for row in rows]
    return "".join(f"  {line}\n" for line in lines)


def _row(node: Node) -> list[str]:
    cap = node.capacity
    gpus = sorted({g.model for g in cap.counted_gpus})
    tokens = cap.task("text-generation").reference_speed
    return [
        node.name,
        ", ".join(gpus) or "-",
        str(gib(cap.gpu_memory_bytes) or "-"),
        str(gib(cap.memory_total_bytes) or "-"),
        *(_STATUS_MARK.get(cap.task(task).status, "?") for task in TASKS),
        str(cap.text_generation_max_params_b) if cap.text_generation_max_params_b is not None else "-",
        f"{tokens:.0f}" if tokens is not None else "-",
    ]


HEADERS = ["NODE", "GPU", "GPU GiB", "RAM GiB", "TEXT", "IMAGE", "SPEECH", "SEARCH", "TUNE", "MAX LLM (B)", "8B tok/s"]
_RIGHT = {2, 3, 9, 10}
_STATUS_MARK = {"ready": "ready", "limited": "limited", "not-possible": "no", "unknown": "?", "not-assessed": "-"}
