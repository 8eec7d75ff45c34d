"""The arrows point inward: no import cycle, no import from an inner room to an outer one.

The graph is read statically from the source (``ast``), counting every import at the top of a
module and inside a function (where a cycle hides from the interpreter). An import under
``if TYPE_CHECKING:`` counts for the layers (a type is a dependency too) but not for cycles:
it never runs, and a module naming the type of a parameter its caller passes is not a loop.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("worker", "engine", "schemas", "bench")

# What a room may not import, by prefix of the module's dotted name: the first row whose
# importer prefix matches a module applies to it. ``allowed`` lists the project packages the
# room may import (None: any); ``forbidden`` the rooms it may never import.
OUTER = ("worker.service", "worker.entrypoints", "worker.ops")
LAYERS: tuple[tuple[str, tuple[str, ...] | None, tuple[str, ...]], ...] = (
    # importer          allowed project packages    forbidden rooms
    ("engine", ("engine",), ()),
    ("schemas", ("schemas", "engine"), ()),
    # The store is the innermost adapter: the queue's dead letters are archived in it.
    ("worker.store", None, (*OUTER, "worker.bootstrap", "worker.queue")),
    ("worker.boards", None, (*OUTER, "worker.bootstrap")),
    ("worker.queue", None, (*OUTER, "worker.bootstrap")),
    ("worker.service", None, ("worker.entrypoints", "worker.ops", "worker.bootstrap")),
)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def project_modules() -> dict[str, Path]:
    modules = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            modules[module_name(path)] = path
    return modules


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _statements(tree: ast.AST, typing_too: bool) -> Iterator[ast.AST]:
    """Every node of ``tree``; with ``typing_too`` false, none under ``if TYPE_CHECKING:``."""
    for child in ast.iter_child_nodes(tree):
        if not typing_too and isinstance(child, ast.If) and _type_checking(child):
            yield from (n for s in child.orelse for n in _statements_of(s, typing_too))
            continue
        yield child
        yield from _statements(child, typing_too)


def _statements_of(node: ast.AST, typing_too: bool) -> Iterator[ast.AST]:
    yield node
    yield from _statements(node, typing_too)


def imported_names(
    path: Path, name: str, modules: dict[str, Path], typing_too: bool = True
) -> Iterator[str]:
    """Every dotted name the module imports, relative imports resolved: ``from a import b`` is
    ``a.b`` when that is a module, else ``a``."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in _statements(ast.parse(path.read_text(encoding="utf-8")), typing_too):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                stem = ".".join(base + ([node.module] if node.module else []))
            else:
                stem = node.module or ""
            for alias in node.names:
                dotted = f"{stem}.{alias.name}"
                yield dotted if dotted in modules else stem


@functools.cache
def import_graph(typing_too: bool = True) -> dict[str, set[str]]:
    """Module -> the project modules it imports (the most specific module each name names);
    without ``typing_too``, only the imports that run."""
    modules = project_modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        targets = set()
        for imported in imported_names(path, name, modules, typing_too):
            while imported and imported not in modules:
                imported = imported.rpartition(".")[0]
            if imported and imported != name:
                targets.add(imported)
        graph[name] = targets
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
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
    return sorted(found)


def within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    wrong = []
    for importer, targets in sorted(graph.items()):
        rule = next((row for row in LAYERS if within(importer, row[0])), None)
        if rule is None:
            continue
        _, allowed, forbidden = rule
        for target in sorted(targets):
            if allowed is not None and not any(within(target, a) for a in allowed):
                wrong.append(f"{importer} -> {target}")
            elif any(within(target, f) for f in forbidden):
                wrong.append(f"{importer} -> {target}")
    return wrong


def test_the_import_graph_reads_the_imports_inside_functions() -> None:
    """The walk sees every room and the imports a function makes, not only the top ones."""
    graph = import_graph()
    assert {"worker.settings", "engine.player", "schemas.events", "bench.run"} <= set(graph)
    inside = [m for m, targets in graph.items() if "worker.entrypoints.cli.main" in targets]
    assert "worker.entrypoints.cli.launch" in inside  # imported inside ``launch.main``
    assert "worker.observability.logs" in graph["worker.entrypoints.cli.main"]  # inside too


def test_an_import_for_type_checking_only_is_no_runtime_arrow() -> None:
    """``engine.fibs`` names ``engine.rulesets`` only under ``TYPE_CHECKING``: a layer arrow,
    not a cycle (``engine.rulesets`` imports ``engine.fibs`` to call it)."""
    assert "engine.rulesets" in import_graph()["engine.fibs"]
    assert "engine.rulesets" not in import_graph(typing_too=False)["engine.fibs"]


def test_the_cycle_finder_finds_a_cycle_hidden_in_a_function() -> None:
    """A toy graph: a -> b -> c -> a is one cycle; d -> a is not part of it."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert [["a", "b", "c"]] == cycles(graph)


def test_no_module_of_worker_engine_schemas_or_bench_is_part_of_an_import_cycle() -> None:
    """No cycle between modules, counting the imports made inside functions."""
    assert [] == cycles(import_graph(typing_too=False))


def test_every_import_points_inward() -> None:
    """engine/ imports only itself; schemas/ only itself and engine/; the adapters (store/,
    boards/, queue/) never the service layer, the entry points or ops; the service layer never
    the entry points or ops."""
    assert [] == upward_imports(import_graph())


def test_an_adapter_importing_the_service_layer_is_an_upward_import() -> None:
    """The layer table applies: a toy adapter importing the service layer is refused."""
    graph = {"worker.store.x": {"worker.service.y", "engine.z"}, "engine.z": set()}
    assert ["worker.store.x -> worker.service.y"] == upward_imports(graph)


def test_the_contracts_game_servers_vendor_import_nothing_of_the_project_but_schemas() -> None:
    """schemas/__init__: the contracts import only the standard library and pydantic; only the
    two mappings to and from the engine import ``engine``."""
    graph = import_graph()
    mappings = {"schemas.receipt_bodies", "schemas.records"}
    reaching = sorted(
        module
        for module, targets in graph.items()
        if module.startswith("schemas") and module not in mappings
        for target in targets
        if not target.startswith("schemas")
    )
    assert [] == reaching
