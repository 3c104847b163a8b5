"""The engines behind one interface (ports.py); `open_backend` picks the one the settings name."""

from __future__ import annotations

from searchsvc.backends.ports import Answer, Backend, Journal, Purpose
from searchsvc.settings import Settings

__all__ = ["Answer", "Backend", "Journal", "Purpose", "open_backend"]


def open_backend(settings: Settings) -> Backend:
    """The backend the `backend` setting names (imported only when chosen)."""
    if settings.backend == "opensearch":
        from searchsvc.backends.opensearch import OpenSearchBackend

        return OpenSearchBackend(settings)
    from searchsvc.backends.whoosh import WhooshBackend

    return WhooshBackend(settings)
