"""The import graph of ``crowdlearn`` has no cycle.

The graph is read from the source with ``ast`` (nothing is imported): an edge ``a -> b``
for every ``import crowdlearn.b`` / ``from crowdlearn.b import ...`` / relative import in
module ``a`` (``from crowdlearn.b import c`` also counts ``crowdlearn.b.c`` when that is a
module). Module-level imports (including those under a top-level ``if`` or ``try``) must
form no cycle at all; with the imports inside functions added, the only cycles allowed
are listed in ``KNOWN_FUNCTION_LEVEL`` (empty).

The package is also layered (``LAYERS``, read off the code): a module imports modules of
its own layer or of lower ones, module-level and function-level imports alike, except the
one import listed in ``KNOWN_UPWARD`` with its reason.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "crowdlearn"

# cycles through imports inside functions that are accepted (none today)
KNOWN_FUNCTION_LEVEL: list[set] = []

# The layers, lowest first: a module (or package, with everything under it) belongs to
# the layer of the longest name listed that it is or lies under; "crowdlearn" is the
# package's own __init__, which loads every public name.
LAYERS: list[tuple[str, ...]] = [
    # 0: foundations, no model in sight
    ("exceptions", "_validation", "_limits", "_blas", "_progress", "_lazy", "_solvers",
     "solvers"),
    # 1: the data type, the encoding of identifiers, the EM engine, the estimator base,
    #    results by id
    ("_ids", "labels", "em", "_base", "frames"),
    # 2: the models, and the bundled crowds
    ("aggregation", "features", "datasets"),
    # 3: what works on fitted models: metrics (a module or a package), model selection,
    #    the chapters' experiments and simulated studies (izbicki_stern runs selection's
    #    S-hat), where to spend the next label, the cluster backend
    ("metrics", "selection", "experiments", "simulate", "active", "distributed"),
    # 4: what a person meets: the widgets, the command line, SymPy derivations, the package
    ("widgets", "cli", "__main__", "symbolic", "crowdlearn"),
]

# the imports that run from a lower layer up (importer, imported): at most one, with why
KNOWN_UPWARD = {
    ("crowdlearn.aggregation.dawid_skene", "crowdlearn.distributed.dask_backend"):
        "DawidSkene.fit hands a dask DataFrame to the cluster backend (inside fit, only "
        "when one is given); the backend runs the models' own kernel "
        "(aggregation._ds_kernel), so it cannot sit below them",
}


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


def layer_of(module: str) -> int:
    """The layer of a module (``crowdlearn.x.y``): that of the longest listed name it is or
    lies under, so ``crowdlearn.metrics`` and ``crowdlearn.metrics.agreement`` share one."""
    name = module[len("crowdlearn."):] if module.startswith("crowdlearn.") else ""
    best = None
    for level, names in enumerate(LAYERS):
        for listed in names:
            key = "" if listed == "crowdlearn" else listed
            if name == key or (key and name.startswith(key + ".")) or (not key and not name):
                if best is None or len(key) > len(best[1]):
                    best = (level, key)
    if best is None:
        raise KeyError(f"{module} is in no layer: add it to LAYERS")
    return best[0]


def upward_imports(graph: dict) -> set:
    """The edges ``(a, b)`` of ``graph`` from a module to one of a higher layer."""
    return {(a, b) for a, targets in graph.items() for b in targets
            if layer_of(a) < layer_of(b)}


def test_every_module_has_a_layer():
    for module in import_graph(module_level_only=True):
        layer_of(module)  # raises KeyError for a module no layer names


def test_layers_are_read_by_the_longest_name():
    assert layer_of("crowdlearn") == 4 and layer_of("crowdlearn.cli") == 4
    assert layer_of("crowdlearn.metrics") == layer_of("crowdlearn.metrics.agreement") == 3
    assert layer_of("crowdlearn.aggregation._common") == 2
    assert layer_of("crowdlearn._solvers.logistic") == 0 and layer_of("crowdlearn.labels") == 1
    assert upward_imports({"crowdlearn.labels": {"crowdlearn.metrics.x"},
                           "crowdlearn.metrics": {"crowdlearn.labels"}}) == {
        ("crowdlearn.labels", "crowdlearn.metrics.x")}


def test_at_most_one_import_runs_from_a_lower_layer_up():
    found = upward_imports(import_graph(module_level_only=False))
    assert found <= set(KNOWN_UPWARD), sorted(found - set(KNOWN_UPWARD))
    assert len(KNOWN_UPWARD) <= 1


def test_aggregation_never_imports_features():
    graph = import_graph(module_level_only=False)
    assert not [(a, b) for a, targets in graph.items() for b in targets
                if a.startswith("crowdlearn.aggregation") and b.startswith("crowdlearn.features")]
