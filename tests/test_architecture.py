"""The house rules of the package, read from its source (docs/architecture.md).

* Layers, from the ground up: the base modules, tasks, the Potts model, the theory (symbolic,
  sides, solvers, ``rm.solve``, studies), learners, real protein families, the attractor network,
  and the applications on top (plotting, sweeps, results, validation, the command line, the
  package's face). A module
  imports only from its own layer or lower ones: never upwards, not even inside a function.
  Imports under ``if TYPE_CHECKING:`` (type hints only, never run) are not counted.
* No import circles between modules, lazy imports included.
* No private name (``_name``) is imported or read (``module._name``) across a folder line.
* No module over 500 lines; every file name in the package is unique.
"""

from __future__ import annotations

import ast
from collections import Counter, defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "replica_mlm"

#: layers from the ground up: (name, the folders or modules that form it). Every folder of the
#: package is named here (a test holds it: a new folder must be placed), and a module belongs to the
#: layer of its longest matching name
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("base", ("replica_mlm._version", "replica_mlm._base")),
    ("tasks", ("replica_mlm.tasks",)),
    ("potts", ("replica_mlm.potts",)),
    ("theory.symbolic", ("replica_mlm.theory.symbolic",)),
    ("theory.sides", ("replica_mlm.theory.sides", "replica_mlm.theory.sides.channels")),
    ("theory.solvers", ("replica_mlm.theory.solvers",)),
    ("theory.solve", ("replica_mlm.theory", "replica_mlm.theory.routes", "replica_mlm.theory.solve")),
    ("theory.studies", ("replica_mlm.theory.studies",)),
    ("learners", ("replica_mlm.learners",)),
    ("proteins", ("replica_mlm.proteins",)),
    ("attractor", ("replica_mlm.attractor",)),
    ("apps", ("replica_mlm", "replica_mlm.figures", "replica_mlm.plotting", "replica_mlm.results",
              "replica_mlm.styles", "replica_mlm.validation", "replica_mlm.cli")),
]
#: the modules allowed at the top of the package, beside its folders
TOP_MODULES = {"replica_mlm", "replica_mlm._version", "replica_mlm.plotting", "replica_mlm.results"}
MAX_LINES = 500


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


MODULES = _modules()


def layer(module: str) -> int:
    found = None
    for rank, (_, prefixes) in enumerate(LAYERS):
        if any(module == p or (module.startswith(p + ".") and p not in TOP_MODULES) for p in prefixes):
            if found is None or _longest(module, prefixes) >= _longest(module, LAYERS[found][1]):
                found = rank
    assert found is not None, module
    return found


def _longest(module: str, prefixes) -> int:
    return max((len(p) for p in prefixes
                if module == p or (module.startswith(p + ".") and p not in TOP_MODULES)), default=-1)


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _resolve(name: str) -> str | None:
    """The package module that ``name`` (a module, or a module's attribute) lives in."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def imports(module: str) -> list[tuple[str, list[str], int]]:
    """(imported module, names taken, line) for every import of the package in ``module``."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    found = []

    def visit(node):
        if isinstance(node, ast.If) and _type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("replica_mlm"):
                    found.append((_resolve(alias.name), [], node.lineno))
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0 \
                and node.module.startswith("replica_mlm"):
            for alias in node.names:
                target = _resolve(f"{node.module}.{alias.name}")
                taken = [] if target == f"{node.module}.{alias.name}" else [alias.name]
                found.append((target, taken, node.lineno))
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return [(t, names, line) for t, names, line in found if t is not None and t != module]


GRAPH = {m: imports(m) for m in MODULES}


def test_every_folder_and_top_module_is_placed_by_name():
    """No catch-all: every folder of the package is named in LAYERS, and at most 4 modules sit at
    the top beside the folders (the face, the version, plotting and the results' reader)."""
    named = {p for _, prefixes in LAYERS for p in prefixes}
    folders = {m for m, path in MODULES.items() if path.name == "__init__.py" and m != "replica_mlm"}
    assert not sorted(folders - named), sorted(folders - named)
    top = {m for m, path in MODULES.items() if path.parent == PACKAGE and path.name != "__init__.py"}
    top.add("replica_mlm")
    assert top == TOP_MODULES, sorted(top ^ TOP_MODULES)
    assert len(TOP_MODULES) <= 4


def test_no_import_runs_up_a_layer():
    upward = [f"{m}:{line} ({LAYERS[layer(m)][0]}) imports {t} ({LAYERS[layer(t)][0]})"
              for m, edges in GRAPH.items() for t, _, line in edges if layer(t) > layer(m)]
    assert not upward, "\n".join(upward)


