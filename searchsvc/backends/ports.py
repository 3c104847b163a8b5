"""The one interface the use cases (operations/) talk to; each search engine implements it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from searchsvc.core.catalogue import Catalogue, Change, JournalEntry
from searchsvc.core.deadline import Deadline
from searchsvc.core.explanation import LexicalParts
from searchsvc.core.model import FacetLookup, FacetValue, Hit, SearchRequest
from searchsvc.core.paper import Paper
from searchsvc.core.progress import ProgressFactory
from searchsvc.core.query import Node, SimilarTo
from searchsvc.core.ranking import CandidateSource, NearestSource, Ref
from searchsvc.core.spelling import Check
from searchsvc.core.suggestions import Suggestion, Typed
from searchsvc.semantic.shards import Shard
from searchsvc.settings import Settings

# A page of results shows facets, highlights and "did you mean"; an export needs the papers only.
Purpose = Literal["page", "export"]
# Where an engine keeps `Catalogue.journal_entries` with each generation it publishes (and shows it in `status`).
JOURNAL_ENTRIES = "journal_entries"
# Where an engine keeps, with each generation it publishes, what its rebuild made it from (the provenance key
# operations.fingerprint writes); an update publishes it on unchanged, as its papers are the rebuild's and the change's.
FINGERPRINT = "fingerprint"


@dataclass(frozen=True)
class IndexShape:
    """What makes the index an engine writes what it is, besides the papers it is given."""

    settings: dict[str, Any]  # the settings the engine writes into its index (none on Whoosh)
    version: int  # of its format: the Whoosh schema's, the OpenSearch mapping's
    modules: tuple[str, ...]  # the modules whose code `build` runs to write it (what they import is followed)


class Journal(Protocol):
    """The changes users wrote (`add`, `remove`, the write API) in order, each engine's own, kept
    where every process serving its index sees them; every rebuild replays them after its sources.

    An entry is appended, durably, before its change is published, and the generation published
    with it records how many entries it includes (`Backend.published_entries`): an entry past
    that count is a change whose process died before publishing, which readers ignore and the
    next change or rebuild cuts off (`keep_first`). So a change is in both or in neither.
    """

    def changes(self, first: int | None = None) -> Iterator[JournalEntry]:
        """The entries in order, the first `first` of them (None: all)."""

    def __len__(self) -> int:
        """How many entries there are (asked by /readyz and each metrics scrape: cheap)."""

    def append(self, entry: JournalEntry) -> None:
        """Add `entry` after every other one, durably, before this returns."""

    def keep_first(self, count: int) -> int:
        """Drop every entry past the first `count` (those published); return how many were dropped."""

    def find(self, writer: str, key: str, first: int) -> JournalEntry | None:
        """The last of the first `first` entries that `writer` sent with idempotency key `key`."""


class Answer(CandidateSource[Ref], NearestSource[Ref], Protocol[Ref]):
    """What an engine found for one search, counted in one pass, and the way to ask it for more.

    The search recipe (operations/search.py) decides the order and "did you mean" from it; the
    engine only counts, finds candidates in lexical order (`candidates`), and fetches papers.
    """

    def total(self) -> int:
        """Papers matching the query and the filters."""

    def searched(self) -> Node | None:
        """The query as the engine searched it: the request's, with the words it respelled (core.typos)."""

    def literal(self) -> int:
        """Of them, those the query matches as typed, not only through a word's typos (core.typos):
        `total` unless the tree holds a `Respelled` word."""

    def all_words(self) -> int:
        """Of those, the ones matching every word of a group as typed (the first tier); `literal`
        for other queries."""

    def meaning_ready(self) -> bool:
        """Whether its papers have their vectors (False while a rebuild or a write is embedding them)."""

    def lexical_parts(self, tier: int, refs: list[Ref]) -> list[LexicalParts | None]:
        """The words' parts of the lexical scores `candidates` gave `refs` in `tier` (core.explanation),
        computed by backends/bm25f.py from what scored them; None for a paper not scored as plain words
        (its whole lexical score is then the explanation's `other`)."""

    def page(self) -> list[Ref]:
        """Browsing (no query, or a sort by date): the request's page in that order."""

    def hits(self, ranked: list[tuple[Ref, float | None]]) -> list[Hit]:
        """The papers of `ranked` with their scores, highlighted by the query's words."""

    def papers(self, ranked: list[tuple[Ref, float | None]]) -> list[Paper]:
        """The papers of `ranked`, as stored."""

    def facets(self) -> dict[str, list[FacetValue]]:
        """Each facet's values, counted over the query under every filter but the facet's own."""

    def respellings(self) -> dict[Check, str]:
        """The engine's best respelling of each query word that no paper contains."""

    def all_words_of(self, request: SearchRequest, tree: Node | None) -> int:
        """`all_words` of another query (a respelling) under the same filters, on the same generation."""


