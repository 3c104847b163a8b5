"""searchsvc: ranked, faceted search for research-paper records."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from searchsvc.web.app import create_app


def __getattr__(name: str) -> Any:
    # Flask is imported only by what serves HTTP, not by every `searchsvc` command.
    if name == "create_app":
        from searchsvc.web.app import create_app

        return create_app
    raise AttributeError(f"module 'searchsvc' has no attribute {name!r}")


__all__ = ["create_app"]
