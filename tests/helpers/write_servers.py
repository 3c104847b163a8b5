"""The writes, answers and waits of the tests that write to tests/system/conftest.py's `unembedded_server`
(the Procfile's gunicorn with ranking by meaning on, serving an index built with it off)."""

from __future__ import annotations

import time
import urllib.request
from typing import Any

import pytest

from searchsvc.settings.write_tokens import new_token
from tests.helpers import servers
from tests.helpers.servers import get

TOKEN = new_token()
EMBEDDED_WITHIN = (
    480  # polls of 0.5 s: a thousand titles take seconds, minutes on a loaded machine (embedding yields to others)
)
# A write has no time budget: it runs in a process of its own while the worker answers others, and its
# client waits. The largest bodies took 3-6 s on a quiet machine and past 30 s in a loaded suite (7 Dec,
# load ~12), so a write's client waits as long as these tests wait for an embedding.
WRITE_TIMEOUT = EMBEDDED_WITHIN * 0.5


def write(base: str, content: bytes, content_type: str = "application/x-ndjson", key: str = "") -> tuple[int, Any]:
    headers = {"Content-Type": content_type, **writer_headers(key)}
    request = urllib.request.Request(f"{base}/api/papers", data=content, method="POST", headers=headers)
    return servers.send(request, WRITE_TIMEOUT)


def writer_headers(key: str = "") -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKEN}", **({"Idempotency-Key": key} if key else {})}


def semantic_ranking(base: str) -> str:
    status, ready = get(f"{base}/readyz")
    assert status == 200, ready
    return ready["semantic_ranking"]


def wait_until_ranked_by_meaning(base: str) -> None:
    for _attempt in range(EMBEDDED_WITHIN):
        if semantic_ranking(base) == "on":
            return
        time.sleep(0.5)
    pytest.fail("the papers written were never all embedded")
