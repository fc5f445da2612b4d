"""No import cycle among the project's modules, lazy or type-only imports included: each module can be
read, tested and moved knowing what it stands on, and nothing imports its way back to itself."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = {  # package -> the folder it lives in
    "asya": ROOT / "sidecar_layer" / "asya",
    "asya_crew": ROOT / "lambdas" / "asya_crew",
    "asya_spark": ROOT / "lambdas" / "asya_spark",
    "asya_gateway": ROOT / "gateway_api" / "asya_gateway",
    "asya_spark_job": ROOT / "spark_emr" / "asya_spark_job",
    "asya_cdk": ROOT / "cdk" / "asya_cdk",
    "asya_local": ROOT / "asya_local",
}


def _modules() -> dict[str, Path]:
    found = {}
    for package, folder in PACKAGES.items():
        for file in folder.rglob("*.py"):
            parts = [package, *file.relative_to(folder).with_suffix("").parts]
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = file
    return found


def _imports(module: str, file: Path, known: dict[str, Path]) -> Iterator[str]:
    """The project's modules `module` imports, wherever the import stands (a function, TYPE_CHECKING)."""
    package = module if file.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(file.read_text())):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names if alias.name in known)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}".rstrip(".")
            for alias in node.names:
                target = f"{base}.{alias.name}"
                if target in known:
                    yield target
                elif base in known:
                    yield base


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_module_imports_its_way_back_to_itself() -> None:
    known = _modules()
    graph = {module: set(_imports(module, file, known)) - {module} for module, file in known.items()}
    assert _cycles(graph) == []


def test_a_cycle_is_found() -> None:
    """The check itself: two modules importing each other, through a third, are one cycle."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]