class Backend(Protocol):
    """An engine, as a port: it builds and publishes generations, and finds, counts and fetches
    papers; the order of results is the search recipe's (operations/search.py, core/ranking.py).

    Whatever reads the index ends in SearchTimedOut once the request's one deadline passes:
    `answer` checks the deadline it is given, the other reads the request's budget
    (`core.deadline.budget(settings.search_time_limit_ms)`, opened by the web layer per request)."""

    settings: Settings

    def exclusive_change(self, kind: str, by: str = "") -> AbstractContextManager[None]:
        """Held for a whole change (`kind`: "rebuild" or "write", core.errors.CHANGE_KINDS; `by`: which
        one, in its own words); raises RebuildInProgress, naming the change that holds it, if another does."""

    def remove_leftovers(self) -> list[str]:
        """Delete what killed changes left in the engine's keeping (a partial generation), unless a
        change runs now (its files are no leftovers); the names of what was removed. Called at a
        server's start (operations.leftovers)."""

    def build(
        self,
        collection: Catalogue,
        progress: Callable[[int], None],
        provenance: dict[str, Any],
        ready: Callable[[str], None],
    ) -> str:
        """Index and publish `collection` atomically; return the new generation's name. `ready` is
        called with that name once the generation is complete, just before it is published."""

    def apply(
        self,
        collection: Catalogue,
        change: Change,
        progress: Callable[[int], None],
        provenance: dict[str, Any],
        ready: Callable[[str], None],
    ) -> str:
        """Publish a new generation: the published one with `change` made (the result holds exactly
        `collection`'s papers), sharing what did not change; `ready` as for `build`."""

    def published(self) -> str | None:
        """The published generation's name, read cheaply (None if nothing is published)."""

    def index_shape(self) -> IndexShape:
        """What, besides the papers, shapes the index `build` writes now (operations.fingerprint)."""

    def published_fingerprint(self) -> dict[str, Any] | None:
        """The `FINGERPRINT` the published generation was built with, once it is checked whole as a server
        checks it before serving it; None if nothing is published, it is damaged or unreadable, or it has
        none (built before fingerprints were kept): a rebuild then builds."""

    def journal(self) -> Journal:
        """The change journal of this index, where every process serving it sees the same one."""

    def published_entries(self) -> int | None:
        """How many journal entries the published generation includes, as published with it (None:
        nothing is published, or it was published before the engine kept that count)."""

    def embed(self, progress: ProgressFactory, shard: Shard | None = None) -> int:
        """Store vectors for the published papers that lack them (those of `shard` alone, beside the
        processes embedding the other shards: semantic/shards.py), where every process serving the
        index and the next rebuild find them; return how many were embedded."""

    def answer(
        self, request: SearchRequest, tree: Node | None, deadline: Deadline, purpose: Purpose
    ) -> AbstractContextManager[Answer[Any]]:
        """The engine's first answer to a validated search of the published index (IndexUnavailable
        if there is none), open for the search recipe's further questions (operations/search.py):
        one generation answers them all, and an engine whose readers take turns holds its turn."""

    def facet_values(
        self, name: str, prefix: str, request: SearchRequest, tree: Node | None, limit: int
    ) -> FacetLookup:
        """Values of facet `name` with a word starting with `prefix`, counted like the search's facets
        (`tree`: the request's query, parsed and checked)."""

    def suggest(self, start: Typed, narrowing: SearchRequest, tree: Node | None, limit: int) -> list[Suggestion]:
        """At most `limit` completions of `start` (core.suggestions): words, then authors, each
        counted among the papers `narrowing` finds (its query's all-words tier where it has one;
        `tree`: that query parsed and checked), most papers first."""

    def paper(self, paper_id: str) -> Paper:
        """One paper by id (PaperNotFound if there is none)."""

    def similar(self, to: SimilarTo, request: SearchRequest, limit: int) -> list[Hit]:
        """The `limit` papers most like `to.like` and unlike `to.unlike` (core.ranking.rocchio on
        their vectors; their distinctive words while ranking by meaning is off or pending), among
        what `to.rest` and the request's filters find, the given papers left out (PaperNotFound
        for an unknown one)."""

    def status(self) -> dict[str, Any]:
        """Facts about the index this process serves: generation, doc_count, built_at, engine, ..."""

    def last_change(self) -> tuple[str, str]:
        """The served generation (as `status` names it) and when its papers last changed (a write's
        `changed_at`, else its build's `built_at`), read cheaply: every search page shows them."""
