"""The import graph of ``crowdlearn`` has no cycle.

The graph is read from the source with ``ast`` (nothing is imported): an edge ``a -> b``
for every ``import crowdlearn.b`` / ``from crowdlearn.b import ...`` / relative import in
module ``a`` (``from crowdlearn.b import c`` also counts ``crowdlearn.b.c`` when that is a
module). Module-level imports (including those under a top-level ``if`` or ``try``) must
form no cycle at all; with the imports inside functions added, the only cycles allowed
are listed in ``KNOWN_FUNCTION_LEVEL`` (empty).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "crowdlearn"

# cycles through imports inside functions that are accepted (none today)
KNOWN_FUNCTION_LEVEL: list[set] = []


def _modules() -> dict:
    mods = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        mods[".".join(parts)] = path
    return mods


def _imported(node, package: str, mods: dict) -> set:
    if isinstance(node, ast.Import):
        return {a.name for a in node.names}
    if not isinstance(node, ast.ImportFrom):
        return set()
    if node.level:
        base = package.split(".")[:len(package.split(".")) - (node.level - 1)]
        module = ".".join(base + ([node.module] if node.module else []))
    else:
        module = node.module or ""
    return {module} | {f"{module}.{a.name}" for a in node.names
                       if f"{module}.{a.name}" in mods}


def import_graph(module_level_only: bool) -> dict:
    """``{module: set of crowdlearn modules it imports}``."""
    mods = _modules()
    graph = {}
    for name, path in mods.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        if module_level_only:  # top-level statements, looking into if/try blocks only
            stack, nodes = list(tree.body), []
            while stack:
                node = stack.pop()
                nodes.append(node)
                if isinstance(node, (ast.If, ast.Try)):
                    stack.extend(ast.iter_child_nodes(node))
                elif isinstance(node, ast.ExceptHandler):
                    stack.extend(node.body)
        else:
            nodes = list(ast.walk(tree))
        targets = set()
        for node in nodes:
            targets |= _imported(node, package, mods)
        graph[name] = {t for t in targets if t in mods and t != name}
    return graph


def cycles(graph: dict) -> list:
    """The strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(component)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_graph_is_read():
    graph = import_graph(module_level_only=True)
    assert "crowdlearn.labels" in graph["crowdlearn.frames"]
    assert "crowdlearn.aggregation._ds_kernel" in graph["crowdlearn.aggregation.dawid_skene"]
    assert "crowdlearn.aggregation._ds_kernel" in graph["crowdlearn.distributed.dask_backend"]


def test_no_cycle_among_module_level_imports():
    assert cycles(import_graph(module_level_only=True)) == []


def test_no_cycle_with_function_level_imports():
    found = [c for c in cycles(import_graph(module_level_only=False))
             if c not in KNOWN_FUNCTION_LEVEL]
    assert found == []


def test_cycles_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [{"a", "b", "c"}]
