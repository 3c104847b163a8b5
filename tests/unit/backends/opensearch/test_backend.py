"""The OpenSearch backend without a cluster: what it answers when there is none to reach.

Everything that needs the 2-node test cluster is in tests/system/test_opensearch_backend.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from opensearchpy import exceptions as os_errors
from opensearchpy.helpers import BulkIndexError

from searchsvc import create_app
from searchsvc.backends.opensearch.cluster import cluster_errors
from searchsvc.core.errors import IndexUnavailable, StorageFull
from tests.helpers.apps import error_of


@pytest.mark.reliability
def test_an_unreachable_cluster_is_a_503_saying_so(tmp_path: Path) -> None:
    app = create_app({"backend": "opensearch", "opensearch_url": "http://127.0.0.1:9", "opensearch_index": "x"})
    client = app.test_client()
    for url in ("/api/search?q=x", "/readyz", "/api/papers/x", "/api/suggest?q=x"):
        error = error_of(client, url, 503)
        assert error["code"] == "index_unavailable"
        assert "cannot reach the OpenSearch cluster" in error["message"] and "127.0.0.1" not in error["message"]


# What a cluster past its flood-stage watermark answers a write (OpenSearch 2.x): a block on the index.
_FLOOD = {
    "type": "cluster_block_exception",
    "reason": "index [papers-1] blocked by: [TOO_MANY_REQUESTS/12/disk usage exceeded flood-stage watermark, "
    "index has read-only-allow-delete block];",
}


def test_a_write_the_cluster_refuses_for_want_of_disk_is_a_507() -> None:
    """Issue #36's leftover: a full disk inside the cluster was a 503 or a 500, not the 507 a full local disk is."""
    refused = os_errors.TransportError(429, "cluster_block_exception", {"error": {**_FLOOD, "root_cause": [_FLOOD]}})
    with pytest.raises(StorageFull) as raised, cluster_errors("http://node-1:9200"):
        raise refused
    assert "node-1" not in raised.value.message and "flood-stage" in raised.value.private
    with pytest.raises(StorageFull), cluster_errors("http://node-1:9200"):
        raise BulkIndexError("1 document(s) failed to index.", [_item(_FLOOD)])
    busy = {"type": "es_rejected_execution_exception", "reason": "rejected execution"}
    with pytest.raises(IndexUnavailable), cluster_errors("http://node-1:9200"):
        raise BulkIndexError("1 document(s) failed to index.", [_item(busy)])


def _item(error: dict[str, str]) -> dict[str, object]:
    return {"index": {"_id": "x", "status": 429, "error": error}}
