"""The write API: add papers from a body in any source format, remove one paper by id.

Off unless writers are configured (web/write_auth.py). Each change takes the index's rebuild lock
(operations/update.py) and publishes a new generation at once, or changes nothing; a change asked
while another holds the lock is a 409 with Retry-After, not a wait that would hold the worker.
Every change is logged with its writer's name, never the token. A change's new papers are
embedded in a process of its own after the answer (operations/background_embedding.py), never
inside a request: the answer says `semantic_ranking: pending` until then.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

from flask import Blueprint, Response, current_app, jsonify

from searchsvc.core.errors import PaperNotFound, RebuildInProgress, SearchsvcError
from searchsvc.operations import background_embedding, update
from searchsvc.operations.update import ChangeReport
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
        errors=(400, 401, 403, 409, 413, 415, 503, 507),
        body_types=tuple(MEDIA_TYPES),
        writes=True,
    )
)
def add_papers() -> Response:
    name = writer()
    backend = service().backend
    with saved_body(service().settings) as body:
        origin = f"POST /api/papers by {name}"  # the manifest's provenance, not the temporary file's path
        limit = service().settings.max_write_records
        report = _change(name, lambda: update.add(backend, [body], origin=origin, embed=False, max_records=limit), body)
    return _report_response(report)


@blueprint.delete("/papers/<path:paper_id>")
@documented(
    Operation(
        "Remove one paper",
        response=ChangeReportSchema,
        errors=(401, 403, 404, 409, 503, 507),
        path_params={"paper_id": {"type": "string", "description": "The paper's id, as in search results."}},
        writes=True,
    )
)
def remove_paper(paper_id: str) -> Response:
    name = writer()
    backend = service().backend
    report = _change(
        name, lambda: update.remove(backend, [paper_id], embed=False, origin=f"DELETE /api/papers by {name}")
    )
    if paper_id in report.missing:
        raise PaperNotFound(f"no paper has the id {paper_id!r}; nothing was removed", {"report": report.as_dict()})
    return _report_response(report)


def _change(name: str, make: Callable[[], ChangeReport], body: Path | None = None) -> ChangeReport:
    """Run one change as writer `name`: its report, with the body named `body`; logged either way.
    `make` runs as the process runs writes (web/cooperative.py: beside the searches in a gevent
    worker), so it reads nothing of the request or the app itself."""
    try:
        report = run_write(make)
    except RebuildInProgress as busy:
        current_app.logger.warning("change by %s refused: %s", name, busy.explained())
        raise RebuildInProgress(
            "another change to the index is running (a rebuild or another write): try again in a few seconds",
            private=busy.explained(),
        ) from None
    except SearchsvcError as failed:
        error = named_as_body(failed, body) if body is not None else failed
        current_app.logger.warning("change by %s failed: %s", name, error.message)
        raise error from None
    if report.semantic_ranking == "pending":
        background_embedding.start(service().settings)
    if body is not None:
        report = dataclasses.replace(report, warnings=[for_the_client(w, body) for w in report.warnings])
    summary = report.summary().replace(str(body), BODY) if body is not None else report.summary()
    current_app.logger.info("change by %s: %s", name, summary)
    return report


def _report_response(report: ChangeReport) -> Response:
    return jsonify(ChangeReportSchema().dump(report))
