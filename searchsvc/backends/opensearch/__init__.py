"""The scale-out backend: the same searches on an OpenSearch cluster (SEARCHSVC_BACKEND=opensearch)."""

from searchsvc.backends.opensearch.backend import OpenSearchBackend

__all__ = ["OpenSearchBackend"]
