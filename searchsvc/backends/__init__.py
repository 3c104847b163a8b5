"""The one interface the CLI and the API talk to; each search engine implements it."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, Protocol

from searchsvc.core.model import FacetLookup, Hit, SearchRequest, SearchResult
from searchsvc.core.paper import Paper
from searchsvc.core.progress import ProgressFactory
from searchsvc.core.suggestions import Suggestion
from searchsvc.ingest.collection import Change, Collection
from searchsvc.settings import Settings


class Backend(Protocol):
    """Searches, exports, facet lookups and related papers end in SearchTimedOut once the request's
    one deadline passes: `core.deadline.budget(settings.search_time_limit_ms)` (the web layer opens
    one per HTTP request; an engine not reading it yet falls back on its own limit per call)."""

    settings: Settings

    def exclusive_rebuild(self) -> AbstractContextManager[None]:
        """Held for a whole rebuild; raises RebuildInProgress if another rebuild holds it."""

    def build(
        self,
        collection: Collection,
        progress: Callable[[int], None],
        provenance: dict[str, Any],
        ready: Callable[[str], None],
    ) -> str:
        """Index and publish `collection` atomically; return the new generation's name. `ready` is
        called with that name once the generation is complete, just before it is published."""

    def apply(
        self,
        collection: Collection,
        change: Change,
        progress: Callable[[int], None],
        provenance: dict[str, Any],
        ready: Callable[[str], None],
    ) -> str:
        """Publish a new generation: the published one with `change` made (the result holds exactly
        `collection`'s papers), sharing what did not change; `ready` as for `build`."""

    def published(self) -> str | None:
        """The published generation's name, read cheaply (None if nothing is published)."""

    def embed(self, progress: ProgressFactory) -> int:
        """Store vectors for the published papers that lack them; return how many were embedded."""

    def search(self, request: SearchRequest) -> SearchResult:
        """Run a validated search on the published index (IndexUnavailable if there is none)."""

    def export(self, request: SearchRequest, limit: int) -> list[Paper]:
        """The first `limit` papers of the search's whole ordered result set."""

    def facet_values(self, name: str, prefix: str, request: SearchRequest, limit: int) -> FacetLookup:
        """Values of facet `name` with a word starting with `prefix`, counted like the search's facets."""

    def suggest(self, q: str, limit: int) -> list[Suggestion]:
        """At most `limit` completions of `q`'s last word (core.suggestions): words, then authors."""

    def paper(self, paper_id: str) -> Paper:
        """One paper by id (PaperNotFound if there is none)."""

    def related(self, paper_id: str, limit: int) -> list[Hit]:
        """Papers most like the given one, best first."""

    def status(self) -> dict[str, Any]:
        """Facts about the index this process serves: generation, doc_count, built_at, engine, ..."""


def open_backend(settings: Settings) -> Backend:
    """The backend the `backend` setting names (imported only when chosen)."""
    if settings.backend == "opensearch":
        from searchsvc.backends.opensearch import OpenSearchBackend

        return OpenSearchBackend(settings)
    from searchsvc.backends.whoosh import WhooshBackend

    return WhooshBackend(settings)
