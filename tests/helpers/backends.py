"""Apps over either backend, for tests written once and run against both (tests/contract/).

Each app is published by the real rebuild path: a Whoosh generation in a temporary folder,
or an OpenSearch index behind its own alias on the session's 2-node test cluster.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from opensearchpy import OpenSearch

from searchsvc import create_app
from searchsvc.backends import Backend, open_backend
from searchsvc.backends.opensearch import OpenSearchBackend
from searchsvc.operations.rebuild import rebuild
from searchsvc.settings import Settings, load_settings
from tests.helpers.records import write_jsonl

BACKENDS = ("whoosh", "opensearch")
Build = Callable[[list[dict]], Flask]  # records in, an app serving them out (tests/contract/conftest.py)
_ALIAS_PREFIX = "test-"
_MERGE_TIMEOUT = 240.0  # seconds: a real cluster keeps copies ~30 s (one test asks for that); load slows merges
_serial = itertools.count()


class BackendFactory:
    """Settings and published apps for one backend; `close` deletes what it made on the cluster."""

    def __init__(self, kind: str, request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> None:
        self.kind = kind
        self._tmp = tmp_path_factory
        self.urls: list[str] = []
        if kind == "opensearch":
            self.urls = request.getfixturevalue("opensearch_cluster").urls

    def overrides(self, **extra: Any) -> dict[str, Any]:
        """Settings naming a fresh, empty index (a folder, or an alias nobody has published)."""
        # An index folder on either engine: OpenSearch keeps its collection file there too.
        where: dict[str, Any] = {"index_dir": self._tmp.mktemp("index")}
        if self.kind == "opensearch":
            where |= {
                "backend": "opensearch",
                "opensearch_url": ",".join(self.urls),
                "opensearch_index": f"{_ALIAS_PREFIX}{next(_serial)}",
                "vector_store": str(self._tmp.mktemp("vectors")),
            }
        return {**where, **extra}

    def settings(self, **extra: Any) -> Settings:
        return load_settings(self.overrides(**extra), environ={})

    def publish(self, sources: list[Path], **extra: Any) -> Flask:
        """An app serving `sources`, rebuilt through the backend the way `searchsvc rebuild` does."""
        return create_app(self.published(sources, **extra))

    def published(self, sources: list[Path], **extra: Any) -> dict[str, Any]:
        """The settings of an index of `sources`, rebuilt as by `publish`: apps with other settings
        (of searches, not of the index) can serve it."""
        overrides = self.overrides(**extra)
        rebuild(open_backend(load_settings(overrides, environ={})), sources)
        return overrides

    def publish_records(self, records: Iterable[dict[str, Any]], **extra: Any) -> Flask:
        """An app serving `records`, written to a JSON-lines file of their own and published as by `publish`."""
        return create_app(self.published_records(records, **extra))

    def published_records(self, records: Iterable[dict[str, Any]], **extra: Any) -> dict[str, Any]:
        """The settings of an index of `records`, published as by `publish_records` (see `published`)."""
        return self.published([write_jsonl(self._tmp.mktemp("records") / "records.jsonl", records)], **extra)

    def unpublished(self, **extra: Any) -> Flask:
        return create_app(self.overrides(**extra))

    def close(self) -> None:
        if self.urls:
            client = OpenSearch(hosts=self.urls)
            client.indices.delete(index=f"{_ALIAS_PREFIX}*", ignore_unavailable=True)
            client.close()


@contextmanager
def every_backend(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, BackendFactory]]:
    """A factory for each backend (BACKENDS), closed afterwards: for tests setting them side by side."""
    factories = {kind: BackendFactory(kind, request, tmp_path_factory) for kind in BACKENDS}
    try:
        yield factories
    finally:
        for made in factories.values():
            made.close()


def merged(backend: Backend) -> None:
    """Wait until the cluster has merged away the deleted copies the backend's updates, and the
    embedding after an update or a rebuild, left (a process of their own does, after the answer:
    backends/opensearch/merging.py), polling the count `status()` gives (`deleted_copies`); then
    scores are a fresh load's. Whoosh leaves no deleted copies. The test cluster lets the merge drop
    them within a second or two of the update (`QUICK_MERGES` in tests/helpers/opensearch_cluster.py),
    where a real cluster keeps them up to ~30 s.

    The refresh at the end is the one the index makes on its own within a second (or at the next
    search of a shard idle for searches): a comparison right after must not race it."""
    if not isinstance(backend, OpenSearchBackend):
        return
    index = backend.generations.serving()
    deadline = time.monotonic() + _MERGE_TIMEOUT
    while left := backend.status()["deleted_copies"]:
        assert time.monotonic() < deadline, f"{left} deleted copies still in {index} after {_MERGE_TIMEOUT:.0f} s"
        time.sleep(0.5)
    backend.client.indices.refresh(index=index)
