"""Where the repository, its seeds and the shared data sets are."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SEEDS = REPO / "seeds"
TEST_DATA = REPO / "tests" / "data"
SHARED_ACL = REPO.parent / "shared" / "data" / "acl-anthology-2016" / "corpus.jsonl"
SOURCE_SAMPLES = TEST_DATA / "sources"  # real samples of each source format (LICENCES.md beside them)
