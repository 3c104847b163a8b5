"""A real rebuild SIGKILLed while it embeds keeps what it embedded: the vector store is
checkpointed as it goes (a part appended each time), never seen half-written, and never taken
for a finished one."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from searchsvc.backends.whoosh.generation_vectors import KEYS_FILE, GenerationVectors
from searchsvc.semantic.selection import model_id
from searchsvc.semantic.store import load, lookup, part_files, store_file
from searchsvc.settings import load_settings
from tests.helpers.paths import REPO, SHARED_ACL
from tests.helpers.servers import SEARCHSVC, environment, kill_once

pytestmark = [
    pytest.mark.reliability,
    pytest.mark.skipif(not SHARED_ACL.exists(), reason="needs the shared ACL records"),
]

PAPERS = 64  # about half a minute to embed on two cores
WHOLE = [("all", 0, PAPERS)]  # the generation's papers, as one segment would hold them
# The real command with a checkpoint after every 8 papers, instead of every 30 s, so the test
# reaches one in seconds; the checkpointing itself is the code under test.
_FREQUENT_CHECKPOINTS = """
import sys
from searchsvc.semantic import embedding
embedding.CHUNK, embedding.CHECKPOINT_SECONDS = 8, 0.0
from searchsvc.cli import main
main(sys.argv[1:], prog_name="searchsvc")
"""


def read_strictly(path: Path) -> int:
    """Rows of the store at `path`, its base and parts; fails on a file that is not whole (half-written)."""
    rows = 0
    for file in [path, *part_files(path)] if path.exists() else part_files(path):
        with file.open("rb") as stream, np.load(stream) as data:
            keys, vectors = data["keys"], data["vectors"]
        assert len(keys) == len(vectors)
        rows += len(keys)
    return rows


def kill_after_a_checkpoint(index_dir: Path, source: Path) -> int:
    """Rebuild `source`, reading the store as fast as possible; SIGKILL the rebuild once a checkpoint
    holds some of its papers. Return how many of them the store holds after the kill."""
    store = store_file(index_dir / "vectors", model_id(load_settings().encoder))
    env = environment(SEARCHSVC_INDEX_DIR=str(index_dir))
    command = [sys.executable, "-c", _FREQUENT_CHECKPOINTS, "rebuild", str(source)]
    with subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) as victim:
        kill_once(victim, lambda: read_strictly(store), "rebuild")
    return read_strictly(store)


def published(index_dir: Path) -> Path:
    return index_dir / "generations" / (index_dir / "CURRENT").read_text().strip()


def test_a_rebuild_killed_while_embedding_keeps_its_progress(tmp_path: Path) -> None:
    index_dir = tmp_path / "index"
    source = tmp_path / "papers.jsonl"
    with SHARED_ACL.open(encoding="utf-8") as records:
        source.write_text("".join(line for line, _ in zip(records, range(PAPERS), strict=False)), encoding="utf-8")
    store = store_file(index_dir / "vectors", model_id(load_settings().encoder))

    kill_after_a_checkpoint(index_dir, source)
    generation = published(index_dir)
    keys = np.load(generation / KEYS_FILE)
    kept = int(lookup(load(store), keys)[1].sum())
    assert 0 < kept < len(keys) == PAPERS
    assert GenerationVectors(generation, store, WHOLE).get() is None, "a partial store was served as complete"

    again = subprocess.run(
        [str(SEARCHSVC), "rebuild", str(source), "--index-dir", str(index_dir)],
        env=environment(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert again.returncode == 0, again.stderr
    embedded = int(re.search(r"(\d+) embedded", again.stdout)[1])
    assert embedded == PAPERS - kept
    vectors = GenerationVectors(published(index_dir), store, WHOLE).get()
    assert vectors is not None and len(vectors) == PAPERS
    assert read_strictly(store) == PAPERS  # the final store holds this collection's papers and nothing else
    assert store.exists() and not part_files(store)  # compacted into its base
