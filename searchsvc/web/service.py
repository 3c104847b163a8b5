"""The service a request is served by: views import this, never the app factory."""

from __future__ import annotations

from dataclasses import dataclass

from flask import current_app

from searchsvc.backends import Backend
from searchsvc.settings import Settings
from searchsvc.settings.write_tokens import TokenHash


@dataclass(frozen=True)
class Service:
    """What every route needs: the settings, the backend built from them, and who may change it."""

    settings: Settings
    backend: Backend
    writers: tuple[TokenHash, ...] = ()  # none: the write API is off


def service() -> Service:
    """The service of the app handling the current request."""
    return current_app.extensions["searchsvc"]
