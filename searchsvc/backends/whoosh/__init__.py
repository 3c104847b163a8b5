"""Whoosh, the embedded default backend."""

from searchsvc.backends.whoosh.backend import WhooshBackend

__all__ = ["WhooshBackend"]
