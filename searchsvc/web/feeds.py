"""`GET /feed.atom`: any search's papers most recently added to this index, as an Atom feed for
feed readers to follow.

A reader polls the same URL for months and should hear only of what is new to it. Each entry is
`updated` when its paper was added or last changed here (`core.arrival`, kept across rebuilds), and
the feed's ETag, Last-Modified and `<updated>` come from its entries alone: a rebuild or a change
that leaves them as they were answers a poll with `If-None-Match` or `If-Modified-Since` with a 304,
and a paper added to the search makes the next poll a 200 with it first.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from urllib.parse import urlencode

from flask import Blueprint, Response, request, url_for

from searchsvc.core.arrival import iso_second
from searchsvc.core.model import SearchRequest
from searchsvc.core.paper import Paper
from searchsvc.operations.search import export
from searchsvc.web.atom import MEDIA_TYPE, FeedHead, atom_feed
from searchsvc.web.openapi import Operation, documented
from searchsvc.web.page_links import search_pairs, with_query
from searchsvc.web.schemas import FEED_ENTRIES, FeedRequestSchema, load_params
from searchsvc.web.service import service

blueprint = Blueprint("feeds", __name__)
FEED_FORMAT = 2  # 2: entries by arrival, each `updated` when it changed here


@blueprint.get("/feed.atom")
@documented(
    Operation(
        f"The {FEED_ENTRIES} papers of a search most recently added to this index as an Atom 1.0 feed; "
        "304 while they are unchanged",
        params=FeedRequestSchema,
        download_types=(MEDIA_TYPE,),
        errors=(400, 503),
    )
)
def feed() -> Response:
    wanted: SearchRequest = load_params(FeedRequestSchema(service().settings), request.args)
    pairs = search_pairs(wanted)
    papers = export(service().backend, wanted, FEED_ENTRIES)
    arrived = [paper.arrival.changed for paper in papers if paper.arrival]
    # An empty feed has no entry to date it: the index's last change does.
    changed = datetime.fromisoformat(max(arrived) if arrived else service().backend.last_change()[1])
    answer = Response(mimetype=MEDIA_TYPE)
    answer.set_etag(_etag(pairs, papers))
    answer.last_modified = changed
    answer.cache_control.no_cache = True  # keep it, and ask each time: the answer is then a 304
    if answer.make_conditional(request).status_code == 304:
        return answer
    head = FeedHead(
        title=_title(wanted),
        search_pairs=pairs,
        self_link=with_query(url_for("feeds.feed"), pairs),
        page_link=with_query(url_for("ui.search"), [*pairs, ("sort", "added")]),
        updated=changed.isoformat(),
    )
    answer.set_data(atom_feed(head, papers, lambda paper_id: url_for("ui.paper", paper_id=paper_id)))
    return answer


def _etag(pairs: list[tuple[str, str]], papers: list[Paper]) -> str:
    """One tag per search and list of entries, each as last changed: the same while they are (`FEED_FORMAT`
    changes it when the document itself is written otherwise)."""
    entries = [[paper.id, paper.arrival.changed if paper.arrival else None] for paper in papers]
    listed = json.dumps([FEED_FORMAT, urlencode(pairs), entries], ensure_ascii=False)
    return hashlib.sha256(listed.encode("utf-8")).hexdigest()[:32]


def _title(wanted: SearchRequest) -> str:
    parts = [f"“{wanted.q}”"] if wanted.q else []
    parts += [f"subject {subject}" for subject in wanted.subject]
    parts += [f"by {author}" for author in wanted.author]
    parts += [f"in {venue}" for venue in wanted.venue]
    if wanted.years:
        parts.append(f"years {wanted.year_from or '…'}–{wanted.year_to or '…'}")
    if wanted.dated:
        parts.append(f"dates {wanted.date_from or '…'}–{wanted.date_to or '…'}")
    if wanted.added_since is not None:
        parts.append(f"added since {iso_second(wanted.added_since)}")
    return "searchsvc: papers added" + (" for " + ", ".join(parts) if parts else "")