def _circles() -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def connect(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w, _, _ in GRAPH[v]:
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in GRAPH:
        if v not in index:
            connect(v)
    return out


def test_no_import_circles():
    assert not _circles(), _circles()


def _package_of(module: str) -> str:
    path = MODULES[module]
    return ".".join(path.relative_to(PACKAGE.parent).parent.parts)


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_attributes(module: str) -> list[tuple[str, str, int]]:
    """(module, name, line) for every ``alias._name`` where ``alias`` is a package module imported
    by ``module`` (``from replica_mlm.x import y`` or ``import replica_mlm.x.y as y``)."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    bound = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            bound.update({a.asname or a.name: f"{node.module}.{a.name}" for a in node.names
                          if f"{node.module}.{a.name}" in MODULES})
        elif isinstance(node, ast.Import):
            bound.update({a.asname: a.name for a in node.names if a.asname and a.name in MODULES})
    return [(bound[node.value.id], node.attr, node.lineno) for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
            and node.value.id in bound and _private(node.attr)]


ATTRIBUTES = {m: private_attributes(m) for m in MODULES}


def test_no_private_name_crosses_a_package_line():
    crossing = [f"{m}:{line} takes {name} from {t}" for m, edges in GRAPH.items()
                for t, names, line in edges for name in names
                if _private(name) and _package_of(t) != _package_of(m)]
    crossing += [f"{m}:{line} reads {t}.{name}" for m, uses in ATTRIBUTES.items()
                 for t, name, line in uses if _package_of(t) != _package_of(m)]
    assert not crossing, "\n".join(crossing)


def test_modules_are_short_and_file_names_unique():
    long = {m: n for m, p in MODULES.items()
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert not long, long
    names = Counter(p.name for p in MODULES.values() if p.name != "__init__.py")
    assert not [n for n, k in names.items() if k > 1], names.most_common(5)


def test_the_rules_can_fail(tmp_path):
    """The checks above see what they must: an upward import, a circle and a private name."""
    global GRAPH, ATTRIBUTES
    saved, saved_attributes = GRAPH, ATTRIBUTES
    try:
        ATTRIBUTES = defaultdict(list, {m: list(e) for m, e in saved_attributes.items()})
        ATTRIBUTES["replica_mlm.cli"].append(("replica_mlm._base.io", "_named", 3))
        GRAPH = defaultdict(list, {m: list(e) for m, e in saved.items()})
        GRAPH["replica_mlm.tasks.spectrum"].append(("replica_mlm.cli", [], 1))
        GRAPH["replica_mlm._base.io"].append(("replica_mlm._base.stats", ["_private"], 1))
        GRAPH["replica_mlm._base.stats"].append(("replica_mlm._base.io", [], 1))
        GRAPH["replica_mlm.tasks.spectrum"].append(("replica_mlm._base.stats", ["_hidden"], 2))
        for check in (test_no_import_runs_up_a_layer, test_no_import_circles,
                      test_no_private_name_crosses_a_package_line):
            try:
                check()
            except AssertionError:
                continue
            raise AssertionError(f"{check.__name__} passed on a graph that breaks it")
        GRAPH = defaultdict(list, {m: list(e) for m, e in saved.items()})  # the attribute alone
        try:
            test_no_private_name_crosses_a_package_line()
        except AssertionError as exc:
            assert "reads replica_mlm._base.io._named" in str(exc)
        else:
            raise AssertionError("a private attribute read across a folder line was not seen")
    finally:
        GRAPH, ATTRIBUTES = saved, saved_attributes


def test_every_module_is_on_the_architecture_page():
    """docs/architecture.md names every module and folder of the package (by its file or folder
    name), so that the page cannot fall behind the tree."""
    import re

    page = (PACKAGE.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", page))
    missing = sorted(m for m, path in MODULES.items() if m != "replica_mlm"
                     and (path.parent.name if path.name == "__init__.py" else path.stem) not in words)
    assert not missing, f"add to docs/architecture.md: {missing}"


def test_every_route_is_in_the_architecture_page_s_route_table():
    """The route table of docs/architecture.md has one row for each route the planner knows
    (``routes.ROUTES``) and none it does not, so that the table cannot fall behind the planner."""
    import re

    from replica_mlm.theory import routes

    page = (PACKAGE.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    table = page.split("| route | solves |", 1)[1].split("\n\n", 1)[0]
    rows = re.findall(r"^\| `([a-z-]+)` \|", table, flags=re.MULTILINE)
    assert sorted(rows) == sorted(routes.ROUTES), f"table {sorted(rows)}, routes {sorted(routes.ROUTES)}"
