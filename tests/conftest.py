"""Shared fixtures: the seeds' index, app and client, indexes built on demand, source files written on demand.

The helpers these use live in `tests/helpers/`; `opensearch_cluster` is the session's 2-node test cluster.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from flask import Flask
from flask.testing import FlaskClient

from searchsvc.backends.whoosh import WhooshBackend
from tests.helpers.apps import app_for, without_searchsvc_environment
from tests.helpers.indexes import MakeIndex, build_index
from tests.helpers.opensearch_cluster import opensearch_cluster  # noqa: F401 (the session's 2-node test cluster)
from tests.helpers.paths import SEEDS


@pytest.fixture(autouse=True)
def _isolated_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No SEARCHSVC_* variable of the developer's shell may steer a test."""
    without_searchsvc_environment(monkeypatch)


@pytest.fixture
def write(tmp_path: Path) -> Callable[[str, str | bytes], Path]:
    """Write a source file under tmp_path/sources and return its path."""

    def _write(name: str, content: str | bytes) -> Path:
        path = tmp_path / "sources" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
        return path

    return _write


@pytest.fixture
def index_dir(tmp_path: Path) -> Path:
    """Where a test's own index goes; nothing is there until a rebuild publishes one."""
    return tmp_path / "index"


@pytest.fixture
def make_index(index_dir: Path) -> MakeIndex:
    """`make_index(records, sources=(), **settings)`: a Whoosh backend on tmp_path/index, published by the
    real rebuild from `sources` and `records` (written to tmp_path/sources/records.jsonl).

    Each call rebuilds the same folder, as a second `searchsvc rebuild` would."""

    def _make(
        records: Iterable[dict[str, Any]] | None = None, *, sources: Sequence[Path] = (), **settings: Any
    ) -> WhooshBackend:
        return build_index(index_dir, records, sources=sources, **settings)

    return _make


@pytest.fixture(scope="session")
def seed_backend(tmp_path_factory: pytest.TempPathFactory) -> WhooshBackend:
    """One index built from the repository's seeds, shared by read-only tests."""
    return build_index(tmp_path_factory.mktemp("seed-index"), sources=[SEEDS])


@pytest.fixture(scope="session")
def seed_app(seed_backend: WhooshBackend) -> Flask:
    """The app on the seeds' index. tests/contract/conftest.py overrides it with one app per backend."""
    return app_for(seed_backend.settings.index_dir)


@pytest.fixture
def seed_app_with(seed_backend: WhooshBackend) -> Callable[..., Flask]:
    """`seed_app_with(**settings)`: a fresh app on the seeds' index with these settings changed."""

    def _app(**overrides: Any) -> Flask:
        return app_for(seed_backend.settings.index_dir, **overrides)

    return _app


@pytest.fixture
def client(seed_app: Flask) -> FlaskClient:
    return seed_app.test_client()


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


# Tests that share a costly session fixture, by node id: under pytest-xdist (`-n 2`) each group
# runs on one worker, so the fixture starts once (pytest_xdist_make_scheduler below).
SHARED_FIXTURE_GROUPS = {
    "opensearch": (  # the 2-node test cluster: the contract's [opensearch] half, and the modules for it alone
        "[opensearch",
        "tests/system/test_opensearch_",
        "tests/contract/test_updates_opensearch_only.py",
        "tests/contract/test_both_backends_agree.py",
        "tests/contract/test_analysis_parity.py",
        "tests/contract/test_deep_pages.py",  # these set both engines up in one module fixture
        "tests/contract/test_math.py",
        "tests/contract/test_rare_suggestions.py",
        "tests/contract/test_journal.py::test_on_opensearch_",  # its own factory: no "[opensearch" in its id
        "tests/system/test_sharded_embedding.py",
    ),
    "acl": (
        "tests/system/test_request_budget.py",
        "tests/system/test_churn_acl.py",
        "test_cli_processes.py::test_rebuild_indexes_all_acl",
    ),
    "write-embedding": ("tests/system/test_write_embedding_server.py",),  # one server, its writes in order
}


def shared_fixture_group(nodeid: str) -> str | None:
    for group, marks in SHARED_FIXTURE_GROUPS.items():
        if any(mark in nodeid for mark in marks):
            return group
    return None


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist, which `-p no:xdist` leaves out
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Like xdist's `load`, except that each group of SHARED_FIXTURE_GROUPS goes whole to one
    worker. (xdist's own `loadgroup` marks node ids, which pytest 9 no longer lets it change.)"""
    from xdist.scheduler import LoadScopeScheduling

    class SharedFixtureScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return shared_fixture_group(nodeid) or nodeid

    return SharedFixtureScheduling(config, log)
