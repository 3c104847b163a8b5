"""Liveness and readiness for load balancers and deploy platforms."""

from __future__ import annotations

from flask import Blueprint, Response, jsonify

from searchsvc.core.arrival import last_changed
from searchsvc.operations import changes
from searchsvc.web.openapi import Operation, documented
from searchsvc.web.schemas import HealthSchema, StatusSchema
from searchsvc.web.service import service

blueprint = Blueprint("health", __name__)


@blueprint.get("/healthz")
@documented(Operation("The process is alive", response=HealthSchema, errors=()))
def healthz() -> Response:
    """The process is alive (it says nothing about the index)."""
    return jsonify(HealthSchema().dump({"status": "ok"}))


@blueprint.get("/readyz")
@documented(Operation("The index is loaded", response=StatusSchema))
def readyz() -> Response:
    """The index is loaded: its generation, papers, build time and when its papers last changed;
    503 (IndexUnavailable) if not.

    The engine is named, not its library's version: that tells an attacker which flaws to try
    (`searchsvc status` shows the version to the operator).
    """
    backend = service().backend
    status = backend.status()
    ready = {
        **status,
        "status": "ready",
        "engine": service().settings.backend,
        "changed_at": last_changed(status),
        "changes": changes.count(backend),
    }
    return jsonify(StatusSchema().dump(ready))
