"""The OpenSearch backend: the Backend interface on a cluster, behind one alias.

Searches read the alias, so every web node serves whatever the last rebuild published
(`generations.py`). The cluster finds candidates with lexical scores, counts facets and
stores papers with their vectors; what comes first is core.ranking's policy, as on Whoosh.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from datetime import UTC, datetime
from functools import partial
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np
from opensearchpy import OpenSearch

from searchsvc.backends.analysis import unstemmed_words
from searchsvc.backends.opensearch import merging, nearest, search_bodies, spelling, updates, vectors
from searchsvc.backends.opensearch.answer import AskedWords, OpenSearchAnswer, ask_word_statistics, word_rescorer
from searchsvc.backends.opensearch.asking import AliasSearches
from searchsvc.backends.opensearch.candidates import TierCandidates, catalogue_ties
from searchsvc.backends.opensearch.cluster import cluster_errors, connect, where
from searchsvc.backends.opensearch.facets import lookup_values
from searchsvc.backends.opensearch.generations import Generations
from searchsvc.backends.opensearch.hits import hit
from searchsvc.backends.opensearch.journal import IndexJournal
from searchsvc.backends.opensearch.mapping import EMBEDDED, MAPPING_VERSION, VECTOR, index_body
from searchsvc.backends.opensearch.querying import Dsl
from searchsvc.backends.opensearch.search_bodies import HIGHLIGHT, SOURCE, Plan, page
from searchsvc.backends.opensearch.suggesting import suggestions
from searchsvc.backends.opensearch.texts import paper_of
from searchsvc.backends.ports import FINGERPRINT, JOURNAL_ENTRIES, IndexShape, Purpose
from searchsvc.core import typos
from searchsvc.core.arrival import last_changed
from searchsvc.core.catalogue import Catalogue, Change
from searchsvc.core.deadline import Deadline, budget
from searchsvc.core.errors import IndexUnavailable, PaperNotFound, RebuildFailed
from searchsvc.core.model import FacetLookup, Hit, SearchRequest
from searchsvc.core.paper import Paper
from searchsvc.core.progress import ProgressFactory
from searchsvc.core.query import Node, SimilarTo, as_typed
from searchsvc.core.ranking import rocchio
from searchsvc.core.spelling import Check
from searchsvc.core.suggestions import Suggestion, Typed
from searchsvc.core.text import fold
from searchsvc.semantic.selection import encoder_status, rebuild_encoder, vector_store
from searchsvc.semantic.shards import Shard
from searchsvc.settings import Settings

ENGINE = "opensearch"
# The modules whose code `build` runs to write an index (operations.fingerprint follows their imports).
_WRITERS = ("searchsvc.backends.opensearch.mapping", "searchsvc.backends.opensearch.vectors")


class OpenSearchBackend:
    """Search over the index the alias `settings.opensearch_index` points at."""

    def __init__(self, settings: Settings, client: OpenSearch | None = None) -> None:
        self.settings = settings
        self.alias = settings.opensearch_index
        self.client = client or connect(settings)
        self._where = where(settings)
        self.generations = Generations(self.client, self.alias, self._where)
        self.searches = AliasSearches(self.client, self.alias, self._where, check=self.generations.check_serving)

    @property
    def vector_store(self) -> Path:
        """The running encoder's store file (loading the encoder, when ranking by meaning is on)."""
        return vector_store(self.settings)

    # Building -------------------------------------------------------------------

    def exclusive_change(self, kind: str, by: str = "") -> AbstractContextManager[None]:
        """One change (a rebuild or a write) per alias at a time, across machines (a lock index only
        one can create)."""
        return self.generations.exclusive(kind, by)

    def remove_leftovers(self) -> list[str]:
        """Nothing: the indices a killed rebuild left are the cluster's, removed when the next change
        takes its lock (a write adds no index). Taking that lock at every start would refuse writes."""
        return []

    def build(
        self,
        collection: Catalogue,
        progress: Callable[[int], None],
        provenance: dict[str, Any],
        ready: Callable[[str], None],
    ) -> str:
        """Load `collection` into a new index, check it, move the alias to it; return its name.

        The alias moves only once the new index holds every paper and its replicas are
        allocated; any failure deletes the new index and leaves the alias where it was.
        """
        name = self.generations.new_name()
        meta = {
            "mapping_version": MAPPING_VERSION,  # checked before searching (Generations.serving)
            vectors.STORE_META: self.vector_store.name,  # whose vectors a later rebuild may take (`_earlier`)
            **provenance,
            "engine": f"{ENGINE} (opensearch-py {version('opensearch-py')})",
            "doc_count": len(collection),
            "records": collection.records,
            "merged": collection.merged,
            JOURNAL_ENTRIES: collection.journal_entries,  # published with it by the alias move
        }
        with cluster_errors(self._where):
            self.client.indices.create(index=name, body=index_body(self.settings.opensearch_shards, meta))
            try:
                self._load(name, collection, progress)
                self.generations.replicate(name, self.settings.opensearch_replicas)
                self.generations.check(name, len(collection))
                built_at = datetime.now(UTC).isoformat(timespec="seconds")
                self.client.indices.put_mapping(index=name, body={"_meta": {**meta, "built_at": built_at}})
                ready(name)
                self.generations.publish(name)
            except BaseException:
                self.client.indices.delete(index=name, ignore_unavailable=True)
                raise
            self.generations.prune(keep=name)
        return name

    def apply(
        self,
        collection: Catalogue,
        change: Change,
        progress: Callable[[int], None],
        provenance: dict[str, Any],
        ready: Callable[[str], None],
    ) -> str:
        """Make `change` in the published index through the alias; return its new label.

        Searches see the change at one refresh, and this returns then: the old copies of the
        papers it rewrote are merged away after, by a process of its own (merging.py). An update
        that dies half-way leaves the ids it was writing in `_meta`, and the next one writes them
        again (updates.py); the label is published by the same `_meta` write that removes them,
        after `ready` kept the collection.
        """
        with cluster_errors(self._where):
            index, mapping = self.generations.serving_mapping()
            meta = mapping.get("_meta", {})
            self._write_held(index, meta, collection, change, progress)
            published = updates.published_meta(meta, collection, provenance)
            ready(updates.label(index, published))
            self._refresh_checked(index, len(collection))
            self._put_meta(index, published)
            self.client.indices.put_settings(index=index, body=updates.RESUMED)
            # Embedding the new papers rewrites them: then the merge starts after that, once.
            if not (self.settings.semantic_ranking and self.searches.count(vectors.MISSING)):
                merging.start(self.settings)
        return updates.label(index, published)

    def _write_held(
        self, index: str, meta: dict[str, Any], collection: Catalogue, change: Change, progress: Callable[[int], None]
    ) -> None:
        """Record the ids the change writes in `_meta`, then write them, with refreshes held."""
        ids = updates.touched(change, meta)
        papers = updates.rewritten(collection, change, ids)
        indexed = {paper.id for paper in papers}
        self.client.indices.put_settings(index=index, body=updates.HELD)
        self._put_meta(index, {**meta, updates.PENDING: ids})
        self.generations.load(updates.deletions(index, [i for i in ids if i not in indexed]), lambda _n: None)
        self._load(index, papers, progress)

    def _refresh_checked(self, index: str, expected: int) -> None:
        """Show the change to searches, and check the index holds the collection's papers."""
        self.client.indices.refresh(index=index)
        found = self.client.count(index=index)["count"]
        if found != expected:
            raise RebuildFailed(
                f"after the change index {index} holds {found} papers, expected {expected}: the next add or "
                "remove writes the papers this one touched again; `searchsvc rebuild` starts afresh"
            )

    def published(self) -> str | None:
        """The alias's index, labelled with its number of updates (one request)."""
        found = self._published_meta()
        return None if found is None else updates.label(*found)

    def index_shape(self) -> IndexShape:
        """The mapping, the shards and replicas each new index is made with, and the vector store
        its papers' vectors are loaded from (the running encoder's: a paper that has one is not
        embedded again, so vectors of another encoder would stay)."""
        settings = {
            "opensearch_shards": self.settings.opensearch_shards,
            "opensearch_replicas": self.settings.opensearch_replicas,
            "vectors": self.vector_store.name,
        }
        return IndexShape(settings=settings, version=MAPPING_VERSION, modules=_WRITERS)

    def published_fingerprint(self) -> dict[str, Any] | None:
        """The published index's fingerprint, if it is of this mapping version, no update died
        half-way through it, and it holds the papers its `_meta` counts (three requests)."""
        with cluster_errors(self._where):
            try:
                index, mapping = self.generations.serving_mapping()
            except IndexUnavailable:
                return None
            meta = mapping.get("_meta", {})
            whole = not meta.get(updates.PENDING) and self.client.count(index=index)["count"] == meta.get("doc_count")
        found = meta.get(FINGERPRINT)
        return found if whole and isinstance(found, dict) else None

    def journal(self) -> IndexJournal:
        """The journal in the cluster, beside the alias: the same for every process that serves it."""
        return IndexJournal(self.client, self.alias, self._where, self.settings.opensearch_replicas)

    def published_entries(self) -> int | None:
        """The journal entries the published index's `_meta` says it includes (one request)."""
        found = self._published_meta()
        entries = None if found is None else found[1].get(JOURNAL_ENTRIES)
        return None if entries is None else int(entries)

    def _published_meta(self) -> tuple[str, dict[str, Any]] | None:
        """The alias's index and its `_meta`, without checking its mapping version (None: no alias)."""
        with cluster_errors(self._where):
            found = self.client.indices.get_mapping(index=self.alias, ignore=404)
        if found.get("status") == 404:
            return None
        index = sorted(found)[0]
        return index, found[index]["mappings"].get("_meta", {})

    def _put_meta(self, index: str, meta: dict[str, Any]) -> None:
        """Replace the index's `_meta` (the cluster keeps no part of the old one)."""
        self.client.indices.put_mapping(index=index, body={"_meta": meta})

    def _load(self, name: str, papers: Iterable[Paper], progress: Callable[[int], None]) -> None:
        """Each paper, with its vector when the store already has one for its text."""
        actions = (
            {"_index": name, "_id": document["id"], "_source": document}
            for document in vectors.documents(papers, self.vector_store, self.client, self._earlier())
        )
        self.generations.load(actions, progress)

    def _earlier(self) -> list[str]:
        """The published indices holding vectors of the running encoder (`_meta` names it): a paper
        whose text they hold with a vector is loaded with it, wherever it was embedded. None when
        they hold no vector (ranking by meaning kept off): nothing to ask them for."""
        found = self.client.indices.get_mapping(index=self.alias, ignore=404)  # 404: no alias yet
        if found.get("status") == 404:
            return []
        name = self.vector_store.name
        return sorted(
            index
            for index, body in found.items()
            if body["mappings"].get("_meta", {}).get(vectors.STORE_META) == name
            and self.client.count(index=index, body={"query": {"term": {EMBEDDED: True}}})["count"]
        )

    def embed(self, progress: ProgressFactory, shard: Shard | None = None) -> int:
        """Embed the published papers (of `shard` alone, if given) that have no vector and give each
        its vector; return how many.

        Runs after publishing, so a rebuild's new papers are searchable at once, and ranked by
        meaning too once this finishes; the copies it rewrote are merged away after (merging.py).
        """
        if not self.settings.semantic_ranking:
            return 0
        with cluster_errors(self._where):
            encoder = partial(rebuild_encoder, self.settings)
            embedded, rewritten = vectors.embed_index(
                self.client, self.generations, self.vector_store, encoder, progress, shard
            )
        if rewritten:
            merging.start(self.settings)
        return embedded

    # Reading --------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        """The published index's metadata, its papers, whether they are ranked by meaning too
        ("pending" while some paper has no vector yet), and the deleted copies its shards still
        hold: old copies of papers an update or `embed` rewrote, counted in word statistics until
        the merge started after the write drops them (merging.py). Scores are a fresh load's at 0."""
        with cluster_errors(self._where):
            index, mapping = self.generations.serving_mapping()
            count = self.client.count(index=self.alias)["count"]
            deleted = merging.deleted(self.client, index)
        semantic, embedded = "off", {}
        if self.settings.semantic_ranking:
            encoder = encoder_status(self.settings)  # loaded before the first search; a missing model: 503
            missing = self.searches.count(vectors.MISSING)
            semantic = "pending" if missing else "on"
            embedded = {**encoder, "embedded_papers": count - missing}
        meta = dict(mapping.get("_meta", {}))
        meta.pop("mapping_version", None)
        meta.pop(vectors.STORE_META, None)
        meta.pop(updates.PENDING, None)
        generation = updates.label(index, meta)
        return dict(
            meta, generation=generation, doc_count=count, deleted_copies=deleted, semantic_ranking=semantic, **embedded
        )

    def last_change(self) -> tuple[str, str]:
        """From the published index's `_meta` alone (one request; `status` makes four or five)."""
        found = self._published_meta()
        if found is None:
            raise self.generations.unpublished()
        index, meta = found
        return updates.label(index, meta), last_changed(meta)

    @contextmanager
    def answer(
        self, request: SearchRequest, tree: Node | None, deadline: Deadline, purpose: Purpose
    ) -> Iterator[OpenSearchAnswer]:
        """One request: the matches' count, the all-words tier's, facets and respellings for a
        page (only counts for an export), word statistics for BM25F, and the page itself when
        browsing; a tier's candidates are asked for later, as the recipe needs them. With typo
        tolerance, a query with words no paper holds is asked again, those words also matching
        the near words the first answer's suggesters offered (core.typos)."""
        shown = purpose == "page"
        respell = self.settings.typo_tolerance and not request.exact
        checks = spelling.checks(tree) if shown or respell else []
        plan, response, words = self._first_answer(request, tree, shown, checks)
        deadline.check()
        if respell and checks:
            options = spelling.near_words(checks, response)
            searched = typos.respelled(tree, unstemmed_words, options.get, deadline)
            if searched is not tree:
                plan, response, words = self._first_answer(request, searched, shown, checks)
                deadline.check()
        aggregations = response.get("aggregations", {})
        rescorers = [None if found is None else word_rescorer(found, aggregations, self.searches) for found in words]
        # The first tiers are ordered by the words as typed (the last of `words`), the last by all it searched.
        tiers = TierCandidates(
            self.searches, plan, shown, self._timeout(), rescorers[-1], rescorers[0], self.settings.rescore_limit
        )
        yield OpenSearchAnswer(self.searches, self.settings, request, plan, response, tiers, checks)

    def _first_answer(
        self, request: SearchRequest, tree: Node | None, shown: bool, checks: list[Check]
    ) -> tuple[Plan, Dsl, list[AskedWords | None]]:
        """The search's first request (see `answer`): its plan, response and the words it scores."""
        plan = search_bodies.plan(request, tree)
        ranked = tree is not None and request.sort == "relevance"
        aggs: Dsl = {}
        if shown:
            aggs |= search_bodies.facet_aggs(plan, self.settings) | search_bodies.selection_aggs(request, self.settings)
        if plan.first_tier is not None:
            aggs["all_words"] = plan.count_agg(plan.first_tier)
        if plan.literal is not None:
            aggs["literal"] = plan.count_agg(plan.literal)
        body: Dsl = {
            "query": plan.scored,
            "post_filter": plan.post_filter,
            "aggs": aggs,
            "track_total_hits": True,
            **self._timeout(),
            **({"size": 0} if ranked else page(request.sort, request.start, request.per_page, highlight=shown)),
        }
        trees = [tree] if plan.literal is None else [tree, as_typed(tree)]
        words: list[AskedWords | None] = [None]
        if ranked:
            words = ask_word_statistics(self.searches, self.client, self.alias, trees, aggs)
        if checks:
            spelling_aggs, body["suggest"] = spelling.aggs_and_suggesters(checks)
            aggs.update(spelling_aggs)
        # Nothing reads this request's scores: ranked, it asks for counts alone (size 0); else its page is
        # sorted by fields, or every paper matches alike. So no round trip for the whole index's statistics.
        return plan, self.searches.search(body, scored=False), words

    def facet_values(
        self, name: str, prefix: str, request: SearchRequest, tree: Node | None, limit: int
    ) -> FacetLookup:
        """Values of `name` with a word starting with `prefix`, counted as the search's facets are."""
        plan = search_bodies.plan(request, tree)
        body = {
            "query": plan.scored,
            "size": 0,
            "aggs": {
                **search_bodies.lookup_aggs(plan, name, fold(prefix), limit, self.settings),
                **search_bodies.selection_aggs(request, self.settings),
            },
            **self._timeout(),
        }
        shown = lookup_values(name, prefix, self.searches.search(body)["aggregations"], request)
        return FacetLookup(name=name, prefix=prefix, values=shown[:limit], truncated=len(shown) > limit)

    def suggest(self, start: Typed, narrowing: SearchRequest, tree: Node | None, limit: int) -> list[Suggestion]:
        """Completions of the query's last word: words, then authors (suggesting.py)."""
        among = search_bodies.plan(narrowing, tree).narrowed()
        deadline = self._deadline()
        found = suggestions(self.searches, start, among, limit, self._timeout, deadline.check)
        deadline.check()
        return found

    def paper(self, paper_id: str) -> Paper:
        return paper_of(self._stored(paper_id, SOURCE))

    def similar(self, to: SimilarTo, request: SearchRequest, limit: int) -> list[Hit]:
        """The papers nearest in meaning to `to` (core.ranking.rocchio) among the whole match, as on
        Whoosh: the cluster scans every vector the match lets through (nearest.py). In the order of
        the words the liked papers share most (more_like_this), as on Whoosh, while ranking by
        meaning is off or a liked paper has no vector yet; a paper still waiting for its vector is
        not among those found by meaning. The liked papers' most distinctive words are marked
        (`key_terms_marking`: the cluster's highlighter finds none in more_like_this itself)."""
        by_meaning = self.settings.semantic_ranking
        fields = [*SOURCE, VECTOR] if by_meaning else SOURCE
        given = self._stored_all([*to.like, *to.unlike], fields)  # PaperNotFound first
        liked, unliked = given[: len(to.like)], given[len(to.like) :]
        with cluster_errors(self._where):
            index = self.generations.serving()
            key_terms = self.client.mtermvectors(index=index, body=search_bodies.key_terms_body(to.like))
        marking = search_bodies.key_terms_marking(key_terms)
        marked = HIGHLIGHT if marking is None else {**HIGHLIGHT, "highlight_query": marking}
        matched = search_bodies.plan(request, to.rest).matched()
        like_vectors = vectors.vectors_of(liked) if by_meaning else None
        unlike_vectors = vectors.vectors_of(unliked) if by_meaning and unliked else np.empty((0, 0))
        if like_vectors is None or unlike_vectors is None:
            words = search_bodies.more_like(index, to.like, to.unlike, matched)
            body = {"query": words, "size": limit, "_source": SOURCE, "highlight": marked, **self._timeout()}
            return [hit(doc, round(doc["_score"], 4)) for doc in self.searches.search(body)["hits"]["hits"]]
        target = rocchio(like_vectors, unlike_vectors)
        among = {"bool": {"filter": [matched], "must_not": [search_bodies.given_papers(to.like, to.unlike)]}}
        body = {**nearest.body(among, target, limit, self._timeout()), "highlight": marked}
        found = self.searches.search(body, scored=False)["hits"]["hits"]
        docs, _vectors, similarity = nearest.nearest_first(found, catalogue_ties(found), target, limit)
        return [hit(doc, round(float(score), 4)) for doc, score in zip(docs, similarity, strict=True)]

    # Parts of a search ----------------------------------------------------------

    def _timeout(self) -> Dsl:
        """The cluster's own time limit for one search: what is left of the request's budget."""
        return {"timeout": f"{self._deadline().remaining_ms()}ms"}

    def _deadline(self) -> Deadline:
        """The request's one budget (core.deadline), or a new one outside a request."""
        return budget(self.settings.search_time_limit_ms)

    def _stored(self, paper_id: str, fields: list[str]) -> Dsl:
        return self._stored_all([paper_id], fields)[0]

    def _stored_all(self, paper_ids: list[str], fields: list[str]) -> list[Dsl]:
        """The papers `paper_ids` names, in that order, in one request (PaperNotFound naming the
        first one the index does not hold)."""
        with cluster_errors(self._where):
            self.generations.check_serving()
            # Not realtime: papers as searches see them, not as an update half-way wrote them.
            body = {"ids": paper_ids}
            docs = self.client.mget(index=self.alias, body=body, _source_includes=fields, realtime=False)["docs"]
        for paper_id, doc in zip(paper_ids, docs, strict=True):
            if "error" in doc:
                raise IndexUnavailable("the OpenSearch cluster could not read a paper; try again", private=str(doc))
            if not doc.get("found"):
                raise PaperNotFound(f"no paper with id {paper_id!r}", {"id": paper_id})
        return [doc["_source"] for doc in docs]
