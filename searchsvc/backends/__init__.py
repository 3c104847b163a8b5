"""The one interface the CLI and the API talk to; each search engine implements it."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, Protocol

from searchsvc.merging import Collection
from searchsvc.search import SearchRequest, SearchResult
from searchsvc.settings import Settings


class Backend(Protocol):
    def exclusive_rebuild(self) -> AbstractContextManager[None]:
        """Held for a whole rebuild; raises RebuildInProgress if another rebuild holds it."""

    def build(self, collection: Collection, progress: Callable[[int], None], provenance: dict[str, Any]) -> str:
        """Index and publish `collection` atomically; return the new generation's name."""

    def search(self, request: SearchRequest) -> SearchResult:
        """Run a validated search on the published index (IndexUnavailable if there is none)."""

    def status(self) -> dict[str, Any]:
        """Facts about the published index: generation, doc_count, built_at, ..."""


def open_backend(settings: Settings) -> Backend:
    from searchsvc.backends.whoosh import WhooshBackend

    return WhooshBackend(settings)
