"""`GET /feed.atom`: any search's newest papers as an Atom feed, for feed readers to follow.

A reader polls the same URL for months, so the answer carries the generation's ETag and, as
Last-Modified and `<updated>`, when its papers last changed (a write's `changed_at`, else the
build's time): while nothing new is published, a poll with `If-None-Match` or
`If-Modified-Since` is a 304 decided before any search runs, and after an add it is not.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from urllib.parse import urlencode

from flask import Blueprint, Response, request, url_for

from searchsvc.core.model import SearchRequest
from searchsvc.operations.search import export
from searchsvc.web.atom import MEDIA_TYPE, FeedHead, atom_feed
from searchsvc.web.health import changed_at
from searchsvc.web.openapi import Operation, documented
from searchsvc.web.page_links import search_pairs, with_query
from searchsvc.web.schemas import FEED_ENTRIES, FeedRequestSchema, load_params
from searchsvc.web.service import service

blueprint = Blueprint("feeds", __name__)


@blueprint.get("/feed.atom")
@documented(
    Operation(
        f"The newest {FEED_ENTRIES} papers of a search as an Atom 1.0 feed; 304 while the index is unchanged",
        params=FeedRequestSchema,
        download_types=(MEDIA_TYPE,),
        errors=(400, 503),
    )
)
def feed() -> Response:
    wanted: SearchRequest = load_params(FeedRequestSchema(service().settings), request.args)
    pairs = search_pairs(wanted)
    status = service().backend.status()
    changed = datetime.fromisoformat(changed_at(status))
    answer = Response(mimetype=MEDIA_TYPE)
    answer.set_etag(_etag(status["generation"], pairs))
    answer.last_modified = changed
    answer.cache_control.no_cache = True  # keep it, and ask each time: the answer is then a 304
    if answer.make_conditional(request).status_code == 304:
        return answer
    head = FeedHead(
        title=_title(wanted),
        search_pairs=pairs,
        self_link=with_query(url_for("feeds.feed"), pairs),
        page_link=with_query(url_for("ui.search"), [*pairs, ("sort", "newest")]),
        updated=changed.isoformat(),
    )
    papers = export(service().backend, wanted, FEED_ENTRIES)
    answer.set_data(atom_feed(head, papers, lambda paper_id: url_for("ui.paper", paper_id=paper_id)))
    return answer


def _etag(generation: str, pairs: list[tuple[str, str]]) -> str:
    """One tag per search and generation: a rebuild changes every feed's tag, nothing else does."""
    return hashlib.sha256(f"{generation}?{urlencode(pairs)}".encode()).hexdigest()[:32]


def _title(wanted: SearchRequest) -> str:
    parts = [f"“{wanted.q}”"] if wanted.q else []
    parts += [f"subject {subject}" for subject in wanted.subject]
    parts += [f"by {author}" for author in wanted.author]
    parts += [f"in {venue}" for venue in wanted.venue]
    if wanted.years:
        parts.append(f"years {wanted.year_from or '…'}–{wanted.year_to or '…'}")
    if wanted.dated:
        parts.append(f"dates {wanted.date_from or '…'}–{wanted.date_to or '…'}")
    return "searchsvc: newest papers" + (" for " + ", ".join(parts) if parts else "")
