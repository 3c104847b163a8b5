"""What a rebuild makes an index from, so that a rebuild of the same publishes nothing (issue #35).

A fingerprint has three parts, each a SHA-256, kept with the generation the rebuild publishes
(`FINGERPRINT` in its provenance; every update publishes it on) and compared by the next
rebuild under the index's lock (operations.rebuild):

- `sources`: each source file's name as given (its format follows from it) and the SHA-256 of
  its bytes, in the order they are read;
- `settings`: those the papers are read with (field lengths) and those the engine writes into
  its index (`Backend.index_shape`);
- `code`: the text of the modules that read, merge and index papers (the engine's writers and
  every searchsvc module they import, but `NOT_FOLLOWED`), the versions of the libraries those
  import, the engine's format version and Python's. A deploy that changes any of it rebuilds;
  one that changes only what answers searches, the web layer or the command line does not.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import hashlib
import json
import sys
from collections.abc import Iterable, Sequence
from importlib.metadata import packages_distributions, version
from pathlib import Path
from typing import Any

from searchsvc.backends import Backend
from searchsvc.host import AST_LOCK
from searchsvc.ingest.field_limits import FieldLimits

PARTS = ("sources", "settings", "code")
# The modules a rebuild reads and merges with (operations.rebuild calls them); the engine names its writers.
READERS = ("searchsvc.ingest.sources", "searchsvc.ingest.merging")
# Imported by what reads and indexes, but shaping none of what it writes: not followed.
NOT_FOLLOWED = {
    "searchsvc.settings": "the values that shape the index are fingerprinted, not the module's text",
    "searchsvc.core.errors": "what an error says",
    "searchsvc.core.progress": "progress bars",
    "searchsvc.host": "processes, durable renames and scratch folders",
}
_ROOT = Path(__file__).resolve().parents[2]  # the folder holding the searchsvc package


def fingerprint(backend: Backend, files: Sequence[Path]) -> dict[str, str]:
    """The fingerprint of a rebuild of `files` (as `ingest.sources.discover` found them) by `backend` now."""
    shape = backend.index_shape()
    settings = {"fields": dataclasses.asdict(FieldLimits.of(backend.settings)), "engine": shape.settings}
    return {
        "sources": _digest([[str(path), _file_digest(path)] for path in files]),
        "settings": _digest(settings),
        "code": running_code_digest((*READERS, *shape.modules), shape.version),
    }


@functools.cache
def running_code_digest(roots: tuple[str, ...], format_version: int) -> str:
    """`code_digest` of the package this process runs, once: its code is loaded already, whatever
    happens to its files later (tests rebuild hundreds of times in one process)."""
    return code_digest(roots, format_version)


def code_digest(roots: Iterable[str], format_version: int, root: Path = _ROOT) -> str:
    """SHA-256 of the text of `roots` and of the searchsvc modules they import, followed but for
    `NOT_FOLLOWED`; of the versions of the libraries they import; of `format_version` and Python's."""
    digest = hashlib.sha256()
    libraries: set[str] = set()
    for module in modules_imported(roots, libraries, root):
        digest.update(f"{module}\0".encode() + _module_file(module, root).read_bytes() + b"\0")
    shipped_by = _distributions()
    versions = sorted({f"{name}=={version(name)}" for top in libraries for name in shipped_by.get(top, [])})
    digest.update(_digest([versions, format_version, list(sys.version_info[:2])]).encode())
    return digest.hexdigest()


def modules_imported(roots: Iterable[str], libraries: set[str], root: Path = _ROOT) -> list[str]:
    """`roots` and every searchsvc module they import, directly or not, at run time (not under
    `if TYPE_CHECKING:`), sorted; the top-level names of the other libraries go into `libraries`."""
    found: set[str] = set()
    waiting = list(roots)
    while waiting:
        module = waiting.pop()
        if module in found or _not_followed(module):
            continue
        found.add(module)
        for name in _imports(module, root):
            if name.partition(".")[0] == "searchsvc":
                waiting.append(name)
            elif (top := name.partition(".")[0]) not in sys.stdlib_module_names and top != "__future__":
                libraries.add(top)
    return sorted(found)


def _imports(module: str, root: Path) -> set[str]:
    """The modules `module` imports: `from a import b` is `a.b` where that is a module, else `a`."""
    path = _module_file(module, root)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names: set[str] = set()

    def visit(nodes: Iterable[ast.AST]) -> None:
        for node in nodes:
            if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
                visit(node.orelse)  # type-only imports never run
                continue
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative: from the package, one level up for each dot but the first
                    above = package.split(".")[: len(package.split(".")) + 1 - node.level]
                    base = ".".join([*above, *([base] if base else [])])
                for alias in node.names:
                    names.add(f"{base}.{alias.name}" if _is_module(f"{base}.{alias.name}", root) else base)
            visit(ast.iter_child_nodes(node))

    with AST_LOCK:
        tree = ast.parse(path.read_bytes(), filename=str(path))
    visit(tree.body)
    return names


def _not_followed(module: str) -> bool:
    return any(module == name or module.startswith(f"{name}.") for name in NOT_FOLLOWED)


def _is_module(name: str, root: Path) -> bool:
    if name.partition(".")[0] != "searchsvc":
        return False
    where = root.joinpath(*name.split("."))
    return where.with_suffix(".py").is_file() or (where / "__init__.py").is_file()


def _module_file(module: str, root: Path) -> Path:
    where = root.joinpath(*module.split("."))
    return where / "__init__.py" if where.is_dir() else where.with_suffix(".py")


@functools.cache
def _distributions() -> dict[str, list[str]]:
    """Top-level module name → the distributions that install it (reading every installed one's files)."""
    return dict(packages_distributions())


def _file_digest(path: Path) -> str:
    with path.open("rb") as stream:
        return hashlib.file_digest(stream, "sha256").hexdigest()


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()
