"""The OpenSearch backend without a cluster: what it answers when there is none to reach.

Everything that needs the 2-node test cluster is in tests/system/test_opensearch_backend.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from searchsvc import create_app
from tests.helpers.apps import error_of


@pytest.mark.reliability
def test_an_unreachable_cluster_is_a_503_saying_so(tmp_path: Path) -> None:
    app = create_app({"backend": "opensearch", "opensearch_url": "http://127.0.0.1:9", "opensearch_index": "x"})
    client = app.test_client()
    for url in ("/api/search?q=x", "/readyz", "/api/papers/x", "/api/suggest?q=x"):
        error = error_of(client, url, 503)
        assert error["code"] == "index_unavailable"
        assert "cannot reach the OpenSearch cluster" in error["message"] and "127.0.0.1" not in error["message"]
