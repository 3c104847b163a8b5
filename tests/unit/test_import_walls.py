"""The package's architecture, read from its source: which package may import which, and no import cycles.

Every module under searchsvc/ is parsed with `ast` (nothing is imported): every `import` and `from … import`
statement, at module level or inside a function or class, relative imports resolved against the module's
package. `from package import name` counts as importing the submodule `package.name` when there is one,
else `package`. An `import a.b.c` is an edge to `a.b.c` only, not to the packages `a` and `a.b` it also runs.

The walls (`WALLS`) hold for every import, `if TYPE_CHECKING:` blocks included: a type-only import is still
a dependency of the source. The cycle check leaves those blocks out (they never run), and counts an import
inside a function as an edge (a package `__init__` importing its own submodule lazily is still a cycle).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from tests.helpers.paths import REPO

PACKAGE = REPO / "searchsvc"

# (the importing package, what it must not import, why); a name covers its submodules.
WALLS: list[tuple[str, tuple[str, ...], str]] = [
    (
        "searchsvc.core",
        (
            "searchsvc.web",
            "searchsvc.backends",
            "searchsvc.ingest",
            "searchsvc.operations",
            "searchsvc.cli",
            "flask",
            "werkzeug",
            "marshmallow",
            "whoosh",
            "opensearchpy",
        ),
        "the core knows no web framework, backend, engine, source reader or command line",
    ),
    (
        "searchsvc.backends.whoosh",
        ("searchsvc.backends.opensearch", "opensearchpy", "searchsvc.web", "flask"),
        "the Whoosh backend knows neither the other backend nor the web layer",
    ),
    (
        "searchsvc.backends.opensearch",
        ("searchsvc.backends.whoosh", "whoosh", "searchsvc.web", "flask"),
        "the OpenSearch backend knows neither the other backend nor the web layer",
    ),
    ("searchsvc.web", ("whoosh", "opensearchpy"), "the web layer reaches the engines only through a backend"),
    ("searchsvc.cli", ("whoosh", "opensearchpy"), "the command line reaches the engines only through a backend"),
    (
        "searchsvc.semantic",
        ("searchsvc.web", "searchsvc.backends"),
        "ranking by meaning knows neither the web layer nor a backend",
    ),
    (
        "searchsvc.ingest",
        ("searchsvc.web", "searchsvc.cli", "searchsvc.backends", "searchsvc.operations"),
        "the readers and merging stand beside the engines, below the use cases: they know no engine",
    ),
    (
        "searchsvc.backends",
        ("searchsvc.ingest", "searchsvc.operations", "searchsvc.cli"),
        "an engine is a port: it knows the domain (core) and meaning (semantic), not how papers were read",
    ),
    (
        "searchsvc.semantic",
        ("searchsvc.ingest", "searchsvc.operations", "searchsvc.cli"),
        "ranking by meaning is a floor below the use cases",
    ),
    (
        "searchsvc.operations",
        ("searchsvc.web", "searchsvc.cli", "flask", "werkzeug", "marshmallow", "whoosh", "opensearchpy"),
        "the use cases know neither the edges that call them nor an engine's library",
    ),
]


@dataclass(frozen=True)
class Import:
    importer: str  # the module whose source holds the statement
    imported: str  # the module it imports, resolved
    names: tuple[str, ...]  # what `from … import` takes from it ("*" for all); () for `import module`
    path: str  # the importer's file, relative to the repository
    line: int
    type_checking: bool  # inside an `if TYPE_CHECKING:` block

    def where(self) -> str:
        return f"{self.path}:{self.line}"

    def what(self) -> str:
        return f"{', '.join(self.names)} from {self.imported}" if self.names else self.imported


def covers(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports_in(
    module: str, source: str, *, is_package: bool, known: Iterable[str], path: str = "<source>"
) -> list[Import]:
    """Every import statement in `source` (the module `module`), resolved; `known` names the modules that
    exist, to tell `from package import submodule` from `from module import name`."""
    known = set(known)
    package = module if is_package else module.rpartition(".")[0]
    found: list[Import] = []

    def visit(nodes: Iterable[ast.AST], type_checking: bool) -> None:
        for node in nodes:
            if isinstance(node, ast.If) and _is_type_checking(node.test):
                visit(node.body, True)
                visit(node.orelse, type_checking)
                continue
            if isinstance(node, ast.Import):
                for alias in node.names:
                    found.append(Import(module, alias.name, (), path, node.lineno, type_checking))
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base_parts = package.split(".")
                    if node.level - 1 >= len(base_parts):
                        raise ValueError(f"{path}:{node.lineno}: relative import beyond the top package")
                    base = ".".join(base_parts[: len(base_parts) - (node.level - 1)])
                    base = f"{base}.{node.module}" if node.module else base
                else:
                    base = node.module or ""
                taken: dict[str, list[str]] = {}  # one Import per module the statement imports
                for alias in node.names:
                    candidate = f"{base}.{alias.name}"
                    if alias.name != "*" and candidate in known:
                        taken.setdefault(candidate, [])
                    else:
                        taken.setdefault(base, []).append(alias.name)
                for target, names in taken.items():
                    found.append(Import(module, target, tuple(names), path, node.lineno, type_checking))
            visit(ast.iter_child_nodes(node), type_checking)

    visit(ast.parse(source, filename=path).body, False)
    return found


def package_imports(root: Path = PACKAGE) -> list[Import]:
    files = sorted(root.rglob("*.py"))
    known = {module_name(file, root) for file in files}
    found: list[Import] = []
    for file in files:
        found += imports_in(
            module_name(file, root),
            file.read_text(encoding="utf-8"),
            is_package=file.name == "__init__.py",
            known=known,
            path=str(file.relative_to(root.parent)),
        )
    return found


def wall_violations(imports: Iterable[Import]) -> list[str]:
    """One line per import that breaks a wall: where, the module, what it imports, and the rule it breaks."""
    broken = []
    for found in imports:
        for importer, forbidden, why in WALLS:
            if not covers(found.importer, importer):
                continue
            for name in forbidden:
                if covers(found.imported, name):
                    broken.append(
                        f"{found.where()}: {found.importer} imports {found.what()}: "
                        f"{importer} must not import {name} ({why})"
                    )
    return broken


def import_graph(imports: Iterable[Import], within: str = "searchsvc") -> dict[str, set[str]]:
    """Module -> the modules of `within` it imports, type-only imports included: a type a module
    needs is a dependency of its source even if it never runs."""
    graph: dict[str, set[str]] = {}
    for found in imports:
        graph.setdefault(found.importer, set())
        if covers(found.imported, within) and found.imported != found.importer:
            graph[found.importer].add(found.imported)
    return graph


def package_of(module: str, within: str = "searchsvc") -> str:
    """The floor a module stands on: `searchsvc.backends.whoosh.schema` -> `searchsvc.backends`."""
    return ".".join(module.split(".")[: len(within.split(".")) + 1])


def package_graph(imports: Iterable[Import], within: str = "searchsvc") -> dict[str, set[str]]:
    """Floor -> the other floors of `within` its modules import (type-only imports included)."""
    graph: dict[str, set[str]] = {}
    for importer, imported in import_graph(imports, within).items():
        floor = package_of(importer, within)
        graph.setdefault(floor, set()).update(package_of(module, within) for module in imported)
        graph[floor].discard(floor)
    return graph


def cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """One cycle per group of modules that import each other (a strongly connected component), as the
    chain of modules from its first module (by name) back to it; a module importing itself counts too."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []

    def connect(node: str) -> None:  # Tarjan's algorithm, recursive: the graph has a few dozen modules
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in sorted(graph.get(node, ())):
            if successor not in index:
                connect(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1 or node in graph.get(node, ()):
                components.append(component)

    for node in sorted(graph):
        if node not in index:
            connect(node)

    found = []
    for component in components:
        start = min(component)
        paths = {start: [start]}  # shortest way round, breadth first, inside the component
        frontier = [start]
        chain = None
        while frontier and chain is None:
            following = []
            for node in frontier:
                for successor in sorted(graph.get(node, ())):
                    if successor == start:
                        chain = [*paths[node], start]
                        break
                    if successor in component and successor not in paths:
                        paths[successor] = [*paths[node], successor]
                        following.append(successor)
                if chain:
                    break
            frontier = following
        assert chain is not None
        found.append(chain)
    return sorted(found)


def describe(chain: list[str], imports: Iterable[Import]) -> str:
    lines = {(i.importer, i.imported): i.where() for i in imports}
    steps = [f"{a} imports {b} ({lines.get((a, b), '?')})" for a, b in zip(chain, chain[1:], strict=False)]
    return " -> ".join(chain) + ": " + "; ".join(steps)


# --- the package ------------------------------------------------------------------------------------------------


def test_the_package_is_read_whole() -> None:
    imports = package_imports()
    importers = {found.importer for found in imports}
    for module in ("searchsvc.core.query", "searchsvc.web.app", "searchsvc.backends.whoosh.backend", "searchsvc.cli"):
        assert module in importers, module  # each of these imports something: parsed, not skipped
    assert len(importers) > 40


def test_packages_keep_to_their_walls() -> None:
    broken = wall_violations(package_imports())
    assert broken == [], "imports through an architecture wall:\n" + "\n".join(broken)


def test_no_import_cycles() -> None:
    imports = package_imports()
    found = cycles(import_graph(imports))
    assert found == [], "import cycles:\n" + "\n".join(describe(chain, imports) for chain in found)


def test_no_cycles_between_floors() -> None:
    """Data flows one way: web, cli -> operations -> backends (-> semantic) and ingest -> core."""
    imports = package_imports()
    found = cycles(package_graph(imports))
    crossings = {(package_of(i.importer), package_of(i.imported)): i.where() for i in imports}
    assert found == [], "cycles between packages:\n" + "\n".join(
        " -> ".join(chain)
        + ": "
        + "; ".join(f"{a} -> {b} at {crossings.get((a, b))}" for a, b in zip(chain, chain[1:], strict=False))
        for chain in found
    )


# --- the checkers catch what they are for ------------------------------------------------------------------------

KNOWN = {
    "searchsvc",
    "searchsvc.core",
    "searchsvc.core.query",
    "searchsvc.core.model",
    "searchsvc.backends",
    "searchsvc.backends.whoosh",
    "searchsvc.backends.whoosh.schema",
    "searchsvc.backends.opensearch",
    "searchsvc.backends.opensearch.mapping",
}


def test_a_forbidden_import_is_reported_with_module_name_and_rule() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "from . import model\n"  # allowed: the core importing the core
        "if TYPE_CHECKING:\n"
        "    import flask\n"
        "def lazily():\n"
        "    from ..backends.whoosh import schema\n"
        "    return schema\n"
    )
    imports = imports_in("searchsvc.core.query", source, is_package=False, known=KNOWN, path="searchsvc/core/query.py")
    assert [(i.imported, i.names, i.line, i.type_checking) for i in imports] == [
        ("typing", ("TYPE_CHECKING",), 1, False),
        ("searchsvc.core.model", (), 2, False),
        ("flask", (), 4, True),
        ("searchsvc.backends.whoosh.schema", (), 6, False),
    ]
    why = WALLS[0][2]
    assert wall_violations(imports) == [
        f"searchsvc/core/query.py:4: searchsvc.core.query imports flask: searchsvc.core must not import flask ({why})",
        "searchsvc/core/query.py:6: searchsvc.core.query imports searchsvc.backends.whoosh.schema: "
        f"searchsvc.core must not import searchsvc.backends ({why})",
    ]


