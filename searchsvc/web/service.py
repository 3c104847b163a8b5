"""The service a request is served by: views import this, never the app factory."""

from __future__ import annotations

from dataclasses import dataclass

from flask import current_app

from searchsvc.backends import Backend
from searchsvc.settings import Settings


@dataclass(frozen=True)
class Service:
    """What every route needs: the settings and the backend built from them."""

    settings: Settings
    backend: Backend


def service() -> Service:
    """The service of the app handling the current request."""
    return current_app.extensions["searchsvc"]
