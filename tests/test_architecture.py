"""The package imports downward only, and has no import circles (docs/architecture.md)."""

from __future__ import annotations

import ast
from pathlib import Path

import gpuready

PACKAGE = Path(gpuready.__file__).resolve().parent

# Lowest first. A module may import its own layer and the layers below, never above.
LAYERS = (
    ("base", ("gpuready", "gpuready.hardware", "gpuready.host", "gpuready.recording",
              "gpuready.tomlcompat", "gpuready.errors", "gpuready.units", "gpuready.testing", "gpuready.readouts")),
    ("catalog", ("gpuready.catalog",)),
    ("probes", ("gpuready.probes",)),
    ("whatif", ("gpuready.whatif",)),
    ("tasks", ("gpuready.tasks",)),
    ("modelfiles", ("gpuready.modelfiles",)),
    ("report", ("gpuready.report",)),
    ("app", ("gpuready.app", "gpuready.api")),
    ("frontends", ("gpuready.frontends", "gpuready.exports", "gpuready.__main__")),
)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(path): path for path in PACKAGE.rglob("*.py")}


def layer_of(module: str) -> int:
    best = None
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and (best is None or len(prefix) > best[1]):
                best = (index, len(prefix))
    assert best is not None, f"{module} belongs to no layer: add it to LAYERS and docs/architecture.md"
    return best[0]


def imports_of(module: str) -> set[str]:
    """Every gpuready module this one imports, at the top or inside a function."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            # "from gpuready.tasks import text" imports the submodule gpuready.tasks.text.
            names = [f"{node.module}.{alias.name}" if f"{node.module}.{alias.name}" in MODULES else node.module
                     for alias in node.names]
        else:
            continue
        found.update(name for name in names if name in MODULES and name != module)
    return found


GRAPH = {module: imports_of(module) for module in MODULES}


def test_every_module_belongs_to_a_layer():
    assert all(layer_of(module) is not None for module in MODULES)


def test_no_module_imports_a_layer_above_its_own():
    upward = sorted(
        f"{module} ({LAYERS[layer_of(module)][0]}) imports {target} ({LAYERS[layer_of(target)][0]})"
        for module, targets in GRAPH.items()
        for target in targets
        if layer_of(target) > layer_of(module)
    )
    assert upward == []


def test_there_is_no_import_circle():
    circles = []
    state: dict[str, str] = {}

    def visit(module: str, path: list[str]) -> None:
        state[module] = "open"
        for target in sorted(GRAPH[module]):
            if state.get(target) == "open":
                circles.append(" -> ".join(path[path.index(target):] + [target]))
            elif target not in state:
                visit(target, path + [target])
        state[module] = "done"

    for module in sorted(GRAPH):
        if module not in state:
            visit(module, [module])
    assert circles == []


def test_the_import_graph_is_read_from_real_imports():
    # The check above must see imports at all: the CLI imports the app layer, the judge the verdict.
    assert "gpuready.app" in GRAPH["gpuready.frontends.cli"]
    assert "gpuready.tasks.verdict" in GRAPH["gpuready.tasks.judge"]
    assert "gpuready.tasks.text" in GRAPH["gpuready.tasks.registry"]
