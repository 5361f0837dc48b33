"""The shape of grader/: imports go one way, from the HTTP edge down to configuration, never back, and
no module of grader/ or of the sandbox's runner imports itself through others (imports inside functions and
those for type checking only included). A newcomer can trust the layers in docs/architecture.md."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

GRADER = Path(__file__).resolve().parents[2] / "grader"
RUNNER = GRADER.parent / "sandbox" / "runner"

# Lowest first. A module may import its own package and any package of a lower layer, nothing else.
LAYERS = [
    {"origins"},  # names of the service
    {"config_groups"},  # the settings, each declared once in its group
    {"config_grading"},  # grading's groups of them
    {"config", "logs", "phases", "background", "vocabulary"},
    {"containers"},
    {"grading"},
    {"storage"},
    {"metrics"},
    {"queue"},
    {"problems"},
    {"submissions"},
    {"components"},
    {"worker"},
    {"api"},
    {"web"},
    {"app"},
    {"client"},  # the HTTP client of `grader submit`: it imports nothing of the service
    {"client_batch"},  # `grader submit --batch`, over the client
    {"cli"},
]
LAYER_OF = {package: index for index, packages in enumerate(LAYERS) for package in packages}


def _modules() -> dict[str, Path]:
    found = {}
    for path in GRADER.rglob("*.py"):
        parts = path.relative_to(GRADER.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def _imports(path: Path, typing: bool = False) -> set[str]:
    """Every grader module this file imports, at any depth, except under `if TYPE_CHECKING:` (unless `typing`)."""
    tree = ast.parse(path.read_text())
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if not typing and isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(child) for child in ast.walk(node))
    names = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("grader"):
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names if alias.name.startswith("grader"))
    return names


def _runner_imports(path: Path) -> set[str]:
    """The runner's modules this file imports (relatively, as `runner.`, or as `sandbox.runner.`), at any depth."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level == 1 or module.startswith(("runner", "sandbox.runner")):
                base = module.removeprefix("sandbox.").removeprefix("runner").lstrip(".")
                names.update(filter(None, [base, *(f"{base}.{a.name}".lstrip(".") for a in node.names)]))
        elif isinstance(node, ast.Import):
            names.update(a.name.split(".")[-1] for a in node.names if a.name.startswith(("runner.", "sandbox.runner.")))
    return names


MODULES = _modules()
GRAPH = {name: {i for i in _imports(path) if i in MODULES and i != name} for name, path in MODULES.items()}
RUNNER_MODULES = {path.stem: path for path in RUNNER.glob("*.py") if path.stem != "__init__"}
# Every import, those for type checking and those inside functions included: the graph a circle is looked for in.
WHOLE = {name: {i for i in _imports(path, typing=True) if i in MODULES and i != name} for name, path in MODULES.items()}
WHOLE.update(
    {
        f"runner.{name}": {f"runner.{i}" for i in _runner_imports(path) if i in RUNNER_MODULES and i != name}
        for name, path in RUNNER_MODULES.items()
    }
)


def _package(module: str) -> str:
    return module.split(".")[1] if module.count(".") >= 1 else ""


def test_every_package_has_a_layer() -> None:
    packages = {_package(name) for name in MODULES if name != "grader"}
    assert packages <= set(LAYER_OF), f"packages without a layer: {sorted(packages - set(LAYER_OF))}"


@pytest.mark.parametrize("module", sorted(name for name in MODULES if name != "grader"))
def test_imports_go_down_the_layers(module: str) -> None:
    own = _package(module)
    for imported in GRAPH[module]:
        target = _package(imported)
        if not target or target == own:
            continue
        assert LAYER_OF[target] < LAYER_OF[own], (
            f"{module} (layer {LAYER_OF[own]}) imports {imported} (layer {LAYER_OF[target]})"
        )


def test_the_whole_graph_is_read() -> None:
    """The graph the next test searches holds the imports it must: one inside a function, one for type checking
    only, the runner's relative ones."""
    assert "grader.grading.verdict" in WHOLE["grader.problems.check.speed"]  # at the top
    assert "grader.problems.registry" in WHOLE["grader.problems.check.speed"]  # under TYPE_CHECKING
    assert "grader.problems.registry" not in GRAPH["grader.problems.check.speed"]
    assert {"runner.execute", "runner.execute_bench", "runner.shared"} <= WHOLE["runner.child_main"]
    assert "runner.child_main" in WHOLE["runner.main"]  # from runner import (...), child_main


def test_no_module_imports_itself_through_others() -> None:
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for imported in sorted(WHOLE[module]):
            if imported.startswith(module + "."):
                continue  # a package importing its own modules in __init__
            if state.get(imported) == 1:
                cycles.append(path[path.index(imported) :] + [imported] if imported in path else [module, imported])
            elif imported not in state:
                visit(imported, [*path, imported])
        state[module] = 2

    for module in sorted(WHOLE):
        if module not in state:
            visit(module, [module])
    assert not cycles, cycles
