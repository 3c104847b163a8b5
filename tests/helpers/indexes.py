"""The one way the tests build a Whoosh index: write records, rebuild through the real path, return the backend.

`build_index` takes folders of its own (for module- and session-scoped fixtures); the `make_index`
fixture (tests/conftest.py) is the same under a test's `tmp_path`.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from searchsvc.backends.whoosh import WhooshBackend
from searchsvc.core.model import SearchRequest
from searchsvc.operations.rebuild import rebuild
from searchsvc.operations.search import search
from tests.helpers.apps import settings_for
from tests.helpers.records import write_jsonl

RECORDS_FILE = "records.jsonl"  # the name `build_index` gives the records it writes
MakeIndex = Callable[..., WhooshBackend]  # the `make_index` fixture


def build_index(
    index_dir: Path,
    records: Iterable[dict[str, Any]] | None = None,
    *,
    sources: Sequence[Path] = (),
    sources_dir: Path | None = None,
    **settings: Any,
) -> WhooshBackend:
    """A Whoosh backend on `index_dir`, settings from defaults and `settings` only, with a generation
    published by `rebuild` from `sources` and, when given, `records` written to
    `sources_dir/records.jsonl` (`sources_dir` defaults to `sources` beside `index_dir`)."""
    paths = list(sources)
    if records is not None:
        folder = sources_dir if sources_dir is not None else index_dir.parent / "sources"
        paths.append(write_jsonl(folder / RECORDS_FILE, records))
    backend = WhooshBackend(settings_for(index_dir, **settings))
    rebuild(backend, paths)
    return backend


def titles(backend: WhooshBackend) -> set[str]:
    """The titles of the first 100 papers `backend` serves."""
    return {hit.title for hit in search(backend, SearchRequest(per_page=100)).hits}


@dataclass(frozen=True)
class AclIndex:
    """The 29,580 ACL records indexed by the real `searchsvc rebuild`, ranking by meaning off
    (tests/system/conftest.py builds it once per session)."""

    index_dir: Path
    rebuild: subprocess.CompletedProcess[str]
