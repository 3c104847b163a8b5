"""The code part of a rebuild's fingerprint: the text of what reads, merges and indexes papers, found by
following imports, so that a deploy changing it rebuilds and one changing anything else does not."""

from __future__ import annotations

from pathlib import Path

from searchsvc.backends.whoosh import WhooshBackend
from searchsvc.operations.fingerprint import NOT_FOLLOWED, READERS, code_digest, modules_imported
from tests.helpers.apps import settings_for


def test_what_reads_merges_and_indexes_is_followed_and_what_answers_searches_is_not(tmp_path: Path) -> None:
    libraries: set[str] = set()
    shape = WhooshBackend(settings_for(tmp_path / "index")).index_shape()
    followed = modules_imported([*READERS, *shape.modules], libraries)
    for module in (
        "searchsvc.ingest.bibtex",  # a reader, through the readers' registry
        "searchsvc.ingest.collection",  # the merge state
        "searchsvc.core.paper",
        "searchsvc.core.text",
        "searchsvc.backends.analysis",  # through the Whoosh schema
        "searchsvc.backends.whoosh.schema",
        "searchsvc.semantic.store",  # content keys
    ):
        assert module in followed, module
    for module in followed:
        assert not module.startswith(("searchsvc.web", "searchsvc.operations", "searchsvc.cli")), module
        assert not any(module == name or module.startswith(f"{name}.") for name in NOT_FOLLOWED), module
    for module in ("searchsvc.core.ranking", "searchsvc.backends.whoosh.answer", "searchsvc.backends.whoosh.backend"):
        assert module not in followed, module
    assert {"whoosh", "Stemmer", "bibtexparser"} <= libraries and "json" not in libraries


def package(root: Path, modules: dict[str, str]) -> Path:
    for name, text in modules.items():
        path = root.joinpath(*name.split(".")).with_suffix(".py")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def test_the_code_digest_changes_with_the_text_of_a_module_imported_and_only_then(tmp_path: Path) -> None:
    modules = {
        "searchsvc.__init__": "",
        "searchsvc.reader": "from searchsvc import rules\nfrom typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from searchsvc import typed\n\ndef read():\n    from .lazy import late\n",
        "searchsvc.rules": "import searchsvc.settings\nLIMIT = 1\n",
        "searchsvc.lazy": "def late(): pass\n",
        "searchsvc.typed": "",
        "searchsvc.settings": "",
        "searchsvc.web": "",
    }
    root = package(tmp_path, modules)
    libraries: set[str] = set()
    assert modules_imported(["searchsvc.reader"], libraries, root) == [
        "searchsvc.lazy",
        "searchsvc.reader",
        "searchsvc.rules",
    ]
    before = code_digest(["searchsvc.reader"], 1, root)
    assert code_digest(["searchsvc.reader"], 2, root) != before  # the engine's format version
    for name in ("searchsvc.typed", "searchsvc.settings", "searchsvc.web"):
        package(root, {name: "CHANGED = True\n"})
        assert code_digest(["searchsvc.reader"], 1, root) == before, name
    package(root, {"searchsvc.lazy": "def late(): return 1\n"})
    assert code_digest(["searchsvc.reader"], 1, root) != before
