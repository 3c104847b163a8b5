"""The write API: add papers from a body in any source format, remove one paper by id.

Off unless writers are configured (web/write_auth.py). Each change takes the index's rebuild lock
(operations/update.py) and publishes a new generation at once, or changes nothing; a change asked
while another holds the lock is a 409 with Retry-After, not a wait that would hold the worker.
Every change is logged with its writer's name, never the token. A change's new papers are
embedded in a process of its own after the answer (operations/background_embedding.py), never
inside a request: the answer says `semantic_ranking: pending` until then. In a gevent worker the
change itself runs in a process of its own, so the worker's searches go on beside it
(cooperative.py). A change sent with an `Idempotency-Key` is made at most once, whatever happened
to its answer (web/idempotency.py).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from flask import Blueprint, Response, current_app, jsonify

from searchsvc.core.errors import ChangeNotFound, PaperNotFound, RebuildInProgress, SearchsvcError, running_change
from searchsvc.operations import background_embedding, changes, update
from searchsvc.operations.update import ChangeReport
from searchsvc.web import idempotency
from searchsvc.web.cooperative import run_write
from searchsvc.web.openapi import Operation, documented
from searchsvc.web.schemas import ChangeReportSchema
from searchsvc.web.service import service
from searchsvc.web.write_auth import writer
from searchsvc.web.write_body import BODY, MEDIA_TYPES, for_the_client, named_as_body, saved_body

blueprint = Blueprint("write_api", __name__, url_prefix="/api")


@blueprint.post("/papers")
@documented(
    Operation(
        "Add or replace papers: the body's records, merged into the index as one change",
        response=ChangeReportSchema,
        errors=(400, 401, 403, 409, 413, 415, 422, 503, 507),
        body_types=tuple(MEDIA_TYPES),
        writes=True,
        idempotent=True,
    )
)
def add_papers() -> Response:
    name = writer()
    key = idempotency.sent_key()
    with saved_body(service().settings) as body:
        report = _change(
            name,
            body,
            update.add,
            sources=[body],
            origin=f"POST /api/papers by {name}",  # the manifest's provenance, not the temporary file's path
            embed=False,
            max_records=service().settings.max_write_records,
            idempotency=idempotency.keyed(name, key, body),
            reported=partial(for_the_client, path=body),
        )
    return _report_response(report)


@blueprint.delete("/papers/<path:paper_id>")
@documented(
    Operation(
        "Remove one paper",
        response=ChangeReportSchema,
        errors=(400, 401, 403, 404, 409, 422, 503, 507),
        path_params={"paper_id": {"type": "string", "description": "The paper's id, as in search results."}},
        writes=True,
        idempotent=True,
    )
)
def remove_paper(paper_id: str) -> Response:
    name = writer()
    keyed = idempotency.keyed(name, idempotency.sent_key())
    origin = f"DELETE /api/papers by {name}"
    report = _change(name, None, update.remove, ids=[paper_id], embed=False, origin=origin, idempotency=keyed)
    if paper_id in report.missing:
        raise PaperNotFound(f"no paper has the id {paper_id!r}; nothing was removed", {"report": report.as_dict()})
    return _report_response(report)


@blueprint.get("/changes/<path:key>")
@documented(
    Operation(
        "What the change sent with this Idempotency-Key did: its report, once it is published",
        response=ChangeReportSchema,
        errors=(400, 401, 403, 404, 503),
        path_params={"key": {"type": "string", "description": "The Idempotency-Key the change was sent with."}},
        writes=True,
    )
)
def change_made_under(key: str) -> Response:
    name = writer()
    key = idempotency.valid_key(key, "the change's key")
    report = changes.made_under(service().backend, name, key)
    if report is None:
        raise ChangeNotFound(
            f"no change sent by {name} with the idempotency key {key!r} is published: it was never made, or is "
            "being made now; sending it again with the same key makes it at most once",
            {"key": key},
        )
    return _report_response(report)


def _change(name: str, body: Path | None, change: Callable[..., ChangeReport], **arguments: Any) -> ChangeReport:
    """Make `change` as writer `name`: its report, with the body named `body`; logged either way.
    It runs as the process runs writes (web/cooperative.py: in a process of its own in a gevent
    worker), so its arguments are data, never the request or the app."""
    try:
        report = run_write(change, service().backend, **arguments)
    except RebuildInProgress as busy:
        current_app.logger.warning("change by %s refused: %s", name, busy.explained())
        raise RebuildInProgress(
            f"another change to the index is running ({running_change(busy.details.get('running'))}): "
            "try again in a few seconds",
            busy.details,
            private=busy.explained(),
        ) from None
    except SearchsvcError as failed:
        error = named_as_body(failed, body) if body is not None else failed
        current_app.logger.warning("change by %s failed: %s", name, error.message)
        raise error from None
    if report.semantic_ranking == "pending":
        background_embedding.start(service().settings)
    summary = report.summary().replace(str(body), BODY) if body is not None else report.summary()
    current_app.logger.info("change by %s: %s", name, summary)
    return report


def _report_response(report: ChangeReport) -> Response:
    return jsonify(ChangeReportSchema().dump(report))