def test_one_backend_importing_the_other_or_its_engine_is_reported() -> None:
    source = "from whoosh.analysis import StemFilter\nfrom searchsvc.backends.whoosh.schema import SCHEMA, STOP\n"
    imports = imports_in("searchsvc.backends.opensearch.mapping", source, is_package=False, known=KNOWN)
    broken = wall_violations(imports)
    why = WALLS[2][2]
    assert broken == [
        "<source>:1: searchsvc.backends.opensearch.mapping imports StemFilter from whoosh.analysis: "
        f"searchsvc.backends.opensearch must not import whoosh ({why})",
        "<source>:2: searchsvc.backends.opensearch.mapping imports SCHEMA, STOP from searchsvc.backends.whoosh.schema: "
        f"searchsvc.backends.opensearch must not import searchsvc.backends.whoosh ({why})",
    ]
    # The same statements are allowed where no wall stands: the Whoosh backend may use Whoosh.
    assert wall_violations(imports_in("searchsvc.backends.whoosh.schema", source, is_package=False, known=KNOWN)) == []


def test_a_cycle_through_a_lazy_import_in_a_package_init_is_reported() -> None:
    init = "def get():\n    from searchsvc.core import query\n    return query\n"
    query = "from searchsvc.core.model import Thing\n"
    model = "import searchsvc.core\nif TYPE_CHECKING:\n    from searchsvc.core import query\n"
    imports = [
        *imports_in("searchsvc.core", init, is_package=True, known=KNOWN, path="searchsvc/core/__init__.py"),
        *imports_in("searchsvc.core.query", query, is_package=False, known=KNOWN, path="searchsvc/core/query.py"),
        *imports_in("searchsvc.core.model", model, is_package=False, known=KNOWN, path="searchsvc/core/model.py"),
    ]
    (chain,) = cycles(import_graph(imports))
    assert chain == ["searchsvc.core", "searchsvc.core.query", "searchsvc.core.model", "searchsvc.core"]
    assert describe(chain, imports) == (
        "searchsvc.core -> searchsvc.core.query -> searchsvc.core.model -> searchsvc.core: "
        "searchsvc.core imports searchsvc.core.query (searchsvc/core/__init__.py:2); "
        "searchsvc.core.query imports searchsvc.core.model (searchsvc/core/query.py:1); "
        "searchsvc.core.model imports searchsvc.core (searchsvc/core/model.py:1)"
    )
    # Without the lazy import in __init__ a cycle is left: a type-only import counts too.
    assert cycles(import_graph(imports[1:])) == [
        ["searchsvc.core.model", "searchsvc.core.query", "searchsvc.core.model"]
    ]


def test_a_cycle_between_floors_is_reported_though_no_module_cycle_exists() -> None:
    imports = [
        *imports_in("searchsvc.core.query", "from searchsvc.backends import schema\n", is_package=False, known=KNOWN),
        *imports_in(
            "searchsvc.backends.whoosh.schema", "from searchsvc.core import model\n", is_package=False, known=KNOWN
        ),
    ]
    assert cycles(import_graph(imports)) == []
    assert cycles(package_graph(imports)) == [["searchsvc.backends", "searchsvc.core", "searchsvc.backends"]]
